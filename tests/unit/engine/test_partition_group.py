"""``PartitionGroup``: heap entry rules, next record, stream time, buffered counts, readiness (PG-1..PG-11)."""

from __future__ import annotations

import pytest

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.partition_group import PartitionGroup, RecordInfo
from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.timestamp_extractor import LogAndSkipOnInvalidTimestamp
from streamproc.errors import ProcessingError
from tests.unit.engine.builders import A0, B0, C0, make_task, raw

CONTINUE = TaskConfig(
    deserialization_exception_handler=LogAndContinueExceptionHandler(),
    default_timestamp_extractor=LogAndSkipOnInvalidTimestamp(),
)


def group(*partitions: TopicPartition, config: TaskConfig | None = None) -> PartitionGroup:
    task, _ = make_task(list(partitions), config=config or CONTINUE)
    return task.partition_group


def drain(pg: PartitionGroup) -> list[tuple[str, int, int]]:
    info = RecordInfo()
    out = []
    while (record := pg.next_record(info)) is not None:
        out.append((record.topic, record.offset, pg.stream_time))
    return out


def test_smallest_head_timestamp_first_and_stream_time_is_max_handed_out() -> None:
    pg = group(A0, B0)
    pg.add_raw_records(A0, [raw("a", 0, 0, 10), raw("a", 0, 1, 3), raw("a", 0, 2, 30)])
    pg.add_raw_records(B0, [raw("b", 0, 0, 5), raw("b", 0, 1, 20)])
    assert drain(pg) == [("b", 0, 5), ("a", 0, 10), ("a", 1, 10), ("b", 1, 20), ("a", 2, 30)]


def test_head_timestamp_not_partition_time_keys_the_heap() -> None:
    pg = group(A0, B0)
    pg.add_raw_records(A0, [raw("a", 0, 0, 100), raw("a", 0, 1, 1)])
    pg.add_raw_records(B0, [raw("b", 0, 0, 50)])
    assert [(t, o) for t, o, _ in drain(pg)] == [("b", 0), ("a", 0), ("a", 1)]


def test_ties_follow_java_heap_not_fifo() -> None:
    pg = group(A0, B0, C0)
    for tp in (A0, B0, C0):
        pg.add_raw_records(tp, [raw(tp.topic, 0, i, 7) for i in range(2)])
    assert [t for t, _, _ in drain(pg)] == ["a", "c", "a", "c", "b", "b"]


def test_queue_offered_only_when_going_from_empty_to_non_empty() -> None:
    pg = group(A0, B0)
    pg.add_raw_records(A0, [raw("a", 0, 0, 5)])
    pg.add_raw_records(A0, [raw("a", 0, 1, 1)])
    info = RecordInfo()
    first = pg.next_record(info)
    assert first is not None and first.offset == 0
    assert info.partition == A0
    second = pg.next_record(info)
    assert second is not None and second.offset == 1
    assert pg.next_record(info) is None
    assert info.queue is None


def test_placeholder_sorts_first_and_does_not_move_stream_time() -> None:
    pg = group(A0, B0)
    pg.add_raw_records(A0, [raw("a", 0, 0, 3), raw("a", 0, 1, 3, corrupt=True)])
    pg.add_raw_records(B0, [raw("b", 0, 0, 1)])
    info = RecordInfo()
    records = [pg.next_record(info) for _ in range(3)]
    assert [(r.topic, r.offset) for r in records if r is not None] == [("b", 0), ("a", 0), ("a", 1)]
    assert isinstance(records[2], CorruptedRecord)
    assert pg.stream_time == 3
    assert pg.partition_timestamp(A0) == 3


def test_num_buffered_counts_heads_and_records_skipped_in_update_head() -> None:
    pg = group(A0, B0)
    pg.add_raw_records(A0, [raw("a", 0, 0, 1), raw("a", 0, 1, 1, corrupt=True), raw("a", 0, 2, 2)])
    pg.add_raw_records(B0, [raw("b", 0, 0, 9)])
    assert pg.num_buffered() == 4
    assert pg.num_buffered(A0) == 3
    assert pg.all_partitions_buffered_locally()
    pg.next_record(RecordInfo())
    assert pg.num_buffered(A0) == 1
    assert pg.num_buffered() == 2
    pg.next_record(RecordInfo())
    assert not pg.all_partitions_buffered_locally()


def test_set_partition_time_raises_stream_time_to_max() -> None:
    pg = group(A0, B0)
    pg.set_partition_time(A0, 40)
    pg.set_partition_time(B0, 25)
    assert pg.stream_time == 40
    assert pg.partition_timestamp(B0) == 25
    pg.add_raw_records(B0, [raw("b", 0, 0, 30)])
    pg.next_record(RecordInfo())
    assert pg.stream_time == 40
    pg.clear()
    assert (pg.stream_time, pg.num_buffered(), pg.partition_timestamp(A0)) == (UNKNOWN, 0, UNKNOWN)


def test_unknown_partition_is_an_error() -> None:
    pg = group(A0)
    with pytest.raises(ProcessingError, match="Partition b-0 not found."):
        pg.add_raw_records(B0, [])


def test_ready_to_process_follows_kip_695() -> None:
    lags: dict[TopicPartition, int | None] = {A0: 0, B0: None}
    task, _ = make_task([A0, B0], config=TaskConfig(max_task_idle_ms=100))
    pg = PartitionGroup(
        {A0: task.partition_group.queue(A0), B0: task.partition_group.queue(B0)},
        max_task_idle_ms=100,
        lag_provider=lags.get,
    )
    pg.add_raw_records(A0, [raw("a", 0, 0, 1)])
    assert not pg.ready_to_process(1000)  # b's lag unknown
    lags[B0] = 3
    assert not pg.ready_to_process(1000)  # b has data on the broker
    lags[B0] = 0
    assert not pg.ready_to_process(1000)  # idle deadline 1100 not reached
    assert pg.ready_to_process(1100)  # enforced
    pg.disable_idling()
    pg.next_record(RecordInfo())
    assert pg.ready_to_process(0)


def test_ready_with_zero_idle_and_nothing_buffered_is_not_ready() -> None:
    task, _ = make_task([A0], config=TaskConfig(max_task_idle_ms=0))
    assert not task.partition_group.ready_to_process(0)
    task.partition_group.add_raw_records(A0, [raw("a", 0, 0, 1)])
    assert task.partition_group.ready_to_process(0)
