"""A planned range that a still-open transaction holds back under read_committed (issue #27, 3a): the fetch error
says what is true, in Kafka's words, with no internal value (librdkafka's -1001, "no offset") in it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.errors import FetchError
from streamproc.kafka import clients
from streamproc.kafka.range_reader import RangeReader
from tests.integration.conftest import create_topic

pytestmark = pytest.mark.integration


def test_a_range_behind_an_open_transaction_says_so_without_a_sentinel(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    topic = create_topic(admin, unique("open-txn"), 1)
    producer = clients.producer(
        {"bootstrap.servers": kafka_broker}, **{"transactional.id": unique("open-txn-id"), "enable.idempotence": True}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"v", partition=0, key=str(i).encode())
    producer.flush(30)  # written, never committed: the last stable offset stays at 0
    try:
        reader = RangeReader({"bootstrap.servers": kafka_broker}, topic, 0, 0, 3, isolation_level="read_committed")
        with pytest.raises(FetchError) as failed:
            list(reader.records())
    finally:
        producer.abort_transaction(30)
    message = str(failed.value)
    assert "-1001" not in message
    assert message.startswith(f"{topic}-0 [0, 3): no record is readable under read_committed from offset 0 on")
    assert "a transaction is still open on this partition (its last stable offset is 0, its log end 3)" in message
