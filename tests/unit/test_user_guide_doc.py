"""``docs/user-guide.md`` documents every option of every ``streamproc`` command and every parameter of both DAGs.

The command tree is walked as click builds it and the DAGs' ``Params`` are read from the DAG files themselves, so a
new option or param without a line in the guide's reference fails here, naming it.
"""

from __future__ import annotations

import re
import runpy
from collections.abc import Iterator

import click

from streamproc.cli import main
from tests.conftest import PROJECT_ROOT

GUIDE = (PROJECT_ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
DAG_FILES = ("streamproc_backfill.py", "streamproc_incremental.py")


def section(heading: str) -> str:
    """The text under ``### <heading>`` up to the next heading of that level or above."""
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#{{1,3}} |\Z)", GUIDE, re.M | re.S)
    assert match, f"docs/user-guide.md has no section '### {heading}'"
    return match[1]


def commands(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from commands(sub, (*path, name))


def documented(text: str, name: str) -> bool:
    """``name`` (an option such as ``--state-dir`` or an argument such as ``RUN_ID``) in back-quotes in ``text``; an
    option with an optional value as ``--wait-for-empty-group[=DURATION]``."""
    return re.search(rf"`{re.escape(name)}(?=[`\s=|/[])", text) is not None


def test_every_option_of_every_command_is_in_the_reference() -> None:
    missing = []
    for path, command in commands(main, ("streamproc",)):
        if not command.params:  # a group that only holds commands (`streamproc ledger`)
            continue
        text = section(f"`{' '.join(path)}`")
        for param in command.params:
            names = param.opts if isinstance(param, click.Option) else [param.human_readable_name]
            missing += [f"{' '.join(path)} {name}" for name in names if not documented(text, name)]
    assert not missing, f"not documented in docs/user-guide.md's reference: {missing}"


def test_every_param_of_every_dag_is_in_the_reference() -> None:
    missing = []
    for file_name in DAG_FILES:
        dag = runpy.run_path(str(PROJECT_ROOT / "dags" / file_name))["dag"]
        assert dag.params, f"{file_name} has no params"
        text = section(f"`{dag.dag_id}` params")
        missing += [f"{dag.dag_id}.{name}" for name in dag.params if not documented(text, name)]
    assert not missing, f"DAG params not documented in docs/user-guide.md: {missing}"


def test_the_reference_documents_nothing_that_does_not_exist() -> None:
    """A removed or renamed option must leave the reference too: every option named in a table row exists."""
    known = {opt for _, command in commands(main, ("streamproc",)) for p in command.params for opt in p.opts}
    known |= {"-h", "--help"}
    start = GUIDE.index("## Reference: every command and option")
    end = GUIDE.index("## Reference: the DAGs' parameters")
    rows = [line for line in GUIDE[start:end].splitlines() if line.startswith("| `-")]
    named = {m for row in rows for m in re.findall(r"`(--?[A-Za-z][\w-]*)", row.split("|")[1])}
    assert named, "no option rows found"
    assert named <= known, f"documented options that do not exist: {sorted(named - known)}"
