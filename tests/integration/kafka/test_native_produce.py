"""The hand-off's produce from Arrow's buffers (``kafka/native_produce.py``) against confluent-kafka's
``Producer.produce``, on the real broker: the same rows arrive as the same records, in order, through a full queue,
and a refusal raises what ``produce`` raises."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.handoff.task_results import batch_rows
from streamproc.kafka.native_produce import ColumnProducer, column_producer
from streamproc.spark.task_output import OUTPUT_SCHEMA
from tests.integration.conftest import create_topic

#: Every shape a produced record's fields take: null and empty keys and values (a null value is a tombstone, an
#: empty one is not), large and binary ones, timestamps from 1 ms to now's order.
ROWS: list[tuple[int, bytes | None, bytes | None]] = [
    (1, None, None),
    (2, b"", b""),
    (3, b"k", None),
    (4, None, b"v" * 5000),
    (1_767_225_600_000, b"\x00\xff", b"\x00"),
    *((1_767_225_600_000 + i, b"key-%d" % i, b"value-%d" % i) for i in range(60)),
]


def _batch(rows: list[tuple[int, bytes | None, bytes | None]]) -> pa.RecordBatch:
    columns = {
        "timestamp": pa.array([r[0] for r in rows], pa.int64()),
        "key": pa.array([r[1] for r in rows], pa.binary()),
        "value": pa.array([r[2] for r in rows], pa.binary()),
        "headers": pa.array([[] for _ in rows], OUTPUT_SCHEMA.field("headers").type),
    }
    return pa.record_batch(columns)


def _read(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "native-produce", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    records: list[tuple[int, bytes | None, bytes | None]] = []
    try:
        while len(records) < count:
            messages = consumer.consume(count - len(records), timeout=30)  # returns once they are all here
            assert messages, f"{topic}-{partition}: {len(records)} of {count} records within 30 s"
            for message in messages:
                assert message.error() is None, message.error()
                records.append((message.timestamp()[1], message.key(), message.value()))
    finally:
        consumer.close()
    return records


def _column_producer(producer: Producer) -> ColumnProducer:
    columns = column_producer(producer)
    assert columns is not None, "the compiled kernel is not built or librdkafka is not reachable"
    return columns


def test_rows_from_arrow_buffers_arrive_as_confluent_kafkas_produce_sends_them(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    """Slices too (their buffers start before their first row), where the Python loop reads the same rows."""
    topic = create_topic(admin, unique("native-produce"), partitions=2)
    batch = _batch(ROWS)
    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
    columns = _column_producer(producer)
    produced = columns.produce(topic, 0, batch.slice(3, 40)) + columns.produce(topic, 0, batch.slice(0, 3))
    produced += columns.produce(topic, 0, batch.slice(43))
    for timestamp, key, value, _ in batch_rows(batch.slice(3, 40)):
        producer.produce(topic, value, key, 1, None, None, timestamp, None)
    assert producer.flush(30) == 0
    assert produced == len(ROWS)
    expected = ROWS[3:43] + ROWS[:3] + ROWS[43:]
    assert _read(kafka_broker, topic, 0, len(ROWS)) == expected
    assert _read(kafka_broker, topic, 1, 40) == ROWS[3:43]


def test_a_full_queue_is_served_and_the_batch_goes_on_in_order(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("native-produce-full"))
    rows = [(1_767_225_600_000 + i, b"k%d" % (i % 7), b"v%d" % i) for i in range(3000)]
    producer = Producer({"bootstrap.servers": kafka_broker, "queue.buffering.max.messages": 100})
    assert _column_producer(producer).produce(topic, 0, _batch(rows)) == len(rows)
    assert producer.flush(30) == 0
    assert _read(kafka_broker, topic, 0, len(rows)) == rows


def test_a_refused_row_raises_what_produce_raises(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    """A partition the topic does not have, once the producer knows the topic's partitions."""
    topic = create_topic(admin, unique("native-produce-refused"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    producer.produce(topic, b"first", None, 0)
    assert producer.flush(30) == 0
    raised: list[Any] = []
    for produce in (
        lambda: producer.produce(topic, b"v", b"k", 5, None, None, 1, None),
        lambda: _column_producer(producer).produce(topic, 5, _batch([(1, b"k", b"v")])),
    ):
        with pytest.raises(KafkaException) as refused:
            produce()
        raised.append(refused.value.args[0])
    assert raised[0].code() == raised[1].code() and raised[0].str() == raised[1].str()
    assert raised[0].name() == "_UNKNOWN_PARTITION", raised[0]


def test_a_topic_name_librdkafka_refuses_raises_what_produce_raises(kafka_broker: str) -> None:
    producer = Producer({"bootstrap.servers": kafka_broker})
    name = "t" * 600  # past librdkafka's longest topic name
    with pytest.raises(KafkaException) as by_produce:
        producer.produce(name, b"v", b"k", 0, None, None, 1, None)
    with pytest.raises(KafkaException) as by_columns:
        _column_producer(producer).produce(name, 0, _batch([(1, b"k", b"v")]))
    assert by_columns.value.args[0].code() == by_produce.value.args[0].code()


def test_a_record_of_timestamp_0_reaches_kafka_with_the_time_it_was_produced(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    """librdkafka takes a timestamp of 0 for "now", through ``produce`` and the columns alike (Kafka Streams' producer
    keeps 0): why the hand-off warns of such records (``publish._EpochStamps``). Should librdkafka ever keep 0,
    this fails, and the warning goes."""
    topic = create_topic(admin, unique("native-produce-epoch"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    before = int(time.time() * 1000)
    producer.produce(topic, b"v", b"k", 0, None, None, 0, None)
    assert _column_producer(producer).produce(topic, 0, _batch([(0, b"k", b"v")])) == 1
    assert producer.flush(30) == 0
    stamps = [timestamp for timestamp, _, _ in _read(kafka_broker, topic, 0, 2)]
    assert all(before <= stamp <= int(time.time() * 1000) for stamp in stamps), stamps
