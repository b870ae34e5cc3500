"""The processor programs of ``TestDriverRunner`` (``conformance/src/.../TestDriverRunner.java``) in streamproc.

Each class mirrors the Java processor of the same name; the topologies are built the same way on both sides so that
``tests/integration/conformance/test_reference_test_driver.py`` can compare streamproc's ``TopologyTestDriver`` with
Kafka's on the same generated inputs. ``tests/unit/test_testing.py`` uses them for the driver's own rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record
from streamproc.engine.serdes import LongDeserializer, LongSerializer, Serde, serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology import Topology

STRING: Serde[Any] = serde_for("String")
LONG: Serde[Any] = Serde(LongSerializer(), LongDeserializer())
APP = "driver-app"


class KeyValueStore:
    """A minimal in-memory key-value store: ``all()`` in key order, as Kafka's in-memory store iterates."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.data.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.data[key] = value

    def all(self) -> Iterator[tuple[Any, Any]]:
        return iter(sorted(self.data.items()))


@dataclass
class KeyValueStoreBuilder:
    """``StoreBuilder``: a new store per ``build()``; counts builds to show one store per task."""

    name: str
    logging_enabled: bool = False
    built: list[KeyValueStore] = field(default_factory=list)

    def build(self) -> KeyValueStore:
        store = KeyValueStore(self.name)
        self.built.append(store)
        return store


