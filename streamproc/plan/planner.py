"""The plan step against a live cluster: topology + request + cluster snapshot → ``RunPlan``.

The pure parts (topology analysis, position rules) decide everything; this module only gathers their inputs:
the topology's description (a Kafka Streams ``describe()`` text or a Python ``Topology``), the partition counts
and the snapshot read once from the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace

from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import TopologyDescription, parse_description
from streamproc.errors import PlanError
from streamproc.kafka.cluster import partition_counts, read_snapshot
from streamproc.plan.cluster_snapshot import ApplicationSpec, IsolationLevel, PlanRequest
from streamproc.plan.positions import plan_ranges
from streamproc.plan.run_plan import RunPlan

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
        copartition_groups=analysis.copartition_groups,
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
) -> RunPlan:
    """Resolve a full ``RunPlan``; with no topology, ``source_topics`` are planned as one sub-topology's inputs."""
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
    plan = RunPlan.build(positions, compacted_topics=compacted, analysis=analysis)
    log.info(
        "Planned %d range(s) over %d task(s), at most %d records",
        len(plan.ranges), len(plan.tasks), sum(r.end - r.start for r in plan.ranges),
    )  # fmt: skip
    return plan


def _uses_clock(request: PlanRequest) -> bool:
    from streamproc.plan.cluster_snapshot import ByDurationEnd, ByDurationStart

    return isinstance(request.start, ByDurationStart) or isinstance(request.end, ByDurationEnd)
