"""The Python twins of the Java DSL programs (``conformance/src/main/java/dev/streamproc/oracle/DslPrograms.java``
and the DSL programs of ``GoldenTopologies.java``): the same calls in the same order, so that ``describe()`` must be
byte for byte the text Kafka Streams 4.2.2 wrote into ``conformance/dsl/<name>.txt`` (``conformance/golden/`` for the
golden ones). Reading one next to its Java twin is the porting guide's worked example (docs/porting.md).

String serdes throughout; a name ending in ``-optimized`` is built with ``topology.optimization=all``.
"""

from __future__ import annotations

from collections.abc import Callable

from streamproc.dsl import (
    Branched,
    BufferConfig,
    Consumed,
    Grouped,
    Joined,
    JoinWindows,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.records import Record
from streamproc.engine.serdes import SERDES
from streamproc.engine.topology import Topology
from streamproc.state.store_builders import Stores

STRING = SERDES["String"]
LONG = SERDES["Long"]


def strings() -> Consumed[str, str]:
    return Consumed.with_(STRING(), STRING())


def _build(builder: StreamsBuilder, optimized: bool = False) -> Topology:
    """``builder.build(props)`` with what the Java twins get from their ``StreamsConfig`` when they run: String
    default serdes (Kafka resolves unset store and repartition serdes when the application starts; streamproc at
    build time) and the test driver's outer-join emit interval."""
    return builder.build(
        {
            "topology.optimization": "all" if optimized else "none",
            "default.key.serde": "String",
            "default.value.serde": "String",
            # Kafka's TopologyTestDriver, which runs the Java twins, sets the outer-join emit throttle to 0
            "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 0,
        }
    )


def concat(left: str | None, right: str | None) -> str:
    """Java's ``left + right`` on two Strings, as the Java twins' joiners and reducers write it: null reads "null"
    (a left or outer join's missing side)."""
    return f"{'null' if left is None else left}{'null' if right is None else right}"


SECOND = 1000
MINUTE = 60 * SECOND

# ---------------------------------------------------------------------------------------------- golden programs


def count() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("words", strings())
        .group_by_key()
        .count(materialized=Materialized.as_("counts"))
        .to_stream()
        .to("word-counts", Produced.with_(STRING(), LONG()))
    )
    return _build(b)


def windowed_count(windows: TimeWindows) -> Topology:
    b = StreamsBuilder()
    (
        b.stream("clicks", strings())
        .group_by_key()
        .windowed_by(windows)
        .count()
        .to_stream()
        .map(lambda windowed, n: (windowed.key, n))
        .to("click-counts", Produced.with_(STRING(), LONG()))
    )
    return _build(b)


def repartition_aggregate() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("orders", strings())
        .select_key(lambda k, v: v)
        .group_by_key(Grouped.with_(STRING(), STRING()))
        .aggregate(lambda: 0, lambda k, v, total: total + len(v), materialized=Materialized.with_(STRING(), LONG()))
        .to_stream()
        .to("order-totals", Produced.with_(STRING(), LONG()))
    )
    return _build(b)


def stream_table_join() -> Topology:
    b = StreamsBuilder()
    customers = b.table("customers", strings())
    b.stream("orders", strings()).join(customers, lambda order, customer: f"{order}/{customer}").to(
        "enriched-orders", Produced.with_(STRING(), STRING())
    )
    return _build(b)


def stream_stream_join() -> Topology:
    b = StreamsBuilder()
    left = b.stream("impressions", strings())
    right = b.stream("clicks", strings())
    left.join(
        right,
        lambda impression, click: f"{impression}/{click}",
        JoinWindows.of_time_difference_and_grace(5 * MINUTE, 1 * MINUTE),
        StreamJoined.with_(STRING(), STRING(), STRING()),
    ).to("impression-clicks", Produced.with_(STRING(), STRING()))
    return _build(b)


GOLDEN: dict[str, Callable[[], Topology]] = {
    "count": count,
    "windowed-count-tumbling": lambda: windowed_count(TimeWindows.of_size_and_grace(10 * SECOND, 5 * SECOND)),
    "windowed-count-hopping": lambda: windowed_count(
        TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND).advance_by(5 * SECOND)
    ),
    "repartition-aggregate": repartition_aggregate,
    "stream-table-join": stream_table_join,
    "stream-stream-join": stream_stream_join,
}

