"""The plan's preconditions apply Kafka Streams' topic rules through the topology analysis' one definition.

A plan made from a topology (``analyze``) and a plan made from an application spec (``plan_ranges``, the planning
scenarios) must refuse the same cluster with the same refusal class and the same Kafka Streams message.
"""

from __future__ import annotations

import pytest

from streamproc.engine.topology_analysis import analyze
from streamproc.errors import MissingTopic, NotCopartitioned, PartitionCountChanged, PlanRefusal, TopologyError
from streamproc.plan import refusals
from streamproc.plan.cluster_snapshot import ApplicationSpec, ClusterSnapshot, PartitionState, TopicState
from streamproc.plan.preconditions import check_partition_counts
from tests.unit.engine.test_topology_analysis import REPARTITION, _rekey_join

CHANGELOG = "app-customers-STATE-STORE-0000000001-changelog"


def _snapshot(counts: dict[str, int]) -> ClusterSnapshot:
    state = PartitionState(log_start=0, high_watermark=0, last_stable_offset=0, log_end=0)
    return ClusterSnapshot(topics={t: TopicState(dict.fromkeys(range(n), state)) for t, n in counts.items()})


def test_topic_refusals_are_one_class_each() -> None:
    for cls in (MissingTopic, NotCopartitioned, PartitionCountChanged):
        assert getattr(refusals, cls.__name__) is cls
        assert issubclass(cls, PlanRefusal) and issubclass(cls, TopologyError)


def test_not_copartitioned_same_refusal_from_analysis_and_plan() -> None:
    counts = {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 3}
    with pytest.raises(NotCopartitioned) as from_analysis:
        analyze(_rekey_join(), "app", counts, copartition_groups=[{"customers", "orders"}])
    app = ApplicationSpec("app", ("customers", "orders"), copartition_groups=(("customers", "orders"),))
    with pytest.raises(NotCopartitioned) as from_plan:
        check_partition_counts(_snapshot(counts), app)
    assert from_plan.value.kafka_message == from_analysis.value.kafka_message
    assert from_plan.value.kafka_message == "Topics not co-partitioned: [{customers=3, orders=6}]"
    assert from_plan.value.details == from_analysis.value.details == {"partition_counts": {"customers": 3, "orders": 6}}


def test_changelog_count_same_refusal_from_analysis_and_plan() -> None:
    counts = {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 3, CHANGELOG: 4}
    with pytest.raises(PartitionCountChanged) as from_analysis:
        analyze(_rekey_join(), "app", counts)
    app = ApplicationSpec(
        "app",
        (REPARTITION, "customers"),
        subtopology_of={REPARTITION: 0, "customers": 0},
        changelog_topics={CHANGELOG: 0},
    )
    with pytest.raises(PartitionCountChanged) as from_plan:
        check_partition_counts(_snapshot(counts), app)
    assert from_plan.value.kafka_message == from_analysis.value.kafka_message
    assert from_plan.value.kafka_exception == from_analysis.value.kafka_exception == "StreamsException"
    assert "expected: 3; actual: 4" in str(from_plan.value)
