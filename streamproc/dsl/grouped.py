"""Grouped streams and tables and their aggregations (``KGroupedStreamImpl``, ``GroupedStreamAggregateBuilder``,
``TimeWindowedKStreamImpl``, ``SlidingWindowedKStreamImpl``, ``SessionWindowedKStreamImpl``, ``KGroupedTableImpl``;
4.2).

Every aggregation draws its store name first (``<PREFIX>STATE-STORE-<n>`` unless ``Materialized`` names it), then
its processor name, then, when the key was changed upstream, the three names of its repartition topic
(``<Grouped name or store name>-repartition``); the aggregation's processor reads the repartitioned records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamproc.dsl.builder import InternalStreamsBuilder
from streamproc.dsl.graph import GraphNode, RepartitionNode, StatefulProcessorNode, TableRepartitionNode
from streamproc.dsl.internals.kstream_aggregate import (
    KStreamAggregate,
    KStreamReduce,
    count_initializer,
    counting_aggregator,
)
from streamproc.dsl.internals.kstream_session_window_aggregate import KStreamSessionWindowAggregate
from streamproc.dsl.internals.kstream_sliding_window_aggregate import KStreamSlidingWindowAggregate
from streamproc.dsl.internals.kstream_window_aggregate import KStreamWindowAggregate
from streamproc.dsl.internals.ktable_aggregate import KTableAggregate, KTableReduce
from streamproc.dsl.internals.ktable_suppress_processor import WindowedKeys
from streamproc.dsl.ktable import KTable
from streamproc.dsl.options import Grouped, Materialized, Named
from streamproc.dsl.stores import key_value_store, session_store, window_store
from streamproc.dsl.windows import SessionWindows, SlidingWindows, TimeWindows
from streamproc.engine.internal_topics import REPARTITION_TOPIC_SUFFIX
from streamproc.errors import TopologyError

if TYPE_CHECKING:
    from streamproc.dsl.kstream import KStream


def _name(named: Named | None) -> str | None:
    return None if named is None else named.name


class _AggregateBuilder:
    """``GroupedStreamAggregateBuilder``: where an aggregation of this grouping hangs (after a repartition if the
    key changed), shared by the grouping and its windowed forms."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        node: GraphNode,
        source_nodes: frozenset[str],
        grouped: Grouped[Any, Any],
        repartition_required: bool,
        stream: KStream,
    ) -> None:
        self.builder = builder
        self.name = name
        self.node = node
        self.source_nodes = source_nodes
        self.grouped = grouped
        self.repartition_required = repartition_required
        self.key_serde = grouped.key_serde if grouped.key_serde is not None else stream.key_serde
        self.value_serde = grouped.value_serde if grouped.value_serde is not None else stream.value_serde
        self._repartition: RepartitionNode | None = None

    def build(
        self,
        function_name: str,
        store: object,
        supplier: Any,
        store_name: str,
        queryable: bool,
        value_serde: Any = None,
    ) -> KTable:
        from streamproc.dsl.kstream import new_repartition_node

        parent = self.node
        sources = self.source_nodes
        if self.repartition_required:
            prefix = self.grouped.name if self.grouped.name is not None else store_name
            node = new_repartition_node(self.builder, prefix, self.key_serde, self.value_serde)
            if self._repartition is None or self.grouped.name is None:
                self._repartition = node
            self.builder.add_graph_node(parent, self._repartition)
            parent = self._repartition
            sources = frozenset({self._repartition.node_name})
        stateful = StatefulProcessorNode(function_name, supplier, store)
        self.builder.add_graph_node(parent, stateful)
        return KTable(
            self.builder,
            function_name,
            stateful,
            sources,
            supplier=supplier,
            queryable_store=store_name if queryable else None,
            key_serde=self.key_serde,
            value_serde=value_serde,
        )


def _table_value_serde(materialized: Materialized[Any, Any] | None, value_serde: Any) -> Any:
    """The aggregation table's value serde, which its ``toStream().to()`` writes with (``new KTableImpl(...,
    materialized.valueSerde(), ...)``): ``Materialized``'s, else the operation's (``Long`` for count, the grouping's
    for reduce; none for aggregate, which then falls to ``default.value.serde``)."""
    return (
        materialized.value_serde if materialized is not None and materialized.value_serde is not None else value_serde
    )


def _reduce_initializer() -> Any:
    """``aggregateBuilder.reduceInitializer``: no aggregate yet."""
    return None


