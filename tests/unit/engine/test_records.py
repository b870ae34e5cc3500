"""``ConsumerRecord.toString`` text (quoted by extractor errors), ``TopicPartition`` order, ``Record`` copies."""

from __future__ import annotations

import pytest

from streamproc.engine.records import (
    NULL_SIZE,
    ConsumerRecord,
    ProcessorRecordContext,
    Record,
    RecordMetadata,
    TimestampType,
    TopicPartition,
)


def test_consumer_record_to_string_matches_kafka() -> None:
    record = ConsumerRecord("a", 0, 1, -1, TimestampType.CREATE_TIME, "k", "v1", (), None, 1, 2)
    assert str(record) == (
        "ConsumerRecord(topic = a, partition = 0, leaderEpoch = null, offset = 1, CreateTime = -1, "
        "deliveryCount = null, serialized key size = 1, serialized value size = 2, "
        "headers = RecordHeaders(headers = [], isReadOnly = false), key = k, value = v1)"
    )


def test_to_string_with_headers_null_and_log_append_time() -> None:
    record = ConsumerRecord.raw(
        "t",
        3,
        7,
        5,
        None,
        None,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        headers=(("h", b"\x01\xff"),),
        leader_epoch=4,
    )
    text = str(record)
    assert "leaderEpoch = 4" in text
    assert "LogAppendTime = 5" in text
    assert "RecordHeader(key = h, value = [1, -1])" in text
    assert "key = null, value = null" in text
    assert record.serialized_key_size == NULL_SIZE


def test_raw_sizes_are_byte_lengths() -> None:
    record = ConsumerRecord.raw("t", 0, 0, 0, b"abc", b"")
    assert (record.serialized_key_size, record.serialized_value_size) == (3, 0)
    assert record.topic_partition == TopicPartition("t", 0)


def test_topic_partition_order_is_topic_code_points_then_partition() -> None:
    partitions = [TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2), TopicPartition("B", 5)]
    assert [str(p) for p in sorted(partitions)] == ["B-5", "a-2", "a-10", "b-0"]


def test_record_with_methods_copy() -> None:
    record = Record("k", "v", 5, (("h", b"1"),))
    assert record.with_key(1) == Record(1, "v", 5, (("h", b"1"),))
    assert record.with_value(None).value is None
    assert record.with_timestamp(9).timestamp == 9
    assert record.with_headers(()).headers == ()
    assert record.key == "k"


def test_record_metadata_absent_outside_a_record() -> None:
    assert ProcessorRecordContext(5, -1, -1, None).record_metadata() is None
    assert ProcessorRecordContext(5, 3, 1, "t").record_metadata() == RecordMetadata("t", 1, 3)


def test_topic_partition_parse_is_the_one_reading_of_topic_dash_partition() -> None:
    """Used by the plan, the 4.3 offsets column family and the scenario runner alike."""
    assert TopicPartition.parse("orders-v2-12") == TopicPartition("orders-v2", 12)
    assert str(TopicPartition.parse("a-0")) == "a-0"
    for bad in ("orders", "-1", "orders-", "orders-x"):
        with pytest.raises(ValueError, match="is not a partition written as"):
            TopicPartition.parse(bad)
