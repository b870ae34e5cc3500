"""The fetch's consume without Message objects (``kafka/native_consume.py``) against confluent-kafka's, on the real
broker: the same records give byte-identical segments, the same evidence, and the same messages one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.errors import FetchError
from streamproc.fetch.range_fetch import _TIMESTAMP_TYPE_IDS
from streamproc.kafka.message_kernel import message_kernel
from streamproc.kafka.native_consume import native_kernel
from streamproc.kafka.range_reader import READ_COMMITTED, READ_UNCOMMITTED, RangeEvidence, RangeReader
from streamproc.storage.segments import SegmentColumns
from tests.integration.conftest import create_topic

# Every shape a record's fields take: null and empty keys and values, headers absent, empty, repeated, with null and
# empty values and a non-ASCII name, timestamps of both signs' edges.
RECORDS: list[dict[str, Any]] = [
    {"key": None, "value": None},
    {"key": b"", "value": b""},
    {"key": b"k", "value": b"v" * 300, "headers": [("h", b"1"), ("h", None), ("é-名", b"")]},
    {"key": b"\x00\xff", "value": None, "headers": [("only", None)]},
    {"key": None, "value": b"x", "timestamp": 1},
    *({"key": b"key-%d" % i, "value": b"value-%d" % i, "timestamp": 1_767_225_600_000 + i} for i in range(40)),
]


def _produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for record in RECORDS:
        producer.produce(topic, partition=0, **record)
    assert producer.flush(30) == 0


def _segments(
    bootstrap: str, topic: str, end: int, *, native: bool, compiled: bool, isolation: str = READ_COMMITTED
) -> tuple[list[bytes], RangeEvidence, set[str]]:
    """Read ``[0, end)`` and cut it into segments of at most 7 records and 400 bytes (so that segments close inside
    batches, by count and by size); the last segment ends with the bytes the fills counted."""
    reader = RangeReader({"bootstrap.servers": bootstrap}, topic, 0, 0, end, isolation_level=isolation)
    kernel = message_kernel() if compiled else None
    segments, columns, kinds, size = [], SegmentColumns(), set(), 0
    for batch in reader.batches(native=native):
        kinds.add(type(batch).__name__)
        index = 0
        while index < len(batch):
            index, added = columns.fill(batch, index, 7, 400, _TIMESTAMP_TYPE_IDS, kernel)
            size += added
            if index < len(batch):
                segments.append(columns.encode(topic, 0))
                columns = SegmentColumns()
    segments.append(columns.encode(topic, 0))
    segments.append(str(size).encode())
    return segments, reader.evidence, kinds


@pytest.fixture(autouse=True)
def _native() -> None:
    assert native_kernel() is not None, "the compiled kernel is not built or librdkafka is not reachable"


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_native_batches_stage_the_same_segments_as_confluent_kafkas_messages(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], timestamp_type: str
) -> None:
    topic = create_topic(admin, unique("native"), config={"message.timestamp.type": timestamp_type})
    _produce(kafka_broker, topic)
    end = len(RECORDS)

    reference, reference_evidence, reference_kinds = _segments(kafka_broker, topic, end, native=False, compiled=True)
    native, native_evidence, native_kinds = _segments(kafka_broker, topic, end, native=True, compiled=True)
    # the Python loop over the native batch's message views: the views give what confluent-kafka's Messages give
    views, _, _ = _segments(kafka_broker, topic, end, native=True, compiled=False)

    assert reference_kinds == {"list"} and native_kinds == {"Batch"}
    assert len(native) > -(-end // 7) + 1  # some segments closed by size
    assert native == reference == views
    assert native_evidence == reference_evidence


@pytest.mark.parametrize("isolation", [READ_COMMITTED, READ_UNCOMMITTED])
def test_native_batches_read_a_transactional_log_as_confluent_kafka_does(
    kafka_broker: str, txn_topic: str, isolation: str
) -> None:
    reference, reference_evidence, _ = _segments(kafka_broker, txn_topic, 9, native=False, compiled=True,
                                                 isolation=isolation)  # fmt: skip
    native, native_evidence, _ = _segments(kafka_broker, txn_topic, 9, native=True, compiled=True, isolation=isolation)

    assert native == reference
    assert native_evidence == reference_evidence
    assert native_evidence.reached_end_by == "eof_position"  # the partition-EOF event, read as a message's error


def test_a_batch_is_unreadable_once_released_and_slices_only_from_its_start(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("release"))
    _produce(kafka_broker, topic)
    reader = RangeReader({"bootstrap.servers": kafka_broker}, topic, 0, 0, len(RECORDS))
    batches = reader.batches(native=True)
    batch = next(batches)
    first, head = batch[0], batch[:2]
    assert (first.offset(), first.key(), first.value(), len(head), head[-1].offset()) == (0, None, None, 2, 1)
    with pytest.raises(ValueError, match="batch\\[:k\\]"):
        batch[1:]
    with pytest.raises(ValueError, match="not a slice"):
        head.release()

    batches.close()  # the reader releases its batch before its consumer closes

    for stale in (lambda: first.offset(), lambda: head[0], lambda: batch[0].key()):
        with pytest.raises(ValueError, match="released"):
            stale()


def test_offsets_lost_to_retention_are_named_when_read_natively(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("lost"))
    _produce(kafka_broker, topic)
    [future] = admin.delete_records([TopicPartition(topic, 0, 4)]).values()
    future.result(timeout=30)
    reader = RangeReader({"bootstrap.servers": kafka_broker}, topic, 0, 0, len(RECORDS))

    with pytest.raises(FetchError, match=r"offsets 0\.\.3 were deleted by retention \(log start is now 4\)"):
        for _ in reader.batches(native=True):
            pass
