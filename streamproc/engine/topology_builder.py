"""From a :class:`~streamproc.engine.topology.Topology` to runtime graphs, stores and tasks.

Mirrors ``InternalTopologyBuilder#build`` / ``#buildSubtopology`` / ``#buildTopology`` (Kafka Streams 4.2.0):
nodes are created in insertion order (which is also ``init`` order), each with a *fresh* processor from its supplier;
a node becomes a child of each of its parents in that order; sources and sinks on internal topics read and write
the decorated name ``<application.id>-<topic>``; a source with a ``Pattern`` reads the topics it was resolved to, or,
with nothing resolved, the pattern text itself (``SourceNodeFactory#topics`` puts it there as a placeholder, and
``TopologyTestDriver`` then routes every matching topic to it). Sinks without a ``StreamPartitioner`` hash the
serialized key with murmur2 (``BuiltInPartitioner#partitionForKey``, what the producer does for a non-null key).

Stores are built per task from their builders (``StoreFactory#builder().build()``): anything with ``name``,
``logging_enabled`` and ``build()`` (:class:`StoreBuilder`) works; the real stores live in ``streamproc.state``,
whose state manager can open them from :func:`store_builders` instead (a store that needs a task directory and a
changelog partition cannot be built without its task).

A caller that runs the tasks of a topology does, per ``TaskId`` of :func:`tasks`::

    analysis = analyze_topology(topology, app_id, partition_counts)
    for task_id, partitions in tasks(topology, partition_counts, application_id=app_id, analysis=analysis).items():
        graph = build_processor_topology(topology, task_id.subtopology, analysis=analysis)
        task = StreamTask(task_id, graph, partitions, stores=build_stores(topology, task_id.subtopology), ...)

(``streamproc.testing.TopologyTestDriver`` is that loop, with records routed between the tasks.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from streamproc.engine.internal_topics import decorate_topic, store_changelog_topic
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor import Processor
from streamproc.engine.processor_topology import (
    Deserializer,
    Partitioner,
    ProcessorNode,
    ProcessorTopology,
    Serializer,
    SinkNode,
    SourceNode,
)
from streamproc.engine.records import ProcessorRecordContext, Record, TopicPartition
from streamproc.engine.serdes import Serde
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import TimestampExtractor
from streamproc.engine.topology import ProcessorNodeSpec, SinkNodeSpec, SourceNodeSpec, Topology
from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.errors import ConfigError, ProcessingError, TopologyError

#: ``StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG`` / ``DEFAULT_VALUE_SERDE_CLASS_CONFIG``: named in the errors.
DEFAULT_KEY_SERDE_CLASS_CONFIG = "default.key.serde"
DEFAULT_VALUE_SERDE_CLASS_CONFIG = "default.value.serde"


@runtime_checkable
class StoreBuilder(Protocol):
    """``StoreBuilder``: what the topology needs of a store factory; ``build()`` returns a new store each call."""

    @property
    def name(self) -> str: ...

    @property
    def logging_enabled(self) -> bool: ...

    def build(self) -> object: ...


def _logging_enabled(store: object) -> bool:
    """``StoreBuilder#loggingEnabled``; the topology's own ``StoreSpec`` spells it ``logged``."""
    flag = getattr(store, "logging_enabled", None)
    if flag is None:
        flag = getattr(store, "logged", True)
    if callable(flag):
        flag = flag()
    return bool(flag)


def _default_partitioner(topic: str, key: bytes | None, value: bytes | None, num_partitions: int) -> int | None:
    """No ``StreamPartitioner``: the producer hashes a non-null serialized key; a null key it leaves to its sticky
    partitioner, which no replay can reproduce (``None``: "the producer decides", see ``partitioner.py``)."""
    if key is None:
        return None
    return partition_for_key(key, num_partitions)


