"""The suppress buffer survives the hand-off both ways, with a real Kafka Streams 4.2.2 app (issue #16).

``SuppressResumeApp`` (java/, windowed counts → ``suppress(untilWindowCloses)`` named ``final``) and its Python twin
:func:`suppress_resume_alos`/``_eos``, one partition, under at_least_once and exactly_once_v2:

1. the app processes the first third and stops with windows still buffered (its changelog holds them);
2. streamproc plans, fetches and runs the second third: it restores the app's buffer from that changelog (so the
   windows the app buffered are emitted by streamproc once they close), leaves the newest windows buffered and hands
   off, publishing the buffer's changelog records;
3. the app restarts and processes the last third, emitting what streamproc left buffered.

The output topic then equals that of a second app that processed everything alone (same records, keys, values and
timestamps, in order), and so does the buffer's changelog content (latest record per key; the buffered record
contexts carry the same input offsets). Timestamps rise strictly, so no restart meets a late record (suppress's
stream time restarts unknown in Kafka Streams too, see test_suppress_buffer_changelog.split_of).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.dsl import BufferConfig, Consumed, Materialized, Produced, StreamsBuilder, Suppressed, TimeWindows
from streamproc.engine.serdes import SERDES
from streamproc.engine.topology import Topology
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import task_work
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import run
from tests.integration.spark.conftest import wait_for_leaders
from tests.integration.state.test_kafka_streams_opens_state import app_classpath, compile_beside, run_java_app

pytestmark = pytest.mark.integration
__all__ = ["app_classpath"]

SOURCE = Path(__file__).resolve().parent / "java" / "SuppressResumeApp.java"
INPUT = {"alos": "suppress-resume-in-alos", "eos": "suppress-resume-in-eos"}
OUTPUT = {"alos": "suppress-resume-out-alos", "eos": "suppress-resume-out-eos"}
KEYS = [f"k{i}" for i in range(5)]


def _suppress_resume(guarantee: str) -> Topology:
    """The Python twin of ``SuppressResumeApp``."""
    string, long = SERDES["String"](), SERDES["Long"]()
    b = StreamsBuilder()
    (
        b.stream(INPUT[guarantee], Consumed.with_(string, string))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10_000, 1_000))
        .count(materialized=Materialized.as_("window-counts"))
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final"))
        .to_stream()
        .select_key(lambda w, v: f"{w.key}@{w.window.start}")
        .to(OUTPUT[guarantee], Produced.with_(string, long))
    )
    return b.build({"default.key.serde": "String", "default.value.serde": "String"})


def suppress_resume_alos() -> Topology:
    return _suppress_resume("alos")


def suppress_resume_eos() -> Topology:
    return _suppress_resume("eos")


@pytest.fixture(scope="module")
def suppress_classpath(app_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``SuppressResumeApp`` compiled beside ``StateResumeApp`` (same package: it reuses its run protocol)."""
    classes = tmp_path_factory.mktemp("suppress-resume-app")
    return compile_beside(app_classpath, [SOURCE], classes)


def run_app(
    classpath: str, bootstrap: str, app_id: str, state_dir: Path, guarantee: str, end: int, output: str
) -> dict[str, Any]:
    return run_java_app(
        classpath,
        [
            "dev.streamproc.oracle.SuppressResumeApp",
            bootstrap,
            app_id,
            str(state_dir),
            INPUT[guarantee],
            str(end),
            output,
            guarantee,
        ],
    )


def produce(bootstrap: str, topic: str, records: list[tuple[str, int]], first: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, (key, timestamp) in enumerate(records, start=first):
        producer.produce(topic, key=key.encode(), value=f"v{i}".encode(), partition=0, timestamp=timestamp)
    assert producer.flush(60) == 0


def read_all(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
    """Every committed record of partition 0 up to its end: (key, value, timestamp)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "suppress-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    out: list[tuple[bytes | None, bytes | None, int]] = []
    try:
        low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, 0), timeout=10)
        consumer.assign([KafkaTopicPartition(topic, 0, low)])
        position = low
        while position < high:
            message = consumer.poll(5)
            if message is None:  # the hand-off's transaction leaves a commit marker last
                assert position >= high - 1, f"{topic}: read up to {position} of {high}"
                break
            assert message.error() is None, message.error()
            out.append((message.key(), message.value(), message.timestamp()[1]))
            position = message.offset() + 1
    finally:
        consumer.close()
    return out


def buffered(bootstrap: str, app_id: str) -> dict[bytes | None, bytes]:
    """The buffer a restore rebuilds: the latest changelog value per key, tombstoned keys left out."""
    latest: dict[bytes | None, bytes | None] = {}
    for key, value, _ in read_all(bootstrap, f"{app_id}-final-store-changelog"):
        latest[key] = value
    return {k: v for k, v in latest.items() if v is not None}


@pytest.mark.parametrize("guarantee", ["alos", "eos"], ids=["at_least_once", "exactly_once_v2"])
def test_suppress_buffer_survives_handoff_both_ways(
    guarantee: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    suppress_classpath: str,
) -> None:
    source, output = INPUT[guarantee], OUTPUT[guarantee]
    alone_output = f"{output}-alone"
    for topic in (source, output, alone_output):
        create_topic(admin, topic)
    wait_for_leaders(admin, source, output, alone_output)
    app_id = unique("suppress-resumed")
    state_dir = tmp_path / "state"
    base = (int(time.time() * 1000) - 3_600_000) // 10_000 * 10_000
    records = [(KEYS[(i * 7) % 5], base + i * 700) for i in range(120)]
    thirds = [records[0:40], records[40:80], records[80:120]]

    produce(kafka_broker, source, thirds[0], 0)
    run_app(suppress_classpath, kafka_broker, app_id, state_dir, guarantee, 40, output)
    left_by_app = buffered(kafka_broker, app_id)
    assert left_by_app, "the app left nothing buffered: the proof tests nothing"

    produce(kafka_broker, source, thirds[1], 40)
    work = tmp_path / "work"
    work.mkdir()
    describe = work / "topology.txt"
    factory = f"suppress_resume_{guarantee}"
    describe.write_text(str(globals()[factory]().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--processing-guarantee", "exactly_once_v2" if guarantee == "eos" else "at_least_once",
        "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    reference = f"{__name__}:{factory}"
    [report] = [run_task(w) for w in task_work(plan, topology=reference, store_uri=str(store), counts={output: 1})]
    assert report["records_processed"] == 40
    assert report["restored"].get("final-store", 0) > 0, report["restored"]
    out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
              "--state-dir", str(state_dir), "--yes")  # fmt: skip
    assert "published 1 task(s)" in out.output, out.output
    left_by_streamproc = buffered(kafka_broker, app_id)
    assert left_by_streamproc, "streamproc handed off nothing buffered: the proof tests nothing"
    assert set(left_by_app) - set(left_by_streamproc), "no window the app buffered was emitted by streamproc"

    produce(kafka_broker, source, thirds[2], 80)
    resumed = run_app(suppress_classpath, kafka_broker, app_id, state_dir, guarantee, 120, output)
    assert resumed["restored"] > 0, "the app did not restore the buffer streamproc handed off"

    alone_id = unique("suppress-alone")
    run_app(suppress_classpath, kafka_broker, alone_id, tmp_path / "alone", guarantee, 120, alone_output)
    resumed_out, alone_out = read_all(kafka_broker, output), read_all(kafka_broker, alone_output)
    assert len(alone_out) >= 20
    assert resumed_out == alone_out
    assert buffered(kafka_broker, app_id) == buffered(kafka_broker, alone_id)