# ------------------------------------------------------------------------------------------------ DslPrograms


def stateless_chain() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v == "")
        .map_values(lambda v: v.upper())
        .map(lambda k, v: (v, k))
        .flat_map_values(lambda v: [v, v])
        .flat_map(lambda k, v: [(k, v)])
        .select_key(lambda k, v: v)
        .map_values(lambda k, v: k + v, with_key=True)
        .to("out")
    )
    return _build(b)


def stateless_named() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", Consumed.with_(STRING(), STRING()).with_name("orders-in"))
        .filter(lambda k, v: v is not None, Named.as_("non-null"))
        .map_values(lambda v: v.upper(), Named.as_("upper"))
        .select_key(lambda k, v: v, Named.as_("by-value"))
        .peek(lambda k, v: None, Named.as_("look"))
        .to("out", Produced.as_("orders-out"))
    )
    return _build(b)


def foreach_peek() -> Topology:
    b = StreamsBuilder()
    s = b.stream("in", strings())
    s.peek(lambda k, v: None).to("out")
    s.foreach(lambda k, v: None)
    return _build(b)


def merge() -> Topology:
    b = StreamsBuilder()
    a = b.stream("a", strings())
    c = b.stream("c", strings())
    a.merge(c).map_values(lambda v: v).merge(b.stream("d", strings()), Named.as_("all")).to("out")
    return _build(b)


def split_branch() -> Topology:
    b = StreamsBuilder()
    branches = (
        b.stream("in", strings())
        .split()
        .branch(lambda k, v: v.startswith("a"))
        .branch(lambda k, v: v.startswith("b"), Branched.with_consumer(lambda ks: ks.to("bees")))
        .default_branch()
    )
    for name in sorted(branches):  # Java iterates its HashMap: ...10 (default) before ...11
        branches[name].to("rest")
    return _build(b)


def split_named() -> Topology:
    b = StreamsBuilder()
    branches = (
        b.stream("in", strings())
        .split(Named.as_("route-"))
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
        .branch(lambda k, v: v.startswith("b"), Branched.with_function(lambda ks: ks.map_values(lambda v: v), "b"))
        .no_default_branch()
    )
    branches["route-a"].to("as")
    branches["route-b"].to("bs")
    return _build(b)


def repartition() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .repartition()
        .repartition(Repartitioned.as_("spread").with_number_of_partitions(3))
        .to("out")
    )
    return _build(b)


class _Forward(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[object, object]) -> None:
        self.context.forward(record)


def process_values() -> Topology:
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("seen"), STRING(), STRING()))
    b.stream("in", strings()).process(_Forward, "seen").process_values(_Forward, named=Named.as_("values")).to("out")
    return _build(b)


def group_by_count() -> Topology:
    b = StreamsBuilder()
    b.stream("words", strings()).group_by(lambda k, v: v).count().to_stream().to("counts")
    return _build(b)


def group_by_key_reduce_named() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .reduce(lambda a, c: a + c, Named.as_("concat"), Materialized.as_("concatenated"))
        .to_stream(Named.as_("changes"))
        .to("out")
    )
    return _build(b)


def grouped_aggregate() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by(lambda k, v: v, Grouped.as_("by-value"))
        .aggregate(lambda: "", lambda k, v, agg: agg + v, materialized=Materialized.with_(STRING(), STRING()))
        .to_stream()
        .to("out")
    )
    return _build(b)


def bytes_count() -> Topology:
    """Bytes keys and values, a ``Long`` count: the shape ``spark/columnar/count.py`` runs over columns."""
    b = StreamsBuilder()
    bytes_serde = SERDES["Bytes"]
    (
        b.stream("in", Consumed.with_(bytes_serde(), bytes_serde()))
        .group_by_key()
        .count(materialized=Materialized.as_("counts").with_key_serde(bytes_serde()).with_value_serde(LONG()))
        .to_stream()
        .to("counts", Produced.with_(bytes_serde(), LONG()))
    )
    return _build(b)


