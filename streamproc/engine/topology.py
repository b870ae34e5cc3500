"""The Processor-API ``Topology`` builder (``org.apache.kafka.streams.Topology`` + ``InternalTopologyBuilder``, 4.2.0).

A Python program declares sources, processors, sinks and stores in the same calls and order as a Kafka Streams
program, gets the same validation errors (``TopologyException`` text quoted in a ``TopologyError``), and
:meth:`Topology.describe` numbers sub-topologies exactly as Kafka Streams does: a union-find over node names
(a node is united with its parents, a processor with the earlier users of a store it connects to), then ids in the
insertion order of each group's first node (``InternalTopologyBuilder#makeNodeGroups``). Task ids and state
directory names depend on that numbering, so it must not differ from the live application's.

Processor suppliers are typed loosely (``Callable[[], object]``): the runtime ``Processor`` protocol and the
runtime graph built from a sub-topology live in ``processor.py`` / ``processor_topology.py``;
:meth:`Topology.build_processor_topology`, :meth:`Topology.build_stores` and :meth:`Topology.tasks` turn this
builder into them (``topology_builder.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from streamproc.engine.internal_topics import decorate_topic
from streamproc.engine.store_names import is_illegal_store_name
from streamproc.engine.topology_description import (
    GlobalStore,
    Node,
    Processor,
    Sink,
    Source,
    Subtopology,
    TopologyDescription,
)
from streamproc.errors import TopologyError

if TYPE_CHECKING:
    from streamproc.engine.processor_topology import ProcessorTopology
    from streamproc.engine.records import TopicPartition
    from streamproc.engine.serdes import Serde
    from streamproc.engine.task_id import TaskId
    from streamproc.engine.topology_analysis import TopologyAnalysis


ProcessorSupplier = Callable[[], object]


@runtime_checkable
class TopicNameExtractor(Protocol):
    """``TopicNameExtractor#extract(key, value, recordContext)``: the topic of a dynamic sink."""

    def __call__(self, key: Any, value: Any, record_context: Any) -> str: ...


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """What the topology needs to know of a ``StoreBuilder``: its name and whether it is logged."""

    name: str
    logged: bool = True
    persistent: bool = True


def _invalid(message: str) -> TopologyError:
    """``TopologyException``'s text: ``Invalid topology: <message>``."""
    return TopologyError(f"Invalid topology: {message}")


def _store_name(store: object) -> str:
    """The name of a ``StoreBuilder``-like object: a ``name`` attribute or a ``name()`` method."""
    name = getattr(store, "name", None)
    if callable(name):
        name = name()
    if not isinstance(name, str):
        raise TopologyError("state store name cannot be null: the store builder has no 'name'")
    return name


@dataclass(frozen=True, slots=True)
class SourceNodeSpec:
    """``SourceNodeFactory``: topics or a pattern, deserializers and an optional timestamp extractor."""

    name: str
    topics: tuple[str, ...]
    pattern: re.Pattern[str] | None
    key_deserializer: object | None = None
    value_deserializer: object | None = None
    timestamp_extractor: object | None = None
    offset_reset: str | None = None
    #: A pandera polars schema the decoded values must satisfy (``engine/validation.py``); not part of describe().
    value_schema: object | None = None


@dataclass(frozen=True, slots=True)
class ProcessorNodeSpec:
    """``ProcessorNodeFactory``: supplier, parents; stores are tracked by the builder."""

    name: str
    supplier: ProcessorSupplier
    predecessors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SinkNodeSpec:
    """``SinkNodeFactory``: a static topic or a ``TopicNameExtractor``, serializers, optional partitioner."""

    name: str
    topic: str | None
    topic_extractor: object | None
    predecessors: tuple[str, ...]
    key_serializer: object | None = None
    value_serializer: object | None = None
    partitioner: object | None = None


NodeSpec = SourceNodeSpec | ProcessorNodeSpec | SinkNodeSpec


@dataclass(slots=True)
class _StoreEntry:
    store: object
    users: list[str] = field(default_factory=list)


