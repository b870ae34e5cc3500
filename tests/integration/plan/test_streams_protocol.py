"""A cluster without KIP-1071's streams group protocol (a real broker with
``group.coordinator.rebalance.protocols=classic,consumer``, docs/streams-groups.md §5): an application with
``group.protocol=streams`` could not start there after a hand-off, and leaves no group to see, so a plan told the
application's ``group.protocol`` asks the broker (``StreamsGroupDescribe``) and refuses in one line. The session's
broker (the protocol on, Kafka 4.2's default) answers that it offers it: ``test_handoff_streams_group`` plans with
``group.protocol=streams`` there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.streams_protocol import ask_streams_protocol
from tests.integration.conftest import create_topic, wait_for_leaders
from tests.integration.handoff.test_handoff import run

pytestmark = pytest.mark.integration

APP, TOPIC = "sp-no-streams-app", "sp-no-streams-words"


@pytest.fixture(scope="module")
def broker_without_streams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from streamproc_dev import broker

    workdir = tmp_path_factory.mktemp("kafka-no-streams")
    handle = broker.start(workdir, heap="512m", overrides={"group.coordinator.rebalance.protocols": "classic,consumer"})
    try:
        yield handle.address
    finally:
        broker.stop(workdir)


def test_a_plan_for_a_streams_app_is_refused_on_a_cluster_without_the_protocol(
    broker_without_streams: str, tmp_path: Path
) -> None:
    answer = ask_streams_protocol({"bootstrap.servers": broker_without_streams}, APP)
    assert (answer.offered, answer.detail) == (False, "StreamsGroupDescribe answered UNSUPPORTED_VERSION")
    admin = AdminClient({"bootstrap.servers": broker_without_streams})
    create_topic(admin, TOPIC, partitions=2)
    wait_for_leaders(admin, TOPIC)
    args = ["plan", "--bootstrap", broker_without_streams, "--application-id", APP, "--input-topic", TOPIC, "--dry-run"]
    refused = run(*args, "--streams-setting", "group.protocol=streams", ok=False)
    assert refused.exit_code == 1
    line = (
        f"application '{APP}' has group.protocol=streams, but the cluster does not offer the streams group protocol "
        "(StreamsGroupDescribe answered UNSUPPORTED_VERSION): Kafka Streams would fail at its first heartbeat"
    )
    assert line in refused.output, refused.output
    run(*args, "--streams-setting", "group.protocol=classic")  # a classic application is planned as before


def test_a_first_run_of_a_streams_app_is_refused_there_before_anything_is_created_or_committed(
    broker_without_streams: str, tmp_path: Path
) -> None:
    """``streamproc run --create-internal-topics`` (plan, create the changelog, fetch, process, hand off) of a new
    streams application on that cluster stops at the plan's one line: no internal topic is created, no record is
    published and no group holds an offset (the hand-off's transactional commit would have created a classic group
    that the application could never join with ``group.protocol=streams``)."""
    from confluent_kafka import Producer

    from streamproc.kafka.cluster import read_committed_offsets, read_group
    from tests.integration.handoff import topologies
    from tests.integration.handoff.test_handoff import log_ends

    admin = AdminClient({"bootstrap.servers": broker_without_streams})
    create_topic(admin, topologies.INPUT, partitions=2)
    create_topic(admin, topologies.OUTPUT, partitions=2)
    wait_for_leaders(admin, topologies.INPUT, topologies.OUTPUT)
    producer = Producer({"bootstrap.servers": broker_without_streams})
    for i in range(20):
        producer.produce(topologies.INPUT, key=f"k{i % 3}".encode(), value=b"x", partition=i % 2)
    assert producer.flush(30) == 0
    app = "sp-no-streams-first-run"
    refused = run("run", "--bootstrap", broker_without_streams, "--application-id", app, "--topology",
                  "tests.integration.handoff.topologies:count", "--store", str(tmp_path / "staging"), "--work-dir",
                  str(tmp_path / "work"), "--master", "inline", "--create-internal-topics", "--state-dir",
                  str(tmp_path / "state"), "--streams-setting", "group.protocol=streams", "--yes",
                  ok=False)  # fmt: skip
    assert refused.exit_code == 1
    [line] = [line for line in refused.output.splitlines() if line.startswith("error: ")]
    assert line.startswith(
        f"error: application '{app}' has group.protocol=streams, but the cluster does not offer the streams group "
        "protocol (StreamsGroupDescribe answered UNSUPPORTED_VERSION)"
    ), refused.output
    assert f"{app}-counts-changelog" not in admin.list_topics(timeout=10).topics
    assert log_ends(broker_without_streams, topologies.OUTPUT, 2) == {0: 0, 1: 0}
    assert read_group(admin, app, client_config={"bootstrap.servers": broker_without_streams}) is None
    assert read_committed_offsets(admin, app) == ({}, False)
