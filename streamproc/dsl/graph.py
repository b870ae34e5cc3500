"""The DSL's logical graph (``kstream.internals.graph``, 4.2): one node per DSL operation, written to a Processor-API
:class:`~streamproc.engine.topology.Topology` at ``build()``.

Java builds this graph while the program calls the DSL, optionally rewrites it (``topology.optimization``), then
writes it: a priority queue ordered by each node's build priority (the order in which nodes were added) is drained
from the root, and a node is written once all its parents are. The write order decides the order of nodes in the
topology and therefore sub-topology ids, task ids and state directories, so it is reproduced exactly, including the
queue's tie-breaking (:class:`~streamproc.engine.java_priority_queue.JavaPriorityQueue`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from streamproc.engine.serdes import Deserializer, Serializer
from streamproc.engine.topology import Topology
from streamproc.errors import TopologyError

ProcessorSupplier = Callable[[], object]


class GraphNode:
    """``GraphNode``: a named node with parents and children, written once after all its parents."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self.parents: list[GraphNode] = []
        self.children: list[GraphNode] = []
        self.build_priority = 0
        self.key_changing = False
        self.value_changing = False
        self.merge_node = False
        self.written = False

    def add_child(self, child: GraphNode) -> None:
        """``addChild``: also makes this node a parent of ``child``."""
        self.children.append(child)
        child.parents.append(self)

    def remove_child(self, child: GraphNode) -> None:
        """``removeChild``."""
        if child in self.children:
            self.children.remove(child)
            if self in child.parents:
                child.parents.remove(self)

    def parent_names(self) -> tuple[str, ...]:
        """``parentNodeNames``: the topology-node names this node's processor hangs under."""
        return tuple(p.node_name for p in self.parents)

    def all_parents_written(self) -> bool:
        return all(p.written for p in self.parents)

    def write(self, topology: Topology) -> None:
        """``writeToTopology``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.node_name!r}, priority={self.build_priority})"


class RootNode(GraphNode):
    """``RootNode``: the graph's root; sources and state stores hang under it."""

    def __init__(self) -> None:
        super().__init__("TOPOLOGY-ROOT")


class StreamSourceNode(GraphNode):
    """``StreamSourceNode``: ``Topology#addSource`` for ``builder.stream``."""

    def __init__(self, name: str, topics: Sequence[str], pattern: str | None, consumed: Any) -> None:
        super().__init__(name)
        self.topics = tuple(topics)
        self.pattern = pattern
        self.consumed = consumed

    def write(self, topology: Topology) -> None:
        c = self.consumed
        topology.add_source(
            self.node_name,
            *self.topics,
            pattern=self.pattern,
            key_deserializer=c.key_serde,
            value_deserializer=c.value_serde,
            timestamp_extractor=c.timestamp_extractor,
            offset_reset=c.offset_reset,
        )


class ProcessorGraphNode(GraphNode):
    """``ProcessorGraphNode``: one stateless processor under its parents."""

    def __init__(self, name: str, supplier: ProcessorSupplier) -> None:
        super().__init__(name)
        self.supplier = supplier

    def write(self, topology: Topology) -> None:
        topology.add_processor(self.node_name, self.supplier, *self.parent_names())


class StatefulProcessorNode(ProcessorGraphNode):
    """``StatefulProcessorNode`` / ``ProcessorToStateConnectorNode`` / ``TableFilterNode`` & co: a processor with an
    optional store it owns (``store``, added and connected) and stores it only reads (``store_names``).

    ``store_names`` may be a callable: a KTable's value-getter stores are known only once the program is complete
    (a later join can still materialise a source table).
    """

    def __init__(
        self,
        name: str,
        supplier: ProcessorSupplier,
        store: object | None = None,
        store_names: Sequence[str] | Callable[[], Sequence[str]] = (),
        *,
        key_local: bool = False,
    ) -> None:
        super().__init__(name, supplier)
        self.store = store
        self.store_names = store_names
        #: ``KStream.process(..., key_local=True)``: the program's promise for its Processor-API processor
        self.key_local = key_local

    def connected_store_names(self) -> tuple[str, ...]:
        names = self.store_names() if callable(self.store_names) else self.store_names
        return tuple(names)

    def write(self, topology: Topology) -> None:
        topology.add_processor(self.node_name, self.supplier, *self.parent_names(), key_local=self.key_local)
        store = self.store() if callable(self.store) else self.store
        if store is not None:
            topology.add_state_store(store, self.node_name)
        names = self.connected_store_names()
        if names:
            topology.connect_processor_and_state_stores(self.node_name, *names)


