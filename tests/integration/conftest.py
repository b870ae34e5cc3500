"""Helpers and fixtures shared by the integration tests that write to the real broker."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(admin: AdminClient, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    """Create a topic on the session broker and wait until every partition has a leader (a plan made right after
    CreateTopics answered can otherwise still find the topic missing from the broker's metadata, under load)."""
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    for future in admin.create_topics([topic]).values():
        future.result(timeout=30)
    wait_for_leaders(admin, name)
    return name


def delete_topics(admin: AdminClient, topics: list[str]) -> None:
    """Delete ``topics`` (those that exist) and wait until the broker no longer lists any of them."""
    existing = [t for t in topics if t in admin.list_topics(timeout=30).topics]
    if existing:
        for future in admin.delete_topics(existing).values():
            future.result(timeout=60)
    deadline = time.monotonic() + 60
    while any(t in admin.list_topics(timeout=30).topics for t in topics):
        assert time.monotonic() < deadline, f"topics {topics} still exist 60 s after deletion"
        time.sleep(0.5)


def recreate_topics(admin: AdminClient, topics: list[str], partitions: int) -> None:
    """``topics`` empty, with ``partitions`` partitions each: fixed names (an example's, a program's) that an earlier
    test or session may have left."""
    delete_topics(admin, topics)
    for topic in topics:
        create_topic(admin, topic, partitions=partitions)


def wait_for_leaders(admin: AdminClient, *topics: str) -> None:
    """Every partition of ``topics`` has a leader: right after creation the planner's reads may meet
    ``NOT_LEADER_FOR_PARTITION`` or a missing topic otherwise."""
    deadline = time.monotonic() + 30
    while True:
        metadata = admin.list_topics(timeout=10).topics
        if all(t in metadata and all(p.leader >= 0 for p in metadata[t].partitions.values()) for t in topics):
            return
        assert time.monotonic() < deadline, f"topics {topics} have no leaders after 30 s"
        time.sleep(0.2)


@pytest.fixture
def txn_topic(kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]) -> str:
    """Offsets: a b c (0-2), commit marker 3, aborted x y (4-5), abort marker 6, d (7), commit marker 8."""
    topic = create_topic(admin, unique("txn"))
    producer = Producer({"bootstrap.servers": kafka_broker, "transactional.id": unique("tx")})
    producer.init_transactions(30)
    for values, commit in ((["a", "b", "c"], True), (["x", "y"], False), (["d"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, key=b"k", value=value.encode(), partition=0, headers=[("h", b"1")])
        producer.flush(30)  # else an abort purges the unsent records and they never reach the log
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    return topic
