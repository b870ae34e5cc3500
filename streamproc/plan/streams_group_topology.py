"""The topology a KIP-1071 streams group holds, and its one comparison with the user's topology.

A streams group's coordinator keeps the topology its members declared (``StreamsGroupTopology`` record, Kafka 4.2):
per sub-topology, the topics it reads, the repartition topics it writes and reads, and its stores' changelogs. A plan
from such a group hands its offsets and state to that application, so a topology whose sub-topologies read, write or
log other topics is not the application's: its tasks would not be the group's, its stores not the changelogs' the
application restores. Kafka Streams builds the record from ``InternalTopologyBuilder``'s topics per sub-topology
(``StreamThread``: the sources without the repartition topics, the sinks that are some sub-topology's repartition
source, the changelogs of logged stores, a table source's own topic when the store reuses it), which is what
:func:`expected_subtopologies` derives from the analysis.

The record also holds each sub-topology's source topic patterns and copartition groups (``StreamThread`` gives each
copartition group of ``InternalTopologyBuilder#copartitionGroups`` to the sub-topology that reads all its topics, as
indexes into the sub-topology's topic arrays). Kafka Streams 4.2 refuses a pattern source under the streams protocol
("Pattern subscription is not yet supported"), so a topology with one is never a streams group's application, and a
record with one (another client) is compared as it is.

What ``describe()`` text does not say is compared only where the user's topology knows it. A Python topology given as
a module (:class:`DeclaredTopology`) knows which stores are logged and which copartition groups it registered: both
must be the group's exactly. From text alone, a changelog the user's topology has and the group's does not is no
difference (a store with logging disabled has no changelog in the group), and a group's copartition group must be one
the text's structure derives (topology.md §3.4), while a derived one the group lacks is none: the derivation
over-approximates for Processor-API stores. A copartition group of one topic constrains nothing and is not compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamproc.engine.topology_analysis import SubtopologyInfo, TopologyAnalysis
from streamproc.plan.internal_topics import NewInternalTopic

if TYPE_CHECKING:
    from streamproc.engine.topology import Topology

#: Why a topology with a pattern source is no streams group's application (``StreamThread#subscribeConsumer``).
PATTERN_REFUSED = " (Kafka Streams 4.2 cannot subscribe to a pattern with group.protocol=streams)"
#: A copartition group: the names of the topics (and patterns) that must be co-partitioned.
CopartitionGroup = frozenset[str]


@dataclass(frozen=True, slots=True)
class StreamsGroupSubtopology:
    """One sub-topology as the group's record has it (``id``: Kafka Streams' sub-topology number, as text)."""

    id: str
    source_topics: frozenset[str]
    source_topic_regex: frozenset[str]
    changelog_topics: frozenset[str]
    repartition_sink_topics: frozenset[str]
    repartition_source_topics: frozenset[str]
    #: each group's source topics, patterns and repartition source topics by name (the record's indexes resolved)
    copartition_groups: frozenset[CopartitionGroup] = field(default=frozenset())


@dataclass(frozen=True, slots=True)
class StreamsGroupTopicInfo:
    """One internal topic as the application declared it to its streams group (the record's ``TopicInfo``): what the
    broker creates it with when it is missing (``InternalTopicManager#missingInternalTopics``, Kafka 4.2).
    ``partitions`` 0: the broker decides the count (a changelog: the sub-topology's task count; a repartition topic:
    from its writers), else the application fixed it (``Repartitioned#withNumberOfPartitions``). ``replication_factor``
    0 or -1: the broker's default. ``configs``: the topic configs Kafka Streams' ``InternalTopicConfig`` computed,
    sorted by name."""

    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTopology:
    """The group's topology: its epoch (``TOPOLOGY-EPOCH`` of ``kafka-streams-groups.sh``), sub-topologies, and its
    internal topics (changelogs and repartition sources) as declared, by name."""

    epoch: int
    subtopologies: tuple[StreamsGroupSubtopology, ...]
    internal_topics: tuple[StreamsGroupTopicInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class DeclaredTopology:
    """What a Python topology given as a module knows and its ``describe()`` text does not: per sub-topology the
    changelogs of its logged stores (``ProcessorTopology#storeToChangelogTopic``), and the copartition groups it
    registered (``InternalTopologyBuilder#copartitionGroups``), full topic names."""

    changelog_topics: Mapping[int, frozenset[str]]
    copartition_groups: tuple[CopartitionGroup, ...]


def declared_topology(topology: Topology, application_id: str) -> DeclaredTopology:
    """The module's :class:`DeclaredTopology` for ``application_id``."""
    return DeclaredTopology(
        changelog_topics={
            sub.id: frozenset(topology.changelog_topics(sub.id, application_id).values())
            for sub in topology.describe().subtopologies
        },
        copartition_groups=tuple(frozenset(g) for g in topology.copartition_groups(application_id)),
    )


def expected_subtopologies(
    analysis: TopologyAnalysis, declared: DeclaredTopology | None = None
) -> tuple[StreamsGroupSubtopology, ...]:
    """The sub-topologies an application with ``analysis``'s topology declares to its streams group: with
    ``declared`` its logged stores' changelogs and registered copartition groups, else every store's changelog and
    the copartition groups the text's structure derives."""
    repartition_sources = {t for sub in analysis.subtopologies for t in sub.repartition_source_topics}
    groups = analysis.copartition_groups if declared is None else declared.copartition_groups
    return tuple(
        StreamsGroupSubtopology(
            id=str(sub.id),
            source_topics=frozenset(sub.source_topics)
            - set(sub.repartition_source_topics)
            - set(sub.pattern_source_topics),
            source_topic_regex=frozenset(sub.source_patterns),
            changelog_topics=frozenset(s.changelog_topic for s in sub.stores)
            if declared is None
            else declared.changelog_topics.get(sub.id, frozenset()),
            repartition_sink_topics=frozenset(t for t in sub.repartition_sink_topics if t in repartition_sources),
            repartition_source_topics=frozenset(sub.repartition_source_topics),
            copartition_groups=_groups_of(sub, groups),
        )
        for sub in sorted(analysis.subtopologies, key=lambda s: s.id)
    )


def topology_difference(
    group: StreamsGroupTopology, analysis: TopologyAnalysis, declared: DeclaredTopology | None = None
) -> str | None:
    """``None`` when the user's topology declares what the group holds, else the first difference, named as the
    describe() differences are (the application has …, the Python topology …). ``declared``: the user's topology
    is a module, which knows which stores are logged and which topics it copartitions."""
    held = {sub.id: sub for sub in group.subtopologies}
    mine = {sub.id: sub for sub in expected_subtopologies(analysis, declared)}
    if held.keys() != mine.keys():
        return (
            f"the application has sub-topologies {_names(held, numeric=True)}, the Python topology "
            f"{_names(mine, numeric=True)}"
        )
    for sub_id in sorted(held, key=_order):
        difference = _subtopology_difference(held[sub_id], mine[sub_id], exact=declared is not None)
        if difference is not None:
            return f"sub-topology {sub_id}: {difference}"
    return None


def internal_topics_difference(
    group: StreamsGroupTopology, planned_partitions: Mapping[str, int], to_create: Sequence[NewInternalTopic] = ()
) -> str | None:
    """``None`` when the plan's internal topics are those the group declares, else the first difference.

    The broker creates a streams group's missing internal topics itself, with the partition count it decides (or
    the application fixed), the declared replication factor and configs, and it refuses the topology (no task is
    assigned) while an existing internal topic's count is not the one it decides ("Existing topic … has different
    number of partitions", ``InternalTopicManager``, Kafka 4.2). So a count the application fixed must be the plan's
    (``planned_partitions``: the analysis' counts, by which the plan's tasks, changelog partitions and commits are
    made), and a topic the plan creates (``to_create``: a first run's ``--create-internal-topics``) must be created as
    the broker would: else the application runs on a topic it did not declare. Existing topics' configs are not
    compared: the broker does not check them either, and a user may have changed them on purpose."""
    declared = {info.name: info for info in group.internal_topics}
    for name, info in sorted(declared.items()):
        planned = planned_partitions.get(name)
        if info.partitions > 0 and planned is not None and planned != info.partitions:
            return (
                f"internal topic {name}: the application declares {info.partitions} partition(s) "
                f"(Repartitioned#withNumberOfPartitions: the broker creates and checks the topic with "
                f"{info.partitions}), the plan {planned}"
            )
    for topic in sorted(to_create, key=lambda t: t.name):
        held = declared.get(topic.name)
        if held is None:
            continue
        mine, theirs = _replication(topic.replication_factor), _replication(held.replication_factor)
        if mine != theirs:
            hint = f" (give replication.factor={held.replication_factor})" if held.replication_factor > 0 else ""
            return (
                f"internal topic {topic.name}: the plan would create it with replication factor {mine}, the "
                f"application declares {theirs}{hint}"
            )
        wanted = dict(held.configs)
        for key in sorted(set(wanted) | set(topic.configs)):
            if topic.configs.get(key) != wanted.get(key):
                return (
                    f"internal topic {topic.name}: the plan would create it with {_config(key, topic.configs)}, the "
                    f"application declares {_config(key, wanted)}"
                )
    return None


def _replication(factor: int) -> str:
    return str(factor) if factor > 0 else "the broker's default"


def _config(key: str, configs: Mapping[str, str]) -> str:
    return f"{key}={configs[key]}" if key in configs else f"no {key}"


def _subtopology_difference(
    app: StreamsGroupSubtopology, python: StreamsGroupSubtopology, *, exact: bool
) -> str | None:
    """The first difference of one sub-topology; ``exact``: the user's changelogs and copartition groups are known,
    not derived from describe() text."""
    if app.source_topic_regex != python.source_topic_regex:
        why = PATTERN_REFUSED if python.source_topic_regex else ""
        return _has("source topic patterns", app.source_topic_regex, python.source_topic_regex) + why
    for what, left, right in (
        ("source topics", app.source_topics, python.source_topics),
        ("repartition sink topics", app.repartition_sink_topics, python.repartition_sink_topics),
        ("repartition source topics", app.repartition_source_topics, python.repartition_source_topics),
    ):
        if left != right:
            return _has(what, left, right)
    unknown = app.changelog_topics - python.changelog_topics
    if unknown:
        return _has("changelog topics", app.changelog_topics, python.changelog_topics) + (
            f" (no store logs to {_names(unknown)})"
        )
    unlogged = python.changelog_topics - app.changelog_topics
    if exact and unlogged:
        return _has("changelog topics", app.changelog_topics, python.changelog_topics) + (
            f" (the application logs no store to {_names(unlogged)})"
        )
    held, mine = _constraining(app.copartition_groups), _constraining(python.copartition_groups)
    if held != mine and (exact or not held <= mine):
        return f"the application has copartition groups {_groups(held)}, the Python topology {_groups(mine)}"
    return None


def _groups_of(sub: SubtopologyInfo, groups: Iterable[Iterable[str]]) -> frozenset[CopartitionGroup]:
    """The groups whose every topic this sub-topology reads (``StreamThread#initBrokerTopology``)."""
    reads = set(sub.source_topics) | set(sub.repartition_source_topics) | set(sub.source_patterns)
    return frozenset(frozenset(g) for g in groups if set(g) <= reads)


def _constraining(groups: frozenset[CopartitionGroup]) -> frozenset[CopartitionGroup]:
    return frozenset(g for g in groups if len(g) > 1)


def _has(what: str, left: Iterable[str], right: Iterable[str]) -> str:
    return f"the application has {what} {_names(left)}, the Python topology {_names(right)}"


def _groups(groups: Iterable[CopartitionGroup]) -> str:
    return "[" + ", ".join(sorted(_names(g) for g in groups)) + "]"


def _order(sub_id: str) -> tuple[int, str]:
    return (int(sub_id), "") if sub_id.isdigit() else (1 << 30, sub_id)


def _names(items: Iterable[str], *, numeric: bool = False) -> str:
    names = sorted(items, key=_order) if numeric else sorted(items)
    return "[" + ", ".join(names) + "]"