class Filter(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        if record.value != "drop":
            self.context.forward(record)


class Counter(Processor):
    """Counts per key; every 10 ms of stream time emits every count, every 1000 ms of wall clock the key count."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        store = context.get_state_store("counts")
        assert isinstance(store, KeyValueStore)
        self.store = store
        context.schedule(10, PunctuationType.STREAM_TIME, self.emit)
        context.schedule(
            1000,
            PunctuationType.WALL_CLOCK_TIME,
            lambda timestamp: context.forward(Record("wall", len(self.store.data), timestamp)),
        )

    def emit(self, timestamp: int) -> None:
        for key, count in self.store.all():
            self.context.forward(Record(key, count, timestamp))

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)


class Rekey(Processor):
    """``selectKey``: ``cust:amount`` becomes key ``cust``, value ``amount``."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        customer, amount = record.value.split(":")
        self.context.forward(record.with_key(customer).with_value(amount))


class Total(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        store = context.get_state_store("totals")
        assert isinstance(store, KeyValueStore)
        self.store = store

    def process(self, record: Record[Any, Any]) -> None:
        total = (self.store.get(record.key) or 0) + int(record.value)
        self.store.put(record.key, total)
        self.context.forward(record.with_value(total))


class Split(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        for item in record.value.split(","):
            self.context.forward(record.with_key(item).with_value(item))


class Tag(Processor):
    def __init__(self, tag: str) -> None:
        self.tag = tag

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_value(f"{record.value}@{self.tag}"))


def strings(t: Topology, name: str, *topics: str) -> None:
    t.add_source(name, *topics, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)


def config() -> TaskConfig:
    return TaskConfig(application_id=APP)


class Where(Processor):
    """Forwards ``<topic>/<offset>`` of the record being processed."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        metadata = self.context.record_metadata()
        assert metadata is not None
        self.context.forward(record.with_value(f"{metadata.topic}/{metadata.offset}"))


def counter_topology() -> tuple[Topology, KeyValueStoreBuilder]:
    t = Topology()
    builder = KeyValueStoreBuilder("counts")
    strings(t, "src", "words")
    t.add_processor("count", Counter, "src")
    t.add_state_store(builder, "count")
    t.add_sink("sink", "counts", "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, builder


def rekey_topology(*, internal: bool = False) -> tuple[Topology, KeyValueStoreBuilder]:
    """orders -> rekey -> (repartition topic) -> total(store totals) -> totals."""
    t = Topology()
    builder = KeyValueStoreBuilder("totals")
    topic = "orders-by-customer-repartition" if internal else "orders-by-customer"
    if internal:
        t.add_internal_topic(topic)
    strings(t, "orders-src", "orders")
    t.add_processor("rekey", Rekey, "orders-src")
    t.add_sink("by-customer-sink", topic, "rekey", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    strings(t, "by-customer-src", topic)
    t.add_processor("total", Total, "by-customer-src")
    t.add_state_store(builder, "total")
    t.add_sink("totals-sink", "totals", "total", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, builder


def filter_topology(*topics: str) -> Topology:
    """``topics`` (default ``in``) -> filter -> out."""
    t = Topology()
    strings(t, "src", *(topics or ("in",)))
    t.add_processor("filter", Filter, "src")
    t.add_sink("sink", "out", "filter", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def fanout_topology() -> Topology:
    """in -> split -> mid -> b (tag B) -> [mid2, trace]; mid2 -> c (tag C) -> trace."""
    t = Topology()
    strings(t, "in-src", "in")
    t.add_processor("split", Split, "in-src")
    t.add_sink("mid-sink", "mid", "split", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    strings(t, "mid-src", "mid")
    t.add_processor("b", lambda: Tag("B"), "mid-src")
    t.add_sink("mid2-sink", "mid2", "b", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    t.add_sink("trace-b", "trace", "b", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    strings(t, "mid2-src", "mid2")
    t.add_processor("c", lambda: Tag("C"), "mid2-src")
    t.add_sink("trace-c", "trace", "c", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def pattern_topology() -> Topology:
    """A pattern source ``events-.*`` -> where -> out."""
    t = Topology()
    t.add_source("src", pattern="events-.*", key_deserializer=STRING, value_deserializer=STRING)
    t.add_processor("where", Where, "src")
    t.add_sink("sink", "out", "where", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


class KeepAmount(Processor):
    """A global store's state-update processor that keeps the value as it is."""

    def init(self, context: ProcessorContext) -> None:
        self.store = context.get_state_store("amounts")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, record.value)  # type: ignore[attr-defined]


class AmountLookup(Processor):
    """Forwards ``<value>=<amount at key value>`` (``null`` as Java prints a missing one)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("amounts")

    def process(self, record: Record[Any, Any]) -> None:
        amount = self.store.get(record.value)  # type: ignore[attr-defined]
        self.context.forward(record.with_value(f"{record.value}={'null' if amount is None else amount}"))


def global_store_topology(persistent: bool = False) -> Topology:
    """A global store of 4-byte integers and a stream looking it up: Java's ``IntegerDeserializer`` throws on a
    value of another length (a string deserializer never throws: Java replaces malformed UTF-8). ``persistent``: a
    RocksDB store (else in memory)."""
    from streamproc.state.store_builders import Stores

    integer = serde_for("Integer")
    supplier = (Stores.persistent_key_value_store if persistent else Stores.in_memory_key_value_store)("amounts")
    t = Topology()
    t.add_global_store(
        Stores.key_value_store_builder(supplier, STRING, integer).with_logging_disabled(),
        "amounts-source",
        "amounts",
        "amounts-update",
        KeepAmount,
        key_deserializer=STRING.deserializer,
        value_deserializer=integer.deserializer,
    )
    t.add_source("orders", "orders", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("lookup", AmountLookup, "orders")
    t.add_sink("out", "out", "lookup", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def dsl_topology() -> Topology:
    """``TestDriverRunner#dsl``: the same DSL program, built with ``streamproc.dsl``."""
    from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder

    builder = StreamsBuilder()
    strings = Consumed.with_(STRING, STRING)
    stream = builder.stream("dsl-in", strings)
    mapped = stream.filter(lambda k, v: v is not None and v != "drop").map_values(lambda v: v + "!")
    mapped.to("dsl-mapped", Produced.with_(STRING, STRING))
    (
        mapped.group_by_key()
        .count(materialized=Materialized.as_("dsl-counts"))
        .to_stream()
        .to("dsl-counts-out", Produced.with_(STRING, LONG))
    )
    (
        stream.map(lambda k, v: (v, k))
        .group_by_key()
        .aggregate(
            lambda: "", lambda k, v, agg: agg + v, materialized=Materialized.as_("dsl-agg").with_value_serde(STRING)
        )
        .to_stream()
        .to("dsl-agg-out", Produced.with_(STRING, STRING))
    )
    builder.table("dsl-table", strings, Materialized.as_("dsl-table-store")).to_stream().to(
        "dsl-table-out", Produced.with_(STRING, STRING)
    )
    return builder.build({"default.key.serde": "String", "default.value.serde": "String"})


def dsl_joins_topology() -> Topology:
    """``TestDriverRunner#dslJoins``: stream-table, stream-stream and table-table joins, a windowed count and table
    operations, built with ``streamproc.dsl``."""
    from streamproc.dsl import Consumed, JoinWindows, Produced, StreamJoined, StreamsBuilder, TimeWindows

    builder = StreamsBuilder()
    strings = Consumed.with_(STRING, STRING)
    out, counts = Produced.with_(STRING, STRING), Produced.with_(STRING, LONG)
    orders = builder.stream("j-orders", strings)
    payments = builder.stream("j-payments", strings)
    customers = builder.table("j-customers", strings)
    regions = builder.table("j-regions", strings)
    orders.left_join(customers, lambda o, c: f"{_java(o)}/{_java(c)}").to("j-enriched", out)
    (
        orders.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5))
        .count()
        .to_stream()
        .map(lambda w, c: (f"{w.key}@{w.window.start}", c))
        .to("j-windowed", counts)
    )
    customers.filter(lambda k, v: v != "x").map_values(lambda v: v + "!").to_stream().to("j-customers-out", out)
    customers.group_by(lambda k, v: (v, v)).count().to_stream().to("j-by-name", counts)
    customers.join(regions, lambda c, r: f"{c}@{r}").to_stream().to("j-customer-regions", out)
    orders.left_join(
        payments,
        lambda o, p: f"{_java(o)}+{_java(p)}",
        JoinWindows.of_time_difference_and_grace(5, 2),
        StreamJoined.with_(STRING, STRING, STRING),
    ).to("j-paid", out)
    return builder.build(
        {
            "default.key.serde": "String",
            "default.value.serde": "String",
            # Kafka's TopologyTestDriver emits outer-join results without the wall-clock throttle
            "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 0,
        }
    )