def bytes_window_sum() -> Topology:
    """The bench's window workload made small (``bench/workloads.py``'s ``dsl_window``), the shape
    ``spark/columnar/window.py`` runs over columns: re-key by the value's first byte through the named repartition
    topic ``rekeyed``, then the total value length per key in 10 s tumbling windows with 5 min grace (longer than a
    hand-off test's data spans, shorter than the oracle's latest records: those are dropped), Bytes keys and a
    ``Long`` sum. Java's ``toStream(mapper)`` is ``toStream().selectKey(mapper)``."""
    b = StreamsBuilder()
    bytes_serde = SERDES["Bytes"]
    (
        b.stream("in", Consumed.with_(bytes_serde(), bytes_serde()))
        .select_key(lambda k, v: v[:1])
        .repartition(Repartitioned.with_(bytes_serde(), bytes_serde()).with_name("rekeyed"))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 5 * MINUTE))
        .aggregate(
            lambda: 0,
            lambda k, v, total: total + len(v),
            materialized=Materialized.as_("sums").with_key_serde(bytes_serde()).with_value_serde(LONG()),
        )
        .to_stream()
        .select_key(lambda windowed, total: windowed.key)
        .to("sums", Produced.with_(bytes_serde(), LONG()))
    )
    return _build(b)


def bytes_window_count() -> Topology:
    """The windowed ``count()`` that ``spark/columnar/window.py`` folds over columns (its count fold): Bytes keys
    and values, no re-key, 10 s windows hopping by 5 s (each record falls in two) with 20 s grace: of the
    oracle's late records, some are dropped from both windows and some (on two of three seeds) from the earlier one
    only, counted in the later; a ``Long`` count. Java's ``toStream(mapper)`` is ``toStream().select_key(mapper)``."""
    b = StreamsBuilder()
    bytes_serde = SERDES["Bytes"]
    (
        b.stream("in", Consumed.with_(bytes_serde(), bytes_serde()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 20 * SECOND).advance_by(5 * SECOND))
        .count(materialized=Materialized.as_("counts").with_key_serde(bytes_serde()).with_value_serde(LONG()))
        .to_stream()
        .select_key(lambda windowed, count: windowed.key)
        .to("counts", Produced.with_(bytes_serde(), LONG()))
    )
    return _build(b)


def two_aggregates(optimized: bool) -> Topology:
    b = StreamsBuilder()
    grouped = b.stream("in", strings()).select_key(lambda k, v: v).group_by_key()
    grouped.count().to_stream().to("counts")
    grouped.reduce(lambda a, c: a + c).to_stream().to("reduced")
    return _build(b, optimized)


def windowed_aggregate() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(MINUTE))
        .aggregate(lambda: "", lambda k, v, agg: agg + v, materialized=Materialized.as_("per-minute"))
        .to_stream()
        .select_key(lambda w, v: w.key)
        .to("out")
    )
    return _build(b)


def sliding_count() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .windowed_by(SlidingWindows.of_time_difference_and_grace(30 * SECOND, 5 * SECOND))
        .count()
        .to_stream()
        .select_key(lambda w, v: w.key)
        .to("out")
    )
    return _build(b)


def session_aggregate() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5 * MINUTE, 10 * SECOND))
        .aggregate(lambda: "", lambda k, v, agg: agg + v, lambda k, a1, a2: a1 + a2)
        .to_stream()
        .select_key(lambda w, v: w.key)
        .to("out")
    )
    return _build(b)


def filtered_windowed_aggregate() -> Topology:
    """A windowed aggregate behind filters and a value mapper: they decide which records reach it, so its stream
    time (issue #29 runs the prefix in every key shard, ``spark/stream_time_prefix.py``)."""
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .filter(lambda k, v: not v.startswith("b"))
        .map_values(lambda v: v + "!")
        .filter_not(lambda k, v: v.startswith("c"))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND))
        .aggregate(lambda: "", lambda k, v, agg: agg + v, materialized=Materialized.as_("filtered-per-10s"))
        .to_stream()
        .select_key(lambda w, v: w.key)
        .to("out")
    )
    return _build(b)


