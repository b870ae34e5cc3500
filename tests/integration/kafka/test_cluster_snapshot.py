"""A live ``ClusterSnapshot`` from the real broker, planned by the pure planner: the plan step end to end."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_snapshot
from streamproc.kafka.librdkafka import alter_committed_offsets
from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    CommittedStart,
    IsolationLevel,
    PlanRequest,
    ToDatetimeStart,
)
from streamproc.plan.cluster_snapshot import TopicPartition as TP
from streamproc.plan.positions import plan_ranges
from streamproc.plan.refusals import GroupActive, MissingTopic
from tests.integration.conftest import create_topic

# Kafka Streams' commit metadata for partition time 1005 (version 2 + time + empty processor metadata, base64).
METADATA_1005 = "AgAAAAAAAAPtAA=="


@pytest.fixture
def orders(kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]) -> str:
    topic = create_topic(admin, unique("orders"), partitions=2)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for p in (0, 1):
        for i in range(5):
            producer.produce(topic, value=b"v", partition=p, timestamp=1_000 + 10 * i)
    producer.flush(30)
    return topic


def test_committed_offsets_and_metadata_become_ranges_to_latest(
    kafka_broker: str, admin: AdminClient, orders: str, unique: Callable[[str], str]
) -> None:
    app_id = unique("app")
    # partition 1: never committed; the metadata exactly (confluent-kafka's alter_consumer_group_offsets adds a NUL)
    [answer] = alter_committed_offsets(admin, app_id, [(orders, 0, 2, METADATA_1005)], timeout_s=30)
    assert answer.error == 0
    app = ApplicationSpec(application_id=app_id, source_topics=(orders,))

    snapshot = read_snapshot({"bootstrap.servers": kafka_broker}, app, PlanRequest())
    plan = plan_ranges(snapshot, app, PlanRequest(start=CommittedStart()))

    assert snapshot.group is not None and snapshot.group.state == "Empty"
    assert snapshot.topics[orders].partitions[0].high_watermark == 5
    by_tp = {r.tp: r for r in plan.ranges}
    assert (by_tp[TP(orders, 0)].start, by_tp[TP(orders, 0)].end) == (2, 5)
    assert by_tp[TP(orders, 0)].partition_time == 1_005
    assert (by_tp[TP(orders, 1)].start, by_tp[TP(orders, 1)].end) == (0, 5)  # auto.offset.reset=earliest
    assert [n.code for n in by_tp[TP(orders, 1)].notes] == ["no_committed_offset"]


def test_a_datetime_start_is_looked_up_on_the_broker(
    kafka_broker: str, orders: str, unique: Callable[[str], str]
) -> None:
    app = ApplicationSpec(
        application_id=unique("app"), source_topics=(orders,), isolation_level=IsolationLevel.READ_COMMITTED
    )
    request = PlanRequest(start=ToDatetimeStart(1_025))

    plan = plan_ranges(read_snapshot({"bootstrap.servers": kafka_broker}, app, request), app, request)

    assert {(r.tp.partition, r.start, r.end) for r in plan.ranges} == {(0, 3, 5), (1, 3, 5)}


def test_an_active_application_group_is_refused(kafka_broker: str, orders: str, unique: Callable[[str], str]) -> None:
    app_id = unique("app")
    member = Consumer({"bootstrap.servers": kafka_broker, "group.id": app_id, "client.id": "live-instance"})
    member.subscribe([orders])
    try:
        for _ in range(30):
            member.poll(1)
            if member.assignment():
                break
        app = ApplicationSpec(application_id=app_id, source_topics=(orders,))
        snapshot = read_snapshot({"bootstrap.servers": kafka_broker}, app, PlanRequest())
        with pytest.raises(GroupActive, match="live-instance"):
            plan_ranges(snapshot, app, PlanRequest())
    finally:
        member.close()


def test_a_missing_source_topic_is_refused(kafka_broker: str, orders: str, unique: Callable[[str], str]) -> None:
    app = ApplicationSpec(application_id=unique("app"), source_topics=(orders, "no-such-topic"))

    snapshot = read_snapshot({"bootstrap.servers": kafka_broker}, app, PlanRequest())

    with pytest.raises(MissingTopic, match="'no-such-topic'"):
        plan_ranges(snapshot, app, PlanRequest())
