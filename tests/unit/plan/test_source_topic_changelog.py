"""A table store that uses its source topic as changelog (``topology.optimization=all``), from program to plan.

Kafka Streams 4.2 (``TableSourceNode#writeToTopology`` → ``connectSourceStoreAndTopic``): the store has logging
disabled, ``storeToChangelogTopic`` maps it to the source topic, ``StoreChangelogReader`` restores it from that topic up
to the group's committed offset, and the checkpoint names the source partition. The user's topic is never an internal
topic: nothing creates, purges or writes it.
"""

from __future__ import annotations

import pytest

from streamproc.engine.records import TopicPartition as EngineTP
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_builder import analyze_topology
from streamproc.engine.topology_description import parse_description
from streamproc.errors import ConfigError
from streamproc.handoff.procedure import source_changelog_last
from streamproc.plan.cluster_snapshot import (
    ClusterSnapshot,
    CommittedOffset,
    IsolationLevel,
    PartitionState,
    PlanRequest,
    TopicPartition,
    TopicState,
)
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import application_spec, build_run_plan, topics_to_read
from streamproc.spark.job import check_source_topic_changelogs, check_topology
from streamproc.state.local_checkpoints import LocalCheckpoints, TaskCheckpoint
from streamproc_dev.conformance.dsl_programs import PROGRAMS

APP = "app"
STORE = "users-STATE-STORE-0000000000"
REPARTITION = f"{APP}-KSTREAM-KEY-SELECT-0000000004-repartition"
COUNTS_CHANGELOG = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000010-changelog"
COUNTS = {"users": 2, "clicks": 2, "enriched": 2, "click-counts": 2, REPARTITION: 2, COUNTS_CHANGELOG: 2}


def _topic(*offsets: tuple[int, int]) -> TopicState:
    return TopicState({p: PartitionState(ls, hw, hw, hw) for p, (ls, hw) in enumerate(offsets)})


def test_the_optimized_program_declares_its_table_store_restored_from_the_source_topic() -> None:
    optimized, plain = PROGRAMS["rekey-join-optimized"](), PROGRAMS["rekey-join"]()

    assert optimized.source_topic_changelogs == {STORE: "users"}
    assert optimized.changelog_topics(0, APP)[STORE] == "users"
    assert plain.source_topic_changelogs == {}
    assert plain.changelog_topics(0, APP)[STORE] == f"{APP}-{STORE}-changelog"


