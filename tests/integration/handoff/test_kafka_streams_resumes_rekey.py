"""The issue's proof for a re-key → repartition → aggregate topology, with a live Kafka Streams 4.2.2 app.

``RekeyResumeApp`` (DSL: selectKey → repartition ``rekeyed`` → count in ``counts`` → output) processes the first
third of the input and stops; streamproc plans from its committed offsets, fetches, processes the second third
(both stages, the upstream's repartition records feeding the downstream tasks) and hands off into the app's state
dir; the app restarts there and processes the last third. Its outputs (read_committed) and final store equal those
of a second app that processed the whole input alone; it restores 0 records; each repartition partition's log
start offset equals the committed offset. Under at_least_once and exactly_once_v2.
"""

from __future__ import annotations

import random
import struct
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import partition_counts, record_upstream, stages, task_work, with_upstream
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import run
from tests.integration.handoff.test_handoff_repartition import watermarks
from tests.integration.spark.conftest import wait_for_leaders
from tests.integration.state.test_kafka_streams_opens_state import app_classpath, compile_beside, run_java_app

pytestmark = pytest.mark.integration
__all__ = ["app_classpath"]

SOURCE = Path(__file__).resolve().parent / "java" / "RekeyResumeApp.java"
PARTITIONS = topologies.REKEY_RESUME_PARTITIONS
CUSTOMERS = [f"c{i}" for i in range(7)]


@pytest.fixture(scope="module")
def rekey_classpath(app_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``RekeyResumeApp`` compiled beside ``StateResumeApp`` (same package: it reuses its run protocol)."""
    classes = tmp_path_factory.mktemp("rekey-resume-app")
    return compile_beside(app_classpath, [SOURCE], classes)


def run_rekey_app(
    classpath: str, bootstrap: str, app_id: str, state_dir: Path, topic: str, end: int, output: str, eos: bool
) -> dict[str, Any]:
    return run_java_app(
        classpath,
        [
            "dev.streamproc.oracle.RekeyResumeApp",
            bootstrap,
            app_id,
            str(state_dir),
            topic,
            str(end),
            output,
            str(PARTITIONS),
            "eos" if eos else "alos",
        ],
    )


def produce(bootstrap: str, topic: str, records: list[tuple[str, str, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, (key, value, timestamp) in enumerate(records):
        producer.produce(topic, key=key.encode(), value=value.encode(), partition=i % PARTITIONS, timestamp=timestamp)
    assert producer.flush(60) == 0


def counts_per_key(bootstrap: str, topic: str) -> dict[str, list[tuple[int, int]]]:
    """Each key's (partition, count) outputs in offset order, every committed record to each partition's end.

    (``test_handoff.read_all`` stops one offset early, for a trailing commit marker; an at_least_once app's last
    record is data.) A partition is read when the position reached its end, or when nothing more arrives with only
    one offset left (a commit marker)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rekey-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }  # fmt: skip
    )
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    try:
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        ends = {
            p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)
        }
        positions = dict.fromkeys(range(PARTITIONS), 0)
        while any(positions[p] < ends[p] for p in ends):
            message = consumer.poll(2)
            if message is None:
                assert all(positions[p] >= ends[p] - 1 for p in ends), f"{topic}: read up to {positions} of {ends}"
                break
            assert message.error() is None, message.error()
            assert message.topic() == topic
            out[message.key().decode()].append((message.partition(), struct.unpack(">q", message.value())[0]))
            positions[message.partition()] = message.offset() + 1
    finally:
        consumer.close()
    return dict(out)


@pytest.mark.parametrize("guarantee", ["alos", "eos"], ids=["at_least_once", "exactly_once_v2"])
def test_kafka_streams_resumes_a_rekey_aggregate_after_handoff(
    guarantee: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    rekey_classpath: str,
) -> None:
    eos = guarantee == "eos"
    source, output = topologies.REKEY_RESUME_INPUT[guarantee], topologies.REKEY_RESUME_OUTPUT[guarantee]
    alone_output = f"{output}-alone"
    for topic in (source, output, alone_output):
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, source, output, alone_output)
    app_id = unique("rekey-resumed")
    repartition = f"{app_id}-{topologies.REKEYED}"
    state_dir = tmp_path / "state"
    rng = random.Random(13)
    base = int(time.time() * 1000) - 3_600_000
    thirds = [
        [(f"o{k}-{i}", rng.choice(CUSTOMERS), base + (k * 100 + i) * 11) for i in range(40 + 5 * k)] for k in range(3)
    ]
    total = sum(len(t) for t in thirds)

    produce(kafka_broker, source, thirds[0])
    first = run_rekey_app(rekey_classpath, kafka_broker, app_id, state_dir, source, len(thirds[0]), output, eos)
    assert sum(count for count, _ in first["store"].values()) == len(thirds[0])

    produce(kafka_broker, source, thirds[1])
    describe = tmp_path / "topology.txt"
    factory = f"rekey_resume_{guarantee}"
    describe.write_text(str(getattr(topologies, factory)().describe()))
    plan_file, store = tmp_path / "plan.json", tmp_path / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--processing-guarantee", "exactly_once_v2" if eos else "at_least_once", "--out", str(plan_file))  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    plan = RunPlan.read(plan_file)
    work = task_work(
        plan,
        topology=f"tests.integration.handoff.topologies:{factory}",
        store_uri=str(store),
        counts=partition_counts(plan, {output: PARTITIONS}),
    )
    upstream: dict[tuple[str, int], list[str]] = {}
    reports: list[dict[str, Any]] = []
    for stage in stages(plan, work):
        stage_reports = [run_task(with_upstream(w, upstream)) for w in stage]
        record_upstream(stage_reports, upstream, {r.topic for r in plan.ranges})
        reports.extend(stage_reports)
    assert sum(r["records_processed"] for r in reports if r["task_id"].startswith("1_")) == len(thirds[1])
    out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
              "--state-dir", str(state_dir), "--yes")  # fmt: skip
    assert f"published {2 * PARTITIONS} task(s), wrote {PARTITIONS} checkpoint(s)" in out.output, out.output

    committed, _ = read_committed_offsets(admin, app_id)
    for p in range(PARTITIONS):
        offset = next(c.offset for tp, c in committed.items() if tp.topic == repartition and tp.partition == p)
        low, _high = watermarks(kafka_broker, repartition, p)
        assert low == offset, (p, low, offset)  # the purge deleted exactly up to the committed offset

    produce(kafka_broker, source, thirds[2])
    resumed = run_rekey_app(rekey_classpath, kafka_broker, app_id, state_dir, source, total, output, eos)
    restore_ends = [e for e in resumed["events"] if e["event"] == "restore_end"]
    assert resumed["restored"] == 0 and all(e["total"] == 0 for e in restore_ends), resumed["events"]

    alone = run_rekey_app(
        rekey_classpath, kafka_broker, unique("rekey-alone"), tmp_path / "alone", source, total, alone_output, eos
    )
    assert resumed["store"] == alone["store"]
    assert sum(count for count, _ in alone["store"].values()) == total
    resumed_out, alone_out = counts_per_key(kafka_broker, output), counts_per_key(kafka_broker, alone_output)
    differing = {k: (v, alone_out.get(k)) for k, v in resumed_out.items() if v != alone_out.get(k)}
    assert resumed_out == alone_out, f"differing keys (resumed, alone): {differing}"
