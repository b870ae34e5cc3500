"""Hand-off of a two-stage plan (re-key → repartition → count): the downstream tasks commit their repartition
partitions past the records and transaction markers the upstream tasks published, and the purge deletes exactly up
to those committed offsets (the log start equals the committed offset); also after a kill -9 between two purges and
a re-run."""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.handoff.kill_points import KILL_AT_ENV
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import partition_counts, record_upstream, stages, task_work, with_upstream
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import answer_list_offsets, read_all, run
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORDS = 900
TOPOLOGY = "tests.integration.handoff.topologies:rekey_count"


def process_locally(plan: RunPlan, store: Path, counts: dict[str, int]) -> list[dict[str, Any]]:
    """``streamproc process`` without Spark: the same task runner, stage after stage."""
    reports: list[dict[str, Any]] = []
    upstream: dict[tuple[str, int], list[str]] = {}
    read = {r.topic for r in plan.ranges}
    work = task_work(plan, topology=TOPOLOGY, store_uri=str(store), counts=partition_counts(plan, counts))
    for stage in stages(plan, work):
        stage_reports = [run_task(with_upstream(w, upstream)) for w in stage]
        record_upstream(stage_reports, upstream, read)
        reports.extend(stage_reports)
    return reports


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "handoff-watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, partition), timeout=30)
        return int(low), int(high)
    finally:
        consumer.close()


def test_repartition_offsets_are_committed_past_the_markers_and_purged_to_them_after_a_kill_between_purges(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("handoff-rekey")
    repartition = f"{app_id}-{topologies.REKEYED}"
    changelog = f"{app_id}-counts-changelog"
    for topic in (topologies.REKEY_INPUT, topologies.REKEY_OUTPUT, repartition):
        create_topic(admin, topic, partitions=PARTITIONS)
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.REKEY_INPUT, topologies.REKEY_OUTPUT, repartition, changelog)
    answer_list_offsets(kafka_broker, [topologies.REKEY_INPUT, repartition, changelog], PARTITIONS)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random"})
    rng = random.Random(11)
    customers = Counter[str]()
    for i in range(RECORDS):
        customer = f"c{rng.randint(0, 25)}"
        customers[customer] += 1
        producer.produce(topologies.REKEY_INPUT, key=f"o{i}".encode(), value=customer.encode(), timestamp=5_000 + i)
    producer.flush(60)

    describe = tmp_path / "topology.txt"
    describe.write_text(str(topologies.rekey_count().describe()))
    plan_file, store = tmp_path / "plan.json", tmp_path / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--out", str(plan_file))  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    plan = RunPlan.read(plan_file)
    reports = process_locally(plan, store, {topologies.REKEY_OUTPUT: PARTITIONS})
    assert sum(r["records_processed"] for r in reports if r["task_id"].startswith("1_")) == RECORDS

    # kill -9 right after the first purge is recorded; the re-run does only the others
    killed = subprocess.run(
        [str(Path(sys.executable).parent / "streamproc"), "handoff", "--bootstrap", kafka_broker, "--plan",
         str(plan_file), "--store", str(store), "--state-dir", str(tmp_path / "state"), "--yes"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, KILL_AT_ENV: f"purge:{repartition}-0"},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    with Ledger(tmp_path / "plan.ledger.sqlite") as ledger:
        assert [s.subject for s in ledger.steps() if s.kind == "purge"] == [f"{repartition}-0"]
        assert len([s for s in ledger.steps() if s.kind == "publish"]) == 2 * PARTITIONS
    assert watermarks(kafka_broker, repartition, 1)[0] == 0  # not purged yet
    out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
              "--state-dir", str(tmp_path / "state"), "--yes")  # fmt: skip
    assert f"published 0 task(s), wrote 0 checkpoint(s), purged {PARTITIONS - 1} partition(s)" in out.output

    committed, _ = read_committed_offsets(admin, app_id)
    for p in range(PARTITIONS):
        offset = next(c.offset for tp, c in committed.items() if tp.topic == repartition and tp.partition == p)
        low, high = watermarks(kafka_broker, repartition, p)
        reported = next(r for r in reports if r["task_id"] == f"1_{p}")["offsets"][f"{repartition}-{p}"]
        assert offset == high > reported["next_offset"]  # past the upstream transactions' commit markers
        assert low == offset  # purged exactly up to the committed offset
    with Ledger(tmp_path / "plan.ledger.sqlite") as ledger:
        purges = [s for s in ledger.steps() if s.kind == "purge"]
    assert sorted(s.subject for s in purges) == [f"{repartition}-{p}" for p in range(PARTITIONS)]

    final: dict[bytes, int] = {}
    for m in read_all(kafka_broker, topologies.REKEY_OUTPUT, PARTITIONS):
        final[m.key()] = max(final.get(m.key(), 0), struct.unpack(">q", m.value())[0])
    assert final == {c.encode(): n for c, n in customers.items()}
