"""The topologies ``bench/test_bench_process.py`` processes (importable on Spark executors)."""

from __future__ import annotations

from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, Topology, serde_for
from streamproc.state.stores import ValueAndTimestamp

INPUT = "bench-process-input"
OUTPUT = "bench-process-output"
_BYTES = serde_for("ByteArray")
_LONG = serde_for("Long")


def pass_through() -> Topology:
    """Source → sink: the engine's and the job's fixed costs per record."""
    t = Topology()
    t.add_source("in", INPUT, key_deserializer=_BYTES.deserializer, value_deserializer=_BYTES.deserializer)
    t.add_sink("out", OUTPUT, "in", key_serializer=_BYTES.serializer, value_serializer=_BYTES.serializer)
    return t


class Count(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("counts")

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        count = 1 if old is None else old.value + 1
        self.store.put(record.key, ValueAndTimestamp(count, record.timestamp))
        self.context.forward(Record(record.key, count, record.timestamp))


def count(input_topic: str = INPUT, output_topic: str = OUTPUT) -> Topology:
    """Count per key in a persistent (RocksDB) timestamped store, logged, every count sent on."""
    t = Topology()
    t.add_source("in", input_topic, key_deserializer=_BYTES.deserializer, value_deserializer=_BYTES.deserializer)
    t.add_processor("count", Count, "in")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store("counts"), _BYTES, _LONG
        ),
        "count",
    )
    t.add_sink("out", output_topic, "count", key_serializer=_BYTES.serializer, value_serializer=_LONG.serializer)
    return t


#: ``bench/test_bench_run.py``'s topics (a data set of its own, so that both benchmarks can run in one session)
RUN_INPUT = "bench-run-input"
RUN_OUTPUT = "bench-run-output"


def run_count() -> Topology:
    """``count`` on the ``streamproc run`` benchmark's topics."""
    return count(RUN_INPUT, RUN_OUTPUT)
