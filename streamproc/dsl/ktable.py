"""``KTable`` and ``GlobalKTable`` (``KTableImpl``, ``GlobalKTableImpl``, 4.2): changelog streams, their operations
and the rules that decide which of them get a state store.

A table is materialised (has a store) when the program names a store for it, or, for a source table, when a later
join or aggregation needs to look its values up (``KTableSource#materialize``, reached through
``valueGetterSupplier`` and ``enableSendingOldValues``). That decision is taken while the program is built and
read when the graph is written, as in Java, so a store appears in ``describe()`` exactly when Kafka's does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamproc.dsl.builder import InternalStreamsBuilder
from streamproc.dsl.graph import (
    GraphNode,
    ProcessorGraphNode,
    StatefulProcessorNode,
    TableSourceNode,
    TableTableJoinNode,
)
from streamproc.dsl.internals import processors as p
from streamproc.dsl.internals.kstream_aggregate import KStreamAggregate, KStreamReduce
from streamproc.dsl.internals.kstream_session_window_aggregate import KStreamSessionWindowAggregate
from streamproc.dsl.internals.kstream_window_aggregate import KStreamWindowAggregate
from streamproc.dsl.internals.ktable_filter import KTableFilter
from streamproc.dsl.internals.ktable_ktable_join import JoinKind, KTableKTableJoin, KTableKTableJoinMerger
from streamproc.dsl.internals.ktable_map_values import KTableMapValues
from streamproc.dsl.internals.ktable_repartition_map import KTableRepartitionMap
from streamproc.dsl.internals.ktable_source import KTableSource
from streamproc.dsl.internals.ktable_suppress_processor import KTableSuppressProcessorSupplier, WindowedKeys
from streamproc.dsl.internals.ktable_suppress_processor import Suppressed as InternalSuppressed
from streamproc.dsl.internals.processor_support import KTableValueGetterSupplier, TimestampedStoreGetterSupplier
from streamproc.dsl.options import Consumed, Grouped, Materialized, Named
from streamproc.dsl.stores import key_value_store, suppress_buffer_store
from streamproc.dsl.suppressed import Suppressed
from streamproc.errors import TopologyError

if TYPE_CHECKING:
    from streamproc.dsl.grouped import KGroupedTable
    from streamproc.dsl.kstream import KStream


def _name(named: Named | None) -> str | None:
    return None if named is None else named.name


#: Kafka's ``KStreamAggProcessorSupplier``s: ``enableSendingOldValues()`` takes no argument and always succeeds.
_STREAM_AGGREGATES = (KStreamAggregate, KStreamReduce, KStreamWindowAggregate, KStreamSessionWindowAggregate)


@dataclass(frozen=True, slots=True)
class _JoinedGetterSupplier:
    """The value getter of an unmaterialised table-table join: it reads both tables' stores (Kafka computes the
    join on read; streamproc does not run such a getter yet, but the stores it needs are known)."""

    names: tuple[str, ...]

    def __call__(self) -> Any:
        raise TopologyError(
            "reading the value of an unmaterialised KTable-KTable join (a join or aggregation over a join result) is "
            "not supported yet; give the join a Materialized store name"
        )

    def store_names(self) -> tuple[str, ...]:
        return self.names


class KTable:
    """``KTable``: each operation returns a new table or stream; see the module docstring for materialisation."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        node: GraphNode,
        source_nodes: frozenset[str],
        *,
        supplier: Any,
        queryable_store: str | None,
        key_serde: Any = None,
        value_serde: Any = None,
        parent: KTable | None = None,
        join: tuple[KTable, KTable, KTableKTableJoin, KTableKTableJoin] | None = None,
    ) -> None:
        self._builder = builder
        self.name = name
        self._node = node
        self.source_nodes = source_nodes
        #: Java's ``processorSupplier``: the object whose state (materialised, old values) the program changes.
        self._supplier = supplier
        self._queryable_store = queryable_store
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._parent = parent
        self._join_parts = join
        self._send_old_values = False
        #: The grace period of the windows a windowed aggregation used (``findAndVerifyWindowGrace``).
        self.window_grace_ms: int | None = parent.window_grace_ms if parent is not None else None
        #: How a windowed table's keys are serialized around ``key_serde`` (``None``: not windowed).
        self.windowed_keys: WindowedKeys | None = parent.windowed_keys if parent is not None else None

    @property
    def queryable_store_name(self) -> str | None:
        """``queryableStoreName()``: the store a name was given for, or ``None``."""
        return self._queryable_store

    # ------------------------------------------------------------------------------------- value getters

    def value_getter_supplier(self) -> KTableValueGetterSupplier:
        """``KTableImpl#valueGetterSupplier``: a source table is materialised by being asked."""
        view = getattr(self._supplier, "view", None)
        if callable(view):
            supplier: KTableValueGetterSupplier = view()
            return supplier
        if self._queryable_store is not None:
            return TimestampedStoreGetterSupplier(self._queryable_store)
        if self._join_parts is not None:
            first, second = self._join_parts[0], self._join_parts[1]
            names = first.value_getter_supplier().store_names() + second.value_getter_supplier().store_names()
            return _JoinedGetterSupplier(names)
        if self._parent is not None:
            return self._parent.value_getter_supplier()
        raise TopologyError(f"KTable {self.name} has no value getter")

    def view(self) -> KTableValueGetterSupplier:
        """``KTableProcessorSupplier#view`` of this table (what a child table's processor reads)."""
        return self.value_getter_supplier()

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """``KTableImpl#enableSendingOldValues``: downstream needs ``Change.old_value``."""
        if self._send_old_values:
            return True
        s = self._supplier
        if self._join_parts is not None:
            first, second, join_this, join_other = self._join_parts
            s.enable_sending_old_values(True)
            join_this.enable_sending_old_values(True)
            join_other.enable_sending_old_values(True)
            first.enable_sending_old_values(True)
            second.enable_sending_old_values(True)
        elif isinstance(s, _STREAM_AGGREGATES):
            s.enable_sending_old_values()
        elif callable(getattr(s, "enable_sending_old_values", None)):
            if not s.enable_sending_old_values(force_materialization):
                return False
        elif self._parent is not None and not self._parent.enable_sending_old_values(force_materialization):
            return False
        self._send_old_values = True
        return True

    # ---------------------------------------------------------------------------------------- operations

    def _table_op(
        self,
        prefix: str,
        named: Named | None,
        materialized: Materialized[Any, Any] | None,
        make: Callable[[str | None], Any],
    ) -> KTable:
        """``KTableImpl#doFilter`` / ``#doMapValues``: an unnamed ``Materialized`` burns a store index first."""
        b = self._builder
        store_name = None
        if materialized is not None:
            if materialized.store_name is None:
                b.new_store_name(prefix)
            store_name = materialized.store_name
        name = b.or_else_generate(_name(named), prefix)
        store = key_value_store(store_name, materialized, self.key_serde, None) if store_name else None
        supplier = make(store_name)
        node = StatefulProcessorNode(name, supplier, store)
        b.add_graph_node(self._node, node)
        return KTable(
            b,
            name,
            node,
            self.source_nodes,
            supplier=supplier,
            queryable_store=store_name,
            key_serde=self.key_serde,
            parent=self,
        )

    def _filter(self, predicate: Callable[[Any, Any], bool], filter_not: bool, store: str | None) -> KTableFilter:
        """``new KTableFilter(...)``: 4.2's constructor asks the parent for old values without forcing
        materialisation (``enableSendingOldValues(false)``), so that a materialised parent's filter does not
        forward a tombstone for a key that was filtered out already."""
        supplier = KTableFilter(self, predicate, filter_not, store)
        supplier.send_old_values = self.enable_sending_old_values(False)
        return supplier

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``filter(predicate[, named][, materialized])``: ``KTABLE-FILTER-``."""
        return self._table_op(
            "KTABLE-FILTER-", named, materialized, lambda store: self._filter(predicate, False, store)
        )

    def filter_not(
        self,
        predicate: Callable[[Any, Any], bool],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``filterNot(predicate[, named][, materialized])``: ``KTABLE-FILTER-``."""
        return self._table_op("KTABLE-FILTER-", named, materialized, lambda store: self._filter(predicate, True, store))

    def map_values(
        self,
        mapper: Callable[..., Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
        *,
        with_key: bool = False,
    ) -> KTable:
        """``mapValues(mapper[, named][, materialized])``: ``KTABLE-MAPVALUES-``."""
        fn = mapper if with_key else (lambda _k, v: mapper(v))
        return self._table_op("KTABLE-MAPVALUES-", named, materialized, lambda store: KTableMapValues(self, fn, store))

    def to_stream(self, mapper: Named | Callable[[Any, Any], Any] | None = None, named: Named | None = None) -> KStream:
        """``toStream([named])``: ``KTABLE-TOSTREAM-``; each update's new value (``None`` for a deletion).
        ``toStream(mapper[, named])``: then ``selectKey(mapper)``, as ``KTableImpl`` builds it."""
        from streamproc.dsl.kstream import KStream

        if isinstance(mapper, Named) or mapper is None:
            named = mapper if named is None else named
        else:
            return self.to_stream(named).select_key(mapper)
        name = self._builder.or_else_generate(_name(named), "KTABLE-TOSTREAM-")
        node = ProcessorGraphNode(name, p.KTableToStream)
        self._builder.add_graph_node(self._node, node)
        # KTableImpl#toStream: the stream keeps the table's serdes, so a later to() writes a count as a Long
        return KStream(self._builder, name, node, self.source_nodes, repartition_required=False, serdes=self)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """``suppress(suppressed)``: ``KTABLE-SUPPRESS-`` with its buffer store (``<name>-store`` when named)."""
        b = self._builder
        if suppressed.name is not None:
            name, store_name = suppressed.name, suppressed.name + "-store"
        else:
            name = b.new_processor_name("KTABLE-SUPPRESS-")
            store_name = b.new_store_name("KTABLE-SUPPRESS-")
        self.enable_sending_old_values(True)
        supplier = self._suppress_supplier(suppressed, name, store_name)
        store = suppress_buffer_store(store_name, self.key_serde, self.value_serde)
        if not suppressed.buffer.logging_enabled:
            store.with_logging_disabled()
        node = StatefulProcessorNode(name, supplier, store)
        b.add_graph_node(self._node, node)
        return KTable(
            b,
            name,
            node,
            self.source_nodes,
            supplier=supplier,
            queryable_store=None,
            key_serde=self.key_serde,
            value_serde=self.value_serde,  # suppress holds records back, it does not change them
            parent=self,
        )

    def _suppress_supplier(self, suppressed: Suppressed, name: str, store_name: str) -> Any:
        """``KTableSuppressProcessorSupplier``: the buffer store serializes keys with the table's key serde (or
        ``default.key.serde`` at build), wrapped in the windowed serde for a windowed table."""
        buffer = suppressed.buffer
        if suppressed.until_window_closes_:
            if self.window_grace_ms is None:
                raise TopologyError(
                    "Invalid topology: suppress(Suppressed.until_window_closes) is defined only for windowed KTables "
                    "(the result of a windowed aggregation); use until_time_limit on other tables"
                )
            wait_ms = self.window_grace_ms
        else:
            assert suppressed.time_limit_ms is not None
            wait_ms = suppressed.time_limit_ms
        spec = InternalSuppressed(
            suppressed.until_window_closes_, wait_ms, buffer.max_records, buffer.shutdown_when_full, buffer.max_bytes
        )
        return KTableSuppressProcessorSupplier(spec, store_name, self.windowed_keys, name)

    def group_by(
        self, selector: Callable[[Any, Any], tuple[Any, Any]], grouped: Grouped[Any, Any] | None = None
    ) -> KGroupedTable:
        """``groupBy(selector[, grouped])``: ``KTABLE-SELECT-`` (named after the ``Grouped``), old values on."""
        from streamproc.dsl.grouped import KGroupedTable

        g = grouped or Grouped()
        name = self._builder.or_else_generate(g.name, "KTABLE-SELECT-")
        node = ProcessorGraphNode(name, KTableRepartitionMap(self, selector))
        self._builder.add_graph_node(self._node, node)
        self.enable_sending_old_values(True)
        return KGroupedTable(self._builder, name, node, self.source_nodes, g)

    def join(self, other: KTable, joiner: Callable[[Any, Any], Any], *args: Any, **kwargs: Any) -> KTable:
        """``join(table, joiner[, named][, materialized])``."""
        return self._join(other, joiner, args, kwargs, left_outer=False, right_outer=False)

    def left_join(self, other: KTable, joiner: Callable[[Any, Any], Any], *args: Any, **kwargs: Any) -> KTable:
        """``leftJoin(table, joiner[, named][, materialized])``."""
        return self._join(other, joiner, args, kwargs, left_outer=True, right_outer=False)

    def outer_join(self, other: KTable, joiner: Callable[[Any, Any], Any], *args: Any, **kwargs: Any) -> KTable:
        """``outerJoin(table, joiner[, named][, materialized])``."""
        return self._join(other, joiner, args, kwargs, left_outer=True, right_outer=True)

    def _join(
        self,
        other: Any,
        joiner: Callable[[Any, Any], Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        left_outer: bool,
        right_outer: bool,
    ) -> KTable:
        """``KTableImpl#doJoin``: join-this, join-other and ``KTABLE-MERGE-`` (which owns a named result store)."""
        if not isinstance(other, KTable):
            if callable(other):
                raise TopologyError(
                    "foreign-key KTable joins (join(table, foreignKeyExtractor, joiner)) are not supported by "
                    "streamproc: their subscription topics cannot be replayed from a batch; keep this part of the "
                    "application in Kafka Streams"
                )
            raise TopologyError("other can't be null")
        named: Named | None = kwargs.pop("named", None)
        materialized: Materialized[Any, Any] | None = kwargs.pop("materialized", None)
        for arg in args:
            if isinstance(arg, Named):
                named = arg
            elif isinstance(arg, Materialized):
                materialized = arg
            elif callable(arg):
                raise TopologyError(
                    "foreign-key KTable joins are not supported by streamproc: their subscription topics cannot be "
                    "replayed from a batch; keep this part of the application in Kafka Streams"
                )
        b = self._builder
        store_name = None
        if materialized is not None:
            store_name, _ = b.materialized_store_name(materialized, "KTABLE-MERGE-")
        merge_name = b.or_else_generate(_name(named), "KTABLE-MERGE-")
        sources = self.source_nodes | other.source_nodes
        b.copartition(sources)
        if left_outer:
            self.enable_sending_old_values(True)
        if right_outer:
            other.enable_sending_old_values(True)
        this_name = b.suffix_with_or_else_get(_name(named), "-join-this", "KTABLE-JOINTHIS-")
        other_name = b.suffix_with_or_else_get(_name(named), "-join-other", "KTABLE-JOINOTHER-")
        this_stores = self.value_getter_supplier().store_names()
        other_stores = other.value_getter_supplier().store_names()
        this_kind = JoinKind.OUTER if right_outer else (JoinKind.LEFT if left_outer else JoinKind.INNER)
        other_kind = JoinKind.OUTER if right_outer else (JoinKind.RIGHT if left_outer else JoinKind.INNER)
        join_this = KTableKTableJoin(this_kind, other.value_getter_supplier(), joiner, this_is_left=True)
        join_other = KTableKTableJoin(other_kind, self.value_getter_supplier(), joiner, this_is_left=False)
        merger = KTableKTableJoinMerger(store_name)
        node = TableTableJoinNode(
            merge_name,
            merger,
            this_name,
            join_this,
            other_name,
            join_other,
            self.name,
            other.name,
            lambda: this_stores,
            lambda: other_stores,
            key_value_store(store_name, materialized, self.key_serde, None) if store_name is not None else None,
        )
        b.add_graph_node(self._node, node)
        b.add_graph_node(other._node, node)
        return KTable(
            b,
            merge_name,
            node,
            sources,
            supplier=merger,
            queryable_store=store_name,
            key_serde=self.key_serde,
            join=(self, other, join_this, join_other),
        )


class GlobalKTable:
    """``GlobalKTable``: a table every task reads whole; joined from a ``KStream`` with a key selector."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def queryable_store_name(self) -> str:
        return self.store_name

    def value_getter_supplier(self) -> KTableValueGetterSupplier:
        return TimestampedStoreGetterSupplier(self.store_name)


def new_source_table(
    builder: InternalStreamsBuilder,
    topic: str,
    consumed: Consumed[Any, Any],
    materialized: Materialized[Any, Any] | None,
    *,
    is_global: bool,
) -> Any:
    """``InternalStreamsBuilder#table`` / ``#globalTable``: store name (``<topic>-STATE-STORE-``), source and
    ``KTABLE-SOURCE-`` processor, in that order (named: ``<name>-source`` and ``<name>``)."""
    if topic is None:
        raise TopologyError("topic can't be null")
    store_name, queryable = builder.materialized_store_name(materialized, f"{topic}-")
    # a named table: the source is <name>-source, the KTableSource processor <name> (4.2)
    source_name = builder.suffix_with_or_else_get(consumed.name, "-source", "KSTREAM-SOURCE-")
    table_source_name = builder.or_else_generate(consumed.name, "KTABLE-SOURCE-")
    source = KTableSource(store_name, store_name if queryable or is_global else None)
    key_serde = materialized.key_serde if materialized and materialized.key_serde is not None else consumed.key_serde
    value_serde = (
        materialized.value_serde if materialized and materialized.value_serde is not None else consumed.value_serde
    )
    store = key_value_store(store_name, materialized, key_serde, value_serde)
    if is_global:
        store = store.with_logging_disabled()

    def materialised_store() -> object | None:
        return store if source.materialized() else None

    node = TableSourceNode(
        source_name,
        table_source_name,
        topic,
        consumed,
        source,
        materialised_store,
        is_global=is_global,
    )
    builder.add_graph_node(builder.root, node)
    if is_global:
        return GlobalKTable(store_name)
    return KTable(
        builder,
        table_source_name,
        node,
        frozenset({source_name}),
        supplier=source,
        queryable_store=store_name if queryable else None,
        key_serde=key_serde,
        value_serde=value_serde,
    )
