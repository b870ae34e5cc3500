"""Global stores: the test driver's synchronous update path and the bootstrap (raw load vs reprocessing).

What Kafka's driver outputs for the DSL's global-table programs is checked against Kafka itself in
``tests/integration/conformance/test_dsl_programs_run.py``; here are streamproc's own rules around them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streamproc.dsl import Consumed, StreamsBuilder
from streamproc.engine.global_state_task import GLOBAL_TASK_ID, GlobalStateUpdateTask
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.records import ConsumerRecord, RawRecord, Record
from streamproc.engine.serdes import serde_for
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_global_stores
from streamproc.errors import StateError
from streamproc.state.store_builders import Stores
from streamproc.state.stores import KeyValueStore, TimestampedKeyValueStore
from streamproc.testing import TopologyTestDriver
from tests.driver_programs import STRING, config, global_store_topology


class Upper(Processor):
    """A global store's state-update processor: keeps the upper-cased value (so that reprocessing shows)."""

    def init(self, context: ProcessorContext) -> None:
        self.store = context.get_state_store("names")

    def process(self, record: Record[Any, Any]) -> None:
        assert isinstance(self.store, KeyValueStore)
        self.store.put(record.key, None if record.value is None else record.value.upper())


class Lookup(Processor):
    """A stream processor reading the global store: forwards ``value=<name>``."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store("names")

    def process(self, record: Record[Any, Any]) -> None:
        assert isinstance(self.store, KeyValueStore)
        self.context.forward(record.with_value(f"{record.value}={self.store.get(record.value)}"))


def processor_api_topology(*, reprocess: bool) -> Topology:
    t = Topology()
    t.add_global_store(
        Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("names"), STRING, STRING
        ).with_logging_disabled(),
        "names-source",
        "names",
        "names-update",
        Upper,
        key_deserializer=STRING.deserializer,
        value_deserializer=STRING.deserializer,
        reprocess_on_restore=reprocess,
    )
    t.add_source("orders", "orders", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("lookup", Lookup, "orders")
    t.add_sink("out", "out", "lookup", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def raw(topic: str, offset: int, key: str | None, value: str | None, timestamp: int = 5) -> RawRecord:
    return ConsumerRecord.raw(
        topic, 0, offset, timestamp, None if key is None else key.encode(), None if value is None else value.encode()
    )


def test_a_record_piped_to_a_global_topic_updates_the_store_every_task_reads() -> None:
    with TopologyTestDriver(processor_api_topology(reprocess=True), config()) as driver:
        names = driver.create_input_topic("names", STRING, STRING)
        orders = driver.create_input_topic("orders", STRING, STRING)
        out = driver.create_output_topic("out", STRING, STRING)
        orders.pipe_input("o1", "n1", 1)
        names.pipe_input("n1", "alice", 2)
        orders.pipe_input("o2", "n1", 3)
        names.pipe_input("n1", None, 4)
        orders.pipe_input("o3", "n1", 5)
        assert out.read_key_values_to_list() == [("o1", "n1=None"), ("o2", "n1=ALICE"), ("o3", "n1=None")]
        store = driver.get_state_store("names")
        assert isinstance(store, KeyValueStore) and store.get("n1") is None
        assert "names" in driver.get_all_state_stores()


def test_a_sink_writing_to_a_global_topic_feeds_the_global_store() -> None:
    t = processor_api_topology(reprocess=True)
    t.add_source("raw-names", "raw-names", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_sink("to-names", "names", "raw-names", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    with TopologyTestDriver(t, config()) as driver:
        driver.create_input_topic("raw-names", STRING, STRING).pipe_input("n2", "bob", 1)
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "n2", 2)
        assert driver.create_output_topic("out", STRING, STRING).read_value() == "n2=BOB"


def test_bootstrap_reprocesses_through_the_processor_when_asked_and_loads_raw_records_otherwise() -> None:
    records = [raw("names", 0, "n1", "alice"), raw("names", 1, None, "nobody"), raw("names", 2, "n2", "bob")]
    for reprocess, expected in ((True, "ALICE"), (False, "alice")):
        topology = processor_api_topology(reprocess=reprocess)
        stores = build_global_stores(topology)
        task = GlobalStateUpdateTask(topology, stores, application_id="app")
        assert task.restore("names", records) == 2  # the null key is skipped either way
        task.initialize()
        store = stores["names"]
        assert isinstance(store, KeyValueStore)
        assert (store.get("n1"), str(store.get("n2")).lower()) == (expected, "bob")


def test_a_global_table_bootstraps_with_each_records_timestamp_and_tombstones() -> None:
    b = StreamsBuilder()
    b.global_table("products", Consumed.with_(STRING, STRING))
    topology = b.build()
    stores = build_global_stores(topology)
    (name,) = stores
    task = GlobalStateUpdateTask(topology, stores, application_id="app")
    task.restore(
        name, [raw("products", 0, "p1", "x", 10), raw("products", 1, "p2", "y", 11), raw("products", 2, "p1", None)]
    )
    store = stores[name]
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("p1") is None
    got = store.get("p2")
    assert got is not None and (got.value, got.timestamp) == ("y", 11)


def test_a_global_processor_cannot_schedule_and_has_no_stream_time() -> None:
    topology = processor_api_topology(reprocess=True)
    task = GlobalStateUpdateTask(topology, build_global_stores(topology), application_id="app")
    assert task.context.task_id == GLOBAL_TASK_ID
    with pytest.raises(StateError, match="no concept of stream-time"):
        task.context.current_stream_time_ms()
    with pytest.raises(StateError, match="not a global store"):
        task.restore("orders", [])


def test_add_global_store_reprocesses_by_default_and_a_global_table_does_not() -> None:
    """Kafka 4.2: the public ``Topology#addGlobalStore`` passes ``reprocessOnRestore=true``, ``globalTable`` false."""
    t = Topology()
    t.add_global_store(
        Stores.key_value_store_builder(
            Stores.in_memory_key_value_store("names"), STRING, STRING
        ).with_logging_disabled(),
        "names-source",
        "names",
        "names-update",
        Upper,
    )
    assert t.reprocess_on_restore("names")
    b = StreamsBuilder()
    b.global_table("products", Consumed.with_(STRING, STRING))
    topology = b.build()
    (name,) = build_global_stores(topology)
    assert not topology.reprocess_on_restore(name)