class _QuickUnion:
    """``QuickUnion``: ``unite(a, b)`` makes ``b``'s root point to ``a``'s root."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def add(self, name: str) -> None:
        self._ids[name] = name

    def root(self, name: str) -> str:
        current = name
        while self._ids[current] != current:
            self._ids[current] = self._ids[self._ids[current]]
            current = self._ids[current]
        return current

    def unite(self, name: str, *others: str) -> None:
        for other in others:
            root1, root2 = self.root(name), self.root(other)
            if root1 != root2:
                self._ids[root2] = root1


def _check_supplier(supplier: ProcessorSupplier) -> None:
    """``ApiUtils#checkSupplier``: a supplier must return a new object on every call."""
    if supplier is None:
        raise TopologyError("processorSupplier cannot be null")
    first, second = supplier(), supplier()
    if first is second:
        cls = f"{type(supplier).__module__}.{getattr(supplier, '__qualname__', type(supplier).__qualname__)}"
        raise TopologyError(
            f"{cls} generates single reference. {cls}#get() must return a new object each time it is called."
        )


class Topology:
    """``Topology``: add sources, processors, sinks and stores in program order; :meth:`describe` like Kafka."""

    def __init__(self, topology_name: str | None = None) -> None:
        self._topology_name = topology_name or None
        self._nodes: dict[str, NodeSpec] = {}
        self._grouper = _QuickUnion()
        self._raw_source_topics: list[str] = []
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._global_topics: set[str] = set()
        self._stores: dict[str, _StoreEntry] = {}
        self._global_stores: dict[str, object] = {}
        self._processor_stores: dict[str, list[str]] = {}
        self._copartition_sources: list[set[str]] = []
        self._internal_topics: dict[str, int | None] = {}
        self._reprocess_on_restore: dict[str, bool] = {}
        self._source_topic_changelogs: dict[str, str] = {}
        self._key_local: set[str] = set()

    # ------------------------------------------------------------------------------------------------ validation

    def _verify_name(self, name: str) -> None:
        if name is None:
            raise TopologyError("name cannot be null")
        if name in self._nodes:
            raise _invalid(f"Processor {name} is already added.")

    def _verify_parents(self, name: str, parents: Sequence[str]) -> None:
        if len(parents) == 0:
            raise _invalid("predecessorNames cannot be empty")
        for parent in parents:
            if parent is None:
                raise TopologyError("parent name cannot be null")
            if parent not in self._nodes:
                if parent == name:
                    raise _invalid(f"Parent node {parent} is unknown (self-reference).")
                raise _invalid(f"Parent node {parent} is unknown.")
            if isinstance(self._nodes[parent], SinkNodeSpec):
                raise _invalid(f"Sink {parent} cannot be used a parent.")

    def _validate_topic_not_registered(self, topic: str) -> None:
        if topic in self._raw_source_topics or topic in self._global_topics:
            raise _invalid(f"Topic {topic} has already been registered by another source.")
        for pattern in self._patterns.values():
            if pattern.fullmatch(topic):
                raise _invalid(f"Topic {topic} matches a Pattern already registered by another source.")

    # ----------------------------------------------------------------------------------------------- the builder

    def add_source(
        self,
        name: str,
        *topics: str,
        pattern: str | re.Pattern[str] | None = None,
        key_deserializer: object | None = None,
        value_deserializer: object | None = None,
        timestamp_extractor: object | None = None,
        offset_reset: str | None = None,
        value_schema: object | None = None,
    ) -> Topology:
        """``Topology#addSource``: either topics or a ``pattern`` (full match, as ``Matcher#matches``).

        ``value_schema`` (streamproc's own): a pandera polars schema every decoded value is checked against before
        it is forwarded; a failure goes to the processing exception handler (``engine/validation.py``).
        """
        self._verify_name(name)
        if value_schema is not None:
            from streamproc.engine.validation import check_schema

            check_schema(value_schema, name)
        if pattern is not None and topics:
            raise TopologyError("Either topics or pattern must be null, but both are not null.")
        if pattern is not None:
            try:
                compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
            except re.error as exc:
                raise TopologyError(f"source {name}: pattern {pattern!r} does not compile ({exc})") from exc
            for topic in self._raw_source_topics:
                if compiled.fullmatch(topic):
                    raise _invalid(
                        f"Pattern {compiled.pattern} will match a topic that has already been registered by another "
                        "source."
                    )
            self._nodes[name] = SourceNodeSpec(
                name,
                (),
                compiled,
                key_deserializer,
                value_deserializer,
                timestamp_extractor,
                offset_reset,
                value_schema,
            )
            self._patterns[name] = compiled
        else:
            if not topics:
                raise _invalid("topics cannot be empty")
            for topic in topics:
                if topic is None:
                    raise TopologyError("topic names cannot be null")
                self._validate_topic_not_registered(topic)
                self._raw_source_topics.append(topic)
            self._nodes[name] = SourceNodeSpec(
                name,
                tuple(topics),
                None,
                key_deserializer,
                value_deserializer,
                timestamp_extractor,
                offset_reset,
                value_schema,
            )
        self._grouper.add(name)
        return self

    def add_processor(
        self, name: str, supplier: ProcessorSupplier, *parent_names: str, key_local: bool = False
    ) -> Topology:
        """``Topology#addProcessor``; stores the supplier declares through ``stores()`` are added and connected.

        ``key_local`` (streamproc's own, not part of describe()) is the program's promise that the processor reads
        and writes its stores only at the key of the record it is processing, keeps nothing in the processor object
        from one record to the next, forwards records only under that key, schedules no punctuation and never reads
        the wall clock: what lets a task of its sub-topology be split by key (``engine/key_locality.py``, issue #29).
        Without it a Processor-API processor's sub-topology runs unsplit."""
        self._verify_name(name)
        _check_supplier(supplier)
        self._verify_parents(name, parent_names)
        self._nodes[name] = ProcessorNodeSpec(name, supplier, tuple(parent_names))
        if key_local:
            self._key_local.add(name)
        self._processor_stores[name] = []
        self._grouper.add(name)
        self._grouper.unite(name, *parent_names)
        stores = getattr(supplier, "stores", None)
        if callable(stores):
            for store in stores() or ():
                self.add_state_store(store, name)
        return self

    def add_sink(
        self,
        name: str,
        topic: str | Callable[..., str],
        *parent_names: str,
        key_serializer: object | None = None,
        value_serializer: object | None = None,
        partitioner: object | None = None,
    ) -> Topology:
        """``Topology#addSink`` with a topic name or a ``TopicNameExtractor`` (a callable)."""
        self._verify_name(name)
        if topic is None:
            raise TopologyError("topic cannot be null")
        self._verify_parents(name, parent_names)
        if isinstance(topic, str):
            spec = SinkNodeSpec(name, topic, None, tuple(parent_names), key_serializer, value_serializer, partitioner)
        else:
            spec = SinkNodeSpec(name, None, topic, tuple(parent_names), key_serializer, value_serializer, partitioner)
        self._nodes[name] = spec
        self._grouper.add(name)
        self._grouper.unite(name, *parent_names)
        return self

    def add_state_store(self, store: object, *processor_names: str) -> Topology:
        """``Topology#addStateStore``: register a store (a ``StoreSpec`` or any object with a name) and connect it."""
        if store is None:
            raise TopologyError("storeBuilder cannot be null")
        name = _store_name(store)
        if is_illegal_store_name(name):
            raise TopologyError(
                f"Illegal store name: {name}, which collides with the pre-defined checkpoint file name "
                "(Kafka Streams fails with IllegalArgumentException when the task registers it); rename the store"
            )
        existing = self._stores.get(name)
        if existing is not None and not (existing.store is store or existing.store == store):
            raise _invalid(f"A different StateStore has already been added with the name {name}")
        if name in self._global_stores:
            raise _invalid(f"A different GlobalStateStore has already been added with the name {name}")
        if existing is None:
            self._stores[name] = _StoreEntry(store)
        for processor in processor_names:
            if processor is None:
                raise TopologyError("processor cannot not be null")
            self._connect(processor, name)
        return self

    def connect_processor_and_state_stores(self, processor_name: str, *store_names: str) -> Topology:
        """``Topology#connectProcessorAndStateStores``."""
        if processor_name is None:
            raise TopologyError("processorName cannot be null")
        if not store_names:
            raise _invalid("stateStoreNames cannot be empty")
        if isinstance(self._nodes.get(processor_name), (SourceNodeSpec, SinkNodeSpec)):
            raise _invalid("State stores cannot be connect to sources or sinks.")
        for store_name in store_names:
            if store_name is None:
                raise TopologyError("state store name cannot be null")
            self._connect(processor_name, store_name)
        return self

    def _connect(self, processor_name: str, store_name: str) -> None:
        """``InternalTopologyBuilder#connectProcessorAndStateStore``: unite with the store's first user."""
        if store_name in self._global_stores:
            raise _invalid(
                f"Global StateStore {store_name} can be used by a Processor without being specified; it should not be "
                "explicitly passed."
            )
        if store_name not in self._stores:
            raise _invalid(f"StateStore {store_name} is not added yet.")
        if processor_name not in self._nodes:
            raise _invalid(f"Processor {processor_name} is not added yet.")
        entry = self._stores[store_name]
        if not isinstance(self._nodes[processor_name], ProcessorNodeSpec):
            raise _invalid(f"cannot connect a state store {store_name} to a source node or a sink node.")
        if entry.users:
            self._grouper.unite(entry.users[0], processor_name)
        entry.users.append(processor_name)
        if store_name not in self._processor_stores[processor_name]:
            self._processor_stores[processor_name].append(store_name)

    def add_global_store(
        self,
        store: object,
        source_name: str,
        topic: str,
        processor_name: str,
        supplier: ProcessorSupplier,
        *,
        key_deserializer: object | None = None,
        value_deserializer: object | None = None,
        timestamp_extractor: object | None = None,
        reprocess_on_restore: bool = True,
    ) -> Topology:
        """``Topology#addGlobalStore``: a source on ``topic`` feeding a state-update processor of one store.

        ``reprocess_on_restore``: Kafka 4.2's public ``addGlobalStore`` passes ``true`` (the processor sees every
        record at bootstrap too); the DSL's ``globalTable`` passes ``false`` (a raw load of the topic)."""
        self._verify_name(source_name)
        if topic is None:
            raise TopologyError("topic cannot be null")
        self._validate_topic_not_registered(topic)
        self._verify_name(processor_name)
        if source_name == processor_name:
            raise _invalid("sourceName and processorName must be different.")
        _check_supplier(supplier)
        if store is None:
            raise TopologyError("Global stores must pass in suppliers with exactly one store but got 0")
        name = _store_name(store)
        if name in self._stores:
            raise _invalid(f"A different StateStore has already been added with the name {name}")
        if name in self._global_stores:
            raise _invalid(f"A different GlobalStateStore has already been added with the name {name}")
        self._global_topics.add(topic)
        self._nodes[source_name] = SourceNodeSpec(
            source_name, (topic,), None, key_deserializer, value_deserializer, timestamp_extractor
        )
        self._grouper.add(source_name)
        self._nodes[processor_name] = ProcessorNodeSpec(processor_name, supplier, (source_name,))
        self._processor_stores[processor_name] = [name]
        self._grouper.add(processor_name)
        self._grouper.unite(processor_name, source_name)
        self._global_stores[name] = store
        self._reprocess_on_restore[name] = reprocess_on_restore
        return self

    # ------------------------------------------------------------------------------------------- DSL-only hooks

    def copartition_sources(self, source_names: Iterable[str]) -> None:
        """``InternalTopologyBuilder#copartitionSources``: the DSL declares sources that must be co-partitioned."""
        self._copartition_sources.append(set(source_names))

    def add_internal_topic(self, topic: str, number_of_partitions: int | None = None) -> None:
        """``InternalTopologyBuilder#addInternalTopic``: a repartition topic (prefixed with the application id)."""
        self._internal_topics[topic] = number_of_partitions

    def connect_source_store_and_topic(self, store_name: str, topic: str) -> None:
        """``InternalTopologyBuilder#connectSourceStoreAndTopic``: ``topology.optimization=all`` (or
        ``reuse.ktable.source.topics``) makes a table's source ``topic`` its store's changelog. describe() does not
        show it, yet it decides where the store restores from and what its ``.checkpoint`` names, so the topology
        keeps it for the plan and the run."""
        if store_name in self._source_topic_changelogs:
            raise _invalid(f"Source store {store_name} is already added.")
        self._source_topic_changelogs[store_name] = topic

    @property
    def source_topic_changelogs(self) -> dict[str, str]:
        """Store -> the source topic (raw name) it uses as its changelog (``storeToChangelogTopic`` of a reused
        table source); the store itself is unlogged: it writes no changelog."""
        return dict(self._source_topic_changelogs)

    # ---------------------------------------------------------------------------------------------- inspection

    @property
    def topology_name(self) -> str | None:
        return self._topology_name

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        """Every node in insertion order (``nodeFactories``)."""
        return tuple(self._nodes.values())

    def node(self, name: str) -> NodeSpec:
        return self._nodes[name]

    def set_default_serdes(self, key_serde: object | None, value_serde: object | None) -> None:
        """Give the sources and sinks that have no serde of their own the application's ``default.key.serde`` /
        ``default.value.serde`` (what ``StreamsBuilder.build(props)`` got): Kafka Streams resolves them from the
        app's config when a task starts; streamproc runs the topology where no such config exists (a Spark task of
        ``streamproc run``), so the program's build props carry them. describe() shows no serdes."""
        for name, spec in self._nodes.items():
            if isinstance(spec, SourceNodeSpec):
                self._nodes[name] = replace(
                    spec,
                    key_deserializer=key_serde if spec.key_deserializer is None else spec.key_deserializer,
                    value_deserializer=value_serde if spec.value_deserializer is None else spec.value_deserializer,
                )
            elif isinstance(spec, SinkNodeSpec):
                self._nodes[name] = replace(
                    spec,
                    key_serializer=key_serde if spec.key_serializer is None else spec.key_serializer,
                    value_serializer=value_serde if spec.value_serializer is None else spec.value_serializer,
                )

    def declared_key_local(self, processor_name: str) -> bool:
        """Whether the program declared the processor key-local (``add_processor(..., key_local=True)``)."""
        return processor_name in self._key_local

    def stores_of(self, processor_name: str) -> tuple[str, ...]:
        """The stores connected to a processor, in connection order."""
        return tuple(self._processor_stores.get(processor_name, ()))

    def reprocess_on_restore(self, global_store_name: str) -> bool:
        """Whether a global store's restoration replays records through its processor (``reprocessOnRestore``)."""
        return self._reprocess_on_restore.get(global_store_name, False)

    def store(self, name: str) -> object:
        """The store builder/spec registered under ``name`` (global stores included)."""
        if name in self._stores:
            return self._stores[name].store
        return self._global_stores[name]

    def _is_global_source(self, name: str) -> bool:
        node = self._nodes[name]
        return isinstance(node, SourceNodeSpec) and len(node.topics) == 1 and node.topics[0] in self._global_topics

    def node_groups(self) -> dict[int, tuple[str, ...]]:
        """``InternalTopologyBuilder#makeNodeGroups``: id -> node names (insertion order), ids by first node."""
        groups: dict[int, list[str]] = {}
        root_to_id: dict[str, int] = {}
        for name in self._nodes:
            root = self._grouper.root(name)
            if root not in root_to_id:
                root_to_id[root] = len(root_to_id)
                groups[root_to_id[root]] = []
            groups[root_to_id[root]].append(name)
        return {gid: tuple(names) for gid, names in groups.items()}

    def global_node_groups(self) -> frozenset[int]:
        """Ids of node groups that are global stores (produce no task)."""
        return frozenset(
            gid for gid, names in self.node_groups().items() if any(self._is_global_source(n) for n in names)
        )

    def copartition_groups(self, application_id: str) -> list[tuple[str, ...]]:
        """``InternalTopologyBuilder#copartitionGroups``: DSL-declared groups as full topic names, closed."""
        merged: list[set[str]] = []
        for sources in self._copartition_sources:
            topics: set[str] = set()
            for source in sources:
                node = self._nodes.get(source)
                if isinstance(node, SourceNodeSpec):
                    topics.update(
                        decorate_topic(application_id, t, self._topology_name) if t in self._internal_topics else t
                        for t in node.topics
                    )
            overlapping = [g for g in merged if g & topics]
            for group in overlapping:
                topics |= group
                merged.remove(group)
            merged.append(topics)
        return sorted(tuple(sorted(g)) for g in merged if g)

    def describe(self) -> TopologyDescription:
        """``Topology#describe``: sub-topologies and global stores numbered as Kafka Streams numbers them."""
        successors: dict[str, list[str]] = {name: [] for name in self._nodes}
        for spec in self._nodes.values():
            if not isinstance(spec, SourceNodeSpec):
                for parent in spec.predecessors:
                    successors[parent].append(spec.name)
        subtopologies: list[Subtopology] = []
        global_stores: list[GlobalStore] = []
        for gid, names in self.node_groups().items():
            described = [self._describe_node(self._nodes[n], successors[n]) for n in names]
            if any(self._is_global_source(n) for n in names):
                source = next(d for d in described if isinstance(d, Source))
                processor = next(d for d in described if isinstance(d, Processor))
                global_stores.append(GlobalStore(gid, source, processor))
            else:
                subtopologies.append(Subtopology(gid, tuple(described)))
        return TopologyDescription(tuple(subtopologies), tuple(global_stores), self._topology_name)

    def _describe_node(self, spec: NodeSpec, successors: Sequence[str]) -> Node:
        if isinstance(spec, SourceNodeSpec):
            if spec.pattern is not None:
                return Source(spec.name, (), spec.pattern.pattern, tuple(successors))
            return Source(spec.name, spec.topics, None, tuple(successors))
        if isinstance(spec, ProcessorNodeSpec):
            return Processor(spec.name, self.stores_of(spec.name), tuple(successors), spec.predecessors)
        if spec.topic is not None:
            return Sink(spec.name, spec.topic, None, spec.predecessors)
        return Sink(spec.name, None, _extractor_text(spec.topic_extractor), spec.predecessors)

    def __str__(self) -> str:
        return str(self.describe())

    @property
    def internal_topics(self) -> dict[str, int | None]:
        """Raw names of the internal topics the DSL registered, with their explicit partition counts (or ``None``)."""
        return dict(self._internal_topics)

    # ------------------------------------------------------------------------------------------------ run time

    def build_processor_topology(
        self,
        subtopology_id: int | None = None,
        *,
        application_id: str | None = None,
        analysis: TopologyAnalysis | None = None,
        default_key_serde: Serde[Any] | None = None,
        default_value_serde: Serde[Any] | None = None,
    ) -> ProcessorTopology:
        """``InternalTopologyBuilder#buildSubtopology`` (``None``: ``#buildTopology``, every non-global group) with
        fresh processor instances; see :func:`streamproc.engine.topology_builder.build_processor_topology`."""
        from streamproc.engine import topology_builder

        return topology_builder.build_processor_topology(
            self,
            subtopology_id,
            application_id=application_id,
            analysis=analysis,
            default_key_serde=default_key_serde,
            default_value_serde=default_value_serde,
        )

    def build_stores(self, subtopology_id: int | None = None) -> dict[str, object]:
        """New store instances for one task of ``subtopology_id``, from the registered store builders."""
        from streamproc.engine import topology_builder

        return topology_builder.build_stores(self, subtopology_id)

    def store_builders(self, subtopology_id: int | None = None) -> dict[str, object]:
        """The registered store builders of a sub-topology, unbuilt, in connection order."""
        from streamproc.engine import topology_builder

        return topology_builder.store_builders(self, subtopology_id)

    def changelog_topics(self, subtopology_id: int | None, application_id: str) -> dict[str, str]:
        """``storeToChangelogTopic`` of a sub-topology: logged store -> its changelog topic."""
        from streamproc.engine import topology_builder

        return topology_builder.changelog_topics(self, subtopology_id, application_id)

    def analyze(self, application_id: str, partition_counts: Mapping[str, int]) -> TopologyAnalysis:
        """Topics, copartition groups, tasks and stages for this program on a cluster with ``partition_counts``."""
        from streamproc.engine import topology_builder

        return topology_builder.analyze_topology(self, application_id, partition_counts)

    def tasks(
        self, partition_counts: Mapping[str, int], *, application_id: str
    ) -> dict[TaskId, tuple[TopicPartition, ...]]:
        """``PartitionGrouper#partitionGroups``: each ``TaskId`` and the source partitions it owns."""
        from streamproc.engine import topology_builder

        return topology_builder.tasks(self, partition_counts, application_id=application_id)


def _extractor_text(extractor: object) -> str:
    """What ``TopicNameExtractor#toString`` would print: a class/function name, like Java's ``Class@hash``."""
    name = getattr(extractor, "__qualname__", None) or type(extractor).__qualname__
    module = getattr(extractor, "__module__", None) or type(extractor).__module__
    return f"{module}.{name}"
