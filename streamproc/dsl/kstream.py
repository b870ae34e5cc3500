"""``KStream`` (``KStreamImpl``, ``BranchedKStreamImpl``, ``KStreamImplJoin``, 4.2): record-by-record operations,
grouping, joins and sinks, with Kafka's generated names.

Python names are snake_case; each method's docstring names the Java method it mirrors. User functions take Java's
arguments: a predicate ``(key, value)``, a key-value mapper ``(key, value) -> (new_key, new_value)``, a value mapper
``value`` (or ``(key, value)`` when given ``with_key=True``, Java's ``ValueMapperWithKey``), a joiner
``(value, other_value)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from streamproc.dsl.builder import InternalStreamsBuilder, repartition_topic_name
from streamproc.dsl.graph import (
    GraphNode,
    ProcessorGraphNode,
    RepartitionNode,
    StatefulProcessorNode,
    StreamSinkNode,
    StreamStreamJoinNode,
)
from streamproc.dsl.internals import processors as p
from streamproc.dsl.internals.kstream_kstream_join import KStreamJoinWindow, KStreamKStreamJoin, TimeTrackerSupplier
from streamproc.dsl.internals.kstream_ktable_join import KStreamKTableJoin
from streamproc.dsl.internals.kstream_pass_through import KStreamPassThrough
from streamproc.dsl.internals.outer_join_store import outer_join_value_serde, timestamped_key_and_join_side_serde
from streamproc.dsl.options import (
    Branched,
    Grouped,
    Joined,
    Named,
    Produced,
    Repartitioned,
    StreamJoined,
)
from streamproc.dsl.stores import join_window_store
from streamproc.dsl.windows import JoinWindows
from streamproc.errors import TopologyError
from streamproc.state.store_builders import Stores

if TYPE_CHECKING:
    from streamproc.dsl.grouped import KGroupedStream
    from streamproc.dsl.ktable import GlobalKTable, KTable

#: ``createRepartitionedSource``: a prefix that looks generated keeps the generated sink/filter/source names.
_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")


def _name(named: Named | None) -> str | None:
    return None if named is None else named.name


def new_repartition_node(
    builder: InternalStreamsBuilder,
    prefix: str,
    key_serde: Any,
    value_serde: Any,
    *,
    number_of_partitions: int | None = None,
    partitioner: Any = None,
    optimizable: bool = True,
) -> RepartitionNode:
    """``KStreamImpl.createRepartitionedSource``: burns three names (sink, filter, source), then uses them or, for a
    user-given prefix, ``<topic>-sink``/``-filter``/``-source``."""
    topic = repartition_topic_name(prefix)
    sink, filter_, source = (
        builder.new_processor_name("KSTREAM-SINK-"),
        builder.new_processor_name("KSTREAM-FILTER-"),
        builder.new_processor_name("KSTREAM-SOURCE-"),
    )
    if not _GENERATED.fullmatch(prefix):
        sink, filter_, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
    return RepartitionNode(
        source,
        filter_,
        sink,
        topic,
        lambda: p.KStreamFilter(lambda k, v: k is not None, False),
        key_serde,
        value_serde,
        number_of_partitions=number_of_partitions,
        partitioner=partitioner,
        optimizable=optimizable,
    )


def _value_mapper(mapper: Callable[..., Any], with_key: bool) -> Callable[[Any, Any], Any]:
    return mapper if with_key else (lambda _key, value: mapper(value))


class KStream:
    """``KStream``: a record stream; every operation returns a new ``KStream`` (or table, or grouping)."""

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        name: str,
        node: GraphNode,
        source_nodes: frozenset[str],
        *,
        repartition_required: bool,
        serdes: Any = None,
    ) -> None:
        self._builder = builder
        self.name = name
        self._node = node
        self._source_nodes = source_nodes
        self._repartition_required = repartition_required
        self._key_serde = getattr(serdes, "key_serde", None)
        self._value_serde = getattr(serdes, "value_serde", None)
        self._join_repartition: RepartitionNode | None = None

    # ------------------------------------------------------------------------------------------------ helpers

    def _then(
        self,
        prefix: str,
        named: Named | None,
        supplier: Callable[[], object],
        *,
        key_changing: bool = False,
        value_changing: bool = False,
    ) -> KStream:
        name = self._builder.or_else_generate(_name(named), prefix)
        node = ProcessorGraphNode(name, supplier)
        node.key_changing = key_changing
        node.value_changing = value_changing
        self._builder.add_graph_node(self._node, node)
        stream = KStream(
            self._builder,
            name,
            node,
            self._source_nodes,
            repartition_required=self._repartition_required or key_changing,
            serdes=None if key_changing else self,
        )
        if value_changing:
            stream._value_serde = None  # a value-changing operation keeps only the key serde, as in Java
        return stream

    @property
    def key_serde(self) -> Any:
        return self._key_serde

    @property
    def value_serde(self) -> Any:
        return self._value_serde

    # -------------------------------------------------------------------------------------------- stateless

    def filter(self, predicate: Callable[[Any, Any], bool], named: Named | None = None) -> KStream:
        """``filter(predicate[, named])``: ``KSTREAM-FILTER-``."""
        return self._then("KSTREAM-FILTER-", named, lambda: p.KStreamFilter(predicate, False))

    def filter_not(self, predicate: Callable[[Any, Any], bool], named: Named | None = None) -> KStream:
        """``filterNot(predicate[, named])``: ``KSTREAM-FILTER-``."""
        return self._then("KSTREAM-FILTER-", named, lambda: p.KStreamFilter(predicate, True))

    def select_key(self, mapper: Callable[[Any, Any], Any], named: Named | None = None) -> KStream:
        """``selectKey(mapper[, named])``: ``KSTREAM-KEY-SELECT-``; a later grouping or join repartitions."""
        stream = self._then(
            "KSTREAM-KEY-SELECT-",
            named,
            lambda: p.KStreamMap.selecting_key(mapper),
            key_changing=True,
        )
        stream._value_serde = self._value_serde  # the values are untouched: Java keeps their serde (not the key's)
        return stream

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], named: Named | None = None) -> KStream:
        """``map(mapper[, named])``: ``KSTREAM-MAP-``; the mapper returns ``(key, value)``."""
        return self._then("KSTREAM-MAP-", named, lambda: p.KStreamMap(mapper), key_changing=True)

    def map_values(self, mapper: Callable[..., Any], named: Named | None = None, *, with_key: bool = False) -> KStream:
        """``mapValues(mapper[, named])``: ``KSTREAM-MAPVALUES-``."""
        return self._then(
            "KSTREAM-MAPVALUES-", named, lambda: p.KStreamMapValues(mapper, with_key), value_changing=True
        )

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], named: Named | None = None) -> KStream:
        """``flatMap(mapper[, named])``: ``KSTREAM-FLATMAP-``."""
        return self._then("KSTREAM-FLATMAP-", named, lambda: p.KStreamFlatMap(mapper), key_changing=True)

    def flat_map_values(
        self, mapper: Callable[..., Iterable[Any]], named: Named | None = None, *, with_key: bool = False
    ) -> KStream:
        """``flatMapValues(mapper[, named])``: ``KSTREAM-FLATMAPVALUES-``."""
        fn = _value_mapper(mapper, with_key)
        return self._then("KSTREAM-FLATMAPVALUES-", named, lambda: p.KStreamFlatMapValues(fn), value_changing=True)

    def peek(self, action: Callable[[Any, Any], None], named: Named | None = None) -> KStream:
        """``peek(action[, named])``: ``KSTREAM-PEEK-``."""
        return self._then("KSTREAM-PEEK-", named, lambda: p.KStreamPeek(action, True))

    def foreach(self, action: Callable[[Any, Any], None], named: Named | None = None) -> None:
        """``foreach(action[, named])``: ``KSTREAM-FOREACH-``, a terminal processor."""
        self._then("KSTREAM-FOREACH-", named, lambda: p.KStreamPeek(action, False))

    def merge(self, other: KStream, named: Named | None = None) -> KStream:
        """``merge(stream[, named])``: ``KSTREAM-MERGE-`` under both streams."""
        if other is None:
            raise TopologyError("stream can't be null")
        name = self._builder.or_else_generate(_name(named), "KSTREAM-MERGE-")
        node = ProcessorGraphNode(name, KStreamPassThrough())
        node.merge_node = True
        self._builder.add_graph_node([self._node, other._node], node)
        return KStream(
            self._builder,
            name,
            node,
            self._source_nodes | other._source_nodes,
            repartition_required=self._repartition_required or other._repartition_required,
        )

    def split(self, named: Named | None = None) -> BranchedKStream:
        """``split([named])``: a ``BranchedKStream`` (``KSTREAM-BRANCH-``; children ``<splitter><index|name>``)."""
        return BranchedKStream(self, _name(named))

    def process(
        self,
        supplier: Callable[[], object],
        *store_names: str,
        named: Named | None = None,
        key_local: bool = False,
    ) -> KStream:
        """``process(supplier[, named], stateStoreNames...)``: ``KSTREAM-PROCESSOR-`` (a given name burns none).

        ``key_local``: the program's promise that lets the sub-topology be split by key (``Topology.add_processor``
        says what it promises)."""
        return self._process(
            supplier, store_names, named, "KSTREAM-PROCESSOR-", repartition_required=True, key_local=key_local
        )

    def process_values(
        self,
        supplier: Callable[[], object],
        *store_names: str,
        named: Named | None = None,
        key_local: bool = False,
    ) -> KStream:
        """``processValues(supplier[, named], stateStoreNames...)``: ``KSTREAM-PROCESSVALUES-``; the key is kept.
        ``key_local`` as for :meth:`process`."""
        return self._process(
            supplier,
            store_names,
            named,
            "KSTREAM-PROCESSVALUES-",
            repartition_required=self._repartition_required,
            key_local=key_local,
        )

    def _process(
        self,
        supplier: Callable[[], object],
        store_names: tuple[str, ...],
        named: Named | None,
        prefix: str,
        *,
        repartition_required: bool,
        key_local: bool,
    ) -> KStream:
        if supplier is None:
            raise TopologyError("processorSupplier can't be null")
        name = _name(named) or self._builder.new_processor_name(prefix)
        node = StatefulProcessorNode(name, supplier, None, store_names, key_local=key_local)
        self._builder.add_graph_node(self._node, node)
        return KStream(self._builder, name, node, self._source_nodes, repartition_required=repartition_required)

    # ------------------------------------------------------------------------------------------------ sinks

    def to(self, topic: str | Callable[..., str], produced: Produced[Any, Any] | None = None) -> None:
        """``to(topic | topicNameExtractor[, produced])``: ``KSTREAM-SINK-``."""
        if topic is None:
            raise TopologyError("topic can't be null")
        produced = produced or Produced()
        name = self._builder.or_else_generate(produced.name, "KSTREAM-SINK-")
        if produced.key_serde is None or produced.value_serde is None:
            # KStreamImpl#to: each serde Produced leaves unset is the stream's own (a count's Long values, ...)
            produced = Produced(
                produced.key_serde if produced.key_serde is not None else self._key_serde,
                produced.value_serde if produced.value_serde is not None else self._value_serde,
                produced.partitioner,
                produced.name,
            )
        self._builder.add_graph_node(self._node, StreamSinkNode(name, topic, produced))

    def repartition(self, repartitioned: Repartitioned[Any, Any] | None = None) -> KStream:
        """``repartition([repartitioned])``: through ``<name>-repartition`` (``KSTREAM-REPARTITION-``)."""
        r = repartitioned or Repartitioned()
        name = r.name if r.name is not None else self._builder.new_processor_name("KSTREAM-REPARTITION-")
        node = new_repartition_node(
            self._builder,
            name,
            r.key_serde if r.key_serde is not None else self._key_serde,
            r.value_serde if r.value_serde is not None else self._value_serde,
            number_of_partitions=r.number_of_partitions,
            partitioner=r.partitioner,
            optimizable=False,
        )
        self._builder.add_graph_node(self._node, node)
        return KStream(
            self._builder, node.node_name, node, frozenset({node.node_name}), repartition_required=False, serdes=r
        )

    # -------------------------------------------------------------------------------------------- grouping

    def group_by_key(self, grouped: Grouped[Any, Any] | None = None) -> KGroupedStream:
        """``groupByKey([grouped])``: repartitions first if an earlier operation changed the key."""
        from streamproc.dsl.grouped import KGroupedStream

        return KGroupedStream(
            self._builder,
            self.name,
            self._node,
            self._source_nodes,
            grouped or Grouped(),
            self._repartition_required,
            self,
        )

    def group_by(self, selector: Callable[[Any, Any], Any], grouped: Grouped[Any, Any] | None = None) -> KGroupedStream:
        """``groupBy(selector[, grouped])``: a ``KSTREAM-KEY-SELECT-`` (named after the ``Grouped``), then a
        repartition at the aggregation."""
        from streamproc.dsl.grouped import KGroupedStream

        g = grouped or Grouped()
        name = self._builder.or_else_generate(g.name, "KSTREAM-KEY-SELECT-")
        node = ProcessorGraphNode(name, lambda: p.KStreamMap.selecting_key(selector))
        node.key_changing = True
        self._builder.add_graph_node(self._node, node)
        return KGroupedStream(self._builder, name, node, self._source_nodes, g, True, self)

    # ------------------------------------------------------------------------------------------------ joins

    def join(self, other: Any, joiner: Callable[[Any, Any], Any], *args: Any, **kwargs: Any) -> KStream:
        """``join``: with a ``KStream`` (``windows``, optional ``StreamJoined``), a ``KTable`` (optional
        ``Joined``) or a ``GlobalKTable`` (``key_selector`` first, then the joiner; optional ``Named``)."""
        return self._join(other, joiner, args, kwargs, left_outer=False, right_outer=False)

    def left_join(self, other: Any, joiner: Callable[[Any, Any], Any], *args: Any, **kwargs: Any) -> KStream:
        """``leftJoin``: as :meth:`join`, keeping left records without a partner."""
        return self._join(other, joiner, args, kwargs, left_outer=True, right_outer=False)

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        stream_joined: StreamJoined[Any, Any] | None = None,
    ) -> KStream:
        """``outerJoin(stream, joiner, windows[, streamJoined])``."""
        if not isinstance(other, KStream):
            raise TopologyError("outerJoin is defined for two KStreams (a KStream-KTable outer join does not exist)")
        return self._stream_stream_join(other, joiner, windows, stream_joined, left_outer=True, right_outer=True)

    def _join(
        self,
        other: Any,
        joiner: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        left_outer: bool,
        right_outer: bool,
    ) -> KStream:
        from streamproc.dsl.ktable import GlobalKTable, KTable

        if other is None:
            raise TopologyError("otherStream can't be null")
        if isinstance(other, KStream):
            windows = args[0] if args else kwargs.pop("windows")
            stream_joined = args[1] if len(args) > 1 else kwargs.pop("stream_joined", None)
            return self._stream_stream_join(
                other, joiner, windows, stream_joined, left_outer=left_outer, right_outer=right_outer
            )
        if isinstance(other, KTable):
            joined = args[0] if args else kwargs.pop("joined", None)
            return self._stream_table_join(other, joiner, joined or Joined(), left_join=left_outer)
        if isinstance(other, GlobalKTable):
            # join(globalTable, keySelector, joiner[, named]): the second argument is the key selector.
            key_selector, value_joiner = joiner, (args[0] if args else kwargs.pop("joiner"))
            named = args[1] if len(args) > 1 else kwargs.pop("named", None)
            return self._global_table_join(other, key_selector, value_joiner, named, left_join=left_outer)
        raise TopologyError(f"cannot join a KStream with {type(other).__name__}")

    def _repartition_for_join(self, name: str, key_serde: Any, value_serde: Any) -> KStream:
        """``KStreamImpl#repartitionForJoin``: one repartition node per stream and name."""
        node = new_repartition_node(self._builder, name, key_serde or self._key_serde, value_serde or self._value_serde)
        if self._join_repartition is None or self.name != name:
            self._join_repartition = node
            self._builder.add_graph_node(self._node, node)
        return KStream(
            self._builder,
            node.node_name,
            self._join_repartition,
            frozenset({node.node_name}),
            repartition_required=False,
            serdes=self,
        )

    def _stream_table_join(
        self, table: KTable, joiner: Callable[[Any, Any], Any], joined: Joined[Any, Any], *, left_join: bool
    ) -> KStream:
        """``KStreamImpl#join/leftJoin(KTable)`` and ``doStreamTableJoin``."""
        this = self
        if self._repartition_required:
            this = self._repartition_for_join(
                joined.name if joined.name is not None else self.name, joined.key_serde, joined.value_serde
            )
        sources = this._source_nodes | table.source_nodes
        this._builder.copartition(sources)
        name = this._builder.or_else_generate(joined.name, "KSTREAM-LEFTJOIN-" if left_join else "KSTREAM-JOIN-")
        getter = table.value_getter_supplier()
        supplier = KStreamKTableJoin(getter, _joiner_with_key(joiner), left_join)
        node = StatefulProcessorNode(name, supplier, None, getter.store_names())
        this._builder.add_graph_node(this._node, node)
        return KStream(this._builder, name, node, sources, repartition_required=False)

    def _global_table_join(
        self,
        table: GlobalKTable,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        named: Named | None,
        *,
        left_join: bool,
    ) -> KStream:
        """``KStreamImpl#globalTableJoin``: Kafka names inner and left joins ``KSTREAM-LEFTJOIN-`` alike."""
        getter = table.value_getter_supplier()
        name = self._builder.or_else_generate(_name(named), "KSTREAM-LEFTJOIN-")
        # KStreamGlobalKTableJoin is KStreamKTableJoin with a key mapper.
        supplier = KStreamKTableJoin(
            getter, lambda _key, value, other: joiner(value, other), left_join, key_mapper=key_selector
        )
        node = StatefulProcessorNode(name, supplier)
        self._builder.add_graph_node(self._node, node)
        return KStream(self._builder, name, node, self._source_nodes, repartition_required=self._repartition_required)

    def _stream_stream_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        stream_joined: StreamJoined[Any, Any] | None,
        *,
        left_outer: bool,
        right_outer: bool,
    ) -> KStream:
        """``KStreamImpl#doJoin`` and ``KStreamImplJoin#join``: windowed processors, join-this/join-other, merge."""
        if not isinstance(windows, JoinWindows):
            raise TopologyError("windows can't be null")
        sj = stream_joined or StreamJoined()
        b = self._builder
        this, that = self, other
        if this._repartition_required:
            this = this._repartition_for_join(
                f"{sj.name}-left" if sj.name is not None else this.name, sj.key_serde, sj.value_serde
            )
        if that._repartition_required:
            that = that._repartition_for_join(
                f"{sj.name}-right" if sj.name is not None else that.name, sj.key_serde, sj.other_value_serde
            )
        sources = this._source_nodes | that._source_nodes
        b.copartition(sources)

        this_suffix = "-outer-this-join" if right_outer else "-this-join"
        other_suffix = "-outer-other-join" if left_outer else "-other-join"
        this_windowed = b.suffix_with_or_else_get(sj.name, "-this-windowed", "KSTREAM-WINDOWED-")
        other_windowed = b.suffix_with_or_else_get(sj.name, "-other-windowed", "KSTREAM-WINDOWED-")
        this_generated = b.new_processor_name("KSTREAM-OUTERTHIS-" if right_outer else "KSTREAM-JOINTHIS-")
        other_generated = b.new_processor_name("KSTREAM-OUTEROTHER-" if left_outer else "KSTREAM-JOINOTHER-")
        this_name = this_generated if sj.name is None else sj.name + this_suffix
        other_name = other_generated if sj.name is None else sj.name + other_suffix
        merge_name = b.suffix_with_or_else_get(sj.name, "-merge", "KSTREAM-MERGE-")

        base = sj.store_name
        this_store_name = (this_generated if base is None else base + this_suffix) + "-store"
        other_store_name = (other_generated if base is None else base + other_suffix) + "-store"
        size, grace = windows.size(), windows.grace_period_ms()
        this_store = join_window_store(
            this_store_name, sj.key_serde, sj.value_serde, size_ms=size, grace_ms=grace, logged=sj.logging_enabled
        )
        other_store = join_window_store(
            other_store_name,
            sj.key_serde,
            sj.other_value_serde,
            size_ms=size,
            grace_ms=grace,
            logged=sj.logging_enabled,
        )

        this_windowed_node = ProcessorGraphNode(this_windowed, KStreamJoinWindow(this_store_name))
        b.add_graph_node(this._node, this_windowed_node)
        other_windowed_node = ProcessorGraphNode(other_windowed, KStreamJoinWindow(other_store_name))
        b.add_graph_node(that._node, other_windowed_node)

        outer_store: object | None = None
        shared_name: str | None = None
        if left_outer:
            shared_suffix = "-outer-shared-join" if right_outer else "-left-shared-join"
            shared = ("KSTREAM-OUTERSHARED-" + this_generated[-10:]) if base is None else base + shared_suffix
            shared_name = shared + "-store"
            outer_store = _outer_join_store(shared_name, sj, this, that)
        trackers = TimeTrackerSupplier()
        with_key = _joiner_with_key(joiner)
        this_join = KStreamKStreamJoin(
            other_store_name,
            windows,
            with_key,
            left_side=True,
            outer=left_outer,
            outer_join_store_name=shared_name,
            time_trackers=trackers,
        )
        other_join = KStreamKStreamJoin(
            this_store_name,
            windows,
            with_key,
            left_side=False,
            outer=right_outer,
            outer_join_store_name=shared_name,
            time_trackers=trackers,
        )
        node = StreamStreamJoinNode(
            merge_name,
            KStreamPassThrough(),
            this_name,
            this_join,
            other_name,
            other_join,
            this_windowed,
            other_windowed,
            this_store,
            other_store,
            outer_store,
        )
        b.add_graph_node([this_windowed_node, other_windowed_node], node)
        return KStream(b, merge_name, node, sources, repartition_required=False)