def branched_windowed_count() -> Topology:
    """A windowed count behind a peek, a flatMapValues, a split and a merge: which records reach it (a b value's
    none; a c value of odd length none) decides its stream time. The split's default branch goes to a sink."""
    b = StreamsBuilder()
    branches = (
        b.stream("in", strings())
        .peek(lambda k, v: None)
        .flat_map_values(lambda v: [] if v.startswith("b") else [v, v + "!"])
        .split(Named.as_("pick-"))
        .branch(lambda k, v: v.startswith("a") and v.endswith("!"), Branched.as_("a"))
        .branch(lambda k, v: v.startswith("c"), Branched.as_("c"))
        .default_branch(Branched.as_("rest"))
    )
    branches["pick-rest"].to("rest")
    (
        branches["pick-a"]
        .merge(branches["pick-c"].filter(lambda k, v: not v.endswith("!") and len(v) % 2 == 0))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND))
        .count(materialized=Materialized.as_("branched-per-10s"))
        .to_stream()
        .map(lambda w, n: (w.key, n))
        .to("out", Produced.with_(STRING(), LONG()))
    )
    return _build(b)


def filtered_session_count() -> Topology:
    """A session count behind a filter: which records reach it decides its stream time and which sessions merge."""
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .filter(lambda k, v: v.startswith("a"))
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(MINUTE, 10 * SECOND))
        .count()
        .to_stream()
        .map(lambda w, n: (w.key, n))
        .to("out", Produced.with_(STRING(), LONG()))
    )
    return _build(b)


def suppress_window_close() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND))
        .count()
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .select_key(lambda w, v: w.key)
        .to("out")
    )
    return _build(b)


def suppress_time_limit() -> Topology:
    b = StreamsBuilder()
    (
        b.stream("in", strings())
        .group_by_key()
        .count(materialized=Materialized.as_("counts"))
        .suppress(Suppressed.until_time_limit(5 * SECOND, BufferConfig.max_records_(100)).with_name("hold"))
        .to_stream()
        .to("out")
    )
    return _build(b)


def table_ops() -> Topology:
    b = StreamsBuilder()
    (
        b.table("in", strings(), Materialized.as_("source-table"))
        .filter(lambda k, v: v is not None)
        .filter_not(lambda k, v: v == "", Named.as_("non-empty"))
        .map_values(lambda v: v.upper(), materialized=Materialized.as_("upper"))
        .to_stream()
        .to("out")
    )
    return _build(b)


def table_group_by() -> Topology:
    b = StreamsBuilder()
    t = b.table("in", strings())
    t.group_by(lambda k, v: (v, v)).count().to_stream().to("counts")
    (
        t.group_by(lambda k, v: (v, v), Grouped.as_("regroup"))
        .reduce(lambda a, c: a + c, lambda a, o: a, materialized=Materialized.as_("reduced"))
        .to_stream()
        .to("reduced-out")
    )
    t.group_by(lambda k, v: (k, v)).aggregate(
        lambda: "", lambda k, v, agg: agg + v, lambda k, v, agg: agg
    ).to_stream().to("aggregated")
    return _build(b)


def table_table_joins() -> Topology:
    b = StreamsBuilder()
    left = b.table("left", strings())
    right = b.table("right", strings())
    left.join(right, concat).to_stream().to("inner")
    left.left_join(right, concat, Named.as_("lj")).to_stream().to("left-out")
    left.outer_join(right, concat, Materialized.as_("outer")).to_stream().to("outer-out")
    return _build(b)


def stream_table_left_join_named() -> Topology:
    b = StreamsBuilder()
    customers = b.table("customers", strings(), Materialized.as_("customer-store"))
    b.stream("orders", strings()).left_join(customers, concat, Joined.as_("enrich")).to("out")
    return _build(b)


def stream_global_table_join() -> Topology:
    b = StreamsBuilder()
    products = b.global_table("products", strings())
    prices = b.global_table("prices", strings(), Materialized.as_("price-store"))
    (
        b.stream("orders", strings())
        .join(products, lambda k, v: v, concat)
        .left_join(prices, lambda k, v: k, concat, Named.as_("priced"))
        .to("out")
    )
    return _build(b)


def stream_stream_outer_join_named() -> Topology:
    b = StreamsBuilder()
    left = b.stream("left", strings())
    right = b.stream("right", strings())
    left.outer_join(
        right,
        concat,
        JoinWindows.of_time_difference_and_grace(10 * SECOND, 1 * SECOND),
        StreamJoined.with_(STRING(), STRING(), STRING()).with_name("pair").with_store_name("pairs"),
    ).to("out")
    return _build(b)


