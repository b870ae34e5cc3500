"""Co-partitioning in the plan: refused exactly where Kafka Streams refuses (own topology scenario t04b, live)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_description import parse_description
from streamproc.errors import NotCopartitioned
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import PlanRequest
from tests.integration.conftest import create_topic

STREAM_STREAM_JOIN = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [{left}])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [{right}])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])
      --> KSTREAM-JOINTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [KSTREAM-JOINOTHER-0000000005-store])
      --> KSTREAM-JOINOTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> KSTREAM-SINK-0000000007
      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-JOINOTHER-0000000005
    Sink: KSTREAM-SINK-0000000007 (topic: {joined})
      <-- KSTREAM-MERGE-0000000006
"""


def _join_topics(
    admin: AdminClient, unique: Callable[[str], str], left_count: int, right_count: int
) -> tuple[str, str, str]:
    """Fresh ``left``, ``right`` and ``joined`` topics (``joined`` as wide as ``left``) and the join's describe()."""
    left = create_topic(admin, unique("left"), partitions=left_count)
    right = create_topic(admin, unique("right"), partitions=right_count)
    joined = create_topic(admin, unique("joined"), partitions=left_count)
    return left, right, STREAM_STREAM_JOIN.format(left=left, right=right, joined=joined)


def test_join_without_repartition_topic_is_planned_as_kafka_streams_runs_it(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    """3 and 2 partitions: Kafka Streams runs it (task 0_2 reads left-2 alone); the plan has its tasks and says why."""
    left, right, topology = _join_topics(admin, unique, 3, 2)

    plan = plan_run({"bootstrap.servers": kafka_broker}, unique("join"), PlanRequest(), topology=topology)

    assert [(t.task_id, t.source_partitions) for t in plan.tasks] == [
        ("0_0", (f"{left}-0", f"{right}-0")),
        ("0_1", (f"{left}-1", f"{right}-1")),
        ("0_2", (f"{left}-2",)),
    ]
    assert any("may never meet" in w and f"{left}=3" in w for w in plan.warnings)
    assert any("may never meet" in line for line in plan.report().splitlines())


def test_equal_counts_plan_without_a_warning(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    left, right, topology = _join_topics(admin, unique, 2, 2)
    plan = plan_run({"bootstrap.servers": kafka_broker}, unique("join"), PlanRequest(), topology=topology)
    assert len(plan.tasks) == 2 and not any("may never meet" in w for w in plan.warnings)
    with pytest.raises(NotCopartitioned):  # declared, the same topics with unequal counts are refused
        analyze(parse_description(topology), "app", {left: 2, right: 3}, copartition_groups=[[left, right]])
