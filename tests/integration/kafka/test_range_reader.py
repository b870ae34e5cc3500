"""``RangeReader`` on the real broker: gaps from transactions, how the end is reached, and lost offsets."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.engine.records import TimestampType
from streamproc.errors import FetchError
from streamproc.kafka.range_reader import READ_COMMITTED, READ_UNCOMMITTED, RangeReader, read_range
from tests.integration.conftest import create_topic


def test_read_committed_range_records_gaps_and_ends_at_eof_past_the_markers(kafka_broker: str, txn_topic: str) -> None:
    records, evidence = read_range({"bootstrap.servers": kafka_broker}, txn_topic, 0, 0, 9)

    assert [(r.offset, r.value) for r in records] == [(0, b"a"), (1, b"b"), (2, b"c"), (7, b"d")]
    assert records[0].key == b"k" and records[0].headers == (("h", b"1"),)
    assert records[0].timestamp_type is TimestampType.CREATE_TIME
    assert evidence.delivered == [(0, 2), (7, 7)]
    assert evidence.delivered_count == 4
    assert evidence.reached_end_by == "eof_position"
    assert evidence.final_position == 9


def test_read_uncommitted_range_delivers_aborted_records(kafka_broker: str, txn_topic: str) -> None:
    _, evidence = read_range({"bootstrap.servers": kafka_broker}, txn_topic, 0, 0, 9, isolation_level=READ_UNCOMMITTED)

    assert evidence.delivered == [(0, 2), (4, 5), (7, 7)]


def test_a_range_inside_the_log_stops_at_its_end_without_reading_further(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("plain"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(10):
        producer.produce(topic, value=str(i).encode(), partition=0, timestamp=100 + i)
    producer.flush(30)

    records, evidence = read_range({"bootstrap.servers": kafka_broker}, topic, 0, 3, 6)
    empty, empty_evidence = read_range({"bootstrap.servers": kafka_broker}, topic, 0, 5, 5)

    assert [r.offset for r in records] == [3, 4, 5]
    assert [r.timestamp for r in records] == [103, 104, 105]
    assert evidence.reached_end_by == "last_offset"
    assert empty == [] and empty_evidence.reached_end_by == "empty"


def test_offsets_lost_to_retention_are_named_not_skipped(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("lost"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(6):
        producer.produce(topic, value=str(i).encode(), partition=0)
    producer.flush(30)
    [future] = admin.delete_records([TopicPartition(topic, 0, 4)]).values()
    future.result(timeout=30)

    with pytest.raises(FetchError, match=r"offsets 0\.\.3 were deleted by retention \(log start is now 4\)"):
        read_range({"bootstrap.servers": kafka_broker}, topic, 0, 0, 6)


def test_a_planned_end_beyond_the_readable_log_fails(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("short"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(3):
        producer.produce(topic, value=str(i).encode(), partition=0)
    producer.flush(30)
    reader = RangeReader({"bootstrap.servers": kafka_broker}, topic, 0, 0, 20, isolation_level=READ_COMMITTED)

    with pytest.raises(FetchError, match=r"no record is readable under read_committed past offset 2, before the "
                       r"planned end: the log ends at 3"):  # fmt: skip
        list(reader.records())
    assert reader.evidence.delivered == [(0, 2)]


def test_a_missing_topic_or_partition_is_named_at_once(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("two"), partitions=2)

    with pytest.raises(FetchError, match=r"partition 5 does not exist; '.*' has 2 partition\(s\)"):
        read_range({"bootstrap.servers": kafka_broker}, topic, 5, 0, 3)
    with pytest.raises(FetchError, match="topic 'never-created-topic' does not exist"):
        read_range({"bootstrap.servers": kafka_broker}, "never-created-topic", 0, 0, 3)