class StateStoreNode(GraphNode):
    """``StateStoreNode``: ``StreamsBuilder#addStateStore``, a store added at the root (connected by processors)."""

    def __init__(self, store: object) -> None:
        super().__init__(f"STATE-STORE-{getattr(store, 'name', '')}")
        self.store = store

    def write(self, topology: Topology) -> None:
        topology.add_state_store(self.store)


class StreamSinkNode(GraphNode):
    """``StreamSinkNode``: ``Topology#addSink`` to a topic or a ``TopicNameExtractor``."""

    def __init__(self, name: str, topic: Any, produced: Any) -> None:
        super().__init__(name)
        self.topic = topic
        self.produced = produced

    def write(self, topology: Topology) -> None:
        p = self.produced
        topology.add_sink(
            self.node_name,
            self.topic,
            *self.parent_names(),
            key_serializer=p.key_serde,
            value_serializer=p.value_serde,
            partitioner=p.partitioner,
        )


class RepartitionNode(GraphNode):
    """``OptimizableRepartitionNode`` / ``UnoptimizableRepartitionNode``: a null-key filter, a sink to the internal
    topic, and a source reading it back (the node's name is the source's: children hang under it)."""

    def __init__(
        self,
        source_name: str,
        filter_name: str,
        sink_name: str,
        topic: str,
        supplier: ProcessorSupplier,
        key_serde: Any,
        value_serde: Any,
        *,
        number_of_partitions: int | None = None,
        partitioner: Any = None,
        optimizable: bool = True,
    ) -> None:
        super().__init__(source_name)
        self.filter_name = filter_name
        self.sink_name = sink_name
        self.topic = topic
        self.supplier = supplier
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.number_of_partitions = number_of_partitions
        self.partitioner = partitioner
        self.optimizable = optimizable

    def write(self, topology: Topology) -> None:
        topology.add_internal_topic(self.topic, self.number_of_partitions)
        topology.add_processor(self.filter_name, self.supplier, *self.parent_names())
        topology.add_sink(
            self.sink_name,
            self.topic,
            self.filter_name,
            key_serializer=self.key_serde,
            value_serializer=self.value_serde,
            partitioner=self.partitioner,
        )
        topology.add_source(
            self.node_name, self.topic, key_deserializer=self.key_serde, value_deserializer=self.value_serde
        )


class _NoValueSerde(Serializer[Any], Deserializer[Any]):
    """Stands in for a ``KTable#groupBy`` value serde the program did not give (nor ``default.value.serde``):
    building and describing work, writing a record says what is missing."""

    def serialize(self, topic: str, data: Any) -> bytes | None:
        raise TopologyError(
            f"topic {topic}: the KTable#groupBy repartition topic has no value serde; give Grouped.with_(key, value) "
            "or default.value.serde to StreamsBuilder.build"
        )

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return self.serialize(topic, None)

    def __call__(self, topic: str, data: Any) -> Any:
        return self.serialize(topic, data)


class TableRepartitionNode(GraphNode):
    """``GroupedTableOperationRepartitionNode``: ``KTable#groupBy``'s sink and source, no filter; the values are
    KTable changes (old and new values) in ``ChangedSerializer``'s layout around the value serde (the program's,
    else ``default.value.serde``, set by ``StreamsBuilder.build`` before the node is written)."""

    def __init__(self, source_name: str, sink_name: str, topic: str, key_serde: Any, value_serde: Any) -> None:
        super().__init__(source_name)
        self.sink_name = sink_name
        self.topic = topic
        self.key_serde = key_serde
        self.value_serde = value_serde

    def write(self, topology: Topology) -> None:
        from streamproc.dsl.internals.changed_serde import ChangedDeserializer, ChangedSerializer

        inner: Any = self.value_serde
        serializer = ChangedSerializer(inner.serializer if inner is not None else _NoValueSerde())
        deserializer = ChangedDeserializer(inner.deserializer if inner is not None else _NoValueSerde())
        topology.add_internal_topic(self.topic)
        topology.add_sink(
            self.sink_name,
            self.topic,
            *self.parent_names(),
            key_serializer=self.key_serde,
            value_serializer=serializer,
        )
        topology.add_source(
            self.node_name, self.topic, key_deserializer=self.key_serde, value_deserializer=deserializer
        )


