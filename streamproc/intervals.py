"""Inclusive runs of offsets, the shape in which manifests and completeness proofs state which offsets they cover.

One module so that the planner's proofs and the storage manifests agree on the representation to the letter.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

Interval = tuple[int, int]
"""An inclusive ``[first, last]`` run of offsets."""


def is_run(offsets: Sequence[int]) -> bool:
    """``offsets`` is exactly ``first, first + 1, …`` (non-empty): a fetch's usual segment, checked without a
    Python step per offset (``map`` and ``all`` iterate in C; a ``range`` of step 1 by its type), so that proving it
    costs next to nothing."""
    if isinstance(offsets, range):
        return len(offsets) > 0 and offsets.step == 1
    return bool(offsets) and all(map(operator.eq, offsets, range(offsets[0], offsets[0] + len(offsets))))


def to_intervals(offsets: Iterable[int]) -> tuple[Interval, ...]:
    """Sorted distinct offsets as inclusive runs: ``[0, 1, 2, 5]`` → ``((0, 2), (5, 5))``."""
    if isinstance(offsets, Sequence) and is_run(offsets):
        return ((offsets[0], offsets[-1]),)
    ordered = sorted(set(offsets))
    if ordered and ordered[-1] - ordered[0] + 1 == len(ordered):
        return ((ordered[0], ordered[-1]),)  # distinct and spanning exactly their count: one run (a fetch's usual)
    runs: list[Interval] = []
    for offset in ordered:
        if runs and runs[-1][1] == offset - 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return tuple(runs)


def count(intervals: Iterable[Interval]) -> int:
    """How many offsets the runs hold."""
    return sum(last - first + 1 for first, last in intervals)


Span = tuple[str, int, int]
"""A half-open ``[start, end)`` range of one partition, named by ``"<topic>-<partition>"``."""


def first_overlap(spans: Iterable[Span]) -> tuple[Span, Span] | None:
    """Two ranges of one partition that share an offset, or are the same range twice; ``None`` if there are none.

    Plans and fetches both refuse such a pair: its segments would be staged twice, by two writers at once.
    """
    by_partition: dict[str, list[Span]] = {}
    for span in spans:
        by_partition.setdefault(span[0], []).append(span)
    for group in by_partition.values():
        group.sort(key=lambda s: (s[1], s[2]))
        for before, after in zip(group, group[1:], strict=False):
            if after[1] < before[2] or before == after:
                return before, after
    return None
