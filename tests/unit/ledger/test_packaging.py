"""An installed wheel carries the ledger's migrations: a ledger opened from it, outside the repository, is made by them
and records steps and runs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

OPEN_LEDGER = """
import sys
import streamproc.ledger as ledger_package
from streamproc.ledger import Ledger
assert ledger_package.__file__.startswith(sys.argv[1]), ledger_package.__file__
with Ledger(sys.argv[2]) as ledger:
    ledger.record("plan", "publish", "0_0", {"offsets": {"words-0": 10}})
    print([(s.kind, s.subject, s.detail) for s in ledger.steps("plan")])
    run_id = ledger.begin_run(application_id="app", trigger="cli")
    ledger.finish_run(run_id, "dry_run")
    print([(r.application_id, r.status) for r in ledger.runs()])
"""


def test_the_wheel_ships_the_migrations_and_its_ledger_works(tmp_path: Path) -> None:
    uv = Path(sys.executable).with_name("uv")
    build = subprocess.run(
        [str(uv), "build", "--wheel", "--quiet", "--out-dir", str(tmp_path / "dist"), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    [wheel] = (tmp_path / "dist").glob("streamproc-*.whl")
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(installed)
    shipped = {n for n in names if n.startswith("streamproc/ledger/migrations/")}
    in_repo = {
        str(p.relative_to(REPO))
        for p in (REPO / "streamproc/ledger/migrations").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped == in_repo

    opened = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(installed)!r})\n{OPEN_LEDGER}",
            str(installed),
            str(tmp_path / "run.ledger.sqlite"),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.strip().splitlines() == [
        "[('publish', '0_0', {'offsets': {'words-0': 10}})]",
        "[('app', 'dry_run')]",
    ]
