"""``StreamsBuilder`` and ``InternalStreamsBuilder`` (4.2): the name counter, the logical graph, its optimisation and
its writing into a Processor-API :class:`~streamproc.engine.topology.Topology`.

Names: every generated processor or store name takes the next value of ONE counter
(``KSTREAM-FILTER-0000000003``, ``KSTREAM-AGGREGATE-STATE-STORE-0000000004``), and Kafka also "burns" a value for
many user-named operations so that naming one operation does not renumber the others. Which operations burn, and in
which order an operation draws its names, is the compatibility contract: it is reproduced call for call (the
side-by-side programs in ``conformance/dsl/`` check it against Kafka Streams 4.2.2).

Optimisation (``topology.optimization=all``): repartition topics that follow the same key-changing operation are
merged into one (named after the first), and source topics of tables are reused as their changelogs
(``reuse.ktable.source.topics``); ``none`` (the default) leaves the graph as the program built it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from streamproc.dsl.graph import (
    GraphNode,
    RepartitionNode,
    RootNode,
    StateStoreNode,
    StreamSourceNode,
    StreamStreamJoinNode,
    TableRepartitionNode,
    TableSourceNode,
)
from streamproc.dsl.options import Consumed, Materialized
from streamproc.engine.internal_topics import REPARTITION_TOPIC_SUFFIX
from streamproc.engine.java_priority_queue import JavaPriorityQueue
from streamproc.engine.topology import Topology
from streamproc.errors import ConfigError, TopologyError

if TYPE_CHECKING:
    from streamproc.dsl.kstream import KStream
    from streamproc.dsl.ktable import GlobalKTable, KTable

#: ``StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG`` and its values.
TOPOLOGY_OPTIMIZATION_CONFIG = "topology.optimization"
NO_OPTIMIZATION = "none"
OPTIMIZE = "all"
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"
_OPTIMIZATIONS = (REUSE_KTABLE_SOURCE_TOPICS, MERGE_REPARTITION_TOPICS, SINGLE_STORE_SELF_JOIN)

#: ``KTableImpl.STATE_STORE_NAME``: generated store names are ``<prefix>STATE-STORE-<index>``.
STATE_STORE_NAME = "STATE-STORE-"


#: ``StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX``: how often (wall
#: clock) a left/outer stream-stream join looks for expired records to emit; ``TopologyTestDriver`` uses 0.
EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX = (
    "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
)

#: ``StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG`` / ``DEFAULT_VALUE_SERDE_CLASS_CONFIG``.
DEFAULT_KEY_SERDE = "default.key.serde"
DEFAULT_VALUE_SERDE = "default.value.serde"


def _fill_outer_join_serdes(topology: Topology, key_serde: Any, value_serde: Any) -> None:
    """Shared outer-join stores whose join had no serdes get the default serdes (Kafka fills them when the store
    opens); without defaults they stay unset, and a run refuses the store."""
    from streamproc.dsl.kstream import set_outer_join_serdes

    for builder in topology.store_builders(None).values():
        pending = getattr(builder, "outer_join_serdes", None)
        if pending is None:
            continue
        key, value, other = (
            given if given is not None else default
            for given, default in zip(pending, (key_serde, value_serde, value_serde), strict=True)
        )
        if key is not None and value is not None and other is not None:
            set_outer_join_serdes(builder, key, value, other)


def _default_serde(props: Mapping[str, Any] | None, key: str) -> Any:
    """A default serde from ``props``: a ``Serde``, a serde class, or the name of one of ``Serdes`` (``"String"``).

    As ``StreamsConfig.defaultKeySerde()``/``defaultValueSerde()`` do, a serde that takes a configuration (the
    Schema Registry serdes) is configured with the application's settings, ``props`` themselves: a class is
    instantiated first, an instance not configured yet is configured (one configured by the program is kept as is).
    """
    value = (props or {}).get(key)
    if value is None:
        return None
    if isinstance(value, str):
        from streamproc.engine.serdes import SERDES

        name = value.rsplit("$", 1)[-1].removesuffix("Serde")
        if name not in SERDES:
            raise ConfigError(f"{key}={value}: not a serde streamproc knows; give one of {sorted(SERDES)} or a Serde")
        return SERDES[name]()
    serde = value() if isinstance(value, type) else value
    configure = getattr(serde, "configure", None)
    if callable(configure) and not getattr(serde, "configured", True):
        configure(dict(props or {}), key == DEFAULT_KEY_SERDE)
    return serde


def _optimizations(props: Mapping[str, Any] | None) -> frozenset[str]:
    """``StreamsConfig.verifyTopologyOptimizationConfigs``: ``none``, ``all`` or a comma list of the named ones."""
    value = (props or {}).get(TOPOLOGY_OPTIMIZATION_CONFIG, NO_OPTIMIZATION)
    items = [v.strip() for v in str(value).split(",")]
    if items == [NO_OPTIMIZATION]:
        return frozenset()
    if items == [OPTIMIZE]:
        return frozenset(_OPTIMIZATIONS)
    if NO_OPTIMIZATION in items or OPTIMIZE in items or any(i not in _OPTIMIZATIONS for i in items):
        raise ConfigError(
            f"Invalid value {value} for configuration {TOPOLOGY_OPTIMIZATION_CONFIG}: A comma separated list of "
            f"optimizations, or one of {NO_OPTIMIZATION} or {OPTIMIZE}; valid optimizations: "
            f"{', '.join(_OPTIMIZATIONS)}"
        )
    return frozenset(items)


class InternalStreamsBuilder:
    """The counter, the graph and the program's declarations (``InternalStreamsBuilder``)."""

    def __init__(self) -> None:
        self._index = 0
        self._build_priority = 0
        self.root = RootNode()
        self.root.build_priority = self._next_priority()
        self.key_changing_to_repartitions: dict[GraphNode, list[RepartitionNode]] = {}
        self.merge_nodes: list[GraphNode] = []
        self.table_source_nodes: list[TableSourceNode] = []
        self.copartition_groups: list[set[str]] = []
        self.store_names: set[str] = set()
        self.built = False

    # -------------------------------------------------------------------------------------------------- naming

    def new_processor_name(self, prefix: str) -> str:
        """``newProcessorName``: ``<prefix><index, 10 digits>``."""
        name = f"{prefix}{self._index:010d}"
        self._index += 1
        return name

    def new_store_name(self, prefix: str) -> str:
        """``newStoreName``: ``<prefix>STATE-STORE-<index, 10 digits>``."""
        name = f"{prefix}{STATE_STORE_NAME}{self._index:010d}"
        self._index += 1
        return name

    def or_else_generate(self, name: str | None, prefix: str) -> str:
        """``NamedInternal#orElseGenerateWithPrefix``: 4.2 burns an index even when a name is given."""
        generated = self.new_processor_name(prefix)
        return generated if name is None else name

    def suffix_with_or_else_get(self, name: str | None, suffix: str, prefix: str) -> str:
        """``NamedInternal#suffixWithOrElseGet(suffix, provider, prefix)``: ``<name><suffix>`` (an index burnt) or a
        generated name."""
        generated = self.new_processor_name(prefix)
        return generated if name is None else name + suffix

    def materialized_store_name(self, materialized: Materialized[Any, Any] | None, prefix: str) -> tuple[str, bool]:
        """``MaterializedInternal(materialized, builder, prefix)``: the given name (queryable) or a generated one."""
        if materialized is not None and materialized.store_name is not None:
            return materialized.store_name, True
        return self.new_store_name(prefix), False

    # --------------------------------------------------------------------------------------------------- graph

    def _next_priority(self) -> int:
        value = self._build_priority
        self._build_priority += 1
        return value

    def add_graph_node(self, parents: GraphNode | Iterable[GraphNode], child: GraphNode) -> None:
        """``addGraphNode``: attach ``child`` and record what the optimiser needs to know about it."""
        if self.built:
            raise TopologyError("this StreamsBuilder has already built its topology; build a new program")
        for parent in [parents] if isinstance(parents, GraphNode) else list(parents):
            parent.add_child(child)
        child.build_priority = self._next_priority()
        if child.key_changing:
            self.key_changing_to_repartitions[child] = []
        elif isinstance(child, RepartitionNode) and child.optimizable:
            key_changer = _key_changing_parent(child)
            if key_changer is not None:
                self.key_changing_to_repartitions[key_changer].append(child)
        elif child.merge_node:
            self.merge_nodes.append(child)
        elif isinstance(child, TableSourceNode) and not child.is_global:
            self.table_source_nodes.append(child)

    def copartition(self, source_names: Iterable[str]) -> None:
        """``InternalTopologyBuilder#copartitionSources`` at the call, as Java does."""
        self.copartition_groups.append(set(source_names))

    # ------------------------------------------------------------------------------------------------ building

    def build(self, props: Mapping[str, Any] | None = None, topology_name: str | None = None) -> Topology:
        """``buildAndOptimizeTopology``: optimise, then write the graph breadth-first by build priority."""
        optimizations = _optimizations(props)
        if REUSE_KTABLE_SOURCE_TOPICS in optimizations:
            for table_source in self.table_source_nodes:
                table_source.reuse_source_topic_for_changelog = True
        if MERGE_REPARTITION_TOPICS in optimizations:
            self._merge_repartition_topics()
        topology = Topology(topology_name)
        emit_interval = (props or {}).get(EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX)
        queue: JavaPriorityQueue[GraphNode] = JavaPriorityQueue(key=lambda n: n.build_priority)
        queue.offer(self.root)
        while queue:
            node = queue.poll()
            assert node is not None
            if node.all_parents_written() and not node.written:
                if isinstance(node, TableRepartitionNode) and node.value_serde is None:
                    node.value_serde = _default_serde(props, DEFAULT_VALUE_SERDE)
                if emit_interval is not None and isinstance(node, StreamStreamJoinNode):
                    for join in (node.this_supplier, node.other_supplier):
                        join.emit_interval_ms = int(emit_interval)  # type: ignore[attr-defined]
                node.write(topology)
                node.written = True
            for child in node.children:
                queue.offer(child)
        for group in self.copartition_groups:
            topology.copartition_sources(group)
        key_serde, value_serde = _default_serde(props, DEFAULT_KEY_SERDE), _default_serde(props, DEFAULT_VALUE_SERDE)
        _fill_outer_join_serdes(topology, key_serde, value_serde)
        if key_serde is not None or value_serde is not None:
            from streamproc.dsl.stores import apply_default_serdes

            topology.set_default_serdes(key_serde, value_serde)

            apply_default_serdes(topology.store_builders(None).values(), key_serde, value_serde)
        self.built = True
        return topology

    def _attach_repartitions_to_merges(self) -> None:
        """``maybeUpdateKeyChangingRepartitionNodeMap``: repartitions below a merge of re-keyed streams belong to
        the merge (one topic after the merge), not to the key-changing operations above it."""
        merge_to_key_changers: dict[GraphNode, list[GraphNode]] = {}
        for merge in self.merge_nodes:
            changers: list[GraphNode] = []
            for key_changer, repartitions in self.key_changing_to_repartitions.items():
                if _merge_has_repartition_children(merge, repartitions) and (
                    _find_parent_matching(merge, _child_of(key_changer)) is not None
                ):
                    changers.append(key_changer)
            merge_to_key_changers[merge] = changers
        to_remove: list[GraphNode] = []
        for merge, changers in merge_to_key_changers.items():
            collected: list[RepartitionNode] = []
            for key_changer in changers:
                for repartition in self.key_changing_to_repartitions[key_changer]:
                    if repartition not in collected:
                        collected.append(repartition)
                to_remove.append(key_changer)
            self.key_changing_to_repartitions[merge] = collected
        for key_changer in to_remove:
            self.key_changing_to_repartitions.pop(key_changer, None)

    def _merge_repartition_topics(self) -> None:
        """``maybeOptimizeRepartitionOperations``: one repartition topic per key-changing operation."""
        from streamproc.dsl.kstream import new_repartition_node

        self._attach_repartitions_to_merges()
        for key_changer, repartitions in list(self.key_changing_to_repartitions.items()):
            if not repartitions:
                continue
            first = repartitions[0]
            merged = new_repartition_node(self, first.topic, first.key_serde, first.value_serde)
            merged.build_priority = key_changer.build_priority
            for replaced in repartitions:
                child = _find_parent_matching(replaced, _child_of(key_changer))
                if child is None:
                    raise TopologyError(f"Found a null keyChangingChild node for {replaced.node_name}")
                merged.add_child(child)
                key_changer.remove_child(child)
                for grandchild in list(replaced.children):
                    for parent in list(replaced.parents):
                        parent.add_child(grandchild)
                for parent in list(replaced.parents):
                    parent.remove_child(replaced)
                for grandchild in list(replaced.children):
                    replaced.remove_child(grandchild)
                for group in self.copartition_groups:
                    if replaced.node_name in group:
                        group.discard(replaced.node_name)
                        group.add(merged.node_name)
            key_changer.add_child(merged)
            self.key_changing_to_repartitions[key_changer] = []