def test_the_analysis_keeps_the_source_topic_out_of_the_internal_topics() -> None:
    analysis = analyze_topology(PROGRAMS["rekey-join-optimized"](), APP, COUNTS)
    store = next(s for s in analysis.subtopology(0).stores if s.name == STORE)

    assert (store.changelog_topic, store.reuses_source_topic) == ("users", True)
    assert "users" not in analysis.internal_topics
    assert f"{APP}-{STORE}-changelog" not in analysis.internal_topics
    assert COUNTS_CHANGELOG in analysis.internal_topics  # the aggregate's store keeps its own changelog

    app = application_spec(APP, analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    assert "users" not in app.changelog_topics and "users" not in app.internal_source_topics
    assert f"{APP}-{STORE}-changelog" not in topics_to_read(analysis, app)


def test_describe_text_alone_reuses_only_when_told_the_optimization() -> None:
    text = PROGRAMS["rekey-join-optimized"]().describe()

    def store_of(**kwargs: object) -> tuple[str, bool]:
        analysis = analyze(text, APP, COUNTS, **kwargs)  # type: ignore[arg-type]
        found = next(s for s in analysis.subtopology(0).stores if s.name == STORE)
        return found.changelog_topic, found.reuses_source_topic

    assert store_of() == (f"{APP}-{STORE}-changelog", False)
    assert store_of(config={"topology.optimization": "all"}) == ("users", True)
    assert store_of(config={"topology.optimization": "reuse.ktable.source.topics"}) == ("users", True)
    # the program's declaration wins over the text's heuristics, both ways
    assert store_of(config={"topology.optimization": "all"}, source_topic_changelogs={}) == (
        f"{APP}-{STORE}-changelog",
        False,
    )


def test_the_plan_restores_up_to_the_committed_offset_and_never_purges_the_source_topic() -> None:
    analysis = analyze_topology(PROGRAMS["rekey-join-optimized"](), APP, COUNTS)
    app = application_spec(APP, analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    snapshot = ClusterSnapshot(
        topics={
            "users": _topic((0, 9), (2, 7)),
            "clicks": _topic((0, 4), (0, 4)),
            REPARTITION: _topic((0, 5), (0, 5)),
            COUNTS_CHANGELOG: _topic((0, 3), (0, 2)),
        },
        committed={
            TopicPartition("users", 0): CommittedOffset(6),  # records 6..8 are this run's input
            TopicPartition(REPARTITION, 0): CommittedOffset(5),
            TopicPartition(REPARTITION, 1): CommittedOffset(5),
            TopicPartition("clicks", 0): CommittedOffset(4),
            TopicPartition("clicks", 1): CommittedOffset(4),
        },  # users-1: nothing committed
        partition_counts=COUNTS,
    )
    local = LocalCheckpoints(
        tasks={TaskId(0, 0): TaskCheckpoint({EngineTP("users", 0): 3, EngineTP(COUNTS_CHANGELOG, 0): 2}, False)}
    )

    plan = build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, local=local)

    restores = {(r.task_id, r.store): (r.changelog_topic, r.changelog_partition, r.start, r.end) for r in plan.restores}
    assert restores[("0_0", STORE)] == ("users", 0, 4, 6)  # after the checkpoint, up to the committed offset
    assert restores[("0_1", STORE)] == ("users", 1, 2, 2)  # nothing committed: nothing restored
    assert restores[("0_0", "KSTREAM-AGGREGATE-STATE-STORE-0000000010")] == (COUNTS_CHANGELOG, 0, 3, 3)
    users = {r.name: (r.start, r.end, r.internal) for r in plan.ranges if r.topic == "users"}
    assert users == {"users-0": (6, 9, False), "users-1": (2, 7, False)}  # the input after the committed offset
    assert not [p for p in plan.purges if p.partition.startswith("users-")]
    stores = {(t.task_id, s.name): (s.changelog_topic, s.changelog_partition) for t in plan.tasks for s in t.stores}
    assert stores[("0_1", STORE)] == ("users", 1)


def test_the_hand_off_checkpoints_a_source_changelog_at_the_committed_offset_minus_one() -> None:
    analysis = analyze_topology(PROGRAMS["rekey-join-optimized"](), APP, COUNTS)
    app = application_spec(APP, analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
    snapshot = ClusterSnapshot(
        topics={"users": _topic((0, 9), (0, 7)), "clicks": _topic((0, 4), (0, 4)), REPARTITION: _topic((0, 5), (0, 5))},
        partition_counts=COUNTS,
    )
    task = next(t for t in build_run_plan(app, PlanRequest(), snapshot, analysis=analysis).tasks if t.task_id == "0_0")

    committed = {"users-0": 9, f"{REPARTITION}-0": 5}
    assert source_changelog_last(task, committed) == {EngineTP("users", 0): 8}
    assert source_changelog_last(task, {f"{REPARTITION}-0": 5}) == {}  # nothing committed now: the plan's end


def test_a_plan_made_from_the_text_alone_is_refused_by_the_process_step_in_one_line() -> None:
    """What cannot be handed off: a plan that restores the table from a changelog the optimized app never created
    (``streamproc plan --topology describe.txt`` without ``--topology-optimization all``), and the reverse."""
    optimized, plain = PROGRAMS["rekey-join-optimized"](), PROGRAMS["rekey-join"]()
    snapshot = ClusterSnapshot(
        topics={"users": _topic((0, 3), (0, 3)), "clicks": _topic((0, 4), (0, 4)), REPARTITION: _topic((0, 5), (0, 5))},
        partition_counts=COUNTS,
    )

    def plan_of(**kwargs: object) -> RunPlan:
        text = str(optimized.describe())
        analysis = analyze(parse_description(text), APP, COUNTS, **kwargs)  # type: ignore[arg-type]
        app = application_spec(APP, analysis, isolation_level=IsolationLevel.READ_UNCOMMITTED)
        return build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, topology=text)

    check_topology(plan_of(config={"topology.optimization": "all"}), optimized, "m:f")
    with pytest.raises(ConfigError) as refused:
        check_topology(plan_of(), optimized, "m:f")
    assert str(refused.value) == (
        f"task [0_0] store {STORE}: the plan restores it from {APP}-{STORE}-changelog but m:f restores it from its "
        "source topic users (topology.optimization=all); make the plan with the application's "
        "--topology-optimization (streamproc run does it)"
    )
    with pytest.raises(ConfigError, match=r"restores it from users but m:f gives it its own changelog topic"):
        check_source_topic_changelogs(plan_of(config={"topology.optimization": "all"}), plain, "m:f")