def stream_stream_inner_join_named() -> Topology:
    b = StreamsBuilder()
    left = b.stream("left", strings())
    right = b.stream("right", strings())
    left.join(
        right,
        concat,
        JoinWindows.of_time_difference_and_grace(10 * SECOND, 1 * SECOND),
        StreamJoined.with_(STRING(), STRING(), STRING()).with_name("match").with_store_name("matches"),
    ).to("out")
    return _build(b)


def stream_stream_self_join() -> Topology:
    """One topic joined with itself: both window stores read the one source (a task of one input partition)."""
    b = StreamsBuilder()
    stream = b.stream("in", strings())
    stream.join(
        stream,
        concat,
        JoinWindows.of_time_difference_and_grace(5 * SECOND, 1 * SECOND),
        StreamJoined.with_(STRING(), STRING(), STRING()),
    ).to("out")
    return _build(b)


def stream_stream_left_join() -> Topology:
    b = StreamsBuilder()
    left = b.stream("left", strings())
    right = b.stream("right", strings())
    left.left_join(
        right,
        concat,
        JoinWindows.of_time_difference_with_no_grace(10 * SECOND),
    ).to("out")
    return _build(b)


def table_source(optimized: bool) -> Topology:
    b = StreamsBuilder()
    b.table("in", strings(), Materialized.as_("in-store")).to_stream().to("out")
    return _build(b, optimized)


def rekey_join(optimized: bool) -> Topology:
    b = StreamsBuilder()
    users = b.table("users", strings())
    clicks = b.stream("clicks", strings()).select_key(lambda k, v: v)
    clicks.join(users, concat).to("enriched")
    clicks.group_by_key().count().to_stream().to("click-counts")
    return _build(b, optimized)


PROGRAMS: dict[str, Callable[[], Topology]] = {
    "stateless-chain": stateless_chain,
    "stateless-named": stateless_named,
    "foreach-peek": foreach_peek,
    "merge": merge,
    "split-branch": split_branch,
    "split-named": split_named,
    "repartition": repartition,
    "process-values": process_values,
    "group-by-count": group_by_count,
    "group-by-key-reduce-named": group_by_key_reduce_named,
    "grouped-aggregate": grouped_aggregate,
    "two-aggregates-one-repartition": lambda: two_aggregates(False),
    "two-aggregates-one-repartition-optimized": lambda: two_aggregates(True),
    "windowed-aggregate-materialized": windowed_aggregate,
    "sliding-count": sliding_count,
    "session-aggregate": session_aggregate,
    "filtered-windowed-aggregate": filtered_windowed_aggregate,
    "filtered-session-count": filtered_session_count,
    "branched-windowed-count": branched_windowed_count,
    "suppress-window-close": suppress_window_close,
    "suppress-time-limit": suppress_time_limit,
    "table-ops": table_ops,
    "table-group-by": table_group_by,
    "table-table-joins": table_table_joins,
    "stream-table-left-join-named": stream_table_left_join_named,
    "stream-global-table-join": stream_global_table_join,
    "stream-stream-outer-join-named": stream_stream_outer_join_named,
    "stream-stream-left-join": stream_stream_left_join,
    "stream-stream-inner-join-named": stream_stream_inner_join_named,
    "stream-stream-self-join": stream_stream_self_join,
    "table-source-optimized": lambda: table_source(True),
    "table-source": lambda: table_source(False),
    "rekey-join-optimized": lambda: rekey_join(True),
    "rekey-join": lambda: rekey_join(False),
}


# --------------------------------------------------------------------------------------------- refused programs


def _duplicate_processor_name() -> Topology:
    b = StreamsBuilder()
    b.stream("in", strings()).filter(lambda k, v: True, Named.as_("same")).map_values(lambda v: v, Named.as_("same"))
    return _build(b)


def _duplicate_store_name() -> Topology:
    b = StreamsBuilder()
    b.stream("a", strings()).group_by_key().count(materialized=Materialized.as_("counts"))
    b.stream("b", strings()).group_by_key().count(materialized=Materialized.as_("counts"))
    return _build(b)


def _unknown_store() -> Topology:
    b = StreamsBuilder()
    b.stream("in", strings()).process(_Forward, "missing")
    return _build(b)


