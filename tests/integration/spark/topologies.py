"""Topologies the Spark tests process: importable on the executors as ``tests.integration.spark.topologies:NAME``.

Topic names are fixed here (a factory takes no arguments); the tests create them once per session.
"""

from __future__ import annotations

from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, TaskConfig, Topology, serde_for

COUNT_INPUT = "spark-count-words"
COUNT_OUTPUT = "spark-count-totals"
STRING = serde_for("String")
LONG = serde_for("Long")
BYTES = serde_for("ByteArray")


class CountPerKey(Processor):
    """Count per key in a timestamped store; forward each new count (a count topology, Processor API)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        from streamproc.state.stores import ValueAndTimestamp

        old = self.store.get(record.key)
        count = 1 if old is None else old.value + 1
        self.store.put(record.key, ValueAndTimestamp(count, max(record.timestamp, old.timestamp if old else 0)))
        self.context.forward(Record(record.key, count, record.timestamp))


def count_topology(
    input_topic: str, output_topic: str, *, processor: type[Processor] = CountPerKey, sink: str = "totals"
) -> Topology:
    """Source ``words`` → ``processor`` (persistent timestamped store ``counts``, logged) → sink: the count program
    the Spark and hand-off tests share, on the topics each of them owns."""
    t = Topology()
    t.add_source("words", input_topic, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", processor, "words")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
        ),
        "count",
    )
    t.add_sink(sink, output_topic, "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t


def count() -> Topology:
    """Source → count (persistent timestamped store, logged) → sink."""
    return count_topology(COUNT_INPUT, COUNT_OUTPUT)


def count_renamed() -> Topology:
    """The same program with the sink renamed: not the plan's topology."""
    return count_topology(COUNT_INPUT, COUNT_OUTPUT, sink="sink")


REKEY_INPUT = "spark-rekey-orders"
REKEY_OUTPUT = "spark-rekey-totals"
#: The repartition topic (``<application.id>-rekeyed-repartition`` at run time; describe() tells it by the suffix).
REKEYED = "rekeyed-repartition"


class Rekey(Processor):
    """The value becomes the key (``selectKey``): records of one customer come from every input partition."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(Record(record.value, record.value, record.timestamp, record.headers))


def rekey_count_topology(input_topic: str, output_topic: str) -> Topology:
    """Sub-topology 0 re-keys into ``<application.id>-rekeyed-repartition``; sub-topology 1 counts per new key."""
    t = Topology()
    t.add_source("orders", input_topic, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("rekey", Rekey, "orders")
    t.add_internal_topic(REKEYED)
    t.add_sink("to-rekeyed", REKEYED, "rekey", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    t.add_source("from-rekeyed", REKEYED, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", CountPerKey, "from-rekeyed")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
        ),
        "count",
    )
    t.add_sink("totals", output_topic, "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t


def rekey_count() -> Topology:
    """Re-key → repartition → count (two stages) on the Spark tests' topics."""
    return rekey_count_topology(REKEY_INPUT, REKEY_OUTPUT)


def rekey_count_dsl() -> Topology:
    """The same two stages with the DSL and Bytes serdes, which the columnar path runs: stage 1 ``selectKey`` into
    the repartition topic's sink, stage 2 ``groupByKey().count()`` over the upstream tasks' records."""
    return _rekey_count_dsl(BYTES)


def _rekey_count_dsl(serde: Any) -> Topology:
    from streamproc.dsl import Consumed, Materialized, Produced, Repartitioned, StreamsBuilder

    b = StreamsBuilder()
    rekeyed = b.stream(REKEY_INPUT, Consumed.with_(serde, serde)).select_key(lambda k, v: v)
    rekeyed = rekeyed.repartition(Repartitioned.with_(serde, serde).with_name("rekeyed"))
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    counts = rekeyed.group_by_key().count(materialized=materialized.with_key_serde(serde).with_value_serde(LONG))
    counts.to_stream().to(REKEY_OUTPUT, Produced.with_(serde, LONG))
    return b.build()


def rekey_count_dsl_strings() -> Topology:
    """:func:`rekey_count_dsl` with String serdes (the same description): over columns, or per record where a test
    forces it (``STREAMPROC_PER_RECORD_COUNT``), when each key shard of either stage can read only its own records
    (``spark/owned_input.py``)."""
    return _rekey_count_dsl(STRING)


