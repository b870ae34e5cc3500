"""An installed wheel carries the ledger schema: a ledger opened from it, outside the repository, records steps."""

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
"""


def test_the_wheel_ships_the_schema_and_its_ledger_works(tmp_path: Path) -> None:
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
        assert "streamproc/ledger/ledger.sql" in archive.namelist()
        archive.extractall(installed)
    assert (REPO / "sql" / "ledger.sql").read_text() == (installed / "streamproc/ledger/ledger.sql").read_text()

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
    assert opened.stdout.strip() == "[('publish', '0_0', {'offsets': {'words-0': 10}})]"