def _java(value: object) -> str:
    """Java's string concatenation of a possibly null value."""
    return "null" if value is None else str(value)


def dsl_more_topology() -> Topology:
    """``TestDriverRunner#dslMore``: split/branch, flat_map, merge, repartition, a session-window count, KTable
    group_by reduce, table-table left/outer joins and a stream-stream outer join, built with ``streamproc.dsl``."""
    from streamproc.dsl import (
        Branched,
        Consumed,
        JoinWindows,
        Materialized,
        Named,
        Produced,
        SessionWindows,
        StreamJoined,
        StreamsBuilder,
    )

    builder = StreamsBuilder()
    strings = Consumed.with_(STRING, STRING)
    out, counts = Produced.with_(STRING, STRING), Produced.with_(STRING, LONG)
    events = builder.stream("m-events", strings)
    other = builder.stream("m-other", strings)
    branches = (
        events.filter(lambda k, v: v is not None)
        .split(Named.as_("m-"))
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
        .branch(lambda k, v: v.startswith("b"), Branched.as_("b"))
        .default_branch(Branched.as_("rest"))
    )
    (
        branches["m-a"]
        .flat_map(lambda k, v: [(k, v + "1"), (v, "-" if k is None else k)])
        .merge(branches["m-b"])
        .repartition()
        .to("m-merged", out)
    )
    (
        branches["m-rest"]
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 3))
        .count()
        .to_stream()
        .map(lambda w, c: (f"{w.key}@{w.window.start}-{w.window.end}", c))
        .to("m-sessions", counts)
    )
    left = builder.table("m-left", strings)
    right = builder.table("m-right", strings)
    left.group_by(lambda k, v: (v, k)).reduce(lambda a, b: a + b, lambda a, b: a.replace(b, "")).to_stream().to(
        "m-reduced", out
    )
    left.left_join(right, lambda lv, rv: f"{lv}<{_java(rv)}").to_stream().to("m-left-join", out)
    left.outer_join(right, lambda lv, rv: f"{_java(lv)}>{_java(rv)}", Materialized.as_("m-outer")).to_stream().to(
        "m-outer-join", out
    )
    events.outer_join(
        other,
        lambda lv, rv: f"{_java(lv)}|{_java(rv)}",
        JoinWindows.of_time_difference_and_grace(4, 1),
        StreamJoined.with_(STRING, STRING, STRING),
    ).to("m-stream-outer", out)
    return builder.build(
        {
            "default.key.serde": "String",
            "default.value.serde": "String",
            "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__": 0,
        }
    )


def dsl_windows_topology() -> Topology:
    """``TestDriverRunner#dslWindows``: sliding windows, suppress until the window closes and until a time limit."""
    from streamproc.dsl import BufferConfig, Consumed, Produced, SlidingWindows, StreamsBuilder, Suppressed, TimeWindows

    builder = StreamsBuilder()
    counts = Produced.with_(STRING, LONG)
    grouped = builder.stream("w-in", Consumed.with_(STRING, STRING)).group_by_key()
    (
        grouped.windowed_by(SlidingWindows.of_time_difference_and_grace(10, 3))
        .count()
        .to_stream()
        .map(lambda w, c: (f"{w.key}@{w.window.start}-{w.window.end}", c))
        .to("w-sliding", counts)
    )
    (
        grouped.windowed_by(TimeWindows.of_size_and_grace(10, 2))
        .count()
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .map(lambda w, c: (f"{w.key}@{w.window.start}", c))
        .to("w-final", counts)
    )
    grouped.count().suppress(Suppressed.until_time_limit(5, BufferConfig.unbounded())).to_stream().to(
        "w-limited", counts
    )
    return builder.build({"default.key.serde": "String", "default.value.serde": "String"})
