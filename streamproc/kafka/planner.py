"""The plan step against a live cluster: read once, then plan purely (``streamproc.plan.run_planner``).

This module only gathers the inputs: the topology's description (a Kafka Streams ``describe()`` text or a parsed
one), ONE cluster snapshot (metadata, offsets of the sources, of the changelogs the restores start from and of the
global-store topics, the group and its commits, topic ids, timestamp lookups) and the checkpoints of the
application's ``state.dir``. Every decision is made by pure code on those values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import TopologyDescription, parse_description
from streamproc.errors import PlanError
from streamproc.kafka.cluster import ClusterReader
from streamproc.kafka.range_reader import refuse_isolation_setting
from streamproc.plan.cluster_snapshot import ApplicationSpec, PlanRequest
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import application_spec, build_run_plan, isolation_for, topics_to_read
from streamproc.state.local_checkpoints import LocalCheckpoints, read_local_checkpoints


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
) -> RunPlan:
    """Resolve a full ``RunPlan``; with no topology, ``source_topics`` are planned as one sub-topology's inputs.

    ``state_dir`` is the application's ``state.dir`` as the batch will use it: each task's ``.checkpoint`` there
    decides where its stores' changelog restore starts (no directory: from the changelog's log start).
    ``isolation_level`` is the consumer's ``isolation.level`` where the guarantee leaves it open.
    """
    refuse_isolation_setting(client_config)
    isolation = isolation_for(processing_guarantee, isolation_level)
    if topology is None and not source_topics:
        raise PlanError("give the application's topology (describe() text) or its source topics")
    reader = ClusterReader(client_config)
    analysis: TopologyAnalysis | None = None
    if topology is not None:
        description = parse_description(topology) if isinstance(topology, str) else topology
        analysis = analyze(description, application_id, reader.partition_counts)
        app = application_spec(application_id, analysis, isolation_level=isolation, auto_offset_reset=auto_offset_reset)
    else:
        app = ApplicationSpec(
            application_id=application_id,
            source_topics=tuple(sorted(set(source_topics))),
            isolation_level=isolation,
            auto_offset_reset=auto_offset_reset,
        )
    snapshot = reader.snapshot(app, request, now_ms=now_ms, also_topics=topics_to_read(analysis, app))
    local = LocalCheckpoints()
    if state_dir is not None and analysis is not None:
        # The task directories of stateful tasks, as the plan has always read them: <app dir>/<sub>_<partition>.
        stateful = {sub.id for sub in analysis.subtopologies if sub.stores}
        tasks = sorted({TaskId(t.subtopology, t.partition) for t in analysis.tasks if t.subtopology in stateful})
        local = read_local_checkpoints(state_dir, application_id, tasks, read_global=bool(analysis.global_stores))
    return build_run_plan(
        app,
        request,
        snapshot,
        analysis=analysis,
        processing_guarantee=processing_guarantee,
        local=local,
        clock_given=now_ms is not None,
        topology=None if topology is None else topology if isinstance(topology, str) else str(topology),
    )