class TableSourceNode(GraphNode):
    """``TableSourceNode``: a source and the ``KTableSource`` processor; the store only when the table is
    materialised (a name was given, or a join/aggregation needs its values) at write time."""

    def __init__(
        self,
        source_name: str,
        node_name: str,
        topic: str,
        consumed: Any,
        supplier: ProcessorSupplier,
        store: Callable[[], object | None],
        *,
        is_global: bool = False,
    ) -> None:
        super().__init__(node_name)
        self.source_name = source_name
        self.topic = topic
        self.consumed = consumed
        self.supplier = supplier
        self.store = store
        self.is_global = is_global
        self.reuse_source_topic_for_changelog = False

    def write(self, topology: Topology) -> None:
        c = self.consumed
        store = self.store()
        if self.is_global:
            topology.add_global_store(
                store,
                self.source_name,
                self.topic,
                self.node_name,
                self.supplier,
                key_deserializer=c.key_serde,
                value_deserializer=c.value_serde,
                timestamp_extractor=c.timestamp_extractor,
                reprocess_on_restore=False,  # InternalStreamsBuilder#addGlobalStore for a globalTable
            )
            return
        topology.add_source(
            self.source_name,
            self.topic,
            key_deserializer=c.key_serde,
            value_deserializer=c.value_serde,
            timestamp_extractor=c.timestamp_extractor,
            offset_reset=c.offset_reset,
        )
        topology.add_processor(self.node_name, self.supplier, self.source_name)
        if store is not None:
            if self.reuse_source_topic_for_changelog:
                disable = getattr(store, "with_logging_disabled", None)
                if callable(disable):
                    disable()
            topology.add_state_store(store, self.node_name)
            name = getattr(store, "name", None)
            if self.reuse_source_topic_for_changelog and isinstance(name, str):
                # TableSourceNode#writeToTopology: the store writes no changelog and restores from its source topic
                topology.connect_source_store_and_topic(name, self.topic)


class StreamStreamJoinNode(GraphNode):
    """``StreamStreamJoinNode``: the two join processors (children of the windowed processors), the merge, and the
    window stores (each connected to its side's windowed processor and the other side's join processor)."""

    def __init__(
        self,
        merge_name: str,
        merge_supplier: ProcessorSupplier,
        this_name: str,
        this_supplier: ProcessorSupplier,
        other_name: str,
        other_supplier: ProcessorSupplier,
        this_windowed_name: str,
        other_windowed_name: str,
        this_store: object,
        other_store: object,
        outer_store: object | None,
    ) -> None:
        super().__init__(merge_name)
        self.merge_supplier = merge_supplier
        self.this_name = this_name
        self.this_supplier = this_supplier
        self.other_name = other_name
        self.other_supplier = other_supplier
        self.this_windowed_name = this_windowed_name
        self.other_windowed_name = other_windowed_name
        self.this_store = this_store
        self.other_store = other_store
        self.outer_store = outer_store

    def write(self, topology: Topology) -> None:
        topology.add_processor(self.this_name, self.this_supplier, self.this_windowed_name)
        topology.add_processor(self.other_name, self.other_supplier, self.other_windowed_name)
        topology.add_processor(self.node_name, self.merge_supplier, self.this_name, self.other_name)
        topology.add_state_store(self.this_store, self.this_windowed_name, self.other_name)
        topology.add_state_store(self.other_store, self.other_windowed_name, self.this_name)
        if self.outer_store is not None:
            topology.add_state_store(self.outer_store, self.this_name, self.other_name)


class TableTableJoinNode(GraphNode):
    """``KTableKTableJoinNode``: join-this under this table, join-other under the other, the merger under both;
    each join processor reads the other table's value-getter stores."""

    def __init__(
        self,
        merge_name: str,
        merge_supplier: ProcessorSupplier,
        this_name: str,
        this_supplier: ProcessorSupplier,
        other_name: str,
        other_supplier: ProcessorSupplier,
        this_side: str,
        other_side: str,
        this_stores: Callable[[], Sequence[str]],
        other_stores: Callable[[], Sequence[str]],
        store: object | None,
    ) -> None:
        super().__init__(merge_name)
        self.merge_supplier = merge_supplier
        self.this_name = this_name
        self.this_supplier = this_supplier
        self.other_name = other_name
        self.other_supplier = other_supplier
        self.this_side = this_side
        self.other_side = other_side
        self.this_stores = this_stores
        self.other_stores = other_stores
        self.store = store

    def write(self, topology: Topology) -> None:
        topology.add_processor(self.this_name, self.this_supplier, self.this_side)
        topology.add_processor(self.other_name, self.other_supplier, self.other_side)
        topology.add_processor(self.node_name, self.merge_supplier, self.this_name, self.other_name)
        other_stores = tuple(self.other_stores())
        this_stores = tuple(self.this_stores())
        if other_stores:
            topology.connect_processor_and_state_stores(self.this_name, *other_stores)
        if this_stores:
            topology.connect_processor_and_state_stores(self.other_name, *this_stores)
        if self.store is not None:
            topology.add_state_store(self.store, self.node_name)
