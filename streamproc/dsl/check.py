"""``streamproc topology check``: is a Python port's topology the live application's?

The hand-off works only if every processor, store and internal topic has the name the Java application gives it,
so a port is checked against the application's own ``Topology#describe()`` text: byte for byte, after the
harmless differences of a copied text (CRLF line ends, trailing spaces, trailing blank lines). The first differing
line is reported with both versions; when the two texts still describe the same nodes and edges, the report says
that only the order differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.engine.topology_description import parse_description
from streamproc.errors import StreamprocError


@dataclass(frozen=True, slots=True)
class Difference:
    """The first line where the texts differ (1-based), each side's line (``None`` past the end)."""

    line: int
    expected: str | None
    actual: str | None
    same_structure: bool

    def __str__(self) -> str:
        expected = "(end of text)" if self.expected is None else repr(self.expected)
        actual = "(end of text)" if self.actual is None else repr(self.actual)
        text = f"line {self.line}: the application has {expected}, the Python topology {actual}"
        if self.same_structure:
            text += " (the same nodes, stores and edges: only their order differs)"
        return text


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def first_difference(expected: str, actual: str) -> Difference | None:
    """``None`` when ``actual`` is ``expected`` (up to line ends and trailing blanks), else the first difference."""
    want, got = _lines(expected), _lines(actual)
    for index in range(max(len(want), len(got))):
        left = want[index] if index < len(want) else None
        right = got[index] if index < len(got) else None
        if left != right:
            try:
                same = parse_description(expected).normalized() == parse_description(actual).normalized()
            except StreamprocError:
                same = False
            return Difference(index + 1, left, right, same)
    return None
