"""``build_run_plan``: the whole plan (ranges, tasks, changelog and global restores) from values, no broker."""

from __future__ import annotations

import pytest

from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_description import parse_description
from streamproc.errors import PlanError
from streamproc.plan.cluster_snapshot import (
    ClusterSnapshot,
    CommittedOffset,
    IsolationLevel,
    PartitionState,
    PlanRequest,
    TopicPartition,
    TopicState,
)
from streamproc.plan.refusals import MissingTopic
from streamproc.plan.run_planner import application_spec, build_run_plan, isolation_for, topics_to_read
from streamproc.state.local_checkpoints import LocalCheckpoints, TaskCheckpoint

TOPOLOGY = """\
Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000001 (topics: [products])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [products-STATE-STORE-0000000000])
      --> none
      <-- KSTREAM-SOURCE-0000000001
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [words])
      --> KSTREAM-AGGREGATE-0000000005
    Processor: KSTREAM-AGGREGATE-0000000005 (stores: [counts])
      --> none
      <-- KSTREAM-SOURCE-0000000003
"""
CHANGELOG = "app-counts-changelog"


def _topic(*offsets: tuple[int, int]) -> TopicState:
    return TopicState({p: PartitionState(ls, hw, hw, hw) for p, (ls, hw) in enumerate(offsets)})


def _snapshot(topics: dict[str, TopicState]) -> ClusterSnapshot:
    return ClusterSnapshot(
        topics=topics,
        committed={TopicPartition("words", 0): CommittedOffset(4)},
        partition_counts={name: len(t.partitions) for name, t in topics.items()},
        topic_ids={name: f"id-{name}" for name in topics},
    )


def test_a_plan_from_one_snapshot_and_the_local_checkpoints() -> None:
    counts = {"words": 2, "products": 1, CHANGELOG: 2}
    analysis = analyze(parse_description(TOPOLOGY), "app", counts)
    app = application_spec("app", analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    assert topics_to_read(analysis, app) == (CHANGELOG, "products", "words")
    snapshot = _snapshot(
        {"words": _topic((0, 6), (0, 6)), CHANGELOG: _topic((0, 3), (0, 5)), "products": _topic((0, 3))}
    )
    local = LocalCheckpoints(
        tasks={TaskId(1, 0): TaskCheckpoint({EngineTP(CHANGELOG, 0): 1}, task_dir_empty=False)},
        global_checkpoint={EngineTP("products", 0): 2},
    )

    plan = build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, local=local)

    assert [(r.topic, r.partition, r.start, r.end, r.topic_id) for r in plan.ranges] == [
        ("words", 0, 4, 6, "id-words"),
        ("words", 1, 0, 6, "id-words"),
    ]
    assert [(r.task_id, r.changelog_topic, r.changelog_partition, r.start, r.end, r.checkpoint_offset)
            for r in plan.restores] == [
        ("1_0", CHANGELOG, 0, 2, 3, 1),  # after the task's checkpoint (its offset + 1)
        ("1_1", CHANGELOG, 1, 0, 5, None),  # no checkpoint: from the log start
        ("global", "products", 0, 2, 3, 2),  # from the global checkpoint
    ]  # fmt: skip
    assert plan.to_json() == build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, local=local).to_json()


def test_a_changelog_absent_from_the_snapshot_restores_nothing_and_a_global_topic_is_required() -> None:
    counts = {"words": 1, "products": 1}
    analysis = analyze(parse_description(TOPOLOGY), "app", counts)
    app = application_spec("app", analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    plan = build_run_plan(
        app, PlanRequest(), _snapshot({"words": _topic((0, 5)), "products": _topic((0, 0))}), analysis=analysis
    )
    assert [(r.task_id, r.start, r.end) for r in plan.restores] == [("1_0", 0, 0), ("global", 0, 0)]
    with pytest.raises(MissingTopic, match="global store topic"):
        build_run_plan(app, PlanRequest(), _snapshot({"words": _topic((0, 5))}), analysis=analysis)


FAN_OUT = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
      --> KSTREAM-SINK-0000000001, KSTREAM-SINK-0000000002
    Sink: KSTREAM-SINK-0000000001 (topic: a-repartition)
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: b-repartition)
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [a-repartition])
      --> none
  Sub-topology: 2
    Source: KSTREAM-SOURCE-0000000004 (topics: [b-repartition])
      --> none
"""


def test_the_backlog_notes_name_the_stages_of_the_plan() -> None:
    topics = {"orders": _topic((0, 3)), "app-a-repartition": _topic((0, 1)), "app-b-repartition": _topic((0, 1))}
    analysis = analyze(parse_description(FAN_OUT), "app", dict.fromkeys(topics, 1))
    app = application_spec("app", analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    plan = build_run_plan(app, PlanRequest(), _snapshot(topics), analysis=analysis)
    assert plan.stages == analysis.stages == ((0,), (1, 2))
    notes = {r.topic: [dict(n) for n in r.notes if n["code"] == "repartition_backlog"] for r in plan.ranges}
    backlog = {"code": "repartition_backlog", "followed_by": "records written by stage 0 of this run"}
    # b's upstream is stage 0 too (the fallback rule without a topology would have said stage 1)
    assert notes == {"orders": [], "app-a-repartition": [backlog], "app-b-repartition": [backlog]}


def test_isolation_follows_the_processing_guarantee() -> None:
    assert isolation_for("at_least_once") is IsolationLevel.READ_UNCOMMITTED
    assert isolation_for("exactly_once_v2") is IsolationLevel.READ_COMMITTED
    with pytest.raises(PlanError, match="one of at_least_once, exactly_once_v2, not 'exactly_once'"):
        isolation_for("exactly_once")
    assert isolation_for("at_least_once", "read_committed") is IsolationLevel.READ_COMMITTED  # StreamsConfig honours it
    assert isolation_for("exactly_once_v2", "read_committed") is IsolationLevel.READ_COMMITTED
    with pytest.raises(PlanError, match="contradicts"):
        isolation_for("exactly_once_v2", "read_uncommitted")
    with pytest.raises(PlanError, match="isolation.level must be one of"):
        isolation_for("at_least_once", "read_maybe")


def test_one_topic_partition_class() -> None:
    assert TopicPartition is EngineTP
    assert TopicPartition.parse("my-topic-12") == EngineTP("my-topic", 12)


def test_the_plan_records_a_streams_groups_epoch_and_nothing_for_a_classic_group() -> None:
    from dataclasses import replace

    from streamproc.plan.cluster_snapshot import GroupState

    counts = {"words": 2, "products": 1, CHANGELOG: 2}
    analysis = analyze(parse_description(TOPOLOGY), "app", counts)
    app = application_spec("app", analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    snapshot = _snapshot(
        {"words": _topic((0, 6), (0, 6)), CHANGELOG: _topic((0, 3), (0, 5)), "products": _topic((0, 3))}
    )
    streams = replace(snapshot, group=GroupState("streams", "Empty", (), epoch=7))
    classic = replace(snapshot, group=GroupState("classic", "Empty", ()))
    assert build_run_plan(app, PlanRequest(), streams, analysis=analysis).streams_group_epoch == 7
    assert build_run_plan(app, PlanRequest(), classic, analysis=analysis).streams_group_epoch is None
