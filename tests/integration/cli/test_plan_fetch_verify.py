"""``streamproc plan`` → ``fetch`` → ``verify`` from the command line, against the real broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.plan.run_plan import RunPlan
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from tests.integration.conftest import create_topic

COUNT_TOPOLOGY = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [{words}])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: {counts})
      <-- KTABLE-TOSTREAM-0000000003
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_plan_fetch_verify_a_count_application(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    words = create_topic(admin, unique("words"), partitions=2)
    counts = create_topic(admin, unique("counts"), partitions=2)
    app_id = unique("wordcount")
    producer = Producer({"bootstrap.servers": kafka_broker})
    for p in (0, 1):
        for i in range(6):
            producer.produce(words, key=f"w{i}".encode(), value=b"hello", partition=p, timestamp=10_000 + i)
    producer.flush(30)
    committed = [TopicPartition(words, 0, 4)]
    [future] = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(app_id, committed)]).values()
    assert future.result(timeout=30).topic_partitions[0].error is None
    changelog = create_topic(admin, f"{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog", partitions=2)
    for p, n in ((0, 3), (1, 5)):
        for i in range(n):
            producer.produce(changelog, key=f"w{i}".encode(), value=(i + 1).to_bytes(8, "big"), partition=p)
    producer.flush(30)
    state_dir = tmp_path / "state"
    (state_dir / app_id / "0_0").mkdir(parents=True)  # Kafka Streams creates the task directory, not the checkpoint
    OffsetCheckpoint(state_dir / app_id / "0_0" / ".checkpoint").write({EngineTP(changelog, 0): 1})
    topology = tmp_path / "topology.txt"
    topology.write_text(COUNT_TOPOLOGY.format(words=words, counts=counts))
    plan_file, plan_again, store = tmp_path / "plan.json", tmp_path / "plan2.json", tmp_path / "staging"

    code, dry = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(topology),
                    "--state-dir", str(state_dir), "--dry-run")  # fmt: skip
    assert code == 0, dry
    assert f"commit {words}-0: 4 -> 6" in dry and f"commit {words}-1: none -> 6" in dry
    assert f"write {app_id}/0_1/.checkpoint" in dry
    for out in (plan_file, plan_again):
        code, text = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                         str(topology), "--state-dir", str(state_dir), "--out", str(out))  # fmt: skip
        assert code == 0, text
    plan = RunPlan.read(plan_file)

    assert plan_file.read_bytes() == plan_again.read_bytes()  # same inputs, byte-identical plan
    assert [(r.topic, r.partition, r.start, r.end) for r in plan.ranges] == [(words, 0, 4, 6), (words, 1, 0, 6)]
    assert [(t.task_id, t.source_partitions) for t in plan.tasks] == [
        ("0_0", (f"{words}-0",)),
        ("0_1", (f"{words}-1",)),
    ]
    assert plan.tasks[0].stores[0].changelog_topic == changelog
    assert [(r.task_id, r.changelog_partition, r.start, r.end, r.checkpoint_offset) for r in plan.restores] == [
        ("0_0", 0, 2, 3, 1), ("0_1", 1, 0, 5, None),
    ]  # fmt: skip
    assert f"{changelog}-0 [2, 3) (checkpoint 1)" in dry

    code, fetched = run("--output", "json", "fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file),
                        "--store", str(store))  # fmt: skip
    assert code == 0, fetched
    assert [(r["partition"], r["records"], r["segments_written"]) for r in json.loads(fetched)["ranges"]] == [
        (f"{words}-0", 2, 1), (f"{words}-1", 6, 1), (f"{changelog}-0", 1, 1), (f"{changelog}-1", 5, 1),
    ]  # fmt: skip
    code, refetched = run("--output", "json", "fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file),
                          "--store", str(store))  # fmt: skip
    assert [r["segments_written"] for r in json.loads(refetched)["ranges"]] == [0, 0, 0, 0]

    code, verified = run("verify", "--store", str(store))
    assert code == 0 and "4 of 4 segment(s) verified" in verified
    segment = next(store.rglob("*.parquet"))
    segment.write_bytes(segment.read_bytes()[:-10])
    code, broken = run("verify", "--store", str(store))
    assert code == 1 and segment.name in broken


def test_plan_refuses_a_bad_request_and_an_unreadable_plan_with_one_line(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic = create_topic(admin, unique("t"))

    code, text = run("plan", "--bootstrap", kafka_broker, "--application-id", unique("app"), "--input-topic", topic,
                     "--by-duration", "six hours")  # fmt: skip
    assert code == 1 and text.startswith("error: ") and "six hours" in text

    bad = tmp_path / "plan.json"
    bad.write_text('{"format": "streamproc-run-plan", "version": 1}')
    code, text = run("fetch", "--bootstrap", kafka_broker, "--plan", str(bad), "--store", str(tmp_path / "s"))
    assert code == 1 and "missing field 'ranges'" in text
