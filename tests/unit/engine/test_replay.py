"""The batch replay (ordering.md §9) and its bounded buffering, against a reference model written from the spec.

The model below is a separate, literal transcription of RQ-2/RQ-6 (head selection, drops, placeholders), PG-3
(poll root, poll queue, re-offer unless drained) and PG-4 (the ``java.util.PriorityQueue`` sift rules, in the spec's
words) on plain lists: it shares no code with the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.timestamp_extractor import LogAndSkipOnInvalidTimestamp
from streamproc.errors import ConfigError, StreamsError
from tests.unit.engine.builders import A0, B0, Recorder, make_task, raw

SKIP = TaskConfig(
    deserialization_exception_handler=LogAndContinueExceptionHandler(),
    default_timestamp_extractor=LogAndSkipOnInvalidTimestamp(),
)


@dataclass(frozen=True)
class R:
    offset: int
    ts: int
    corrupt: bool


# -- reference model -----------------------------------------------------------------------------------------------


class ModelFailure(Exception):
    def __init__(self, partition: int, offset: int, reason: str) -> None:
        self.partition, self.offset, self.reason = partition, offset, reason


def model(partitions: list[list[R]], *, fail: bool = False) -> dict[str, Any]:
    """``fail``: FailOnInvalidTimestamp + LogAndFailExceptionHandler, the task stops at the first bad head."""
    n = len(partitions)
    pos = [0] * n
    head: list[tuple[int, int, bool] | None] = [None] * n  # (offset, timestamp, is_placeholder)
    drops: list[tuple[int, int, str, int]] = []
    state = {"processed": 0}

    def update_head(p: int) -> None:
        last_bad: R | None = None
        while head[p] is None and pos[p] < len(partitions[p]):
            r = partitions[p][pos[p]]
            pos[p] += 1
            if fail and (r.corrupt or r.ts < 0):
                raise ModelFailure(p, r.offset, "deserialization" if r.corrupt else "negative_timestamp")
            if r.corrupt:
                drops.append((p, r.offset, "deserialization", state["processed"]))
                last_bad = r
            elif r.ts < 0:
                drops.append((p, r.offset, "negative_timestamp", state["processed"]))
                last_bad = r
            else:
                head[p] = (r.offset, r.ts, False)
        if head[p] is None and last_bad is not None:
            head[p] = (last_bad.offset, -1, True)

    heap: list[int] = []

    def key(p: int) -> int:
        h = head[p]
        assert h is not None
        return h[1]

    def offer(p: int) -> None:
        heap.append(p)
        k = len(heap) - 1
        while k > 0:
            parent = (k - 1) // 2
            if key(p) >= key(heap[parent]):
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = p

    def poll() -> int:
        result = heap[0]
        x = heap.pop()
        n_left = len(heap)
        if n_left > 0:
            k = 0
            while k < n_left // 2:
                c = 2 * k + 1
                if c + 1 < n_left and key(heap[c]) > key(heap[c + 1]):
                    c = c + 1
                if key(x) <= key(heap[c]):
                    break
                heap[k] = heap[c]
                k = c
            heap[k] = x
        return result

    stream_time = -1
    order: list[tuple[int, int, int]] = []
    skips: list[tuple[int, int, int]] = []
    try:
        for p in range(n):
            update_head(p)
            if head[p] is not None:
                offer(p)
    except ModelFailure as failure:
        return {"order": order, "error": (failure.partition, failure.offset, failure.reason)}
    while heap:
        p = poll()
        record = head[p]
        assert record is not None
        head[p] = None
        try:
            update_head(p)
        except ModelFailure as failure:
            return {"order": order, "error": (failure.partition, failure.offset, failure.reason)}
        if head[p] is not None:
            offer(p)
        if record[1] > stream_time:
            stream_time = record[1]
        if record[2]:
            skips.append((p, record[0], state["processed"]))
        else:
            order.append((p, record[0], stream_time))
            state["processed"] += 1
    return {"order": order, "skips": skips, "drops": drops, "stream_time": stream_time}


# -- engine side ---------------------------------------------------------------------------------------------------


def topic_partition(index: int) -> TopicPartition:
    return TopicPartition("t", index)


def run_engine(partitions: list[list[R]], buffer_size: int, *, fail: bool = False) -> dict[str, Any]:
    tps = [topic_partition(i) for i in range(len(partitions))]
    task, proc = make_task(tps, config=TaskConfig() if fail else SKIP)
    assert isinstance(proc, Recorder)
    inputs = [
        PartitionInput(tp, iter([raw("t", tp.partition, r.offset, r.ts, corrupt=r.corrupt) for r in records]))
        for tp, records in zip(tps, partitions, strict=True)
    ]
    if fail:
        try:
            replay(task, list(reversed(inputs)), buffered_records_per_partition=buffer_size)
        except StreamsError as exc:
            assert f"topic=[t] partition=[{exc.partition}] offset=[{exc.offset}]" in str(exc)
            return {
                "order": [(p, o, st_) for _, p, o, st_ in proc.seen],
                "error": (exc.partition, exc.offset, exc.reason),
            }
        return {"order": [(p, o, st_) for _, p, o, st_ in proc.seen]}
    result = replay(task, list(reversed(inputs)), buffered_records_per_partition=buffer_size)
    return {
        "order": [(p, o, st_) for _, p, o, st_ in proc.seen],
        "skips": [(s.partition, s.offset, s.records_processed) for s in result.skip_steps],
        "drops": [(e.partition, e.offset, e.reason, e.records_processed) for e in result.dropped],
        "stream_time": result.stream_time,
        "counts": result.dropped_counts,
        "committed": {tp.partition: c.offset for tp, c in result.committable_offsets.items()},
    }


records_strategy = st.lists(
    st.tuples(st.integers(min_value=-3, max_value=12), st.booleans(), st.booleans()),
    max_size=12,
).map(lambda items: [R(offset, ts, corrupt and rare) for offset, (ts, corrupt, rare) in enumerate(items)])
partitions_strategy = st.lists(records_strategy, min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(partitions=partitions_strategy, buffer_size=st.integers(min_value=1, max_value=5))
def test_replay_matches_reference_model_for_any_buffer_size(partitions: list[list[R]], buffer_size: int) -> None:
    expected = model(partitions)
    actual = run_engine(partitions, buffer_size)
    assert actual["order"] == expected["order"]
    assert actual["skips"] == expected["skips"]
    assert actual["drops"] == expected["drops"]
    assert actual["stream_time"] == expected["stream_time"]
    reasons = [d[2] for d in expected["drops"]]
    assert actual["counts"] == {r: reasons.count(r) for r in set(reasons)}
    consumed = {p: len(records) for p, records in enumerate(partitions) if records}
    assert actual["committed"] == consumed


@settings(max_examples=200, deadline=None)
@given(partitions=partitions_strategy, buffer_size=st.integers(min_value=1, max_value=5))
def test_fatal_bad_records_stop_where_the_model_says(partitions: list[list[R]], buffer_size: int) -> None:
    expected = model(partitions, fail=True)
    assert run_engine(partitions, buffer_size, fail=True) == {
        k: expected[k] for k in ("order", "error") if k in expected
    }


@settings(max_examples=100, deadline=None)
@given(partitions=partitions_strategy)
def test_buffer_size_one_and_ten_thousand_give_the_same_result(partitions: list[list[R]]) -> None:
    assert run_engine(partitions, 1) == run_engine(partitions, 10_000)


def test_trailing_corrupt_records_beyond_the_buffer_do_not_make_early_placeholders() -> None:
    """Buffer 1: a, then four corrupt records, then a valid one; the valid one must still be found (no skip step)."""
    partition = [R(0, 5, False)] + [R(i, 5, True) for i in range(1, 5)] + [R(5, 6, False)]
    result = run_engine([partition, [R(0, 5, False)]], 1)
    assert result["skips"] == []
    assert result["order"] == model([partition, [R(0, 5, False)]])["order"]


def test_restored_partition_time_punctuates_before_first_record() -> None:
    fired: list[tuple[int, int]] = []
    holder: list[Recorder] = []

    def schedule(context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, lambda t: fired.append((t, len(holder[0].seen))))

    recorder = Recorder(on_init=schedule)
    holder.append(recorder)
    task, _ = make_task([A0, B0], recorder)
    inputs = [
        PartitionInput(A0, [raw("a", 0, 0, 98), raw("a", 0, 1, 101)], committed_partition_time=95),
        PartitionInput(B0, [raw("b", 0, 0, 99)]),
    ]
    result = replay(task, inputs, buffered_records_per_partition=1)
    assert fired == [(95, 0), (101, 3)]
    assert result.records_processed == 3
    assert result.committable_offsets[A0].partition_time == 101


def test_fatal_error_propagates_and_keeps_processed_records() -> None:
    task, proc = make_task([A0, B0])
    assert isinstance(proc, Recorder)
    inputs = [
        PartitionInput(A0, [raw("a", 0, 0, 10), raw("a", 0, 1, -1)]),
        PartitionInput(B0, [raw("b", 0, 0, 5), raw("b", 0, 1, 15)]),
    ]
    with pytest.raises(StreamsError) as info:
        replay(task, inputs, buffered_records_per_partition=1)
    assert (info.value.topic, info.value.offset, info.value.task_id) == ("a", 1, "0_1")
    assert [(t, o) for t, _, o, _ in proc.seen] == [("b", 0)]


def test_bad_buffer_size_and_duplicate_partitions_are_config_errors() -> None:
    task, _ = make_task([A0])
    with pytest.raises(ConfigError, match="buffered_records_per_partition must be at least 1"):
        replay(task, [PartitionInput(A0, [])], buffered_records_per_partition=0)
    with pytest.raises(ConfigError, match="same input partition twice"):
        replay(task, [PartitionInput(A0, []), PartitionInput(A0, [])])


def test_buffering_never_holds_more_than_the_buffer_in_the_fifo() -> None:
    pulled: list[int] = []

    def source() -> Any:
        for offset in range(50):
            pulled.append(offset)
            yield raw("a", 0, offset, offset)

    max_buffered: list[int] = []

    def watch(context: ProcessorContext, record: Any) -> None:
        max_buffered.append(len(pulled) - len(proc.seen))

    proc = Recorder(on_process=watch)
    task, _ = make_task([A0], proc)
    replay(task, [PartitionInput(A0, source())], buffered_records_per_partition=4)
    assert len(proc.seen) == 50
    assert max(max_buffered) <= 4 + 1
