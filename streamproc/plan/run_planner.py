"""The plan step, pure: topology analysis + cluster snapshot + local checkpoints + request → ``RunPlan``.

Everything here is a function of values read before (``streamproc.kafka.planner`` reads the one
``ClusterSnapshot`` and the checkpoints, then calls :func:`build_run_plan`), so the same inputs give the same plan
bytes and every rule can be tested without a broker.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_analysis import TopologyAnalysis
from streamproc.errors import PlanError
from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    ByDurationEnd,
    ByDurationStart,
    ClusterSnapshot,
    IsolationLevel,
    PlanRequest,
    StartPolicy,
    TopicPartition,
)
from streamproc.plan.internal_topics import NewInternalTopic
from streamproc.plan.positions import plan_ranges
from streamproc.plan.preconditions import check_streams_group_internal_topics, check_streams_group_topology
from streamproc.plan.refusals import MissingTopic, OffsetOutOfRange
from streamproc.plan.run_plan import PlannedRestore, RunPlan
from streamproc.plan.streams_group_topology import DeclaredTopology
from streamproc.state.local_checkpoints import LocalCheckpoints
from streamproc.state.restore_plan import ChangelogState, ProcessingGuarantee, plan_restore
from streamproc.state.store_registration import StateStoreMetadata

log = logging.getLogger(__name__)

GLOBAL_TASK = "global"


def isolation_for(processing_guarantee: str, isolation_level: str | None = None) -> IsolationLevel:
    """``processing.guarantee`` decides the consumer's isolation level, as in ``StreamsConfig`` (EOS: committed).

    ``isolation_level`` is the consumer's own ``isolation.level``: Kafka Streams honours it under
    ``at_least_once`` and overrides it under ``exactly_once_v2`` (``NON_CONFIGURABLE_CONSUMER_EOS_CONFIGS``, with a
    warning); streamproc refuses that contradiction instead of ignoring half the request.
    """
    try:
        guarantee = ProcessingGuarantee(processing_guarantee)
    except ValueError:
        names = ", ".join(g.value for g in ProcessingGuarantee)
        raise PlanError(f"processing.guarantee must be one of {names}, not '{processing_guarantee}'") from None
    guaranteed = IsolationLevel.READ_COMMITTED if guarantee.eos else IsolationLevel.READ_UNCOMMITTED
    if isolation_level is None:
        return guaranteed
    try:
        requested = IsolationLevel(isolation_level)
    except ValueError:
        levels = ", ".join(level.value for level in IsolationLevel)
        raise PlanError(f"isolation.level must be one of {levels}, not '{isolation_level}'") from None
    if guarantee.eos and requested is not guaranteed:
        raise PlanError(
            f"--processing-guarantee {processing_guarantee} reads {guaranteed.value}; --isolation-level "
            f"{requested.value} contradicts it (Kafka Streams would ignore it): drop one of them"
        )
    return requested


def application_spec(
    application_id: str,
    analysis: TopologyAnalysis,
    *,
    isolation_level: IsolationLevel,
    auto_offset_reset: str = "earliest",
    reset_policies: Mapping[str, str] | None = None,
) -> ApplicationSpec:
    """What the position rules need from the analysed topology."""
    sources: dict[str, int] = {}
    internal: set[str] = set()
    changelogs: dict[str, int] = {}
    for sub in analysis.subtopologies:
        for topic in sub.source_topics:
            sources.setdefault(topic, sub.id)
        internal.update(sub.repartition_source_topics)
        for store in sub.stores:
            if not store.reuses_source_topic:  # a user topic: never internal, its count is the source's own
                changelogs[store.changelog_topic] = sub.id
    return ApplicationSpec(
        application_id=application_id,
        source_topics=tuple(sorted(sources)),
        isolation_level=isolation_level,
        internal_source_topics=frozenset(internal),
        subtopology_of=sources,
        changelog_topics=changelogs,
        copartition_groups=analysis.enforced_copartition_groups,
        stages=analysis.stages,
        reset_policies=dict(reset_policies or {}),
        auto_offset_reset=auto_offset_reset,
    )


def topics_to_read(analysis: TopologyAnalysis | None, app: ApplicationSpec) -> tuple[str, ...]:
    """The topics whose offsets a plan needs: the sources, the changelogs (restores) and the global-store topics."""
    topics = set(app.source_topics)
    if analysis is not None:
        topics.update(s.changelog_topic for sub in analysis.subtopologies for s in sub.stores)
        topics.update(g.topic for g in analysis.global_stores)
    return tuple(sorted(topics))


def build_run_plan(
    app: ApplicationSpec,
    request: PlanRequest,
    snapshot: ClusterSnapshot,
    *,
    analysis: TopologyAnalysis | None = None,
    processing_guarantee: str = "at_least_once",
    local: LocalCheckpoints | None = None,
    clock_given: bool = False,
    topology: str | None = None,
    declared: DeclaredTopology | None = None,
    to_create: Sequence[NewInternalTopic] = (),
) -> RunPlan:
    """Resolve a full ``RunPlan`` from values only.

    ``local`` holds the checkpoints of the application's ``state.dir`` (``None``: no directory, every restore
    starts at the changelog's log start). ``clock_given`` says the caller fixed ``now_ms``; otherwise the plan
    keeps it only when a mode needs the clock, so that its bytes do not depend on when it was made. ``declared``:
    what the user's topology, given as a module, knows beyond its describe() (compared with a streams group's).
    ``to_create``: the internal topics a first run creates, compared with those a streams group declares.
    """
    local = local or LocalCheckpoints()
    positions = plan_ranges(snapshot, app, request)
    if analysis is not None:
        check_streams_group_topology(snapshot.group, analysis, app.application_id, declared)
        check_streams_group_internal_topics(snapshot.group, analysis, app.application_id, to_create)
    if not clock_given and not _uses_clock(request):
        positions = replace(positions, now_ms=None)
    sources = set(app.source_topics)
    compacted = [name for name, topic in snapshot.topics.items() if name in sources and topic.compacted]
    restores: list[PlannedRestore] = []
    if analysis is not None:
        restores = plan_restores(analysis, processing_guarantee, snapshot, local)
        restores += plan_global_restores(analysis, snapshot, local, request)
    ids = {name: snapshot.topic_ids[name] for name in sorted(sources) if name in snapshot.topic_ids}
    plan = RunPlan.build(
        positions, compacted_topics=compacted, analysis=analysis, restores=restores, topic_ids=ids, topology=topology
    )
    if analysis is not None:
        plan = replace(plan, sink_partitions=sink_partitions(analysis, snapshot.partition_counts))
    if snapshot.group is not None and snapshot.group.protocol == "streams":
        plan = replace(plan, streams_group_epoch=snapshot.group.epoch)  # the hand-off's guard checks it
    log.info(
        "Planned %d range(s) over %d task(s), at most %d records",
        len(plan.ranges), len(plan.tasks), sum(r.end - r.start for r in plan.ranges),
    )  # fmt: skip
    return plan


def sink_partitions(analysis: TopologyAnalysis, cluster: Mapping[str, int]) -> dict[str, int]:
    """The partition count of every output topic the topology's static sinks write, as the cluster has it: the
    process step partitions each sink's records by them (a run's own repartition topics are planned ranges, and an
    output topic that does not exist yet needs ``--partitions``)."""
    internal = set(analysis.internal_topics)
    outputs = {t for sub in analysis.subtopologies for t in sub.sink_topics if t not in internal}
    return {topic: cluster[topic] for topic in sorted(outputs) if topic in cluster}


def _uses_clock(request: PlanRequest) -> bool:
    return isinstance(request.start, ByDurationStart) or isinstance(request.end, ByDurationEnd)


def _log_offsets(snapshot: ClusterSnapshot, topic: str) -> dict[int, tuple[int, int]]:
    """(log start, high watermark) per partition of a topic in the snapshot; empty when it does not exist."""
    state = snapshot.topics.get(topic)
    if state is None:
        return {}
    return {p: (s.log_start, s.high_watermark) for p, s in state.partitions.items()}


def plan_restores(
    analysis: TopologyAnalysis,
    processing_guarantee: str,
    snapshot: ClusterSnapshot,
    local: LocalCheckpoints,
) -> list[PlannedRestore]:
    """Per task and store, the changelog range Kafka Streams would restore from, after the task's checkpoint.

    Stores are taken as persistent (``describe()`` does not say; an in-memory store restores its whole changelog
    on every start, which the plan then under-states). A changelog topic that does not exist yet (the application
    never ran) restores nothing. A table store that uses its source topic as changelog restores from it up to the
    group's committed offset of that partition (``StoreChangelogReader``; nothing committed: nothing restored): the
    records after it are the run's input, which the table source puts into the store as it processes them.
    """
    restores: list[PlannedRestore] = []
    for task_id, _sources in sorted(analysis.tasks.items()):
        stores = sorted(analysis.subtopology(task_id.subtopology).stores, key=lambda s: s.name)
        if not stores:
            continue
        metadata = [
            StateStoreMetadata(
                s.name,
                True,
                TopicPartition(s.changelog_topic, task_id.partition),
                source_topic_changelog=s.reuses_source_topic,
            )
            for s in stores
        ]
        changelogs = {}
        for m in metadata:
            assert m.changelog_partition is not None
            offsets = _log_offsets(snapshot, m.changelog_partition.topic)
            start, end = offsets.get(m.changelog_partition.partition, (0, 0))
            committed = snapshot.committed.get(m.changelog_partition) if m.source_topic_changelog else None
            changelogs[m.changelog_partition] = ChangelogState(
                start, end, group_committed_offset=None if committed is None else committed.offset
            )
        on_disk = local.task(TaskId(task_id.subtopology, task_id.partition))
        checkpoint = None if on_disk.checkpoint is None else dict(on_disk.checkpoint)
        decision = plan_restore(
            ProcessingGuarantee(processing_guarantee),
            metadata,
            checkpoint,
            changelogs,
            task_dir_empty=on_disk.task_dir_empty,
        )
        for restore in decision.restores:
            entry = checkpoint.get(restore.changelog_partition) if checkpoint else None
            restores.append(
                PlannedRestore(
                    task_id=str(task_id),
                    store=restore.store_name,
                    changelog_topic=restore.changelog_partition.topic,
                    changelog_partition=restore.changelog_partition.partition,
                    start=restore.start_offset,
                    # a source topic with nothing committed ends at 0 (StoreChangelogReader): empty, at its start
                    end=max(restore.start_offset, restore.restore_end_offset),
                    checkpoint_offset=entry,
                    task_corrupted=decision.task_corrupted,
                    local_state_wiped=decision.local_state_wiped,
                )
            )
    return restores


def plan_global_restores(
    analysis: TopologyAnalysis,
    snapshot: ClusterSnapshot,
    local: LocalCheckpoints,
    request: PlanRequest,
) -> list[PlannedRestore]:
    """Per global store partition: ``[global checkpoint or log start, latest)`` (planning.md §10).

    The global checkpoint (``<state.dir>/<application.id>/global/.checkpoint``) holds the global consumer's
    position, so the range starts there. A checkpoint below the log start is data lost to retention: refused, or
    with ``start_policy=clamp`` the store is rebuilt from the log start, which is where Kafka Streams ends up after
    it fails with "Bootstrapping global state failed" and is restarted. Latest is the high watermark.
    """
    if not analysis.global_stores:
        return []
    topics = sorted({g.topic for g in analysis.global_stores})
    missing = [t for t in topics if not _log_offsets(snapshot, t)]
    if missing:
        raise MissingTopic(
            f"global store topic(s) {missing} do not exist; create them or fix the topology", topics=missing
        )
    restores = []
    for store in sorted(analysis.global_stores, key=lambda g: g.store):
        for partition, (log_start, latest) in sorted(_log_offsets(snapshot, store.topic).items()):
            topic = store.topic
            position = local.global_checkpoint.get(TopicPartition(topic, partition))
            start = log_start if position is None else position
            if position is not None and position < log_start:
                tp = TopicPartition(topic, partition)
                if request.start_policy is not StartPolicy.CLAMP:
                    raise OffsetOutOfRange(
                        f"{tp}: the global checkpoint {position} is below the log start {log_start}: offsets "
                        f"{position}..{log_start - 1} of global store {store.store} were deleted by retention; Kafka "
                        "Streams would fail with 'Bootstrapping global state failed' and rebuild the store from the "
                        "log start; re-plan with --on-data-loss=clamp to do the same",
                        partitions=[tp],
                    )
                log.warning(
                    "%s: global checkpoint %d below log start %d; rebuilding %s", tp, position, log_start, store.store
                )
                start = log_start
            restores.append(
                PlannedRestore(
                    task_id=GLOBAL_TASK,
                    store=store.store,
                    changelog_topic=topic,
                    changelog_partition=partition,
                    start=min(start, latest),
                    end=latest,
                    checkpoint_offset=position,
                    local_state_wiped=position is not None and position < log_start,
                )
            )
    return restores
