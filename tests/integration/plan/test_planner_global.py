"""Global store topics in the plan (planning.md §10), against the real broker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import PlanRequest, StartPolicy
from streamproc.plan.refusals import OffsetOutOfRange
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from tests.integration.conftest import create_topic

GLOBAL_JOIN = """\
Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [{products}])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [products-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [{purchases}])
      --> KSTREAM-JOIN-0000000004
    Processor: KSTREAM-JOIN-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-SOURCE-0000000003
    Sink: KSTREAM-SINK-0000000005 (topic: {enriched})
      <-- KSTREAM-JOIN-0000000004
"""


def test_global_topics_are_read_from_the_global_checkpoint_and_lost_offsets_refused(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    products = create_topic(admin, unique("products"), partitions=2)
    purchases = create_topic(admin, unique("purchases"), partitions=4)
    enriched = create_topic(admin, unique("enriched"), partitions=4)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(3):
        producer.produce(products, key=f"p{i}".encode(), value=b"product", partition=0)
    producer.flush(30)
    app_id = unique("shop")
    topology = GLOBAL_JOIN.format(products=products, purchases=purchases, enriched=enriched)
    checkpoint_file = tmp_path / app_id / "global" / ".checkpoint"
    checkpoint_file.parent.mkdir(parents=True)
    OffsetCheckpoint(checkpoint_file).write({EngineTP(products, 0): 1})
    client = {"bootstrap.servers": kafka_broker}

    plan = plan_run(client, app_id, PlanRequest(), topology=topology, state_dir=tmp_path)

    assert [t.task_id for t in plan.tasks] == ["1_0", "1_1", "1_2", "1_3"]
    assert [(r.task_id, r.changelog_topic, r.changelog_partition, r.start, r.end, r.checkpoint_offset)
            for r in plan.restores] == [
        ("global", products, 0, 1, 3, 1), ("global", products, 1, 0, 0, None),
    ]  # fmt: skip

    [future] = admin.delete_records([TopicPartition(products, 0, 2)]).values()
    future.result(timeout=30)
    with pytest.raises(OffsetOutOfRange, match=r"global checkpoint 1 is below the log start 2"):
        plan_run(client, app_id, PlanRequest(), topology=topology, state_dir=tmp_path)
    clamped = plan_run(
        client, app_id, PlanRequest(start_policy=StartPolicy.CLAMP), topology=topology, state_dir=tmp_path
    )
    assert (clamped.restores[0].start, clamped.restores[0].end, clamped.restores[0].local_state_wiped) == (2, 3, True)
