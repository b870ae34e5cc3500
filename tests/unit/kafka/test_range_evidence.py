"""``RangeEvidence.add_runs`` (a batch with gaps recorded at once) against recording its offsets one by one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamproc.kafka.range_reader import RangeEvidence


@given(st.lists(st.lists(st.integers(1, 4), max_size=12), max_size=5), st.integers(0, 2**40))
def test_runs_recorded_at_once_equal_offsets_recorded_one_by_one(batches: list[list[int]], start: int) -> None:
    one_by_one, at_once = (RangeEvidence("t", 0, start, start + 1000, "read_committed") for _ in range(2))
    offset = start
    for steps in batches:
        batch = []
        for step in steps:
            offset += step
            batch.append(offset)
        for o in batch:
            one_by_one.add(o)
        at_once.add_runs(batch)

    assert at_once == one_by_one
