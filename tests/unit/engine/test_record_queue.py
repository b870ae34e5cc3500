"""``RecordQueue``: lazy head, partition time, drops, placeholder, refill (ordering.md RQ-1..RQ-9)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler, LogAndFailExceptionHandler
from streamproc.engine.dropped_records import DroppedRecordsSensor
from streamproc.engine.processor_topology import SourceNode
from streamproc.engine.record_deserializer import RecordDeserializer
from streamproc.engine.record_queue import UNKNOWN, RecordQueue
from streamproc.engine.records import ConsumerRecord, TimestampType
from streamproc.engine.timestamp_extractor import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
)
from streamproc.errors import StreamsError
from tests.unit.engine.builders import A0, raw, string_deserializer


class Spy:
    """An extractor that records (offset, partition time) and returns the record's timestamp."""

    canonical_name = "test.Spy"

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
        self.calls.append((record.offset, partition_time))
        return record.timestamp


def make_queue(
    extractor: TimestampExtractor | None = None, *, resume: bool = True
) -> tuple[RecordQueue, DroppedRecordsSensor]:
    source = SourceNode("source", ["a"], string_deserializer, string_deserializer)
    dropped = DroppedRecordsSensor(lambda: 0)
    log = logging.LoggerAdapter(logging.getLogger("test"), {})
    handler = LogAndContinueExceptionHandler() if resume else LogAndFailExceptionHandler()
    deserializer = RecordDeserializer(source, handler, "0_1", dropped, log)
    queue = RecordQueue(A0, deserializer, extractor or LogAndSkipOnInvalidTimestamp(), dropped, log)
    return queue, dropped


def test_only_the_head_is_extracted_and_next_head_sees_partition_time_after_poll() -> None:
    spy = Spy()
    queue, _ = make_queue(spy)
    assert queue.add_raw_records([raw("a", 0, 0, 10), raw("a", 0, 1, 5), raw("a", 0, 2, 7)]) == 3
    assert spy.calls == [(0, UNKNOWN)]
    assert queue.head_record_timestamp() == 10
    record = queue.poll()
    assert (record.offset, record.timestamp) == (0, 10)
    assert spy.calls == [(0, UNKNOWN), (1, 10)]
    queue.poll()
    assert spy.calls[-1] == (2, 10)
    assert queue.partition_time == 10
    queue.poll()
    assert queue.partition_time == 10
    assert queue.is_empty()
    assert queue.head_record_timestamp() == UNKNOWN
    assert queue.head_record_offset() is None


def test_deserialized_record_reports_create_time_and_keeps_raw_bytes() -> None:
    queue, _ = make_queue(Spy())
    record = ConsumerRecord.raw("a", 0, 0, 4, b"k", b"v", timestamp_type=TimestampType.LOG_APPEND_TIME)
    queue.add_raw_records([record])
    head = queue.poll()
    assert head.record.timestamp_type is TimestampType.CREATE_TIME
    assert (head.key, head.value, head.raw_key, head.raw_value) == ("k", "v", b"k", b"v")


def test_drops_with_a_valid_record_behind_leave_no_placeholder(caplog: pytest.LogCaptureFixture) -> None:
    queue, dropped = make_queue()
    caplog.set_level(logging.WARNING)
    queue.add_raw_records([raw("a", 0, 0, 1, corrupt=True), raw("a", 0, 1, -3), raw("a", 0, 2, 4)])
    assert queue.head_record_offset() == 2
    assert queue.size() == 1
    assert [(e.offset, e.reason) for e in dropped.events] == [(0, "deserialization"), (1, "negative_timestamp")]
    assert "Skipping record due to deserialization error. topic=[a] partition=[0] offset=[0]" in caplog.text
    assert (
        "Skipping record due to negative extracted timestamp. topic=[a] partition=[0] offset=[1] "
        "extractedTimestamp=[-3] extractor=[org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp]"
    ) in caplog.text


def test_trailing_drops_leave_a_placeholder_of_the_last_one() -> None:
    queue, dropped = make_queue()
    queue.add_raw_records([raw("a", 0, 0, 9), raw("a", 0, 1, 1, corrupt=True), raw("a", 0, 2, -1)])
    queue.poll()
    assert dropped.total == 2
    placeholder = queue.poll()
    assert isinstance(placeholder, CorruptedRecord)
    assert (placeholder.offset, placeholder.timestamp) == (2, -1)
    assert queue.partition_time == 9
    assert queue.is_empty()


