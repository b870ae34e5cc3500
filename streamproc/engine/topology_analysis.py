"""From a described topology and the cluster's partition counts to internal topics, copartition groups and tasks.

One function, :func:`analyze`, reproduces what Kafka Streams 4.2.0 derives at every rebalance, spread over
``InternalTopologyBuilder#subtopologyToTopicsInfo`` / ``#copartitionGroups`` / ``#decorateTopic`` (full internal
topic names), ``RepartitionTopics#setRepartitionSourceTopicPartitionCount`` (repartition counts),
``CopartitionedTopicsEnforcer#enforce`` (copartitioning), ``InternalTopicManager#validateTopics`` (existing
internal topics), ``ChangelogTopics#setup`` (changelog counts) and ``PartitionGrouper#partitionGroups`` (tasks),
plus what a batch replay needs on top (topology.md §3.4 structural copartition groups, §5.4 pattern resolution,
§9 stages). Every refusal quotes the Kafka Streams message the live application would fail with.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from streamproc.engine.internal_topics import (
    REPARTITION_TOPIC_SUFFIX,
    STATE_CHANGELOG_TOPIC_SUFFIX,
    decorate_topic,
    is_internal_topic_name,
    store_changelog_topic,
)
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_description import Processor, Source, Subtopology, TopologyDescription
from streamproc.errors import MissingTopic, NotCopartitioned, PartitionCountChanged, TopologyError

logger = logging.getLogger(__name__)

#: ``StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG`` and the values that reuse a source topic as a table's changelog.
TOPOLOGY_OPTIMIZATION_CONFIG = "topology.optimization"
OPTIMIZE = "all"
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
NO_OPTIMIZATION = "none"

#: Processor-name prefixes the DSL generates (``KStreamImpl``, ``KTableImpl``, ``CogroupedKStreamImpl``).
_DSL_PREFIXES = ("KSTREAM-", "KTABLE-", "COGROUPKSTREAM-")
_TABLE_SOURCE_PREFIX = "KTABLE-SOURCE-"
_NAMED_TABLE_SOURCE_SUFFIX = "-table-source"
#: Java regex syntax Python's ``re`` lacks or reads differently (topology.md §5.4).
_JAVA_ONLY_REGEX = re.compile(r"\\[pP]\{|\\Q|\\E|\(\?<[A-Za-z]|\[[^\]]*\[|&&")


def _java_map(counts: Mapping[str, int]) -> str:
    """``TreeMap#toString``: ``{a=1, b=2}``, sorted by key."""
    return "{" + ", ".join(f"{k}={counts[k]}" for k in sorted(counts)) + "}"


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """A state store of a sub-topology and its changelog (``storeToChangelogTopic``).

    ``changelog_topic`` is the topic the store restores from and its ``.checkpoint`` names: the changelog Kafka
    Streams creates for it, or, when the table source store reuses its source topic (``reuses_source_topic``), that
    user topic, which is never internal, never created, purged or written by the store.
    """

    name: str
    changelog_topic: str
    changelog_partitions: int
    #: the source topic that would be the changelog with ``reuse.ktable.source.topics`` (``None``: not a table source)
    source_topic_changelog: str | None = None
    #: the store uses its source topic as changelog (``changelog_topic`` is that topic): it restores from it up to the
    #: group's committed offset and writes no changelog records
    reuses_source_topic: bool = False


@dataclass(frozen=True, slots=True)
class SubtopologyInfo:
    """``InternalTopologyBuilder.TopicsInfo`` of one sub-topology, with full (prefixed) topic names."""

    id: int
    source_topics: tuple[str, ...]
    source_patterns: tuple[str, ...]
    sink_topics: tuple[str, ...]
    dynamic_sinks: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    stores: tuple[StoreInfo, ...]
    #: ``n(s)``: the number of tasks (max partition count over the source topics)
    partition_count: int
    #: the source topics its pattern sources matched (among ``source_topics``; never also named by a source)
    pattern_source_topics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GlobalStoreInfo:
    """A global store: read in full by every instance, never logged (its topic is its changelog)."""

    id: int
    source_node: str
    processor_node: str
    topic: str
    store: str
    topic_partitions: int
    changelog_topic: str | None = None


@dataclass(frozen=True, slots=True)
class RepartitionCountDerivation:
    """How a repartition topic's count was chosen: writers' max source count, then copartition enforcement."""

    topic: str
    from_writers_max_source_count: int | None
    after_copartition_enforcement: int
    explicit: bool = False


