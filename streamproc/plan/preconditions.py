"""The preconditions of a plan (planning.md §2): an inactive group, existing topics, unchanged partition counts.

They are checked before any position is resolved, on the same snapshot, and each failure is a refusal that quotes
what the reset tools or Kafka Streams would say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from streamproc.engine.topology_analysis import (
    TopologyAnalysis,
    check_existing_internal_topic,
    enforce_copartitioning,
)
from streamproc.plan.cluster_snapshot import ApplicationSpec, ClusterSnapshot, GroupState
from streamproc.plan.empty_group import (
    PLAN_WAIT_HINT,
    group_is_inactive,
    members_leave,
    seconds,
    wait_duration_hint,
)
from streamproc.plan.internal_topics import NewInternalTopic
from streamproc.plan.refusals import (
    GroupActive,
    MissingTopic,
    PartitionCountChanged,
    StreamsGroupRefused,
    StreamsTopologyDiffers,
)
from streamproc.plan.streams_group_topology import DeclaredTopology, internal_topics_difference, topology_difference

#: The state of a streams group whose members could not be read (kafka/cluster.read_group).
UNKNOWN_GROUP_STATE: Final = "Unknown"
#: The state of a streams group whose records show members: which of Kafka's ``NotReady``, ``Assigning``,
#: ``Reconciling``, ``Stable`` they do not say.
STREAMS_GROUP_WITH_MEMBERS: Final = "NotEmpty"


def streams_group_refusal(application_id: str, why: str = "") -> StreamsGroupRefused:
    """The refusal of a KIP-1071 streams group whose members could not be read (``why``), with the way out.

    An empty streams group is planned from and handed off to like a classic one (docs/streams-groups.md: OffsetFetch
    and the transactional offset commit work for it); its members are read from its records in
    ``__consumer_offsets``, which needs READ on that topic. Without them streamproc cannot see that the application is
    stopped, and the broker accepts a transactional commit even while it has members, so it refuses. The way out
    keeps the application's positions: grant the read, or save the committed offsets with the streams-group tool,
    delete the group (a streams group cannot become a classic one), plan from the saved offsets and run the
    application with the classic protocol (its partition times are not in the export).
    """
    tool = "kafka-streams-groups.sh --bootstrap-server <bootstrap>"
    csv = f"{application_id}-offsets.csv"
    because = f" ({why})" if why else ""
    return StreamsGroupRefused(
        f"group '{application_id}' is a KIP-1071 streams group (group.protocol=streams) whose members streamproc "
        f"could not read from __consumer_offsets{because}, so it can neither see that the application is stopped nor "
        "hand off to it; an empty streams group is supported when its principal may READ __consumer_offsets. Or: "
        f"stop every instance and check that `{tool} --describe --group {application_id} --members` lists none; "
        f"save the group's offsets with `{tool} --reset-offsets --group {application_id} --all-input-topics "
        f"--to-current --dry-run --export > {csv}`; delete the group with `{tool} --delete --group {application_id}`;"
        f" plan again with --from-file {csv}; after the hand-off start the application with group.protocol=classic "
        "(the saved offsets keep its positions, not its partition times)",
        details={"protocol": "streams"},
    )


def streams_group_active(group: GroupState, application_id: str, then: str) -> GroupActive:
    """A streams group with members: each named with its client id and host, as its member record has them."""
    members = ", ".join(f"{m.client_id} on {m.host or 'an unknown host'}" for m in group.members)
    epoch = f" at epoch {group.epoch}" if group.epoch is not None else ""
    return GroupActive(
        f"streams group '{application_id}'{epoch} has {len(group.members)} member(s) ({members}): stop every "
        f"instance and {then} (`kafka-streams-groups.sh --describe --group {application_id} --members` lists them; "
        "a member that does not leave is removed group.streams.session.timeout.ms after its last heartbeat)",
        details={"members": len(group.members), "state": group.state, "protocol": "streams"},
    )


def check_group(
    group: GroupState | None,
    application_id: str,
    *,
    then: str = "plan again",
    wait_hint: str | None = PLAN_WAIT_HINT,
    waited_ms: int | None = None,
) -> None:
    """Refuse while the group has members or is not ``Empty``/``Dead`` (a missing group is inactive), and refuse a
    KIP-1071 streams group whose members could not be read (state.md §13, docs/streams-groups.md).

    The plan and the hand-off both ask this (``then`` says what to do once the application is stopped; ``wait_hint``
    how to wait for the group instead, ``None`` where no wait is offered; ``waited_ms`` how long the plan waited): the
    broker accepts a tool's offset commit even while the group has members (§8.4), so the tool must see an empty
    group. The members may be those of an application that no longer runs (:func:`members_leave`), but nothing is
    committed while they exist: the refusal says when they will be gone.
    """
    if group is None:
        return
    if group.protocol == "streams" and group.state == UNKNOWN_GROUP_STATE:
        raise streams_group_refusal(application_id, group.members_unknown)
    if group.protocol == "streams" and group.members:
        raise streams_group_active(group, application_id, then)
    if group_is_inactive(group):
        return
    members = ", ".join(f"{m.client_id} on {m.host or 'an unknown host'}" for m in group.members) or "none listed"
    still = group.state
    if waited_ms is not None:
        still = f"still {group.state} after waiting {seconds(waited_ms)} for it to empty"
    leave = f"{members_leave(group)}; " if group.members else ""
    wait = f", {wait_hint}{wait_duration_hint(group)}" if wait_hint and group.members else ""
    raise GroupActive(
        f"group '{application_id}' is {still} with {len(group.members)} member(s) ({members}): {leave}stop every "
        f"instance and {then}{wait} (kafka-consumer-groups.sh: Error: Assignments can only be reset if the group "
        f"'{application_id}' is inactive, but the current state is {group.state}.)",
        details={"members": len(group.members), "state": group.state},
    )


def check_streams_group_topology(
    group: GroupState | None,
    analysis: TopologyAnalysis,
    application_id: str,
    declared: DeclaredTopology | None = None,
) -> None:
    """A streams group's topology (the one its members declared to the broker) must be the user's: the plan hands
    the group's offsets and the stores' state to that application (``plan/streams_group_topology``; ``declared``:
    what a topology given as a module knows beyond its describe())."""
    if group is None or group.protocol != "streams" or group.topology is None:
        return
    difference = topology_difference(group.topology, analysis, declared)
    if difference is not None:
        raise StreamsTopologyDiffers(
            f"the topology of streams group '{application_id}' (topology epoch {group.topology.epoch}) is not the "
            f"Python topology's: {difference}; plan with the application's topology (`streamproc topology check` "
            "compares it with the application's describe())"
        )


def check_streams_group_internal_topics(
    group: GroupState | None,
    analysis: TopologyAnalysis,
    application_id: str,
    to_create: Sequence[NewInternalTopic] = (),
) -> None:
    """A streams group's internal topics as its application declared them (partition counts it fixed; for a topic
    the plan creates, the replication factor and configs too) must be the plan's: the broker creates and checks them
    so (``streams_group_topology.internal_topics_difference``). Asked before the plan creates anything."""
    if group is None or group.protocol != "streams" or group.topology is None:
        return
    difference = internal_topics_difference(group.topology, analysis.internal_topics, to_create)
    if difference is not None:
        raise StreamsTopologyDiffers(
            f"streams group '{application_id}' (topology epoch {group.topology.epoch}) declares its internal topics "
            f"otherwise than the plan: {difference}; plan with the application's settings and store kinds "
            "(--streams-setting, --store-kind), as the broker creates and checks the topics as the application "
            "declared them"
        )


def check_topics(snapshot: ClusterSnapshot, app: ApplicationSpec) -> None:
    """Every source topic (external and internal) must exist (``StreamsPartitionAssignor``)."""
    missing = [t for t in app.source_topics if t not in snapshot.topics or not snapshot.topics[t].partitions]
    if not missing:
        return
    external = sorted(t for t in missing if t not in app.internal_source_topics)
    internal = sorted(t for t in missing if t in app.internal_source_topics)
    parts = []
    for topic in external:
        sub = app.subtopology_of.get(topic)
        where = f" of sub-topology {sub}" if sub is not None else ""
        parts.append(f"source topic '{topic}'{where} does not exist")
    for topic in internal:
        sub = app.subtopology_of.get(topic)
        where = f" of sub-topology {sub}" if sub is not None else ""
        parts.append(
            f"internal topic '{topic}'{where} does not exist (Kafka Streams creates it at startup: start the "
            f"application once, then plan again, or plan with --create-internal-topics)"
        )
    quoted = f' (Kafka Streams would fail with "Missing source topics. [{", ".join(external)}]")' if external else ""
    raise MissingTopic("; ".join(parts) + quoted + "; create the topic or fix the topology", topics=missing)


def check_partition_counts(snapshot: ClusterSnapshot, app: ApplicationSpec) -> None:
    """Co-partitioned topics must agree; sources must match their changelogs, a previous plan and the commits.

    The first two are Kafka Streams' own rules, checked by the topology analysis' functions (one definition each).
    """
    counts = {name: len(topic.partitions) for name, topic in snapshot.topics.items()}
    for group in app.copartition_groups:
        present = [t for t in group if t in counts]
        if len(present) > 1:
            enforce_copartitioning(present, {}, {}, counts)
    for changelog, sub in sorted(app.changelog_topics.items()):
        if changelog not in counts:
            continue
        sources = [t for t in app.source_topics if app.subtopology_of.get(t) == sub and t in counts]
        if not sources:
            continue
        expected = max(counts[t] for t in sources)
        grown = max(sources, key=lambda t: (counts[t], t))
        check_existing_internal_topic(
            changelog,
            expected,
            counts,
            reason=f"{grown} now has {expected} partitions, {counts[changelog]} when changelog {changelog} was created",
        )
    for topic, previous in sorted(app.previous_partition_counts.items()):
        if topic in counts and counts[topic] != previous and topic in app.source_topics:
            raise PartitionCountChanged(
                f"{topic} now has {counts[topic]} partitions, {previous} when the previous plan was made; the tasks "
                f"of the changed partitions have no state; reset the application (StreamsResetter) and plan again",
                topics=[topic],
            )
    vanished = [
        tp
        for tp in snapshot.committed
        if tp.topic in app.source_topics
        and tp.topic in snapshot.topics
        and tp.partition not in snapshot.topics[tp.topic].partitions
    ]
    if vanished:
        names = ", ".join(str(tp) for tp in sorted(vanished))
        raise PartitionCountChanged(
            f"the group has committed offsets for {names}, which no longer exist (topic deleted and re-created "
            f"with fewer partitions?); reset the application (StreamsResetter) and plan again",
            partitions=vanished,
            topics={tp.topic for tp in vanished},
        )