def _missing_serde(node_kind: str, node: str, config: str) -> ConfigError:
    """Kafka Streams' ``ConfigException`` when neither the node nor the config names a serde, with the fix in both
    APIs: the Java application sets ``default.*.serde`` in its properties, which the port passes to
    ``StreamsBuilder.build(props)``."""
    which = "key" if config == DEFAULT_KEY_SERDE_CLASS_CONFIG else "value"
    constant = f"DEFAULT_{which.upper()}_SERDE_CLASS_CONFIG"
    where = f"{'Consumed' if node_kind == 'source' else 'Produced'}.with_(key_serde, value_serde)"
    return ConfigError(
        f"{node_kind} {node}: no {which} serde given and no {config} set; give the Java application's "
        f"{config} to StreamsBuilder.build({{'{config}': 'String', ...}}) (or to the TopologyTestDriver), or {where} "
        f"to the operation (the Processor API: a {'deserializer' if node_kind == 'source' else 'serializer'} to the "
        f"node). Kafka Streams: Please specify a {which} serde or set one through StreamsConfig#{constant}"
    )


def _as_deserializer(given: object, default: Serde[Any] | None, config: str, node: str) -> Deserializer:
    chosen: object = given
    if chosen is None:
        if default is None:
            raise _missing_serde("source", node, config)
        chosen = default.deserializer
    if isinstance(chosen, Serde):
        chosen = chosen.deserializer
    method = getattr(chosen, "deserialize", None)
    if callable(method):
        return cast(Deserializer, method)
    if callable(chosen):
        return cast(Deserializer, chosen)
    raise TopologyError(f"source {node}: {chosen!r} is not a deserializer (give a callable (topic, bytes) -> object)")


def _as_serializer(given: object, default: Serde[Any] | None, config: str, node: str) -> Serializer:
    chosen: object = given
    if chosen is None:
        if default is None:
            raise _missing_serde("sink", node, config)
        chosen = default.serializer
    if isinstance(chosen, Serde):
        chosen = chosen.serializer
    method = getattr(chosen, "serialize", None)
    if callable(method):
        return cast(Serializer, method)
    if callable(chosen):
        return cast(Serializer, chosen)
    raise TopologyError(f"sink {node}: {chosen!r} is not a serializer (give a callable (topic, object) -> bytes)")


class RoutingSinkNode(SinkNode):
    """A sink with a ``TopicNameExtractor`` and/or a user ``StreamPartitioner`` (``SinkNode#process`` and
    ``RecordCollectorImpl#send(..., partitioner)``, 4.2.0).

    The topic is extracted per record from the deserialized key and value and a record context carrying the
    record's timestamp and headers. A user partitioner sees the *deserialized* key and value and the topic's
    partition count (``partitions(topic, key, value, numPartitions)``); it answers one partition, a set of
    partitions (the record is sent once per partition; an empty set drops it with Kafka's warning, not yet counted
    as a dropped record), or ``None`` for the default.
    """

    def __init__(
        self,
        name: str,
        topic: str | None,
        topic_extractor: Callable[[Any, Any, ProcessorRecordContext], str] | None,
        key_serializer: Serializer,
        value_serializer: Serializer,
        stream_partitioner: object | None,
    ) -> None:
        super().__init__(name, topic or "", key_serializer, value_serializer, _default_partitioner)
        self.topic_extractor = topic_extractor
        self.stream_partitioner = stream_partitioner

    def process(self, record: Record[Any, Any]) -> None:
        context = self._context
        assert context is not None
        topic = self.topic
        if self.topic_extractor is not None:
            current = context.record_context
            extraction_context = ProcessorRecordContext(
                record.timestamp, current.offset, current.partition, current.topic, record.headers
            )
            topic = self.topic_extractor(record.key, record.value, extraction_context)
        key = self.key_serializer(topic, record.key)
        value = self.value_serializer(topic, record.value)
        if self.stream_partitioner is None:
            context.collector.send(topic, key, value, record.timestamp, record.headers, self.name, self.partitioner)
            return
        count = context.collector.partition_counts.get(topic)
        if count is None:
            raise ProcessingError(
                f"Could not get partition information for topic {topic} for task {context.task_id}. This can happen "
                "if the topic does not exist. (streamproc: give the run or the test driver its partition count)",
                task_id=str(context.task_id),
            )
        choose = cast(
            Callable[[str, Any, Any, int], int | Iterable[int] | None],
            getattr(self.stream_partitioner, "partitions", self.stream_partitioner),
        )
        chosen = choose(topic, record.key, record.value, count)
        if chosen is None:
            partitions: Iterable[int | None] = (_default_partitioner(topic, key, value, count),)
        elif isinstance(chosen, int):
            partitions = (chosen,)
        else:
            partitions = sorted(chosen)
            if not partitions:
                context.log.warning("Skipping record as partitioner returned empty partitions. topic=[%s]", topic)
        for partition in partitions:
            context.collector.send(
                topic, key, value, record.timestamp, record.headers, self.name, _fixed_partitioner(partition)
            )