@dataclass(frozen=True, slots=True)
class TopologyAnalysis:
    """Everything a planner needs from a topology: topics, stores, copartition groups, tasks and stages."""

    application_id: str
    topology_name: str | None
    subtopologies: tuple[SubtopologyInfo, ...]
    global_stores: tuple[GlobalStoreInfo, ...]
    copartition_groups: tuple[tuple[str, ...], ...]
    #: the groups whose partition counts Kafka Streams checks: all of them when the topology has a repartition topic
    #: (or the caller declared them), none otherwise (``RepartitionTopics#setup``); what a plan must refuse on
    enforced_copartition_groups: tuple[tuple[str, ...], ...]
    #: full name -> partition count, for every repartition/FK topic and every expected changelog topic
    internal_topics: Mapping[str, int]
    repartition_count_derivation: Mapping[str, RepartitionCountDerivation]
    #: task -> its source partitions ``(topic, partition)``, sorted
    tasks: Mapping[TaskId, tuple[tuple[str, int], ...]]
    stages: tuple[tuple[int, ...], ...]
    intermediate_user_topics: tuple[str, ...]
    #: sub-topologies that feed each other through topics (only with ``allow_cycles``)
    cycles: tuple[tuple[int, ...], ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def subtopology(self, subtopology_id: int) -> SubtopologyInfo:
        for sub in self.subtopologies:
            if sub.id == subtopology_id:
                return sub
        raise KeyError(subtopology_id)


def _reuses_source_topics(config: Mapping[str, str]) -> bool:
    value = str(config.get(TOPOLOGY_OPTIMIZATION_CONFIG, NO_OPTIMIZATION))
    parts = {part.strip() for part in value.split(",")}
    return OPTIMIZE in parts or REUSE_KTABLE_SOURCE_TOPICS in parts


def _is_dsl_name(name: str) -> bool:
    return name.startswith(_DSL_PREFIXES)


class _UnionFind:
    """Kafka Streams' ``QuickUnion`` over names."""

    def __init__(self, items: Iterable[str]) -> None:
        self._parent = {item: item for item in items}

    def root(self, item: str) -> str:
        while self._parent[item] != item:
            self._parent[item] = self._parent[self._parent[item]]
            item = self._parent[item]
        return item

    def unite(self, a: str, b: str) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self._parent[rb] = ra


@dataclass(slots=True)
class _Context:
    application_id: str
    description: TopologyDescription
    partition_counts: Mapping[str, int]
    internal_raw: set[str] = field(default_factory=set)
    patterns: Mapping[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def full(self, raw_topic: str) -> str:
        if raw_topic not in self.internal_raw:
            return raw_topic
        return decorate_topic(self.application_id, raw_topic, self.description.topology_name)


def _detect_internal_topics(ctx: _Context) -> None:
    """Internal iff written by a static sink AND read by a source AND internally named (topology.md §6.6)."""
    sink_topics = {s.topic for sub in ctx.description.subtopologies for s in sub.sinks if s.topic is not None}
    source_topics = {t for sub in ctx.description.subtopologies for src in sub.sources for t in src.topics}
    for topic in sink_topics & source_topics:
        if not is_internal_topic_name(topic):
            continue
        prefixed = decorate_topic(ctx.application_id, topic, ctx.description.topology_name)
        if prefixed in ctx.partition_counts or topic not in ctx.partition_counts:
            ctx.internal_raw.add(topic)
        else:
            ctx.warnings.append(
                f"topic {topic} is named like an internal topic but {prefixed} does not exist while {topic} does: "
                "treating it as an intermediate user topic"
            )


def _resolve_patterns(
    ctx: _Context, explicit_sources: set[str], patterns: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """Full-match every pattern source against the cluster's non-internal topics (topology.md §5.4)."""
    candidates = sorted(t for t in ctx.partition_counts if not t.startswith("__"))
    suffixes = "|".join((STATE_CHANGELOG_TOPIC_SUFFIX, REPARTITION_TOPIC_SUFFIX, "-topic"))
    own_internal = re.compile(re.escape(ctx.application_id) + r"-.*(" + suffixes + ")")
    matched_by: dict[str, str] = {}
    resolved: dict[str, tuple[str, ...]] = {}
    for sub in sorted(ctx.description.subtopologies, key=lambda s: s.id):
        for source in sub.sources:
            if source.name not in patterns:
                continue
            pattern = patterns[source.name]
            if _JAVA_ONLY_REGEX.search(pattern):
                raise TopologyError(
                    f"source {source.name}: pattern {pattern!r} uses Java-only regex syntax that Python cannot match "
                    "identically; list the topics explicitly (source_patterns override)"
                )
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise TopologyError(
                    f"source {source.name}: pattern {pattern!r} does not compile in Python ({exc}); "
                    "list the topics explicitly"
                ) from exc
            topics = tuple(t for t in candidates if compiled.fullmatch(t))
            for topic in topics:
                if own_internal.fullmatch(topic):
                    raise TopologyError(
                        f"source {source.name}: pattern {pattern!r} matches this application's internal topic "
                        f"{topic}; Kafka Streams would read its own internal topic as input. Narrow the pattern"
                    )
                if topic in explicit_sources:
                    message = (
                        f"Pattern {pattern} will match a topic that has already been registered by another source."
                    )
                    raise TopologyError(f"TopologyException: {message} (topic {topic})")
                if topic in matched_by:
                    message = (
                        f"Topic {topic} is already matched for another regex pattern {matched_by[topic]} and hence "
                        f"cannot be matched to this regex pattern {pattern} any more."
                    )
                    raise TopologyError(f"TopologyException: {message}")
                matched_by[topic] = pattern
            if not topics:
                kafka_message = (
                    "Failed to compute number of partitions for all repartition topics, make sure all user input "
                    "topics are created and all Pattern subscriptions match at least one topic in the cluster"
                )
                raise MissingTopic(
                    f"MissingTopic: pattern {pattern!r} of source {source.name} (sub-topology {sub.id}) matches no "
                    f"topic in the cluster; create the topic or fix the pattern. Kafka Streams: {kafka_message}",
                    topics=(),
                    kafka_exception="TaskAssignmentException",
                    kafka_message=kafka_message,
                )
            resolved[source.name] = topics
    return resolved


def _reachable(sub: Subtopology, start: str) -> set[str]:
    by_name = {n.name: n for n in sub.nodes}
    seen: set[str] = set()
    stack = [start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = by_name[name]
        if isinstance(node, (Source, Processor)):
            stack.extend(node.successors)
    return seen


def _structural_copartition_groups(
    ctx: _Context, source_topics_of: Mapping[str, tuple[str, ...]]
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Join-connected sources (topology.md §3.4) -> (enforced groups, advisory groups), full topic names.

    A group is enforced when at least one of its connecting pairs is DSL evidence (both processors DSL-named, or
    an internal topic involved); groups seen only through user-named processors are advisory: Kafka Streams
    enforces nothing for Processor-API stores.
    """
    enforced: list[tuple[str, ...]] = []
    advisory: list[tuple[str, ...]] = []
    for sub in ctx.description.subtopologies:
        sources = [s for s in sub.sources if s.name not in ctx.patterns]
        reach = {s.name: _reachable(sub, s.name) for s in sources}
        users: dict[str, list[str]] = {}
        for proc in sub.processors:
            for store in proc.stores:
                users.setdefault(store, []).append(proc.name)
        uf = _UnionFind(s.name for s in sources)
        dsl_roots: set[tuple[str, str]] = set()
        for store_users in users.values():
            for p1 in store_users:
                for p2 in store_users:
                    if p1 == p2:
                        continue
                    for s1 in sources:
                        for s2 in sources:
                            if s1.name == s2.name:
                                continue
                            r1, r2 = reach[s1.name], reach[s2.name]
                            if p1 in r1 and p1 not in r2 and p2 in r2 and p2 not in r1:
                                uf.unite(s1.name, s2.name)
                                internal = any(t in ctx.internal_raw for t in s1.topics + s2.topics)
                                if (_is_dsl_name(p1) and _is_dsl_name(p2)) or internal:
                                    dsl_roots.add((s1.name, s2.name))
        components: dict[str, set[str]] = {}
        for s in sources:
            components.setdefault(uf.root(s.name), set()).add(s.name)
        dsl_components = {uf.root(a) for a, _ in dsl_roots}
        for root, members in components.items():
            # Two or more *source nodes* joined through stores; one source subscribed to several topics is not a
            # copartition group (Kafka's copartitionGroups() leaves it out, FINDINGS.md).
            if len(members) < 2:
                continue
            topics = tuple(sorted({t for m in members for t in source_topics_of[m]}))
            if len(topics) < 2:
                continue
            (enforced if root in dsl_components else advisory).append(topics)
    return enforced, advisory


def _merge_groups(groups: Iterable[Collection[str]]) -> list[tuple[str, ...]]:
    """``InternalTopologyBuilder#copartitionGroups``: transitive closure of groups sharing a topic."""
    merged: list[set[str]] = []
    for group in groups:
        current = set(group)
        rest: list[set[str]] = []
        for existing in merged:
            if existing & current:
                current |= existing
            else:
                rest.append(existing)
        merged = [*rest, current]
    return sorted(tuple(sorted(g)) for g in merged)


def _compute_repartition_counts(
    infos: Sequence[tuple[int, set[str], set[str]]],
    repartition_topics: Collection[str],
    explicit: Mapping[str, int],
    cluster: Mapping[str, int],
) -> dict[str, int]:
    """``RepartitionTopics#setRepartitionSourceTopicPartitionCount`` over (id, source topics, sink topics)."""
    counts: dict[str, int] = {t: explicit[t] for t in repartition_topics if t in explicit}
    while True:
        needed = False
        progress = False
        for _sub_id, sources, _sinks in infos:
            for topic in sorted(t for t in sources if t in repartition_topics):
                if topic in counts:
                    continue
                candidate: int | None = None
                for _other_id, upstream_sources, upstream_sinks in infos:
                    if topic not in upstream_sinks:
                        continue
                    for upstream in upstream_sources:
                        value = counts.get(upstream) if upstream in repartition_topics else cluster[upstream]
                        if value is not None and (candidate is None or value > candidate):
                            candidate = value
                if candidate is None:
                    needed = True
                else:
                    counts[topic] = candidate
                    progress = True
        if not needed:
            return counts
        if not progress:
            message = (
                "Failed to compute number of partitions for all repartition topics, make sure all user input topics "
                "are created and all Pattern subscriptions match at least one topic in the cluster"
            )
            missing = sorted(set(repartition_topics) - set(counts))
            raise MissingTopic(
                f"MissingTopic: cannot derive the partition count of {missing}: no writer of these topics reads a "
                f"topic of known size. Kafka Streams: TaskAssignmentException: {message}",
                topics=missing,
                kafka_exception="TaskAssignmentException",
                kafka_message=message,
            )


def enforce_copartitioning(
    group: Sequence[str], counts: dict[str, int], explicit: Mapping[str, int], cluster: Mapping[str, int]
) -> None:
    """``CopartitionedTopicsEnforcer#enforce``: decide the group's count and force it onto repartition topics."""
    repartition = [t for t in group if t in counts]
    external: dict[str, int] = {}
    for topic in group:
        if topic in counts:
            continue
        if topic not in cluster:
            message = f"Topic not found: {topic}"
            raise MissingTopic(
                f"MissingTopic: {topic} (co-partitioned with {list(group)}) does not exist. "
                f"Kafka Streams: IllegalStateException: {message}",
                topics=[topic],
                kafka_exception="IllegalStateException",
                kafka_message=message,
            )
        external[topic] = cluster[topic]
    if not external:
        enforced = {t: explicit[t] for t in repartition if t in explicit}
        if enforced:
            if len(set(enforced.values())) > 1:
                shown = {t: counts[t] for t in repartition}
                message = f"Following topics do not have the same number of partitions: [{_java_map(shown)}]"
                raise NotCopartitioned(
                    f"NotCopartitioned: repartition topics {sorted(enforced)} have explicit partition counts that "
                    f"differ; make Repartitioned#withNumberOfPartitions agree. Kafka Streams: TopologyException: "
                    f"{message}",
                    topics=shown,
                    details={"partition_counts": dict(shown)},
                    kafka_exception="TopologyException",
                    kafka_message=message,
                )
            chosen = next(iter(enforced.values()))
        else:
            chosen = max(counts[t] for t in repartition)
    else:
        if len(set(external.values())) > 1:
            message = f"Topics not co-partitioned: [{_java_map(external)}]"
            raise NotCopartitioned(
                f"NotCopartitioned: topics {sorted(external)} must be co-partitioned (a join or cogroup reads them "
                f"together) but have partition counts {_java_map(external)}; repartition one side or fix the topics. "
                f"Kafka Streams: TopologyException: {message}",
                topics=external,
                details={"partition_counts": dict(external)},
                kafka_exception="TopologyException",
                kafka_message=message,
            )
        chosen = next(iter(external.values()))
    for topic in repartition:
        if topic not in explicit:
            counts[topic] = chosen
        elif counts[topic] != chosen:
            message = (
                f"Number of partitions [{counts[topic]}] of repartition topic [{topic}] doesn't match number of "
                f"partitions [{chosen}] of the source topic."
            )
            raise NotCopartitioned(
                f"NotCopartitioned: {message}",
                topics=[topic],
                details={"partition_counts": {topic: counts[topic]}},
                kafka_exception="TopologyException",
                kafka_message=message,
            )


def check_existing_internal_topic(
    topic: str, expected: int, cluster: Mapping[str, int], *, reason: str | None = None
) -> None:
    """``InternalTopicManager#validateTopics``: an existing internal topic must have the required count.

    ``reason`` replaces the first part of the message when the caller knows why the counts differ.
    """
    actual = cluster.get(topic)
    if actual is None or actual == expected:
        return
    why = reason if reason is not None else f"{topic} has {actual} partitions but Kafka Streams requires {expected}"
    message = (
        f"Existing internal topic {topic} has invalid partitions: expected: {expected}; actual: {actual}. "
        "Use 'org.apache.kafka.tools.StreamsResetter' tool to clean up invalid topics before processing."
    )
    raise PartitionCountChanged(
        f"PartitionCountChanged: {why}; the live application would fail with StreamsException: {message}",
        topics=[topic],
        details={"partition_counts": {topic: actual}},
        kafka_exception="StreamsException",
        kafka_message=message,
    )


def _stages(
    subs: Sequence[SubtopologyInfo],
    frozen: Collection[str],
    dynamic_outputs: Mapping[int, set[str]],
    allow_cycles: bool,
) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """(stages, cycles): topological layers of ``a -> b`` (a sink topic of ``a`` is a source topic of ``b``).

    Sub-topologies on a cycle (strongly connected) are refused, or with ``allow_cycles`` put in one stage together
    and reported, so a planner can decide how to iterate them (an FK join always forms one: the left table's
    sub-topology writes the subscription topic and reads the response topic).
    """
    readers: dict[str, set[int]] = {}
    for sub in subs:
        for topic in sub.source_topics:
            readers.setdefault(topic, set()).add(sub.id)
    edges: dict[int, set[int]] = {sub.id: set() for sub in subs}
    via: dict[tuple[int, int], set[str]] = {}
    for sub in subs:
        for topic in set(sub.sink_topics) | dynamic_outputs.get(sub.id, set()):
            if topic in frozen:
                continue
            for reader in readers.get(topic, set()):
                edges[sub.id].add(reader)
                via.setdefault((sub.id, reader), set()).add(topic)
    reach: dict[int, set[int]] = {}
    for start in edges:
        seen: set[int] = set()
        stack = list(edges[start])
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(edges[node])
        reach[start] = seen
    component = {a: frozenset({a} | {b for b in reach[a] if a in reach[b]}) for a in edges}
    cycles = sorted({tuple(sorted(c)) for a, c in component.items() if len(c) > 1 or a in reach[a]})
    if cycles and not allow_cycles:
        members = sorted({m for c in cycles for m in c})
        topics = sorted({t for (a, b), ts in via.items() if component[a] == component[b] for t in ts})
        raise TopologyError(
            f"sub-topologies {members} form a cycle through the topics {topics} (a sub-topology writes a topic that "
            "an upstream one reads); a batch cannot replay it in stages. Mark one of the topics as frozen input"
        )
    nodes = set(component.values())
    succ: dict[frozenset[int], set[frozenset[int]]] = {c: set() for c in nodes}
    for a, targets in edges.items():
        for b in targets:
            if component[a] != component[b]:
                succ[component[a]].add(component[b])
    indegree = dict.fromkeys(nodes, 0)
    for downstream in succ.values():
        for comp in downstream:
            indegree[comp] += 1
    stages: list[tuple[int, ...]] = []
    layer = [c for c in nodes if indegree[c] == 0]
    while layer:
        stages.append(tuple(sorted(m for c in layer for m in c)))
        nxt: list[frozenset[int]] = []
        for c in layer:
            for comp in succ[c]:
                indegree[comp] -= 1
                if indegree[comp] == 0:
                    nxt.append(comp)
        layer = nxt
    return tuple(stages), tuple(cycles)


def analyze(
    description: TopologyDescription,
    application_id: str,
    partition_counts: Mapping[str, int],
    config: Mapping[str, str] | None = None,
    *,
    copartition_groups: Sequence[Collection[str]] | None = None,
    source_patterns: Mapping[str, str] | None = None,
    explicit_repartition_counts: Mapping[str, int] | None = None,
    dynamic_sink_topics: Mapping[str, Collection[str]] | None = None,
    frozen_inputs: Collection[str] = (),
    allow_cycles: bool = False,
    require_internal_topics: bool = True,
    source_topic_changelogs: Mapping[str, str] | None = None,
) -> TopologyAnalysis:
    """Derive topics, counts, copartition groups, tasks and stages as Kafka Streams 4.2 would (topology.md §3-§9).

    ``partition_counts`` is the cluster at plan time (topic -> count). ``copartition_groups`` replaces the derived
    groups (full topic names); ``source_patterns`` (source node -> regex) reads a source as a pattern where the
    text was ambiguous (topology.md §7.3 rule 2); ``explicit_repartition_counts`` are
    ``Repartitioned#withNumberOfPartitions`` values by full topic name (invisible in describe());
    ``dynamic_sink_topics`` lists, per sink name with a ``TopicNameExtractor``, the topics it may write;
    ``frozen_inputs`` breaks cycles through intermediate topics; ``allow_cycles`` reports cycles instead of refusing
    them (their sub-topologies then share a stage).
    With ``require_internal_topics`` a repartition topic missing from the cluster is refused (a batch never
    creates internal topics with a guessed count).
    ``source_topic_changelogs`` (store -> raw source topic) are the table source stores that reuse their source
    topic as changelog, as the program built them (``Topology.source_topic_changelogs``; describe() does not show
    them); without it ``topology.optimization`` in ``config`` makes every table source store with one source topic
    reuse it, as the DSL does.
    """
    config = config or {}
    explicit_raw = explicit_repartition_counts or {}
    dynamic_cfg = dynamic_sink_topics or {}
    ctx = _Context(application_id, description, partition_counts)
    _detect_internal_topics(ctx)
    patterns = {s.name: s.pattern for sub in description.subtopologies for s in sub.sources if s.pattern is not None}
    patterns.update(source_patterns or {})
    ctx.patterns = patterns
    explicit_sources = {
        t for sub in description.subtopologies for s in sub.sources if s.name not in patterns for t in s.topics
    }
    resolved = _resolve_patterns(ctx, explicit_sources, patterns)
    repartition_topics = {ctx.full(t) for t in ctx.internal_raw}
    explicit = {t: c for t, c in explicit_raw.items() if t in repartition_topics}

    source_topics_of: dict[str, tuple[str, ...]] = {}
    infos: list[tuple[int, set[str], set[str]]] = []
    dynamic_outputs: dict[int, set[str]] = {}
    subs_sorted = sorted(description.subtopologies, key=lambda s: s.id)
    for sub in subs_sorted:
        sources: set[str] = set()
        for source in sub.sources:
            topics = resolved[source.name] if source.name in patterns else tuple(ctx.full(t) for t in source.topics)
            source_topics_of[source.name] = topics
            sources.update(topics)
        sinks = {ctx.full(s.topic) for s in sub.sinks if s.topic is not None}
        for sink in sub.sinks:
            if sink.extractor is None:
                continue
            if sink.name not in dynamic_cfg:
                raise TopologyError(
                    f"sink {sink.name} (sub-topology {sub.id}) chooses its topic with a TopicNameExtractor "
                    f"({sink.extractor}); list the topics it may write under dynamic_sink_topics so the plan "
                    "knows which sub-topologies depend on it"
                )
            dynamic_outputs.setdefault(sub.id, set()).update(ctx.full(t) for t in dynamic_cfg[sink.name])
        missing = sorted(t for t in sources if t not in repartition_topics and t not in partition_counts)
        if missing:
            _refuse_ambiguous_topic_set(sub, patterns, partition_counts)
            kafka_message = (
                f"Missing source topics [{', '.join(missing)}] for subtopology {sub.id} of topology "
                f"{description.topology_name or 'null'}"
            )
            raise MissingTopic(
                f"MissingTopic: source topics {missing} of sub-topology {sub.id} do not exist; create them or fix the "
                f"topology. Kafka Streams: MissingSourceTopicException: {kafka_message}",
                topics=missing,
                kafka_exception="MissingSourceTopicException",
                kafka_message=kafka_message,
            )
        infos.append((sub.id, sources, sinks))

    if require_internal_topics:
        absent = sorted(t for t in repartition_topics if t not in partition_counts)
        if absent:
            raise MissingTopic(
                f"MissingTopic: internal topics {absent} do not exist; the live application creates them at its first "
                "rebalance. Run it once before planning a batch, or (a new application's first run) plan with "
                "--create-internal-topics to create them as Kafka Streams would",
                topics=absent,
                kafka_exception="MissingSourceTopicException",
                kafka_message=f"Missing source topics {absent}",
            )

    counts = _compute_repartition_counts(infos, repartition_topics, explicit, partition_counts)
    writers_max = dict(counts)

    if copartition_groups is not None:
        enforced_groups = _merge_groups(copartition_groups)
        advisory: list[tuple[str, ...]] = []
    else:
        derived_enforced, advisory = _structural_copartition_groups(ctx, source_topics_of)
        enforced_groups = _merge_groups(derived_enforced)
        advisory = _merge_groups(advisory)
    # RepartitionTopics#setup runs CopartitionedTopicsEnforcer only when the topology has a repartition topic: a
    # join of two user topics with different counts runs live (task p reads the topics that have a partition p).
    # Groups the caller declares are enforced regardless: that is what declaring them asks for.
    kafka_enforces = bool(repartition_topics) or copartition_groups is not None
    for group in enforced_groups:
        if kafka_enforces:
            enforce_copartitioning(group, counts, explicit, partition_counts)
            continue
        sizes = {t: partition_counts[t] for t in group if t in partition_counts}
        if len(set(sizes.values())) > 1:
            ctx.warnings.append(
                f"topics {list(group)} are co-partitioned (a join or cogroup reads them together) but have "
                f"partition counts {_java_map(sizes)}; Kafka Streams 4.2 does not check this when the topology has "
                "no repartition topic (RepartitionTopics#setup) and runs it, each task reading the topics that have "
                "its partition, so records with equal keys may never meet. streamproc plans the same tasks; fix "
                "the topics or declare copartition_groups to refuse"
            )
            logger.warning("%s", ctx.warnings[-1])
    for group in advisory:
        sizes = {t: counts.get(t, partition_counts.get(t, 0)) for t in group}
        if len(set(sizes.values())) > 1:
            ctx.warnings.append(
                f"topics {list(group)} feed processors that share a store but have partition counts "
                f"{_java_map(sizes)}; Kafka Streams enforces nothing for Processor-API stores: declare "
                "copartition_groups if they must match"
            )
            logger.warning("%s", ctx.warnings[-1])

    for topic in sorted(repartition_topics):
        check_existing_internal_topic(topic, counts[topic], partition_counts)

    all_counts = {**partition_counts, **counts}
    reuse = _reuses_source_topics(config)
    internal_topics: dict[str, int] = {t: counts[t] for t in sorted(repartition_topics)}
    infos_out: list[SubtopologyInfo] = []
    tasks: dict[TaskId, tuple[tuple[str, int], ...]] = {}
    for (sub_id, sources, sinks), sub in zip(infos, subs_sorted, strict=True):
        for topic in sorted(sources):
            if all_counts[topic] <= 0:
                raise TopologyError(f"RuntimeException: Empty partitions for topic {topic} (sub-topology {sub_id})")
        n = max(all_counts[t] for t in sources)
        for p in range(n):
            owned = tuple(sorted((t, p) for t in sources if p < all_counts[t]))
            tasks[TaskId(sub_id, p, description.topology_name)] = owned
        stores = _stores_of(ctx, sub, n, source_topic_changelogs, reuse)
        for store in stores:
            if store.reuses_source_topic:
                continue
            check_existing_internal_topic(store.changelog_topic, n, partition_counts)
            internal_topics[store.changelog_topic] = n
        infos_out.append(
            SubtopologyInfo(
                id=sub_id,
                source_topics=tuple(sorted(sources)),
                source_patterns=tuple(sorted(patterns[s.name] for s in sub.sources if s.name in patterns)),
                sink_topics=tuple(sorted(sinks)),
                dynamic_sinks=tuple(sorted(s.name for s in sub.sinks if s.extractor is not None)),
                repartition_source_topics=tuple(sorted(t for t in sources if t in repartition_topics)),
                repartition_sink_topics=tuple(sorted(t for t in sinks if t in repartition_topics)),
                stores=stores,
                partition_count=n,
                pattern_source_topics=tuple(
                    sorted(t for s in sub.sources if s.name in patterns for t in resolved[s.name])
                ),
            )
        )

    global_infos: list[GlobalStoreInfo] = []
    for gstore in sorted(description.global_stores, key=lambda g: g.id):
        if gstore.topic not in partition_counts:
            kafka_message = f"Missing source topics [{gstore.topic}] for global store {gstore.store}"
            raise MissingTopic(
                f"MissingTopic: topic {gstore.topic} of global store {gstore.store} does not exist",
                topics=[gstore.topic],
                kafka_exception="MissingSourceTopicException",
                kafka_message=kafka_message,
            )
        global_infos.append(
            GlobalStoreInfo(
                gstore.id,
                gstore.source.name,
                gstore.processor.name,
                gstore.topic,
                gstore.store,
                partition_counts[gstore.topic],
            )
        )

    all_sources = {t for _, sources, _ in infos for t in sources}
    all_sinks = {t for _, _, sinks in infos for t in sinks}
    intermediate = tuple(sorted((all_sources & all_sinks) - repartition_topics))
    derivation = {
        t: RepartitionCountDerivation(t, None if t in explicit else writers_max.get(t), counts[t], t in explicit)
        for t in sorted(repartition_topics)
    }
    all_groups = sorted(set(enforced_groups) | set(advisory))
    stages, cycles = _stages(infos_out, frozen_inputs, dynamic_outputs, allow_cycles)
    logger.info(
        "Analyzed topology of %s: %s sub-topologies, %s global stores, %s tasks, %s internal topics, %s stages",
        application_id,
        len(infos_out),
        len(global_infos),
        len(tasks),
        len(internal_topics),
        len(stages),
    )
    return TopologyAnalysis(
        application_id=application_id,
        topology_name=description.topology_name,
        subtopologies=tuple(infos_out),
        global_stores=tuple(global_infos),
        copartition_groups=tuple(all_groups),
        enforced_copartition_groups=tuple(enforced_groups) if kafka_enforces else (),
        internal_topics=internal_topics,
        repartition_count_derivation=derivation,
        tasks=dict(sorted(tasks.items())),
        stages=stages,
        cycles=cycles,
        intermediate_user_topics=intermediate,
        warnings=tuple(ctx.warnings),
    )


def _refuse_ambiguous_topic_set(sub: Subtopology, patterns: Mapping[str, str], cluster: Mapping[str, int]) -> None:
    """A ``[...]`` topic set whose topics are absent but whose regex reading matches: ask, never guess (§7.3)."""
    for source in sub.sources:
        if source.name in patterns or any(t in cluster for t in source.topics):
            continue
        text = "[" + ", ".join(source.topics) + "]"
        try:
            compiled = re.compile(text)
        except re.error:
            continue
        matches = sorted(t for t in cluster if not t.startswith("__") and compiled.fullmatch(t))
        if matches:
            raise TopologyError(
                f"source {source.name}: '(topics: {text})' reads both as the topic set {list(source.topics)} (none "
                f"exists) and as a regex matching {matches}; set source_patterns for {source.name} if it is a pattern"
            )


def _stores_of(
    ctx: _Context, sub: Subtopology, partitions: int, reused: Mapping[str, str] | None, reuse_all: bool
) -> tuple[StoreInfo, ...]:
    """Stores of a sub-topology with their changelog; a table source's store may reuse its input (§6.3).

    ``reused`` (store -> raw topic) is what the program declared; ``None``: ``reuse_all`` decides for every table
    source store from the describe() text.
    """
    by_name = {n.name: n for n in sub.nodes}
    reuse_topic: dict[str, str] = {}
    names: set[str] = set()
    for proc in sub.processors:
        names.update(proc.stores)
        if not (proc.name.startswith(_TABLE_SOURCE_PREFIX) or proc.name.endswith(_NAMED_TABLE_SOURCE_SUFFIX)):
            continue
        if len(proc.predecessors) != 1:
            continue
        parent = by_name[proc.predecessors[0]]
        if isinstance(parent, Source) and parent.pattern is None and len(parent.topics) == 1:
            for store in proc.stores:
                reuse_topic[store] = ctx.full(parent.topics[0])
    infos = []
    for name in sorted(names):
        if reused is not None:
            topic = ctx.full(reused[name]) if name in reused else None
        else:
            topic = reuse_topic.get(name) if reuse_all else None
        default = store_changelog_topic(ctx.application_id, name, ctx.description.topology_name)
        infos.append(StoreInfo(name, topic or default, partitions, reuse_topic.get(name), topic is not None))
    return tuple(infos)