def _joiner_with_key(joiner: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """A ``ValueJoiner`` as the ``ValueJoinerWithKey`` the join processors call (``toValueJoinerWithKey``)."""
    return lambda _key, value, other: joiner(value, other)


def _outer_join_store(name: str, joined: StreamJoined[Any, Any], this: KStream, that: KStream) -> object:
    """``KStreamImplJoin#sharedOuterJoinWindowStoreBuilder``: the records still waiting for a partner. Its serdes
    wrap the join's; those ``StreamJoined`` leaves unset are the joined streams' (Kafka fills them from
    ``default.*.serde`` when the store opens; the store's bytes never reach an output, so any serde that reads back
    what it wrote gives the same results). Without any, only the store's name is known (enough to describe)."""
    key_serde = joined.key_serde if joined.key_serde is not None else this.key_serde
    value_serde = joined.value_serde if joined.value_serde is not None else this.value_serde
    other_value_serde = joined.other_value_serde if joined.other_value_serde is not None else that.value_serde
    builder = Stores.key_value_store_builder(Stores.persistent_key_value_store(name), None, None)  # type: ignore[arg-type]
    if key_serde is None or value_serde is None or other_value_serde is None:
        # filled from default.key.serde/default.value.serde when the builder builds (StreamsBuilder.build)
        builder.outer_join_serdes = (key_serde, value_serde, other_value_serde)  # type: ignore[attr-defined]
    else:
        set_outer_join_serdes(builder, key_serde, value_serde, other_value_serde)
    return builder if joined.logging_enabled else builder.with_logging_disabled()


def set_outer_join_serdes(builder: Any, key_serde: Any, value_serde: Any, other_value_serde: Any) -> None:
    """The shared outer-join store's serdes, wrapping the join's key and two value serdes."""
    builder.key_serde = timestamped_key_and_join_side_serde(key_serde)
    builder.value_serde = outer_join_value_serde(value_serde, other_value_serde)


class BranchedKStream:
    """``BranchedKStream`` (``split()``): ``branch(predicate[, branched])`` … then ``default_branch`` or
    ``no_default_branch``, which return the branches by name (``<splitter><index>`` or ``<splitter><name>``)."""

    def __init__(self, source: KStream, name: str | None) -> None:
        self._source = source
        builder = source._builder
        # Kafka 4.2 draws a name for the splitter even when the split is named.
        self._splitter_name = builder.or_else_generate(name, "KSTREAM-BRANCH-")
        self._predicates: list[Callable[[Any, Any], bool]] = []
        self._child_names: list[str] = []
        self._outputs: dict[str, KStream] = {}
        predicates, child_names = self._predicates, self._child_names
        self._splitter = ProcessorGraphNode(self._splitter_name, lambda: p.KStreamBranch(predicates, child_names))
        builder.add_graph_node(source._node, self._splitter)

    def branch(
        self, predicate: Callable[[Any, Any], bool], branched: Branched[Any, Any] | None = None
    ) -> BranchedKStream:
        """``branch(predicate[, branched])``."""
        if predicate is None:
            raise TopologyError("predicate cannot be null")
        self._predicates.append(predicate)
        self._create_branch(branched or Branched(), len(self._predicates))
        return self

    def default_branch(self, branched: Branched[Any, Any] | None = None) -> Mapping[str, KStream]:
        """``defaultBranch([branched])``: records no predicate matched (index 0)."""
        self._create_branch(branched or Branched(), 0)
        return dict(self._outputs)

    def no_default_branch(self) -> Mapping[str, KStream]:
        """``noDefaultBranch()``: records no predicate matched are dropped."""
        return dict(self._outputs)

    def _create_branch(self, branched: Branched[Any, Any], index: int) -> None:
        source = self._source
        child_name = self._splitter_name + (str(index) if branched.name is None else branched.name)
        self._child_names.append(child_name)
        source._builder.new_processor_name(child_name)
        node = ProcessorGraphNode(child_name, KStreamPassThrough())
        source._builder.add_graph_node(self._splitter, node)
        branch = KStream(
            source._builder,
            child_name,
            node,
            source._source_nodes,
            repartition_required=source._repartition_required,
            serdes=source,
        )
        if branched.chain_function is not None:
            result = branched.chain_function(branch)
            if result is not None:
                self._outputs[child_name] = result
        elif branched.chain_consumer is not None:
            branched.chain_consumer(branch)
        else:
            self._outputs[child_name] = branch