def _fixed_partitioner(partition: int | None) -> Partitioner:
    def fixed(topic: str, key: bytes | None, value: bytes | None, num_partitions: int) -> int | None:
        return partition

    return fixed


def subtopology_nodes(topology: Topology, subtopology_id: int | None) -> tuple[str, ...]:
    """The node names of one sub-topology, or of every non-global one (``buildTopology``), in insertion order."""
    groups = topology.node_groups()
    global_ids = topology.global_node_groups()
    if subtopology_id is None:
        members = {name for gid, names in groups.items() if gid not in global_ids for name in names}
        return tuple(spec.name for spec in topology.nodes if spec.name in members)
    if subtopology_id not in groups or subtopology_id in global_ids:
        tasks_ids = sorted(gid for gid in groups if gid not in global_ids)
        raise TopologyError(
            f"sub-topology {subtopology_id} does not exist or is a global store; this topology's sub-topologies "
            f"are {tasks_ids}"
        )
    return groups[subtopology_id]


def runtime_internal_topics(topology: Topology, analysis: TopologyAnalysis | None) -> frozenset[str]:
    """Raw names of the topics that are decorated with the application id at run time.

    Without an analysis these are the topics registered as internal (``internalTopicNamesWithProperties``); with
    one, those the analysis decided are repartition topics (it reads ``describe()``, where only names tell), so
    that a task's partitions and its runtime graph name the same topics.
    """
    if analysis is None:
        return frozenset(topology.internal_topics)
    app, named = analysis.application_id, analysis.topology_name
    decorated = {
        t for sub in analysis.subtopologies for t in (*sub.repartition_source_topics, *sub.repartition_sink_topics)
    }
    raw: set[str] = set()
    for spec in topology.nodes:
        if isinstance(spec, SourceNodeSpec):
            raw.update(t for t in spec.topics if decorate_topic(app, t, named) in decorated)
        elif (
            isinstance(spec, SinkNodeSpec)
            and spec.topic is not None
            and decorate_topic(app, spec.topic, named) in decorated
        ):
            raw.add(spec.topic)
    return frozenset(raw)


def _source_topics(
    spec: SourceNodeSpec, full: Callable[[str], str], analysis: TopologyAnalysis | None, owner: int | None
) -> tuple[str, ...]:
    if spec.pattern is None:
        return tuple(full(t) for t in spec.topics)
    if analysis is None or owner is None:
        return (spec.pattern.pattern,)
    resolved = analysis.subtopology(owner).source_topics
    return tuple(t for t in resolved if spec.pattern.fullmatch(t))


def build_processor_topology(
    topology: Topology,
    subtopology_id: int | None = None,
    *,
    application_id: str | None = None,
    analysis: TopologyAnalysis | None = None,
    default_key_serde: Serde[Any] | None = None,
    default_value_serde: Serde[Any] | None = None,
) -> ProcessorTopology:
    """``InternalTopologyBuilder#buildSubtopology`` (or ``#buildTopology`` for ``None``): a fresh runtime graph.

    Every call asks each processor supplier for a new instance, so that two tasks never share a processor.
    ``application_id`` (default: the analysis', else none) decorates internal topics; a source or sink that
    needs a serde it was not given uses the default serdes (``default.key.serde``/``default.value.serde``).
    """
    app = application_id if application_id is not None else (analysis.application_id if analysis else None)
    internal = runtime_internal_topics(topology, analysis)
    if internal and app is None:
        raise ConfigError(
            f"internal topics {sorted(internal)} are named <application.id>-<topic> at run time; give application_id"
        )

    def full(topic: str) -> str:
        return decorate_topic(app or "", topic, topology.topology_name) if topic in internal else topic

    return _build_nodes(
        topology, subtopology_nodes(topology, subtopology_id), full, analysis, default_key_serde, default_value_serde
    )