SPLIT_INPUT = "spark-split-words"
SPLIT_OUTPUT = "spark-split-totals"


def split_count() -> Topology:
    """A DSL count over String serdes on a one-partition topic: a task ``--split N`` cuts into N key shards, each
    reading only its own records (``spark/owned_input.py``) when forced per record (``STREAMPROC_PER_RECORD_COUNT``),
    which the standalone cluster's workers run."""
    from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder

    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    counts = (
        b.stream(SPLIT_INPUT, Consumed.with_(STRING, STRING))
        .group_by_key()
        .count(materialized=materialized.with_key_serde(STRING).with_value_serde(LONG))
    )
    counts.to_stream().to(SPLIT_OUTPUT, Produced.with_(STRING, LONG))
    return b.build()


def split_window_count() -> Topology:
    """The same input counted in 10 s tumbling windows with 1 s of grace (late records dropped), the window's key
    to the sink: a time-windowed aggregate, which ``--split auto`` splits where it runs per record (else the columnar
    path takes it whole)."""
    from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows

    b = StreamsBuilder()
    materialized = Materialized.as_("window-counts").with_key_serde(STRING).with_value_serde(LONG)
    counts = (
        b.stream(SPLIT_INPUT, Consumed.with_(STRING, STRING))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10_000, 1_000))
        .count(materialized=materialized)
    )
    counts.to_stream().select_key(lambda windowed, _count: windowed.key).to(SPLIT_OUTPUT, Produced.with_(STRING, LONG))
    return b.build()


class CountFailingOnK7(CountPerKey):
    """Counts, but raises on key ``k7`` (a processor bug)."""

    def process(self, record: Record[Any, Any]) -> None:
        if record.key == "k7":
            raise ValueError("cannot count k7")
        super().process(record)


def _count_with(processor: type[Processor]) -> Topology:
    return count_topology(COUNT_INPUT, COUNT_OUTPUT, processor=processor)


def count_failing() -> Topology:
    """``count`` whose processor fails on ``k7``; the default handler (LogAndFail) fails the task."""
    return _count_with(CountFailingOnK7)


def count_failing_continue() -> tuple[Topology, TaskConfig]:
    """``count_failing`` with ``processing.exception.handler`` LogAndContinue: ``k7`` records are dropped."""
    from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler

    return _count_with(CountFailingOnK7), TaskConfig(
        processing_exception_handler=LogAndContinueProcessingExceptionHandler()
    )


ORDERS_INPUT = "spark-validated-orders"
ORDERS_OUTPUT = "spark-validated-amounts"
ORDERS_DLQ = "spark-validated-orders-dlq"
JSON = serde_for("Json")


def order_schema() -> Any:
    """An order is ``{"customer": str, "amount": int >= 0}``."""
    import pandera.polars as pa

    return pa.DataFrameSchema(
        {"customer": pa.Column(str), "amount": pa.Column(int, pa.Check.ge(0))}, name="order", strict=True
    )


class Amount(Processor):
    """Forwards the order's amount under the order's key."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(Record(record.key, record.value["amount"], record.timestamp, record.headers))


def validated_orders() -> Topology:
    """Source with a pandera schema on its JSON values → amount → sink (no stores)."""
    t = Topology()
    t.add_source(
        "orders", ORDERS_INPUT, key_deserializer=STRING.deserializer, value_deserializer=JSON.deserializer,
        value_schema=order_schema(),
    )  # fmt: skip
    t.add_processor("amount", Amount, "orders")
    t.add_sink("amounts", ORDERS_OUTPUT, "amount", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t


def validated_orders_continue() -> tuple[Topology, TaskConfig]:
    """``validated_orders`` whose processing handler continues, with a KIP-1034 dead letter queue topic."""
    from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler

    return validated_orders(), TaskConfig(
        processing_exception_handler=LogAndContinueProcessingExceptionHandler(), dead_letter_queue_topic=ORDERS_DLQ
    )


def validated_orders_fail() -> tuple[Topology, TaskConfig]:
    """``validated_orders`` with the default LogAndFail processing handler (and a dead letter queue topic)."""
    return validated_orders(), TaskConfig(dead_letter_queue_topic=ORDERS_DLQ)
