"""The plan step against a live cluster: topology + request + cluster snapshot → ``RunPlan``.

The pure parts (topology analysis, position rules) decide everything; this module only gathers their inputs:
the topology's description (a Kafka Streams ``describe()`` text or a Python ``Topology``), the partition counts
and the snapshot read once from the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import TopologyDescription, parse_description
from streamproc.errors import PlanError
from streamproc.kafka.cluster import partition_counts, read_log_offsets, read_snapshot, topic_ids
from streamproc.plan.cluster_snapshot import ApplicationSpec, IsolationLevel, PlanRequest
from streamproc.plan.positions import plan_ranges
from streamproc.plan.run_plan import PlannedRestore, RunPlan

log = logging.getLogger(__name__)

PROCESSING_GUARANTEES = {
    "at_least_once": IsolationLevel.READ_UNCOMMITTED,
    "exactly_once_v2": IsolationLevel.READ_COMMITTED,
}


def isolation_for(processing_guarantee: str) -> IsolationLevel:
    """``processing.guarantee`` decides the consumer's isolation level, as in ``StreamsConfig``."""
    try:
        return PROCESSING_GUARANTEES[processing_guarantee]
    except KeyError:
        raise PlanError(
            f"processing.guarantee must be one of {', '.join(PROCESSING_GUARANTEES)}, not '{processing_guarantee}'"
        ) from None


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
            changelogs[store.changelog_topic] = sub.id
    return ApplicationSpec(
        application_id=application_id,
        source_topics=tuple(sorted(sources)),
        isolation_level=isolation_level,
        internal_source_topics=frozenset(internal),
        subtopology_of=sources,
        changelog_topics=changelogs,
        copartition_groups=analysis.enforced_copartition_groups,
        reset_policies=dict(reset_policies or {}),
        auto_offset_reset=auto_offset_reset,
    )


def plan_run(
    client_config: Mapping[str, object],
    application_id: str,
    request: PlanRequest,
    *,
    topology: TopologyDescription | str | None = None,
    source_topics: Sequence[str] = (),
    processing_guarantee: str = "at_least_once",
    auto_offset_reset: str = "earliest",
    now_ms: int | None = None,
    state_dir: Path | None = None,
) -> RunPlan:
    """Resolve a full ``RunPlan``; with no topology, ``source_topics`` are planned as one sub-topology's inputs.

    ``state_dir`` is the application's ``state.dir`` as the batch will use it: each task's ``.checkpoint`` there
    decides where its stores' changelog restore starts (no directory: from the changelog's log start).
    """
    isolation = isolation_for(processing_guarantee)
    analysis: TopologyAnalysis | None = None
    if topology is not None:
        description = parse_description(topology) if isinstance(topology, str) else topology
        analysis = analyze(description, application_id, partition_counts(client_config))
        app = application_spec(application_id, analysis, isolation_level=isolation, auto_offset_reset=auto_offset_reset)
    elif source_topics:
        app = ApplicationSpec(
            application_id=application_id,
            source_topics=tuple(sorted(set(source_topics))),
            isolation_level=isolation,
            auto_offset_reset=auto_offset_reset,
        )
    else:
        raise PlanError("give the application's topology (describe() text) or its source topics")
    snapshot = read_snapshot(client_config, app, request, now_ms=now_ms)
    positions = plan_ranges(snapshot, app, request)
    if now_ms is None and not _uses_clock(request):
        positions = replace(positions, now_ms=None)  # the plan's bytes must not depend on when it was made
    compacted = [name for name, topic in snapshot.topics.items() if topic.compacted]
    restores: list[PlannedRestore] = []
    if analysis is not None:
        restores = plan_restores(client_config, analysis, application_id, processing_guarantee, state_dir)
        restores += plan_global_restores(client_config, analysis, application_id, isolation, state_dir, request)
    ids = topic_ids(client_config, sorted(snapshot.topics))
    text = None if topology is None else topology if isinstance(topology, str) else str(topology)
    plan = RunPlan.build(
        positions, compacted_topics=compacted, analysis=analysis, restores=restores, topic_ids=ids, topology=text
    )
    log.info(
        "Planned %d range(s) over %d task(s), at most %d records",
        len(plan.ranges), len(plan.tasks), sum(r.end - r.start for r in plan.ranges),
    )  # fmt: skip
    return plan


def _uses_clock(request: PlanRequest) -> bool:
    from streamproc.plan.cluster_snapshot import ByDurationEnd, ByDurationStart

    return isinstance(request.start, ByDurationStart) or isinstance(request.end, ByDurationEnd)


