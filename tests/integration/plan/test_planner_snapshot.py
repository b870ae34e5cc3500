"""The live plan reads ONE snapshot (sources, changelogs, global topics, ids, group) and plans purely from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_description import parse_description
from streamproc.kafka.cluster import ClusterReader
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.plan.run_planner import application_spec, build_run_plan, topics_to_read
from streamproc.state.local_checkpoints import read_local_checkpoints
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from tests.integration.conftest import create_topic

TOPOLOGY = """\
Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [{products}])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [products-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [{words}])
      --> KSTREAM-AGGREGATE-0000000005
    Processor: KSTREAM-AGGREGATE-0000000005 (stores: [counts])
      --> none
      <-- KSTREAM-SOURCE-0000000003
"""


def test_one_snapshot_holds_everything_the_plan_reads(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("counter")
    words = create_topic(admin, unique("words"), partitions=2)
    products = create_topic(admin, unique("products"))
    changelog = create_topic(admin, f"{app_id}-counts-changelog", partitions=2, config={"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": kafka_broker})
    for topic, partition, n in ((words, 0, 4), (words, 1, 2), (changelog, 0, 3), (changelog, 1, 1), (products, 0, 2)):
        for i in range(n):
            producer.produce(topic, key=f"k{i}".encode(), value=b"v", partition=partition)
    producer.flush(30)
    (tmp_path / app_id / "1_0").mkdir(parents=True)
    OffsetCheckpoint(tmp_path / app_id / "1_0" / ".checkpoint").write({EngineTP(changelog, 0): 0})
    client = {"bootstrap.servers": kafka_broker}
    topology = TOPOLOGY.format(products=products, words=words)

    reader = ClusterReader(client)
    analysis = analyze(parse_description(topology), app_id, reader.partition_counts)
    app = application_spec(app_id, analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    snapshot = reader.snapshot(app, PlanRequest(), also_topics=topics_to_read(analysis, app))

    assert set(snapshot.topics) == {words, products, changelog}
    assert snapshot.topics[changelog].compacted and not snapshot.topics[words].compacted
    assert [snapshot.topics[changelog].partitions[p].high_watermark for p in (0, 1)] == [3, 1]
    assert set(snapshot.topic_ids) == {words, products, changelog}
    assert {words: 2, products: 1, changelog: 2}.items() <= snapshot.partition_counts.items()

    live = plan_run(client, app_id, PlanRequest(), topology=topology, state_dir=tmp_path)
    local = read_local_checkpoints(tmp_path, app_id, sorted(analysis.tasks))
    pure = build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, local=local, topology=topology)
    assert live.to_json() == pure.to_json()
    assert [(r.task_id, r.changelog_topic, r.start, r.end) for r in live.restores] == [
        ("1_0", changelog, 1, 3),
        ("1_1", changelog, 0, 1),
        ("global", products, 0, 2),
    ]
    assert {r.topic_id for r in live.ranges} == {snapshot.topic_ids[words]}
