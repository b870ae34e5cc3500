"""The fenced blocks of a Markdown document with the marker comment above each, and the ``streamproc`` command lines
in them parsed the way click parses them.

Markers (an HTML comment on the line right above the fence, invisible when rendered):

- ``<!-- run -->``: a shell block the docs test executes, in document order, in one shell;
- ``<!-- parse: <why it cannot run> -->``: a shell block whose ``streamproc`` lines are only parsed;
- ``<!-- file: NAME -->``: a block whose text the docs test writes to ``NAME`` before running anything.

Every ``sh`` block must carry ``run`` or ``parse``, so that no command reaches the docs unchecked.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

_BLOCK = re.compile(r"(?:^<!-- (?P<marker>[a-z]+)(?::\s*(?P<note>.*?))? -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```$",
                    re.M | re.S)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its language, its marker (``run``, ``parse``, ``file`` or ``None``), the marker's note (the
    reason for ``parse``, the file name for ``file``), its text, and the line it starts on."""

    lang: str
    marker: str | None
    note: str
    body: str
    line: int


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(m["lang"], m["marker"], (m["note"] or "").strip(), m["body"], text.count("\n", 0, m.start()) + 1)
        for m in _BLOCK.finditer(text)
    ]


def logical_lines(body: str) -> Iterator[str]:
    """The block's lines with ``\\`` continuations joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", body)
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


#: how a command line starts → (the program name, the module of its click group)
PROGRAMS = {
    "streamproc": "streamproc.cli",
    "python -m streamproc_dev": "streamproc_dev.cli",
    ".venv/bin/python -m streamproc_dev": "streamproc_dev.cli",
}


def command_lines(body: str) -> Iterator[tuple[str, str, list[str]]]:
    """Every invocation of a program of :data:`PROGRAMS` in the block, as (program, module, argv): also one inside
    ``$(…)``
    or after ``|``, ``&&`` or ``;`` (a shell comment after it is dropped)."""
    for line in logical_lines(body):
        for segment in re.split(r"\$\(|\|\||&&|\||;", line):
            segment = segment.strip().rstrip(")").strip()
            for prefix, module in PROGRAMS.items():
                if segment.startswith(prefix + " "):
                    argv = shlex.split(segment[len(prefix) :], comments=True)
                    yield prefix.split()[-1], module, argv


def parse(program: str, group: click.Group, argv: list[str], workdir: Path) -> list[str]:
    """Parse ``argv`` through ``group`` and its sub-commands as click would before running them (types, choices,
    required options, unknown options) without running anything; return the command path.

    Files and directories an option requires to exist are created empty under ``workdir`` first (the command is
    parsed, not run); the caller runs this with ``workdir`` as the current directory.
    """
    command: click.Command = group
    name, args, parent = program, list(argv), None
    path = [name]
    while True:
        args = _create_required_paths(command, args, workdir)
        ctx = command.make_context(name, args, parent=parent)
        if not isinstance(command, click.Group):
            return path
        rest = [*getattr(ctx, "_protected_args", ()), *ctx.args]
        if not rest:
            return path
        sub_name, sub, args = command.resolve_command(ctx, rest)
        assert sub is not None and sub_name is not None
        command, name, parent = sub, sub_name, ctx
        path.append(sub_name)


def _create_required_paths(command: click.Command, args: list[str], workdir: Path) -> list[str]:
    """``args`` with each path an option requires to exist created under ``workdir`` (an absolute one is moved
    there: nothing is created outside it)."""
    args = list(args)
    for param in command.params:
        kind = getattr(param, "type", None)
        if not (isinstance(kind, click.Path) and kind.exists and isinstance(param, click.Option)):
            continue
        positions = [i + 1 for i, token in enumerate(args[:-1]) if token in param.opts]
        targets = [workdir / args[i].lstrip("/") for i in positions]
        for i, target in zip(positions, targets, strict=True):
            args[i] = str(target)
        if not positions and isinstance(param.default, str | Path):
            targets = [workdir / str(param.default).lstrip("/")]  # click checks that a default exists too
            args += [param.opts[0], str(targets[0])]
        for target in targets:
            if kind.dir_okay and not kind.file_okay:
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
    return args
