"""The four Processor API programs of the proof against Kafka Streams (issue 12), as streamproc topologies.

Twins of ``conformance/.../ProofApps.java`` (the same node names, stores, serdes and logic; the test checks that both
``describe()`` texts are equal): count per key, tumbling-window count with grace, re-key → repartition → sum, and a
stream–table join. Importable on the executors as ``tests.integration.spark.proof_topologies:NAME``; every factory
returns the topology with the handlers the Java apps run with (LogAndContinue for values the Long deserializer
refuses, LogAndSkipOnInvalidTimestamp for negative timestamps). The parameters below are the one definition: the
test passes them to the Java apps in their spec.
"""

from __future__ import annotations

from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, TaskConfig, Topology, serde_for

WORDS = "ksproof-words"
CUSTOMERS = "ksproof-customers"
OUTPUTS = {
    "count": "ksproof-counts",
    "window": "ksproof-window-counts",
    "rekey": "ksproof-sums",
    "join": "ksproof-joined",
}
#: Source topics each program reads (the repartition topic aside).
INPUTS = {"count": [WORDS], "window": [WORDS], "rekey": [WORDS], "join": [CUSTOMERS, WORDS]}
REPARTITION = "customers-repartition"
WINDOW_SIZE_MS = 10_000
WINDOW_GRACE_MS = 2_000
#: Ten years: longer than the data's time span, so no segment expires and the final window store holds every window;
#: and the app's window changelog (retention + 1 day) keeps records stamped in 2023, which the broker would otherwise
#: delete by time before the test reads them.
WINDOW_RETENTION_MS = 315_360_000_000
REKEY_CUSTOMERS = 97

STRING = serde_for("String")
LONG = serde_for("Long")


def _config() -> TaskConfig:
    from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
    from streamproc.engine.timestamp_extractor import LogAndSkipOnInvalidTimestamp

    return TaskConfig(
        default_timestamp_extractor=LogAndSkipOnInvalidTimestamp(),
        deserialization_exception_handler=LogAndContinueExceptionHandler(),
    )


def _vat(value: int, timestamp: int) -> Any:
    from streamproc.state.stores import ValueAndTimestamp

    return ValueAndTimestamp(value, timestamp)


class CountPerKey(Processor):
    """Count per key in a timestamped store (timestamp: the latest record's, as DSL aggregates keep it)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        count = 1 if old is None else old.value + 1
        self.store.put(
            record.key, _vat(count, record.timestamp if old is None else max(old.timestamp, record.timestamp))
        )
        self.context.forward(record.with_value(count))


class WindowCount(Processor):
    """Tumbling windows with grace: a record of a closed window (end + grace at or before stream time, as
    ``KStreamWindowAggregate``) is skipped; otherwise its window's count goes up and ``"<start>:<count>"`` is sent."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("window-counts")

    def process(self, record: Record[Any, Any]) -> None:
        start = record.timestamp - record.timestamp % WINDOW_SIZE_MS
        if start + WINDOW_SIZE_MS + WINDOW_GRACE_MS <= self.context.current_stream_time_ms():
            return
        old = self.store.fetch_at(record.key, start)
        count = 1 if old is None else old.value + 1
        timestamp = record.timestamp if old is None else max(old.timestamp, record.timestamp)
        self.store.put(record.key, _vat(count, timestamp), start)
        self.context.forward(record.with_value(f"{start}:{count}"))


class Rekey(Processor):
    """The amount's customer (``c<amount mod 97>``) becomes the key; the origin ``<partition>:<offset>`` a header."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        meta = self.context.record_metadata()
        assert meta is not None
        origin = ("origin", f"{meta.partition}:{meta.offset}".encode())
        out = Record(f"c{record.value % REKEY_CUSTOMERS}", record.value, record.timestamp, (*record.headers, origin))
        self.context.forward(out)


class SumPerKey(Processor):
    """Sum of amounts per key (timestamp: the latest), forwarding each new sum."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("sums")

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        total = (0 if old is None else old.value) + record.value
        self.store.put(
            record.key, _vat(total, record.timestamp if old is None else max(old.timestamp, record.timestamp))
        )
        self.context.forward(record.with_value(total))


class CustomerTable(Processor):
    """The table side: the latest value per customer with its own timestamp; nothing forwarded."""

    def init(self, context: ProcessorContext) -> None:
        self.store: Any = context.get_state_store("customer-store")

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, _vat(record.value, record.timestamp))


class Join(Processor):
    """The stream side: an inner join with the table's current value, ``"<amount>/<customer value>"``."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("customer-store")

    def process(self, record: Record[Any, Any]) -> None:
        customer = self.store.get(record.key)
        if customer is not None:
            self.context.forward(record.with_value(f"{record.value}/{customer.value}"))


def _words(t: Topology) -> None:
    t.add_source("words", WORDS, key_deserializer=STRING.deserializer, value_deserializer=LONG.deserializer)


def count() -> tuple[Topology, TaskConfig]:
    t = Topology()
    _words(t)
    t.add_processor("count", CountPerKey, "words")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
        ),
        "count",
    )
    t.add_sink("totals", OUTPUTS["count"], "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, _config()


def window() -> tuple[Topology, TaskConfig]:
    t = Topology()
    _words(t)
    t.add_processor("window-count", WindowCount, "words")
    supplier = Stores.persistent_timestamped_window_store("window-counts", WINDOW_RETENTION_MS, WINDOW_SIZE_MS)
    t.add_state_store(Stores.timestamped_window_store_builder(supplier, STRING, LONG), "window-count")
    t.add_sink(
        "window-totals",
        OUTPUTS["window"],
        "window-count",
        key_serializer=STRING.serializer,
        value_serializer=STRING.serializer,
    )
    return t, _config()


def rekey() -> tuple[Topology, TaskConfig]:
    t = Topology()
    _words(t)
    t.add_processor("rekey", Rekey, "words")
    t.add_internal_topic(REPARTITION)
    t.add_sink("to-customers", REPARTITION, "rekey", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    t.add_source(
        "from-customers", REPARTITION, key_deserializer=STRING.deserializer, value_deserializer=LONG.deserializer
    )
    t.add_processor("sum", SumPerKey, "from-customers")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(Stores.persistent_timestamped_key_value_store("sums"), STRING, LONG),
        "sum",
    )
    t.add_sink("sums-out", OUTPUTS["rekey"], "sum", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t, _config()


def join() -> tuple[Topology, TaskConfig]:
    t = Topology()
    t.add_source("customers", CUSTOMERS, key_deserializer=STRING.deserializer, value_deserializer=LONG.deserializer)
    t.add_processor("customer-table", CustomerTable, "customers")
    _words(t)
    t.add_processor("join", Join, "words")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("customer-store"), STRING, LONG
        ),
        "customer-table",
        "join",
    )
    t.add_sink("joined", OUTPUTS["join"], "join", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t, _config()


FACTORIES = {"count": count, "window": window, "rekey": rekey, "join": join}