def build_global_state_topology(
    topology: Topology,
    *,
    default_key_serde: Serde[Any] | None = None,
    default_value_serde: Serde[Any] | None = None,
) -> ProcessorTopology:
    """``InternalTopologyBuilder#buildGlobalStateTopology``: every global store's source and state-update processor,
    fresh instances, in one graph (global topics are never internal, so no name is decorated)."""
    global_ids = topology.global_node_groups()
    names = [name for gid, members in topology.node_groups().items() if gid in global_ids for name in members]
    return _build_nodes(topology, names, lambda topic: topic, None, default_key_serde, default_value_serde)


def global_store_builders(topology: Topology) -> dict[str, object]:
    """The global stores' builders (or definitions), unbuilt, in topology order: one store per global processor."""
    global_ids = topology.global_node_groups()
    builders: dict[str, object] = {}
    for gid, names in topology.node_groups().items():
        if gid in global_ids:
            for name in names:
                for store_name in topology.stores_of(name):
                    builders.setdefault(store_name, topology.store(store_name))
    return builders


def _build_nodes(
    topology: Topology,
    names: Iterable[str],
    full: Callable[[str], str],
    analysis: TopologyAnalysis | None,
    default_key_serde: Serde[Any] | None,
    default_value_serde: Serde[Any] | None,
) -> ProcessorTopology:
    """The runtime nodes of ``names`` (insertion order), each processor a fresh instance, wired to its parents."""
    group_of = {name: gid for gid, names in topology.node_groups().items() for name in names}
    built: dict[str, ProcessorNode] = {}
    for name in names:
        spec = topology.node(name)
        node: ProcessorNode
        if isinstance(spec, SourceNodeSpec):
            extractor = spec.timestamp_extractor
            if extractor is not None and not isinstance(extractor, TimestampExtractor):
                raise TopologyError(f"source {name}: {extractor!r} has no extract(record, partition_time)")
            topics = _source_topics(spec, full, analysis, group_of[name])
            key_deserializer = _as_deserializer(
                spec.key_deserializer, default_key_serde, DEFAULT_KEY_SERDE_CLASS_CONFIG, name
            )
            value_deserializer = _as_deserializer(
                spec.value_deserializer, default_value_serde, DEFAULT_VALUE_SERDE_CLASS_CONFIG, name
            )
            if spec.value_schema is not None:
                from streamproc.engine.validation import ValidatingSourceNode

                node = ValidatingSourceNode(
                    name, tuple(topics), key_deserializer, value_deserializer, extractor, spec.value_schema
                )
            else:
                node = SourceNode(name, topics, key_deserializer, value_deserializer, extractor)
        elif isinstance(spec, ProcessorNodeSpec):
            processor = spec.supplier()
            if not callable(getattr(processor, "process", None)):
                raise TopologyError(f"processor {name}: its supplier returned {processor!r}, which has no process()")
            node = ProcessorNode(name, cast(Processor, processor))
        else:
            node = _build_sink(spec, full, default_key_serde, default_value_serde)
        if not isinstance(spec, SourceNodeSpec):
            for parent in spec.predecessors:
                built[parent].add_child(node)
        built[name] = node
    return ProcessorTopology(built.values())


def _build_sink(
    spec: SinkNodeSpec,
    full: Callable[[str], str],
    default_key_serde: Serde[Any] | None,
    default_value_serde: Serde[Any] | None,
) -> SinkNode:
    key_serializer = _as_serializer(spec.key_serializer, default_key_serde, DEFAULT_KEY_SERDE_CLASS_CONFIG, spec.name)
    value_serializer = _as_serializer(
        spec.value_serializer, default_value_serde, DEFAULT_VALUE_SERDE_CLASS_CONFIG, spec.name
    )
    if spec.topic_extractor is None and spec.partitioner is None:
        assert spec.topic is not None
        return SinkNode(spec.name, full(spec.topic), key_serializer, value_serializer, _default_partitioner)
    extractor = cast(Callable[[Any, Any, ProcessorRecordContext], str] | None, spec.topic_extractor)
    topic = None if spec.topic is None else full(spec.topic)
    return RoutingSinkNode(spec.name, topic, extractor, key_serializer, value_serializer, spec.partitioner)