def _reduce_aggregator(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """``aggregateBuilder.reduceAggregator``: the first value, then ``reducer(aggregate, value)``."""
    return lambda _key, value, aggregate: value if aggregate is None else reducer(aggregate, value)


class KGroupedStream:
    """``KGroupedStream``: ``count``, ``reduce``, ``aggregate`` and ``windowed_by``."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        node: GraphNode,
        source_nodes: frozenset[str],
        grouped: Grouped[Any, Any],
        repartition_required: bool,
        stream: KStream,
    ) -> None:
        self._agg = _AggregateBuilder(builder, name, node, source_nodes, grouped, repartition_required, stream)

    def _key_value(
        self,
        prefix: str,
        named: Named | None,
        materialized: Materialized[Any, Any] | None,
        value_serde: Any,
        make: Callable[[str], Any],
    ) -> KTable:
        b = self._agg.builder
        store_name, queryable = b.materialized_store_name(materialized, prefix)
        name = b.or_else_generate(_name(named), prefix)
        store = key_value_store(store_name, materialized, self._agg.key_serde, value_serde)
        return self._agg.build(
            name, store, make(store_name), store_name, queryable, _table_value_serde(materialized, value_serde)
        )

    def count(self, named: Named | None = None, materialized: Materialized[Any, Any] | None = None) -> KTable:
        """``count([named][, materialized])``: ``KSTREAM-AGGREGATE-`` with a ``Long`` store."""
        from streamproc.engine.serdes import SERDES

        return self._key_value(
            "KSTREAM-AGGREGATE-",
            named,
            materialized,
            SERDES["Long"](),
            lambda store: KStreamAggregate(store, count_initializer, counting_aggregator),
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``reduce(reducer[, named][, materialized])``: ``KSTREAM-REDUCE-``."""
        return self._key_value(
            "KSTREAM-REDUCE-",
            named,
            materialized,
            self._agg.value_serde,
            lambda store: KStreamReduce(store, reducer),
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``aggregate(initializer, aggregator[, named][, materialized])``: ``KSTREAM-AGGREGATE-``."""
        return self._key_value(
            "KSTREAM-AGGREGATE-",
            named,
            materialized,
            None,
            lambda store: KStreamAggregate(store, initializer, aggregator),
        )

    def windowed_by(self, windows: TimeWindows | SlidingWindows | SessionWindows) -> WindowedKStream:
        """``windowedBy(TimeWindows | SlidingWindows | SessionWindows)``."""
        if not isinstance(windows, (TimeWindows, SlidingWindows, SessionWindows)):
            raise TopologyError("windows can't be null")
        return WindowedKStream(self._agg, windows)


class WindowedKStream:
    """``TimeWindowedKStream`` / ``SessionWindowedKStream``: the same aggregations per window; keys of the result
    are ``Windowed`` keys."""

    def __init__(self, agg: _AggregateBuilder, windows: TimeWindows | SlidingWindows | SessionWindows) -> None:
        self._agg = agg
        self.windows = windows

    def _store(self, name: str, materialized: Materialized[Any, Any] | None, value_serde: Any) -> object:
        w = self.windows
        key_serde = self._agg.key_serde
        if isinstance(w, TimeWindows):
            return window_store(
                name,
                materialized,
                key_serde,
                value_serde,
                size_ms=w.size_ms,
                grace_ms=w.grace_ms,
                retention_floor_ms=w.size_ms + w.grace_ms,
            )
        if isinstance(w, SlidingWindows):
            return window_store(
                name,
                materialized,
                key_serde,
                value_serde,
                size_ms=w.time_difference_ms,
                grace_ms=w.grace_ms,
                retention_floor_ms=2 * w.time_difference_ms + w.grace_ms,
            )
        return session_store(
            name, materialized, key_serde, value_serde, gap_ms=w.inactivity_gap_ms, grace_ms=w.grace_ms
        )

    def _windowed(
        self,
        prefix: str,
        named: Named | None,
        materialized: Materialized[Any, Any] | None,
        value_serde: Any,
        operation: str,
        *args: Any,
    ) -> KTable:
        b = self._agg.builder
        store_name, queryable = b.materialized_store_name(materialized, prefix)
        name = b.or_else_generate(_name(named), prefix)
        supplier = self._supplier(name, store_name, operation, args)
        store = self._store(store_name, materialized, value_serde)
        table = self._agg.build(
            name, store, supplier, store_name, queryable, _table_value_serde(materialized, value_serde)
        )
        table.window_grace_ms = self.windows.grace_period_ms()
        w = self.windows
        if isinstance(w, SessionWindows):
            table.windowed_keys = WindowedKeys(session=True)
        else:
            table.windowed_keys = WindowedKeys(False, w.size_ms if isinstance(w, TimeWindows) else w.time_difference_ms)
        return table

    def _supplier(self, name: str, store_name: str, operation: str, args: tuple[Any, ...]) -> Any:
        """``KStreamWindowAggregate`` / ``KStreamSessionWindowAggregate`` with Kafka's count and reduce adapters."""
        w = self.windows
        if operation == "count":
            initializer: Callable[[], Any] = count_initializer  # named: the columnar window recognises count()
            aggregator: Callable[[Any, Any, Any], Any] = counting_aggregator
            merger: Callable[[Any, Any, Any], Any] | None = lambda _k, a, b: a + b  # noqa: E731
        elif operation == "reduce":
            (reducer,) = args
            initializer, aggregator = _reduce_initializer, _reduce_aggregator(reducer)
            merger = lambda _k, a, b: reducer(a, b)  # noqa: E731
        else:
            initializer, aggregator, merger = args
        if isinstance(w, TimeWindows):
            return KStreamWindowAggregate(w, store_name, initializer, aggregator)
        if isinstance(w, SessionWindows):
            assert merger is not None
            return KStreamSessionWindowAggregate(w, store_name, initializer, aggregator, merger)
        return KStreamSlidingWindowAggregate(w, store_name, initializer, aggregator)

    def count(self, named: Named | None = None, materialized: Materialized[Any, Any] | None = None) -> KTable:
        """``count([named][, materialized])``."""
        from streamproc.engine.serdes import SERDES

        return self._windowed("KSTREAM-AGGREGATE-", named, materialized, SERDES["Long"](), "count")

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``reduce(reducer[, named][, materialized])``."""
        return self._windowed("KSTREAM-REDUCE-", named, materialized, self._agg.value_serde, "reduce", reducer)

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *args: Any,
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``aggregate(initializer, aggregator[, merger (sessions)][, named][, materialized])``."""
        merger = None
        for arg in args:
            if isinstance(arg, Named):
                named = arg
            elif isinstance(arg, Materialized):
                materialized = arg
            elif callable(arg):
                merger = arg
        if isinstance(self.windows, SessionWindows) and merger is None:
            raise TopologyError("sessionMerger can't be null")
        return self._windowed(
            "KSTREAM-AGGREGATE-", named, materialized, None, "aggregate", initializer, aggregator, merger
        )


class KGroupedTable:
    """``KGroupedTable``: ``count``, ``reduce(adder, subtractor)``, ``aggregate(initializer, adder, subtractor)``
    after a repartition through ``<Grouped name or store name>-repartition``."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        node: GraphNode,
        source_nodes: frozenset[str],
        grouped: Grouped[Any, Any],
    ) -> None:
        self._builder = builder
        self.name = name
        self._node = node
        self._source_nodes = source_nodes
        self._grouped = grouped
        self._repartition: TableRepartitionNode | None = None

    def _aggregate(
        self,
        prefix: str,
        named: Named | None,
        materialized: Materialized[Any, Any] | None,
        value_serde: Any,
        make: Callable[[str], Any],
    ) -> KTable:
        """``KGroupedTableImpl#doAggregate``."""
        b = self._builder
        # Kafka 4.2 names even a reduce's store KTABLE-AGGREGATE-STATE-STORE- (KGroupedTableImpl#reduce)
        store_name, queryable = b.materialized_store_name(materialized, "KTABLE-AGGREGATE-")
        sink = b.suffix_with_or_else_get(_name(named), "-sink", "KSTREAM-SINK-")
        source = b.suffix_with_or_else_get(_name(named), "-source", "KSTREAM-SOURCE-")
        function = b.or_else_generate(_name(named), prefix)
        topic = (self._grouped.name if self._grouped.name is not None else store_name) + REPARTITION_TOPIC_SUFFIX
        if self._repartition is None or self._grouped.name is None:
            self._repartition = TableRepartitionNode(
                source, sink, topic, self._grouped.key_serde, self._grouped.value_serde
            )
        b.add_graph_node(self._node, self._repartition)
        supplier = make(store_name)
        store = key_value_store(store_name, materialized, self._grouped.key_serde, value_serde)
        node = StatefulProcessorNode(function, supplier, store)
        b.add_graph_node(self._repartition, node)
        return KTable(
            b,
            function,
            node,
            frozenset({self._repartition.node_name}),
            supplier=supplier,
            queryable_store=store_name if queryable else None,
            key_serde=self._grouped.key_serde,
            value_serde=_table_value_serde(materialized, value_serde),
        )

    def count(self, named: Named | None = None, materialized: Materialized[Any, Any] | None = None) -> KTable:
        """``count([named][, materialized])``: ``KTABLE-AGGREGATE-``."""
        from streamproc.engine.serdes import SERDES

        return self._aggregate(
            "KTABLE-AGGREGATE-",
            named,
            materialized,
            SERDES["Long"](),
            lambda store: KTableAggregate(store, lambda: 0, lambda _k, _v, agg: agg + 1, lambda _k, _v, agg: agg - 1),
        )

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``reduce(adder, subtractor[, named][, materialized])``: ``KTABLE-REDUCE-``."""
        return self._aggregate(
            "KTABLE-REDUCE-",
            named,
            materialized,
            self._grouped.value_serde,
            lambda store: KTableReduce(store, adder, subtractor),
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        named: Named | None = None,
        materialized: Materialized[Any, Any] | None = None,
    ) -> KTable:
        """``aggregate(initializer, adder, subtractor[, named][, materialized])``: ``KTABLE-AGGREGATE-``."""
        return self._aggregate(
            "KTABLE-AGGREGATE-",
            named,
            materialized,
            None,
            lambda store: KTableAggregate(store, initializer, adder, subtractor),
        )
