"""``streamproc.testing.TopologyTestDriver`` against Kafka's own ``TopologyTestDriver``.

The programs mirror ``conformance/src/main/java/dev/streamproc/oracle/TestDriverRunner.java``; every expected output
below is what that program printed on kafka-streams-test-utils 4.2.2 (the reasoning is in each test's docstring).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamproc import TopologyTestDriver as ExportedDriver
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record
from streamproc.engine.serdes import LongDeserializer, LongSerializer, Serde, serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import StoreSpec, Topology
from streamproc.errors import ConfigError, StreamsError, TopologyError
from streamproc.testing import TASK_ID, NoSuchRecord, TestRecord, TopologyTestDriver

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


def _strings(t: Topology, name: str, *topics: str) -> None:
    t.add_source(name, *topics, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)


def _config() -> TaskConfig:
    return TaskConfig(application_id=APP)


def test_the_driver_is_exported_from_the_package() -> None:
    assert ExportedDriver is TopologyTestDriver


def test_pass_through_and_filter_like_kafka() -> None:
    """The input topic's clock starts at 100 and advances 5 per record without a timestamp (``TestInputTopic``):
    ``a`` at 100, ``drop`` at 105 (filtered), ``c`` keeps its own 7 and its header, the null-keyed ``4`` at 110."""
    t = Topology()
    _strings(t, "src", "in")
    t.add_processor("filter", Filter, "src")
    t.add_sink("sink", "out", "filter", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    with TopologyTestDriver(t, _config()) as driver:
        source = driver.create_input_topic("in", STRING, STRING, start_timestamp_ms=100, auto_advance_ms=5)
        out = driver.create_output_topic("out", STRING, STRING)
        source.pipe_input("a", "1")
        source.pipe_input("b", "drop")
        source.pipe_record(TestRecord("c", "3", 7, (("h", b"x"),)))
        source.pipe_value("4")
        assert out.read_records_to_list() == [
            TestRecord("a", "1", 100),
            TestRecord("c", "3", 7, (("h", b"x"),)),
            TestRecord(None, "4", 110),
        ]
        assert out.is_empty()
        with pytest.raises(NoSuchRecord, match="Empty topic: out"):
            out.read_record()
        with pytest.raises(NoSuchRecord, match="Uninitialized topic: nowhere"):
            driver.create_output_topic("nowhere", STRING, STRING).read_value()


def _counter_topology() -> tuple[Topology, KeyValueStoreBuilder]:
    t = Topology()
    builder = KeyValueStoreBuilder("counts")
    _strings(t, "src", "words")
    t.add_processor("count", Counter, "src")
    t.add_state_store(builder, "count")
    t.add_sink("sink", "counts", "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, builder


def test_counter_with_stream_time_and_wall_clock_punctuation_like_kafka() -> None:
    """Plain STREAM_TIME schedules are due at 0, so the first record (t=0) fires at 0; the next due time is 10,
    reached by ``c`` at 10; the late ``a`` at 4 moves nothing; ``b`` at 25 fires once at 25. The wall-clock
    schedule registered at wall time 0 is due at 1000: 999 ms is not enough, 1 more fires it, 2500 more (now 3500)
    fires it once, with 3500."""
    t, _ = _counter_topology()
    with TopologyTestDriver(t, _config()) as driver:
        words = driver.create_input_topic("words", STRING, STRING)
        counts = driver.create_output_topic("counts", STRING, LONG)
        for key, timestamp in (("a", 0), ("b", 3), ("a", 9), ("c", 10), ("a", 4), ("b", 25)):
            words.pipe_input(key, "x", timestamp)
        driver.advance_wall_clock_time(999)
        assert [r.timestamp for r in counts.read_records_to_list()][-1] == 25
        driver.advance_wall_clock_time(1)
        driver.advance_wall_clock_time(2500)
        assert counts.read_records_to_list() == [TestRecord("wall", 3, 1000), TestRecord("wall", 3, 3500)]
        store = driver.get_state_store("counts")
        assert isinstance(store, KeyValueStore)
        assert store.data == {"a": 3, "b": 2, "c": 1}


def test_counter_outputs_in_kafkas_order() -> None:
    t, _ = _counter_topology()
    with TopologyTestDriver(t, _config()) as driver:
        words = driver.create_input_topic("words", STRING, STRING)
        for key, timestamp in (("a", 0), ("b", 3), ("a", 9), ("c", 10), ("a", 4), ("b", 25)):
            words.pipe_input(key, "x", timestamp)
        assert driver.create_output_topic("counts", STRING, LONG).read_records_to_list() == [
            TestRecord("a", 1, 0),
            TestRecord("a", 2, 10),
            TestRecord("b", 1, 10),
            TestRecord("c", 1, 10),
            TestRecord("a", 3, 25),
            TestRecord("b", 2, 25),
            TestRecord("c", 1, 25),
        ]


def _rekey_topology(*, internal: bool = False) -> tuple[Topology, KeyValueStoreBuilder]:
    """orders -> rekey -> (repartition topic) -> total(store totals) -> totals."""
    t = Topology()
    builder = KeyValueStoreBuilder("totals")
    topic = "orders-by-customer-repartition" if internal else "orders-by-customer"
    if internal:
        t.add_internal_topic(topic)
    _strings(t, "orders-src", "orders")
    t.add_processor("rekey", Rekey, "orders-src")
    t.add_sink("by-customer-sink", topic, "rekey", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    _strings(t, "by-customer-src", topic)
    t.add_processor("total", Total, "by-customer-src")
    t.add_state_store(builder, "total")
    t.add_sink("totals-sink", "totals", "total", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, builder


#: ``Topology#describe()`` of the same program in Kafka Streams 4.2.2 (``TestDriverRunner#rekey``).
KAFKA_REKEY_DESCRIBE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: orders-src (topics: [orders])\n"
    "      --> rekey\n"
    "    Processor: rekey (stores: [])\n"
    "      --> by-customer-sink\n"
    "      <-- orders-src\n"
    "    Sink: by-customer-sink (topic: orders-by-customer)\n"
    "      <-- rekey\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: by-customer-src (topics: [orders-by-customer])\n"
    "      --> total\n"
    "    Processor: total (stores: [totals])\n"
    "      --> totals-sink\n"
    "      <-- by-customer-src\n"
    "    Sink: totals-sink (topic: totals)\n"
    "      <-- total\n"
    "\n"
)


def test_repartition_through_a_topic_the_topology_reads_like_kafka() -> None:
    """Two sub-topologies (same ``describe()`` as Kafka's) run as one task 0_0: a record sent to a topic the
    topology reads is fed back at once and is also readable as output."""
    t, builder = _rekey_topology()
    assert str(t) == KAFKA_REKEY_DESCRIBE
    with TopologyTestDriver(t, _config()) as driver:
        assert driver.task_ids == (TASK_ID,)
        orders = driver.create_input_topic("orders", STRING, STRING)
        for key, value, timestamp in (("o1", "alice:10", 1), ("o2", "bob:5", 2), ("o3", "alice:7", 3)):
            orders.pipe_input(key, value, timestamp)
        assert driver.create_output_topic("orders-by-customer", STRING, STRING).read_key_values_to_list() == [
            ("alice", "10"),
            ("bob", "5"),
            ("alice", "7"),
        ]
        assert driver.create_output_topic("totals", STRING, LONG).read_records_to_list() == [
            TestRecord("alice", 10, 1),
            TestRecord("bob", 5, 2),
            TestRecord("alice", 17, 3),
        ]
        assert driver.produced_topic_names() == {"orders-by-customer", "totals"}
    assert len(builder.built) == 1


def test_internal_repartition_topics_are_prefixed_with_the_application_id() -> None:
    t, _ = _rekey_topology(internal=True)
    with TopologyTestDriver(t, _config()) as driver:
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "alice:10", 1)
        assert driver.produced_topic_names() == {f"{APP}-orders-by-customer-repartition", "totals"}
        assert driver.create_output_topic("totals", STRING, LONG).read_key_value() == ("alice", 10)


def test_records_a_step_sends_are_all_enqueued_before_the_next_is_chosen() -> None:
    """Not depth-first: ``split`` sends x and y (t=5) to ``mid``; after x@B, the ``mid`` queue (y) and the ``mid2``
    queue (x@B) tie at 5 and ``mid`` is the heap root, so y@B comes before x@B@C. Kafka 4.2.2 prints the same."""
    t = Topology()
    _strings(t, "in-src", "in")
    t.add_processor("split", Split, "in-src")
    t.add_sink("mid-sink", "mid", "split", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    _strings(t, "mid-src", "mid")
    t.add_processor("b", lambda: Tag("B"), "mid-src")
    t.add_sink("mid2-sink", "mid2", "b", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    t.add_sink("trace-b", "trace", "b", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    _strings(t, "mid2-src", "mid2")
    t.add_processor("c", lambda: Tag("C"), "mid2-src")
    t.add_sink("trace-c", "trace", "c", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    with TopologyTestDriver(t, _config()) as driver:
        source = driver.create_input_topic("in", STRING, STRING)
        source.pipe_input("k", "x,y", 5)
        source.pipe_input("k", "z", 1)
        assert driver.create_output_topic("trace", STRING, STRING).read_records_to_list() == [
            TestRecord("x", "x@B", 5),
            TestRecord("y", "y@B", 5),
            TestRecord("x", "x@B@C", 5),
            TestRecord("y", "y@B@C", 5),
            TestRecord("z", "z@B", 1),
            TestRecord("z", "z@B@C", 1),
        ]


def test_unknown_input_topic_is_refused() -> None:
    t, _ = _rekey_topology()
    with TopologyTestDriver(t, _config()) as driver, pytest.raises(TopologyError, match="Unknown topic: nope"):
        driver.create_input_topic("nope", STRING, STRING).pipe_input("k", "v", 0)


def test_a_fatal_processing_error_reaches_the_test() -> None:
    t, _ = _rekey_topology()
    with TopologyTestDriver(t, _config()) as driver, pytest.raises(StreamsError) as caught:
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "no-colon", 4)
    assert caught.value.topic == "orders"
    assert caught.value.offset == 0
    assert caught.value.task_id == "0_0"


def test_missing_serde_names_the_default_serde_config() -> None:
    t = Topology()
    t.add_source("src", "in")
    t.add_processor("filter", Filter, "src")
    with pytest.raises(ConfigError, match=r"default\.key\.serde"):
        TopologyTestDriver(t, _config())
    with TopologyTestDriver(t, _config(), default_key_serde=STRING, default_value_serde=STRING) as driver:
        driver.create_input_topic("in", STRING, STRING).pipe_input("k", "v", 0)


def test_a_store_added_as_a_spec_cannot_run() -> None:
    t = Topology()
    _strings(t, "src", "words")
    t.add_processor("count", Counter, "src")
    t.add_state_store(StoreSpec("counts"), "count")
    with pytest.raises(TopologyError, match="cannot build a store"):
        TopologyTestDriver(t, _config())


def test_with_partition_counts_each_task_gets_the_partition_murmur2_gives() -> None:
    """The real task layout: sub-topology 1 has three tasks, each with its own ``totals`` store; a re-keyed record
    lands in the task of ``murmur2(key) % 3``, so each customer's total lives in exactly one task."""
    t, builder = _rekey_topology()
    counts = {"orders": 2, "orders-by-customer": 3, "totals": 3}
    with TopologyTestDriver(t, _config(), partition_counts=counts) as driver:
        assert driver.task_ids == (TaskId(0, 0), TaskId(0, 1), TaskId(1, 0), TaskId(1, 1), TaskId(1, 2))
        orders = driver.create_input_topic("orders", STRING, STRING)
        orders.pipe_input("o1", "alice:10", 1)
        orders.pipe_input("o2", "bob:5", 2)
        orders.pipe_input("o3", "alice:7", 3)
        assert driver.create_output_topic("totals", STRING, LONG).read_key_values_to_list() == [
            ("alice", 10),
            ("bob", 5),
            ("alice", 17),
        ]
        for customer, total in (("alice", 17), ("bob", 5)):
            owner = TaskId(1, partition_for_key(customer.encode(), 3))
            store = driver.get_state_store("totals", owner)
            assert isinstance(store, KeyValueStore)
            assert store.data[customer] == total
        with pytest.raises(TopologyError, match="pass task_id"):
            driver.get_state_store("totals")
        with pytest.raises(ConfigError, match="null key"):
            orders.pipe_value("carol:1")
    assert len(builder.built) == 3


def test_a_closed_driver_refuses_input() -> None:
    t, _ = _rekey_topology()
    driver = TopologyTestDriver(t, _config())
    source = driver.create_input_topic("orders", STRING, STRING)
    driver.close()
    with pytest.raises(Exception, match="closed"):
        source.pipe_input("o1", "alice:1", 0)


def test_max_task_idle_ms_waits_for_the_wall_clock_like_kafka() -> None:
    """One task reads both topics; with ``max.task.idle.ms`` 100 a record on ``left`` waits while ``right`` is empty
    (lag 0, as ``MockConsumer#currentLag`` reports) until the wall clock passes the idling deadline."""
    t = Topology()
    _strings(t, "src", "left", "right")
    t.add_processor("filter", Filter, "src")
    t.add_sink("sink", "out", "filter", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    config = TaskConfig(application_id=APP, max_task_idle_ms=100)
    with TopologyTestDriver(t, config) as driver:
        out = driver.create_output_topic("out", STRING, STRING)
        driver.create_input_topic("left", STRING, STRING).pipe_input("k", "v", 3)
        assert out.is_empty()
        driver.advance_wall_clock_time(99)
        assert out.is_empty()
        driver.advance_wall_clock_time(1)
        assert out.read_key_values_to_list() == [("k", "v")]


class Where(Processor):
    """Forwards ``<topic>/<offset>`` of the record being processed."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        metadata = self.context.record_metadata()
        assert metadata is not None
        self.context.forward(record.with_value(f"{metadata.topic}/{metadata.offset}"))


def test_a_pattern_source_reads_every_matching_topic_with_one_offset_counter() -> None:
    """As in ``TopologyTestDriver``, the pattern text is the source's placeholder topic: every topic it fully
    matches goes to that one partition (offsets count across them), keeping its own topic name."""
    t = Topology()
    t.add_source("src", pattern="events-.*", key_deserializer=STRING, value_deserializer=STRING)
    t.add_processor("where", Where, "src")
    t.add_sink("sink", "out", "where", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    with TopologyTestDriver(t, _config()) as driver:
        driver.create_input_topic("events-eu", STRING, STRING).pipe_input("k", "v", 1)
        driver.create_input_topic("events-us", STRING, STRING).pipe_input("k", "v", 2)
        with pytest.raises(TopologyError, match="Unknown topic: other"):
            driver.create_input_topic("other", STRING, STRING).pipe_input("k", "v", 3)
        assert driver.create_output_topic("out", STRING, STRING).read_values_to_list() == [
            "events-eu/0",
            "events-us/1",
        ]