def _illegal_name() -> Topology:
    b = StreamsBuilder()
    b.stream("in", strings()).filter(lambda k, v: True, Named.as_("not legal!"))
    return _build(b)


def _empty_name() -> Topology:
    b = StreamsBuilder()
    b.stream("in", strings()).filter(lambda k, v: True, Named.as_(""))
    return _build(b)


def _topic_twice() -> Topology:
    b = StreamsBuilder()
    b.stream("in", strings()).to("out")
    b.table("in", strings())
    return _build(b)


#: Programs Kafka Streams refuses at build time; ``conformance/dsl/<name>.error.txt`` holds its message.
ERRORS: dict[str, Callable[[], Topology]] = {
    "error-duplicate-processor-name": _duplicate_processor_name,
    "error-duplicate-store-name": _duplicate_store_name,
    "error-unknown-store": _unknown_store,
    "error-illegal-name": _illegal_name,
    "error-empty-name": _empty_name,
    "error-topic-twice": _topic_twice,
}


def merge_rekey(optimized: bool) -> Topology:
    b = StreamsBuilder()
    a = b.stream("a", strings()).select_key(lambda k, v: v)
    c = b.stream("c", strings()).select_key(lambda k, v: v)
    merged = a.merge(c)
    merged.group_by_key().count().to_stream().to("counts")
    merged.group_by_key().reduce(concat).to_stream().to("reduced")
    return _build(b, optimized)


def stream_join_rekey(optimized: bool) -> Topology:
    b = StreamsBuilder()
    left = b.stream("left", strings()).map(lambda k, v: (v, k))
    right = b.stream("right", strings())
    left.join(right, concat, JoinWindows.of_time_difference_with_no_grace(5 * SECOND)).to("joined")
    left.group_by_key().count().to_stream().to("left-counts")
    return _build(b, optimized)


def grouped_named_optimized() -> Topology:
    b = StreamsBuilder()
    rekeyed = b.stream("in", strings()).select_key(lambda k, v: v)
    rekeyed.group_by_key(Grouped.as_("first")).count().to_stream().to("counts")
    rekeyed.group_by_key(Grouped.as_("second")).reduce(concat).to_stream().to("reduced")
    return _build(b, True)


PROGRAMS.update(
    {
        "merge-rekey-optimized": lambda: merge_rekey(True),
        "merge-rekey": lambda: merge_rekey(False),
        "stream-join-rekey-optimized": lambda: stream_join_rekey(True),
        "grouped-named-optimized": grouped_named_optimized,
    }
)


def named_sources_and_joins() -> Topology:
    b = StreamsBuilder()
    t = b.table("t", strings().with_name("t-src"), Materialized.as_("t-store"))
    g = b.global_table("g", strings().with_name("g-src"))
    s = b.stream("s", strings().with_name("s-src"))
    (
        s.join(t, concat, Joined.as_("st"))
        .join(g, lambda k, v: k, concat, Named.as_("sg"))
        .to("out", Produced.as_("out-sink"))
    )
    s2 = b.stream("s2", strings())
    s.join(
        s2,
        concat,
        JoinWindows.of_time_difference_with_no_grace(1 * SECOND),
        StreamJoined.with_(STRING(), STRING(), STRING()).with_name("ss"),
    ).to("out2")
    return _build(b)


def named_rekey_joins() -> Topology:
    b = StreamsBuilder()
    t = b.table("t", strings())
    rekeyed = b.stream("s", strings()).select_key(lambda k, v: v)
    rekeyed.join(t, concat, Joined.as_("rk")).to("out")
    other = b.stream("o", strings()).map(lambda k, v: (v, k))
    rekeyed.left_join(
        other,
        concat,
        JoinWindows.of_time_difference_with_no_grace(1 * SECOND),
        StreamJoined.with_(STRING(), STRING(), STRING()).with_name("pair").with_store_name("pair-store"),
    ).to("out2")
    return _build(b)


PROGRAMS.update({"named-sources-and-joins": named_sources_and_joins, "named-rekey-joins": named_rekey_joins})
PROGRAMS["bytes-count"] = bytes_count
PROGRAMS["bytes-window-sum"] = bytes_window_sum
PROGRAMS["bytes-window-count"] = bytes_window_count
