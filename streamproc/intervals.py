"""Inclusive runs of offsets, the shape in which manifests and completeness proofs state which offsets they cover.

One module so that the planner's proofs and the storage manifests agree on the representation to the letter.
"""

from __future__ import annotations

from collections.abc import Iterable

Interval = tuple[int, int]
"""An inclusive ``[first, last]`` run of offsets."""


def to_intervals(offsets: Iterable[int]) -> tuple[Interval, ...]:
    """Sorted distinct offsets as inclusive runs: ``[0, 1, 2, 5]`` → ``((0, 2), (5, 5))``."""
    runs: list[Interval] = []
    for offset in sorted(set(offsets)):
        if runs and runs[-1][1] == offset - 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return tuple(runs)


def count(intervals: Iterable[Interval]) -> int:
    """How many offsets the runs hold."""
    return sum(last - first + 1 for first, last in intervals)