def store_builders(topology: Topology, subtopology_id: int | None = None) -> dict[str, object]:
    """The registered store builders (or definitions) of a sub-topology's processors, in connection order, unbuilt:
    what a task's state manager opens (``streamproc.state``) when stores need a task directory and changelog."""
    builders: dict[str, object] = {}
    for name in subtopology_nodes(topology, subtopology_id):
        for store_name in topology.stores_of(name):
            builders.setdefault(store_name, topology.store(store_name))
    return builders


def build_stores(topology: Topology, subtopology_id: int | None = None) -> dict[str, object]:
    """New stores for one task: each store connected to the sub-topology's processors, built once, in connection
    order (``buildProcessorNode``'s ``stateStoreMap``)."""
    return _built(store_builders(topology, subtopology_id))


def build_global_stores(topology: Topology) -> dict[str, object]:
    """New global stores (one instance each, shared by every task), from :func:`global_store_builders`."""
    return _built(global_store_builders(topology))


def _built(builders: Mapping[str, object]) -> dict[str, object]:
    stores: dict[str, object] = {}
    for store_name, builder in builders.items():
        build = getattr(builder, "build", None)
        if not callable(build):
            raise TopologyError(
                f"store {store_name} was added as {type(builder).__name__}, which cannot build a store; add a "
                "StoreBuilder (name, logging_enabled, build()) to run the topology, or open it with a state manager"
            )
        stores[store_name] = build()
    return stores


def changelog_topics(topology: Topology, subtopology_id: int | None, application_id: str) -> dict[str, str]:
    """``ProcessorTopology#storeToChangelogTopic``: store -> ``<prefix>-<store>-changelog`` for logged stores, and
    a table source store that reuses its source topic (``topology.optimization=all``) -> that topic."""
    reused = topology.source_topic_changelogs
    return {
        store: reused[store]
        if store in reused
        else store_changelog_topic(application_id, store, topology.topology_name)
        for store, builder in store_builders(topology, subtopology_id).items()
        if store in reused or _logging_enabled(builder)
    }


def analyze_topology(
    topology: Topology,
    application_id: str,
    partition_counts: Mapping[str, int],
    *,
    dynamic_sink_topics: Mapping[str, Collection[str]] | None = None,
    frozen_inputs: Collection[str] = (),
    allow_cycles: bool = False,
    require_internal_topics: bool = True,
) -> TopologyAnalysis:
    """:func:`~streamproc.engine.topology_analysis.analyze` with what the builder knows and ``describe()`` does not.

    Copartition groups are the ones the program declared (``copartitionSources``): Kafka Streams enforces nothing
    else, so none is derived from shared stores. ``Repartitioned#withNumberOfPartitions`` counts registered with
    ``add_internal_topic`` are passed as explicit counts.
    """
    explicit = {
        decorate_topic(application_id, t, topology.topology_name): n
        for t, n in topology.internal_topics.items()
        if n is not None
    }
    return analyze(
        topology.describe(),
        application_id,
        partition_counts,
        copartition_groups=topology.copartition_groups(application_id),
        explicit_repartition_counts=explicit,
        dynamic_sink_topics=dynamic_sink_topics,
        frozen_inputs=frozen_inputs,
        allow_cycles=allow_cycles,
        require_internal_topics=require_internal_topics,
        source_topic_changelogs=topology.source_topic_changelogs,
    )


def tasks(
    topology: Topology,
    partition_counts: Mapping[str, int],
    *,
    application_id: str,
    analysis: TopologyAnalysis | None = None,
) -> dict[TaskId, tuple[TopicPartition, ...]]:
    """``PartitionGrouper#partitionGroups``: every ``TaskId`` and its source partitions, in task order."""
    result = analysis if analysis is not None else analyze_topology(topology, application_id, partition_counts)
    return {
        task_id: tuple(TopicPartition(topic, partition) for topic, partition in owned)
        for task_id, owned in result.tasks.items()
    }


def matching_source(topics: Sequence[str], topic: str) -> str | None:
    """The source topic (or pattern placeholder) that reads ``topic``: equal, else a full regex match, as
    ``TopologyTestDriver#getInputTopicOrPatternPartition`` looks it up."""
    if topic in topics:
        return topic
    for candidate in topics:
        try:
            if re.fullmatch(candidate, topic):
                return candidate
        except re.error:
            continue
    return None