def amount(topic: str, offset: int, key: str, value: bytes) -> RawRecord:
    return ConsumerRecord.raw(topic, 0, offset, 5, key.encode(), value)


def _handler_config(handler: Any) -> Any:
    from streamproc.engine.stream_task import TaskConfig

    return TaskConfig(application_id=config().application_id, deserialization_exception_handler=handler)


def test_an_undecodable_global_record_goes_to_the_deserialization_handler_in_both_paths() -> None:
    """Kafka 4.2: ``GlobalStateUpdateTask`` deserializes through a ``RecordDeserializer`` and ``reprocessState``
    calls ``RecordDeserializer.handleDeserializationFailure``: CONTINUE skips the record and counts it under the
    global task; the records around it still reach the store."""
    from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler

    four = (7).to_bytes(4, "big")
    topology = global_store_topology()
    stores = build_global_stores(topology)
    task = GlobalStateUpdateTask(
        topology, stores, application_id="app", deserialization_exception_handler=LogAndContinueExceptionHandler()
    )
    bootstrap = [amount("amounts", 0, "a1", four), amount("amounts", 1, "a2", b"abc"), amount("amounts", 2, "a3", four)]
    assert task.restore("amounts", bootstrap) == 2
    task.initialize()
    task.update(amount("amounts", 3, "a4", b"\xff"))
    task.update(amount("amounts", 4, "a5", four))
    store = stores["amounts"]
    assert isinstance(store, KeyValueStore)
    assert [store.get(k) for k in ("a1", "a2", "a3", "a4", "a5")] == [7, None, 7, None, 7]
    assert [(e.offset, e.reason) for e in task.dropped.events] == [(1, "deserialization"), (3, "deserialization")]


def test_an_undecodable_global_record_stops_the_run_with_kafkas_message_by_default() -> None:
    from streamproc.errors import StreamsError

    topology = global_store_topology()
    task = GlobalStateUpdateTask(topology, build_global_stores(topology), application_id="app")
    task.initialize()
    with pytest.raises(StreamsError, match="set to fail upon a deserialization error") as failure:
        task.update(amount("amounts", 7, "a4", b"\xff"))
    assert (failure.value.topic, failure.value.partition, failure.value.offset) == ("amounts", 0, 7)


def test_the_test_driver_hands_an_undecodable_global_record_to_the_configured_handler() -> None:
    from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler

    with TopologyTestDriver(global_store_topology(), _handler_config(LogAndContinueExceptionHandler())) as driver:
        amounts = driver.create_input_topic("amounts", STRING, serde_for("ByteArray"))
        orders = driver.create_input_topic("orders", STRING, STRING)
        out = driver.create_output_topic("out", STRING, STRING)
        amounts.pipe_input("a1", b"\xff", 1)
        amounts.pipe_input("a2", (9).to_bytes(4, "big"), 2)
        orders.pipe_input("o1", "a1", 3)
        orders.pipe_input("o2", "a2", 4)
        assert out.read_key_values_to_list() == [("o1", "a1=null"), ("o2", "a2=9")]


class WriteNames(Processor):
    """A stream processor that (wrongly) writes the global store."""

    def init(self, context: ProcessorContext) -> None:
        self.store = context.get_state_store("names")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, record.value)  # type: ignore[attr-defined]


def test_a_stream_task_gets_a_global_store_read_only() -> None:
    """Kafka's ``ProcessorContextImpl#getStateStore`` wraps a global store in a read-only decorator: a stream
    processor reads it (still a ``KeyValueStore``), a write throws "Global store is read only" and changes nothing,
    so tasks sharing the stores (``spark/global_stores.py``) cannot change what another reads."""
    from streamproc.engine.global_state_task import read_only_view

    t = processor_api_topology(reprocess=True)
    t.add_processor("write", WriteNames, "orders")
    with TopologyTestDriver(t, config()) as driver:
        driver.create_input_topic("names", STRING, STRING).pipe_input("n1", "alice", 1)
        with pytest.raises(Exception) as failed:  # the processing exception handler fails with it as the cause
            driver.create_input_topic("orders", STRING, STRING).pipe_input("n1", "bob", 2)
        cause: BaseException | None = failed.value
        while cause is not None and not isinstance(cause, StateError):
            cause = cause.__cause__
        assert cause is not None and "Global store is read only" in str(cause)
        store = driver.get_state_store("names")
        assert isinstance(store, KeyValueStore) and store.get("n1") == "ALICE"
    stores = build_global_stores(t)
    view = read_only_view(stores["names"])
    assert isinstance(view, KeyValueStore) and view.name == "names"
    GlobalStateUpdateTask(t, stores, application_id="app").restore("names", [raw("names", 0, "k", "v")])
    assert view.get("k") == "V"
    writes: list[Callable[[], object]] = [lambda: view.put("k", "w"), lambda: view.delete("k"), view.flush, view.close]
    for write in writes:
        with pytest.raises(StateError, match="Global store is read only: a stream task called .* on global store"):
            write()
    assert view.get("k") == "V"