def _merge_has_repartition_children(merge: GraphNode, repartitions: list[RepartitionNode]) -> bool:
    """``mergeNodeHasRepartitionChildren``: every repartition hangs (indirectly) under the merge."""
    return all(_find_parent_matching(r, _child_of(merge)) is not None for r in repartitions)


def _child_of(parent: GraphNode) -> Callable[[GraphNode], bool]:
    return lambda node: parent in node.parents


def _find_parent_matching(start: GraphNode, predicate: Callable[[GraphNode], bool]) -> GraphNode | None:
    """``findParentNodeMatching``: ``start`` or, depth-first through the parents, the last match found."""
    if predicate(start):
        return start
    found: GraphNode | None = None
    for parent in start.parents:
        if predicate(parent):
            return parent
        found = _find_parent_matching(parent, predicate)
    return found


def _key_changing_parent(node: GraphNode) -> GraphNode | None:
    """``getKeyChangingParentNode``: the nearest key-changing ancestor, unless a value-changing one is nearer."""
    nearest = _find_parent_matching(node, lambda n: n.key_changing or n.value_changing)
    key_changer = _find_parent_matching(node, lambda n: n.key_changing)
    return key_changer if nearest is not None and nearest is key_changer else None


class StreamsBuilder:
    """``StreamsBuilder``: declare sources (``stream``, ``table``, ``global_table``) and stores, then ``build``."""

    def __init__(self) -> None:
        self.internal = InternalStreamsBuilder()

    def stream(self, topics: str | Iterable[str], consumed: Consumed[Any, Any] | None = None) -> KStream:
        """``StreamsBuilder#stream(topic(s)[, consumed])``."""
        from streamproc.dsl.kstream import KStream

        names = (topics,) if isinstance(topics, str) else tuple(topics)
        if not names:
            raise TopologyError("topics can't be empty")
        consumed = consumed or Consumed()
        name = self.internal.or_else_generate(consumed.name, "KSTREAM-SOURCE-")
        node = StreamSourceNode(name, names, None, consumed)
        self.internal.add_graph_node(self.internal.root, node)
        return KStream(self.internal, name, node, frozenset({name}), repartition_required=False, serdes=consumed)

    def stream_pattern(self, pattern: str, consumed: Consumed[Any, Any] | None = None) -> KStream:
        """``StreamsBuilder#stream(Pattern[, consumed])``."""
        from streamproc.dsl.kstream import KStream

        consumed = consumed or Consumed()
        name = self.internal.or_else_generate(consumed.name, "KSTREAM-SOURCE-")
        node = StreamSourceNode(name, (), pattern, consumed)
        self.internal.add_graph_node(self.internal.root, node)
        return KStream(self.internal, name, node, frozenset({name}), repartition_required=False, serdes=consumed)

    def table(
        self,
        topic: str,
        consumed: Consumed[Any, Any] | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``StreamsBuilder#table(topic[, consumed][, materialized])``."""
        from streamproc.dsl.ktable import new_source_table

        table: KTable = new_source_table(self.internal, topic, consumed or Consumed(), materialized, is_global=False)
        return table

    def global_table(
        self,
        topic: str,
        consumed: Consumed[Any, Any] | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> GlobalKTable:
        """``StreamsBuilder#globalTable(topic[, consumed][, materialized])``."""
        from streamproc.dsl.ktable import new_source_table

        table: GlobalKTable = new_source_table(
            self.internal, topic, consumed or Consumed(), materialized, is_global=True
        )
        return table

    def add_state_store(self, store: object) -> StreamsBuilder:
        """``StreamsBuilder#addStateStore``: a store for ``process``/``process_values`` to name."""
        self.internal.add_graph_node(self.internal.root, StateStoreNode(store))
        return self

    def build(self, props: Mapping[str, Any] | None = None) -> Topology:
        """``StreamsBuilder#build([props])``: ``topology.optimization`` is read from ``props``, and stores the
        program gave no serdes get ``default.key.serde``/``default.value.serde``."""
        return self.internal.build(props)


def repartition_topic_name(prefix: str) -> str:
    """``KStreamImpl.createRepartitionedSource``: ``<prefix>-repartition`` unless the prefix already ends so."""
    return prefix if prefix.endswith(REPARTITION_TOPIC_SUFFIX) else prefix + REPARTITION_TOPIC_SUFFIX