def test_only_skipped_records_still_make_the_queue_non_empty() -> None:
    queue, _ = make_queue()
    assert queue.add_raw_records([raw("a", 0, 0, 1, corrupt=True)]) == 1
    assert queue.head_record_timestamp() == -1
    assert queue.head_record_offset() == 0


def test_negative_timestamp_with_fail_on_invalid_raises_with_position() -> None:
    queue, _ = make_queue(FailOnInvalidTimestamp())
    queue.add_raw_records([raw("a", 0, 0, 5), raw("a", 0, 1, -1)])
    with pytest.raises(StreamsError) as info:
        queue.poll()
    assert (info.value.topic, info.value.partition, info.value.offset) == ("a", 0, 1)
    assert info.value.reason == "negative_timestamp"
    assert "topic=[a] partition=[0] offset=[1]" in str(info.value)


def test_extractor_raising_is_wrapped_and_chained() -> None:
    class Broken:
        def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
            raise KeyError("boom")

    queue, _ = make_queue(Broken())
    with pytest.raises(StreamsError) as info:
        queue.add_raw_records([raw("a", 0, 4, 5)])
    assert info.value.kafka_message.startswith(
        "Fatal user code error in TimestampExtractor callback for record ConsumerRecord(topic = a, partition = 0, "
    )
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.offset == 4


def test_deserialization_fail_raises_kafka_message() -> None:
    queue, dropped = make_queue(resume=False)
    with pytest.raises(StreamsError) as info:
        queue.add_raw_records([raw("a", 0, 3, 1, corrupt=True)])
    assert info.value.kafka_message.startswith(
        "Deserialization exception handler is set to fail upon a deserialization error."
    )
    assert "deserialization.exception.handler" in info.value.kafka_message
    assert isinstance(info.value.__cause__, ValueError)
    assert dropped.total == 0


def test_handler_that_raises_is_fatal() -> None:
    class Crashing:
        def handle_error(self, *args: Any) -> Any:
            raise RuntimeError("handler bug")

    source = SourceNode("source", ["a"], string_deserializer, string_deserializer)
    dropped = DroppedRecordsSensor(lambda: 0)
    log = logging.LoggerAdapter(logging.getLogger("test"), {})
    queue = RecordQueue(
        A0, RecordDeserializer(source, Crashing(), "0_1", dropped, log), FailOnInvalidTimestamp(), dropped, log
    )
    with pytest.raises(StreamsError, match="Fatal user code error in deserialization error callback") as info:
        queue.add_raw_records([raw("a", 0, 0, 1, corrupt=True)])
    assert isinstance(info.value.__cause__, RuntimeError)


def test_partition_time_never_goes_backwards_and_restores_and_clears() -> None:
    queue, _ = make_queue(Spy())
    queue.set_partition_time(50)
    queue.add_raw_records([raw("a", 0, 0, 10), raw("a", 0, 1, 60), raw("a", 0, 2, 20)])
    queue.poll()
    assert queue.partition_time == 50
    queue.poll()
    queue.poll()
    assert queue.partition_time == 60
    queue.add_raw_records([raw("a", 0, 3, 1)])
    queue.clear()
    assert (queue.size(), queue.partition_time, queue.is_empty()) == (0, UNKNOWN, True)


def test_refill_keeps_fifo_from_being_seen_empty() -> None:
    """With a refill, trailing drops beyond the buffer still find the valid record behind them (no placeholder)."""
    queue, _ = make_queue()
    pending = iter([raw("a", 0, 1, 1, corrupt=True), raw("a", 0, 2, 1, corrupt=True), raw("a", 0, 3, 8)])

    def refill() -> list[ConsumerRecord[bytes | None, bytes | None]]:
        return [r for r in [next(pending, None)] if r is not None]

    queue.set_refill(refill)
    queue.add_raw_records([raw("a", 0, 0, 5)])
    first = queue.poll()
    assert first.offset == 0
    head = queue.poll()
    assert not isinstance(head, CorruptedRecord)
    assert head.offset == 3
    assert queue.is_empty()


def test_poll_on_empty_queue_is_an_error() -> None:
    queue, _ = make_queue()
    with pytest.raises(IndexError, match="a-0"):
        queue.poll()
