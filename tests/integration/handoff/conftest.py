"""The count topology's input, produced once per session for every hand-off test module."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.spark.conftest import wait_for_leaders

PARTITIONS = 2
RECORDS = 600


@pytest.fixture(scope="session")
def input_topic(kafka_broker: str, admin: AdminClient) -> str:
    create_topic(admin, topologies.INPUT, partitions=PARTITIONS)
    create_topic(admin, topologies.OUTPUT, partitions=PARTITIONS)
    wait_for_leaders(admin, topologies.INPUT, topologies.OUTPUT)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random"})
    rng = random.Random(3)
    for i in range(RECORDS):
        key = f"k{rng.randint(0, 30)}".encode()
        producer.produce(topologies.INPUT, key=key, value=b"x", timestamp=1_000_000 + i * 10 + rng.randint(-50, 50))
    producer.flush(60)
    return topologies.INPUT
