"""The plan step against a live cluster: read once, then plan purely (``streamproc.plan.run_planner``).

This module only gathers the inputs: the topology's description (a Kafka Streams ``describe()`` text or a parsed
one), ONE cluster snapshot (metadata, offsets of the sources, of the changelogs the restores start from and of the
global-store topics, the group and its commits, topic ids, timestamp lookups) and the checkpoints of the
application's ``state.dir``. Every decision is made by pure code on those values.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_analysis import TOPOLOGY_OPTIMIZATION_CONFIG, TopologyAnalysis, analyze
from streamproc.engine.topology_description import TopologyDescription, parse_description
from streamproc.errors import PlanError
from streamproc.kafka import clients
from streamproc.kafka.cluster import ClusterReader, read_group
from streamproc.kafka.internal_topics import create_internal_topics
from streamproc.kafka.range_reader import refuse_isolation_setting
from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    ClusterSnapshot,
    GroupState,
    PartitionState,
    PlanRequest,
    TopicState,
)
from streamproc.plan.empty_group import wait_for_empty_group
from streamproc.plan.internal_topics import InternalTopicSettings, NewInternalTopic, internal_topics_to_create
from streamproc.plan.preconditions import (
    check_group,
    check_streams_group_internal_topics,
    check_streams_group_topology,
)
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import application_spec, build_run_plan, isolation_for, topics_to_read
from streamproc.plan.streams_group_topology import DeclaredTopology
from streamproc.state.local_checkpoints import LocalCheckpoints, read_local_checkpoints

log = logging.getLogger(__name__)


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
    isolation_level: str | None = None,
    create_internal_topics: InternalTopicSettings | None = None,
    dry_run: bool = False,
    source_topic_changelogs: Mapping[str, str] | None = None,
    topology_optimization: str | None = None,
    wait_for_empty_group_ms: int | None = None,
    group_protocol: str | None = None,
    declared: DeclaredTopology | None = None,
) -> RunPlan:
    """Resolve a full ``RunPlan``; with no topology, ``source_topics`` are planned as one sub-topology's inputs.

    ``state_dir`` is the application's ``state.dir`` as the batch will use it: each task's ``.checkpoint`` there
    decides where its stores' changelog restore starts (no directory: from the changelog's log start).
    ``isolation_level`` is the consumer's ``isolation.level`` where the guarantee leaves it open.
    ``create_internal_topics`` (a new application's first run): the topology's missing repartition and changelog
    topics are created as Kafka Streams would create them, then planned like existing, empty ones; with
    ``dry_run`` nothing is created and the plan plans them as empty topics without ids (a preview).
    ``source_topic_changelogs`` (store -> source topic, ``Topology.source_topic_changelogs``) are the table stores
    that restore from their source topic (``topology.optimization=all``), which describe() does not show; with only
    the text, ``topology_optimization`` (the app's ``topology.optimization``) says the same for every table source.
    ``wait_for_empty_group_ms`` (``--wait-for-empty-group``): while the group still has members, wait up to that long
    for it to empty (:func:`await_empty_group`, after the topology's own refusals), then read the cluster afresh.
    ``group_protocol`` (the application's ``group.protocol``): with ``streams`` the cluster must offer the streams
    group protocol (:func:`refuse_missing_streams_protocol`). ``declared``
    (``plan.streams_group_topology.declared_topology``): a topology given as a module also has its logged stores and
    copartition groups compared with a streams group's topology record.
    """
    refuse_isolation_setting(client_config)
    if (group_protocol or "").strip().lower() == "streams":
        refuse_missing_streams_protocol(client_config, application_id)
    isolation = isolation_for(processing_guarantee, isolation_level)
    if topology is None and not source_topics:
        raise PlanError("give the application's topology (describe() text) or its source topics")
    reader = ClusterReader(client_config)
    analysis: TopologyAnalysis | None = None
    to_create: tuple[NewInternalTopic, ...] = ()
    if topology is not None:
        description = parse_description(topology) if isinstance(topology, str) else topology
        first_run = create_internal_topics is not None
        config = {} if topology_optimization is None else {TOPOLOGY_OPTIMIZATION_CONFIG: topology_optimization}

        def analyzed(counts: Mapping[str, int], require_internal_topics: bool = True) -> TopologyAnalysis:
            return analyze(
                description,
                application_id,
                counts,
                config,
                require_internal_topics=require_internal_topics,
                source_topic_changelogs=source_topic_changelogs,
            )

        analysis = analyzed(reader.partition_counts, require_internal_topics=not first_run)
        if wait_for_empty_group_ms is not None and await_empty_group(
            client_config, application_id, wait_for_empty_group_ms
        ):
            reader = ClusterReader(client_config)  # the cluster as it is once the group is empty
            analysis = analyzed(reader.partition_counts, require_internal_topics=not first_run)
        if create_internal_topics is not None:
            to_create = internal_topics_to_create(analysis, reader.partition_counts, create_internal_topics)
            if to_create and not dry_run:
                # the plan's group rule, before its one write: nothing is created for a running application
                group = read_group(clients.admin(client_config), application_id, client_config=client_config)
                check_group(group, application_id)
                # a streams group's broker creates its internal topics as the application declared them: so must we
                check_streams_group_topology(group, analysis, application_id, declared)
                check_streams_group_internal_topics(group, analysis, application_id, to_create)
                create_internal_topics_now(client_config, to_create)
                reader = ClusterReader(client_config)  # the metadata with the new topics
                analysis = analyzed(reader.partition_counts)
        app = application_spec(application_id, analysis, isolation_level=isolation, auto_offset_reset=auto_offset_reset)
    else:
        if create_internal_topics is not None:
            raise PlanError("--create-internal-topics needs the application's topology (its internal topics)")
        if wait_for_empty_group_ms is not None and await_empty_group(
            client_config, application_id, wait_for_empty_group_ms
        ):
            reader = ClusterReader(client_config)
        app = ApplicationSpec(
            application_id=application_id,
            source_topics=tuple(sorted(set(source_topics))),
            isolation_level=isolation,
            auto_offset_reset=auto_offset_reset,
        )
    snapshot = reader.snapshot(app, request, now_ms=now_ms, also_topics=topics_to_read(analysis, app))
    if to_create and dry_run:
        snapshot = _with_empty_topics(snapshot, to_create)
    local = LocalCheckpoints()
    if state_dir is not None and analysis is not None:
        # The task directories of stateful tasks, as the plan has always read them: <app dir>/<sub>_<partition>.
        stateful = {sub.id for sub in analysis.subtopologies if sub.stores}
        tasks = sorted({TaskId(t.subtopology, t.partition) for t in analysis.tasks if t.subtopology in stateful})
        local = read_local_checkpoints(state_dir, application_id, tasks, read_global=bool(analysis.global_stores))
    plan = build_run_plan(
        app,
        request,
        snapshot,
        analysis=analysis,
        processing_guarantee=processing_guarantee,
        local=local,
        clock_given=now_ms is not None,
        topology=None if topology is None else topology if isinstance(topology, str) else str(topology),
        declared=declared,
        to_create=to_create,
    )
    if to_create:
        return replace(plan, internal_topics=to_create, internal_topics_created=not dry_run)
    stores = [] if analysis is None else [s for sub in analysis.subtopologies for s in sub.stores]
    missing = sorted({s.changelog_topic for s in stores} - set(snapshot.topics))
    if missing and create_internal_topics is None:
        warning = (
            f"changelog topic(s) {', '.join(missing)} do not exist: the hand-off will refuse to publish to them; if "
            "the application never ran, plan with --create-internal-topics (they are created as Kafka Streams would)"
        )
        tables = sorted(s.name for s in stores if s.changelog_topic in missing and s.source_topic_changelog)
        if tables:
            warning += (
                f"; if the application runs with topology.optimization=all, table store(s) {', '.join(tables)} "
                "restore from their source topics instead: plan with --topology-optimization all"
            )
        return replace(plan, warnings=(*plan.warnings, warning))
    return plan


def refuse_missing_streams_protocol(client_config: Mapping[str, object], application_id: str) -> None:
    """An application with ``group.protocol=streams`` cannot start on a cluster without the streams group protocol
    (docs/streams-groups.md §5), and no group shows it: ask the broker, and refuse when it says no."""
    from streamproc.kafka.streams_protocol import ask_streams_protocol
    from streamproc.plan.refusals import StreamsProtocolUnsupported

    answer = ask_streams_protocol(client_config, application_id)
    if answer.offered is None:
        log.info(
            "group.protocol=streams: whether the cluster offers the streams protocol is unknown (%s)", answer.detail
        )
    if answer.offered is False:
        raise StreamsProtocolUnsupported(
            f"application '{application_id}' has group.protocol=streams, but the cluster does not offer the streams "
            f"group protocol ({answer.detail}): Kafka Streams would fail at its first heartbeat (UNSUPPORTED_VERSION) "
            "and never resume after the hand-off; enable it on the brokers (group.coordinator.rebalance.protocols "
            "with streams, the streams.version feature at 1) or run the application with group.protocol=classic",
            details={"protocol": "streams"},
        )


def await_empty_group(client_config: Mapping[str, object], application_id: str, wait_ms: int) -> bool:
    """Wait up to ``wait_ms`` for the application's group to have no members (``plan/empty_group``), describing it
    twice a second; whether it had members at first (the caller then reads the cluster afresh).

    A group that still has members at the deadline is refused here, with the plan's refusal naming the wait
    (``check_group``); one that emptied is checked again, with its committed offsets, by the snapshot read after.
    The members' session timeouts (for the log line and the refusal) are read from the group's metadata record once
    per member.
    """
    admin = clients.admin(client_config)
    timeouts: dict[str, int | None] = {}
    reads = 0

    def read() -> GroupState | None:
        nonlocal reads
        reads += 1
        return read_group(admin, application_id, client_config=client_config, session_timeouts=timeouts)

    group = wait_for_empty_group(read, application_id, wait_ms)
    check_group(group, application_id, waited_ms=wait_ms if reads > 1 else None)
    return reads > 1


def create_internal_topics_now(client_config: Mapping[str, object], topics: Sequence[NewInternalTopic]) -> None:
    """CreateTopics for the first run's internal topics (the plan's one write to the cluster)."""
    create_internal_topics(clients.admin(client_config), topics)


def _with_empty_topics(snapshot: ClusterSnapshot, topics: Sequence[NewInternalTopic]) -> ClusterSnapshot:
    """The snapshot as it will be once ``topics`` exist: empty partitions, no topic ids (a dry run's preview)."""
    empty = PartitionState(log_start=0, high_watermark=0, last_stable_offset=0, log_end=0)
    added = {
        t.name: TopicState(
            partitions=dict.fromkeys(range(t.partitions), empty),
            cleanup_policy=t.configs.get("cleanup.policy", "delete"),
            internal=True,
        )
        for t in topics
    }
    counts = {**snapshot.partition_counts, **{t.name: t.partitions for t in topics}}
    return replace(snapshot, topics={**snapshot.topics, **added}, partition_counts=counts)
