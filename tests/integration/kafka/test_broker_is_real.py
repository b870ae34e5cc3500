"""Proof that the session's broker is a real Kafka 4.2 broker: the behaviours streamproc relies on, observed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    Consumer,
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration.conftest import create_topic

OFFSET_END = -1  # librdkafka's OFFSET_END, which offsets_for_times answers when no record is late enough


def read_range(
    bootstrap: str, topic: str, partition: int, start: int, end: int, isolation: str = "read_uncommitted"
) -> list[Any]:
    """Every record of ``[start, end)`` the consumer delivers, by assigning the partition at ``start``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused-reader",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, partition, start)])
    records = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no record and no EOF from {topic}-{partition} within 10s"
            if msg.error():
                assert msg.error().code() == -191, msg.error()  # _PARTITION_EOF
                break
            if msg.offset() >= end:
                break
            records.append(msg)
    finally:
        consumer.close()
    return records


def test_records_read_back_by_offset_range_with_keys_partitions_and_timestamps(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("orders"), partitions=2)
    producer = Producer({"bootstrap.servers": kafka_broker, "enable.idempotence": True})
    for i in range(10):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 2, timestamp=1_000 + 10 * i)
    assert producer.flush(30) == 0

    records = read_range(kafka_broker, topic, 1, 1, 4)

    assert [(r.offset(), r.key(), r.value(), r.timestamp()) for r in records] == [
        (1, b"k3", b"v3", (TIMESTAMP_CREATE_TIME, 1_030)),
        (2, b"k5", b"v5", (TIMESTAMP_CREATE_TIME, 1_050)),
        (3, b"k7", b"v7", (TIMESTAMP_CREATE_TIME, 1_070)),
    ]


def test_offsets_for_times_gives_first_offset_at_or_after_timestamp(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("times"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    for ts in (100, 200, 200, 150, 300):  # out of order on purpose: the answer is by offset, not by sort
        producer.produce(topic, value=b"x", partition=0, timestamp=ts)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": kafka_broker, "group.id": unique("g")})
    try:

        def lookup(ts: int) -> int:
            [tp] = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
            offset: int = tp.offset
            return offset

        assert lookup(100) == 0
        assert lookup(101) == 1
        assert lookup(160) == 1  # offset 3 has 150 < 160, but offset 1 (200) comes first
        assert lookup(201) == 4
        assert lookup(301) == OFFSET_END
    finally:
        consumer.close()


def test_delete_records_moves_the_log_start_offset(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("purge"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(6):
        producer.produce(topic, value=str(i).encode(), partition=0)
    producer.flush(30)

    [future] = admin.delete_records([TopicPartition(topic, 0, 4)]).values()
    deleted = future.result(timeout=30)

    assert deleted.low_watermark == 4
    [earliest] = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()}).values()
    assert earliest.result(timeout=30).offset == 4
    assert [r.offset() for r in read_range(kafka_broker, topic, 0, 4, 6)] == [4, 5]


def test_read_committed_skips_aborted_records_and_markers_leave_offset_gaps(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("txn"))
    producer = Producer({"bootstrap.servers": kafka_broker, "transactional.id": unique("tx")})
    producer.init_transactions(30)
    for values, commit in ((["a", "b", "c"], True), (["x", "y"], False), (["d"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value.encode(), partition=0)
        producer.flush(30)  # else an abort purges the unsent records and they never reach the log
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    committed = read_range(kafka_broker, topic, 0, 0, 100, isolation="read_committed")
    uncommitted = read_range(kafka_broker, topic, 0, 0, 100, isolation="read_uncommitted")

    # offsets 3 and 6 are the commit/abort markers, 4-5 the aborted records, 8 the last commit marker
    assert [(r.offset(), r.value()) for r in committed] == [(0, b"a"), (1, b"b"), (2, b"c"), (7, b"d")]
    assert [r.offset() for r in uncommitted] == [0, 1, 2, 4, 5, 7]
    [latest] = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()}).values()
    assert latest.result(timeout=30).offset == 9


def test_altering_group_offsets_fails_while_a_member_is_active(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("grp"))
    group = unique("app")
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(3):
        producer.produce(topic, value=str(i).encode(), partition=0)
    producer.flush(30)
    member = Consumer({"bootstrap.servers": kafka_broker, "group.id": group, "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    try:
        for _ in range(30):
            if member.poll(1) is not None or member.assignment():
                break
        assert member.assignment(), "the consumer never joined its group"
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 2)])]
        [future] = admin.alter_consumer_group_offsets(request).values()
        [refused] = future.result(timeout=30).topic_partitions  # errors come per partition, not as an exception
        assert refused.error is not None
        assert refused.error.name() == "UNKNOWN_MEMBER_ID"
    finally:
        member.close()

    [future] = admin.alter_consumer_group_offsets(request).values()
    [accepted] = future.result(timeout=30).topic_partitions
    assert accepted.error is None
    assert accepted.offset == 2


def test_committed_offsets_read_back_with_their_metadata(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("meta"), partitions=2)
    group = unique("app")
    offsets = [TopicPartition(topic, 0, 7, metadata="AQAAAAAAAAPo"), TopicPartition(topic, 1, 3, metadata="")]

    [future] = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)]).values()
    future.result(timeout=30)

    [listed] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    got = {(tp.partition, tp.offset, tp.metadata) for tp in listed.result(timeout=30).topic_partitions}
    assert got == {(0, 7, "AQAAAAAAAAPo"), (1, 3, "")}