def plan_restores(
    client_config: Mapping[str, object],
    analysis: TopologyAnalysis,
    application_id: str,
    processing_guarantee: str,
    state_dir: Path | None,
) -> list[PlannedRestore]:
    """Per task and store, the changelog range Kafka Streams would restore from, after the task's checkpoint.

    Stores are taken as persistent (``describe()`` does not say; an in-memory store restores its whole changelog
    on every start, which the plan then under-states). A changelog topic that does not exist yet (the application
    never ran) restores nothing.
    """
    from streamproc.engine.records import TopicPartition as EngineTopicPartition
    from streamproc.engine.task_id import TaskId
    from streamproc.state.offset_checkpoint import OffsetCheckpoint
    from streamproc.state.processor_state_manager import StateStoreMetadata
    from streamproc.state.restore_plan import ChangelogState, ProcessingGuarantee, plan_restore
    from streamproc.state.store_layout import task_dir_is_empty, task_directory

    changelog_topics = sorted({s.changelog_topic for sub in analysis.subtopologies for s in sub.stores})
    offsets = read_log_offsets(client_config, changelog_topics) if changelog_topics else {}
    restores: list[PlannedRestore] = []
    for task_id, _sources in sorted(analysis.tasks.items()):
        stores = sorted(analysis.subtopology(task_id.subtopology).stores, key=lambda s: s.name)
        if not stores:
            continue
        metadata = [
            StateStoreMetadata(s.name, True, EngineTopicPartition(s.changelog_topic, task_id.partition)) for s in stores
        ]
        changelogs = {}
        for m in metadata:
            assert m.changelog_partition is not None
            start, end = offsets.get((m.changelog_partition.topic, m.changelog_partition.partition), (0, 0))
            changelogs[m.changelog_partition] = ChangelogState(start, end)
        checkpoint = None
        empty = True
        if state_dir is not None:
            directory = task_directory(state_dir, application_id, TaskId(task_id.subtopology, task_id.partition))
            empty = task_dir_is_empty(directory)
            path = directory / ".checkpoint"
            checkpoint = OffsetCheckpoint(path).read() if path.exists() else None
        decision = plan_restore(
            ProcessingGuarantee(processing_guarantee), metadata, checkpoint, changelogs, task_dir_empty=empty
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
                    end=restore.restore_end_offset,
                    checkpoint_offset=entry,
                    task_corrupted=decision.task_corrupted,
                    local_state_wiped=decision.local_state_wiped,
                )
            )
    return restores


GLOBAL_TASK = "global"


def plan_global_restores(
    client_config: Mapping[str, object],
    analysis: TopologyAnalysis,
    application_id: str,
    isolation: IsolationLevel,
    state_dir: Path | None,
    request: PlanRequest,
) -> list[PlannedRestore]:
    """Per global store partition: ``[global checkpoint or log start, latest)`` (planning.md §10).

    The global checkpoint (``<state.dir>/<application.id>/global/.checkpoint``) holds the global consumer's
    position, so the range starts there. A checkpoint below the log start is data lost to retention: refused, or
    with ``start_policy=clamp`` the store is rebuilt from the log start, which is where Kafka Streams ends up after
    it fails with "Bootstrapping global state failed" and is restarted.
    """
    from streamproc.engine.records import TopicPartition as EngineTopicPartition
    from streamproc.plan.cluster_snapshot import StartPolicy
    from streamproc.plan.cluster_snapshot import TopicPartition as PlanTopicPartition
    from streamproc.plan.positions import MissingTopic, OffsetOutOfRange
    from streamproc.state.offset_checkpoint import OffsetCheckpoint
    from streamproc.state.store_layout import GLOBAL_STATE_DIR, application_directory

    if not analysis.global_stores:
        return []
    topics = sorted({g.topic for g in analysis.global_stores})
    offsets = read_log_offsets(client_config, topics, isolation)
    missing = [t for t in topics if not any(topic == t for topic, _ in offsets)]
    if missing:
        raise MissingTopic(
            f"global store topic(s) {missing} do not exist; create them or fix the topology", topics=missing
        )
    checkpoint: dict[EngineTopicPartition, int] = {}
    if state_dir is not None:
        path = application_directory(state_dir, application_id) / GLOBAL_STATE_DIR / ".checkpoint"
        if path.exists():
            checkpoint = OffsetCheckpoint(path).read()
    restores = []
    for store in sorted(analysis.global_stores, key=lambda g: g.store):
        for (topic, partition), (log_start, latest) in sorted(offsets.items()):
            if topic != store.topic:
                continue
            position = checkpoint.get(EngineTopicPartition(topic, partition))
            start = log_start if position is None else position
            if position is not None and position < log_start:
                tp = PlanTopicPartition(topic, partition)
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
