"""A pending transactional offset commit on a partition the group never committed (issue #27, 4).

OffsetFetch for all of a group's partitions lists only committed ones, so a transaction that holds the group's very
first offsets is invisible to it: the plan would start from "nothing committed" and the transaction's commit would
then move the group under the plan. The plan names its partitions, so the commit is reported, and waited for (up to
a bound): once the transaction commits the plan starts at its offset; while it stays open past the bound the plan is
refused naming the partition. A pending commit of streamproc's own hand-off (a killed one's: its transactional id
is known) is not waited for: the plan fences it at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.handoff.txn_offsets import send_offsets_to_transaction
from streamproc.kafka import clients, cluster
from streamproc.kafka.transactions import transactional_id
from streamproc.plan.run_plan import RunPlan
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import run
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration


@contextmanager
def pending_offset_commit(
    bootstrap: str, group: str, topic: str, partition: int, offset: int, *, transactional_id: str | None = None
) -> Iterator[Producer]:
    """A transaction (of another tool, by default) that committed ``offset`` for ``group`` on ``topic-partition``
    and stays open."""
    txn_id = transactional_id or f"{group}-other-tool"
    producer = clients.producer({"bootstrap.servers": bootstrap}, **{"transactional.id": txn_id,
                                                                     "enable.idempotence": True})  # fmt: skip
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        send_offsets_to_transaction(producer, [KafkaTopicPartition(topic, partition, offset, "")],
                                    member.consumer_group_metadata(), 30)  # fmt: skip
        yield producer
    finally:
        member.close()


def topology_file(tmp_path: Path, source: str, sink: str) -> Path:
    from tests.integration.spark.topologies import count_topology

    describe = tmp_path / "topology.txt"
    describe.write_text(str(count_topology(source, sink).describe()))
    return describe


@pytest.fixture
def first_run(kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path) -> dict[str, str]:
    """A two-partition input with 10 records per partition and an application that never ran."""
    source, sink, app_id = unique("pending-in"), unique("pending-out"), unique("pending-app")
    create_topic(admin, source, partitions=2)
    create_topic(admin, sink, partitions=2)
    create_topic(admin, f"{app_id}-counts-changelog", partitions=2, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, source, sink, f"{app_id}-counts-changelog")
    producer = Producer({"bootstrap.servers": kafka_broker})
    for p in range(2):
        for i in range(10):
            producer.produce(source, key=f"k{i}".encode(), value=b"x", partition=p, timestamp=1_000 + i)
    producer.flush(30)
    return {"source": source, "app_id": app_id, "topology": str(topology_file(tmp_path, source, sink))}


def plan_args(kafka_broker: str, run_: dict[str, str], out: Path) -> list[str]:
    return ["plan", "--bootstrap", kafka_broker, "--application-id", run_["app_id"], "--topology", run_["topology"],
            "--out", str(out)]  # fmt: skip


def test_a_pending_first_commit_is_reported_instead_of_planning_from_none(
    kafka_broker: str, first_run: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "PENDING_COMMIT_WAIT_S", 2.0, raising=False)
    with pending_offset_commit(kafka_broker, first_run["app_id"], first_run["source"], 1, 4) as producer:
        refused = run(*plan_args(kafka_broker, first_run, tmp_path / "plan.json"), ok=False)
        producer.abort_transaction(30)
    assert refused.exit_code == 1, refused.output
    assert (
        f"group '{first_run['app_id']}' has a transactional offset commit pending on {first_run['source']}-1 "
        "(UNSTABLE_OFFSET_COMMIT), still after 2 s"
    ) in refused.output
    assert not (tmp_path / "plan.json").exists()


def test_a_pending_first_commit_is_waited_for_and_the_plan_starts_at_it(
    kafka_broker: str, first_run: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster, "PENDING_COMMIT_WAIT_S", 60.0, raising=False)
    with pending_offset_commit(kafka_broker, first_run["app_id"], first_run["source"], 1, 4) as producer:
        timer = threading.Timer(2.0, producer.commit_transaction, args=(30,))
        timer.start()
        try:
            run(*plan_args(kafka_broker, first_run, tmp_path / "plan.json"))
        finally:
            timer.join()
    plan = RunPlan.read(tmp_path / "plan.json")
    starts = {r.name: (r.committed_offset, r.start) for r in plan.ranges}
    assert starts == {f"{first_run['source']}-0": (None, 0), f"{first_run['source']}-1": (4, 4)}


def test_a_killed_handoffs_pending_commit_is_fenced_at_once_and_the_plan_starts_before_it(
    kafka_broker: str, first_run: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # a bound no test waits out: the plan goes on because the transaction was aborted, not because time passed
    monkeypatch.setattr(cluster, "PENDING_COMMIT_WAIT_S", 600.0, raising=False)
    own = transactional_id(first_run["app_id"], "0_1")  # task 0_1 reads source partition 1
    with pending_offset_commit(kafka_broker, first_run["app_id"], first_run["source"], 1, 4, transactional_id=own):
        run(*plan_args(kafka_broker, first_run, tmp_path / "plan.json"))  # the killed hand-off's producer is left
    plan = RunPlan.read(tmp_path / "plan.json")
    starts = {r.name: (r.committed_offset, r.start) for r in plan.ranges}
    assert starts == {f"{first_run['source']}-0": (None, 0), f"{first_run['source']}-1": (None, 0)}  # aborted
    assert "fencing the hand-off's transactional ids of task(s) 0_1" in caplog.text
