"""Is a Python topology the one a ``describe()`` text shows? The one comparison of two ``describe()`` texts.

The hand-off works only if every processor, store and internal topic has the name the Java application gives it,
so a topology is checked against a ``Topology#describe()`` text — by ``streamproc topology check`` against the live
application's, and by the process step against the plan's — byte for byte, after the harmless differences of a
copied text (CRLF line ends, trailing spaces, blank lines). The first differing line is reported with both
versions; when the two texts still describe the same nodes and edges, the report says that only the order differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.engine.topology_description import parse_description
from streamproc.errors import StreamprocError


@dataclass(frozen=True, slots=True)
class Difference:
    """The first line where the texts differ (1-based, numbered by the topology's own text), each side's line
    (``None`` past the end)."""

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


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, text without trailing blanks) of the non-blank lines: blank lines only separate
    sub-topologies, and a copied text may have gained or lost some."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [(number, line.rstrip()) for number, line in enumerate(lines, start=1) if line.strip()]


def first_difference(expected: str, actual: str) -> Difference | None:
    """``None`` when ``actual`` is ``expected`` (up to line ends and blanks), else the first difference, numbered
    by ``actual``'s lines (past its end: one after its last line)."""
    want, got = _lines(expected), _lines(actual)
    past_end = len(actual.replace("\r\n", "\n").splitlines()) + 1
    for index in range(max(len(want), len(got))):
        left = want[index][1] if index < len(want) else None
        number, right = got[index] if index < len(got) else (past_end, None)
        if left != right:
            try:
                same = parse_description(expected).normalized() == parse_description(actual).normalized()
            except StreamprocError:
                same = False
            return Difference(number, left, right, same)
    return None
