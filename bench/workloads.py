"""The comparison's workloads as streamproc Processor API topologies (``bench/compare.py``; imported by Spark workers).

The same logic runs in Kafka Streams (``conformance/…/BenchApps.java``) and Quix Streams (``bench/quix_app.py``) on the
same records. A value is ``IIIII,AAAAAA,…`` (item: 5 digits, amount: 6 digits, padding to ~200 bytes; see
``bench/generator.py``):

- ``pass_through``: drop amounts ending in 0, keep the value's first 12 bytes, send on (filter + map_values + to);
- ``count``: count per key in a persistent (RocksDB) timestamped store, logged, every count sent on
  (``groupByKey().count()`` with the record cache off);
- ``window``: re-key by item through a repartition topic, then sum the amount per item in 60 s tumbling windows
  (persistent timestamped window store, retention 7 days + 60 s: longer than the data spans, so no record is
  dropped as late), every update sent on;
- ``window_count`` (DSL only): count per key in 60 s tumbling windows (``groupByKey().windowedBy(…).count()``, a
  persistent timestamped window store), every update sent on keyed by the record's key: the windowed aggregation
  with Kafka Streams' built-in adder, where issue #16 asks ≥ 2.0×;
- ``session_count`` (DSL only): count per key in sessions of 5 minutes of inactivity
  (``groupByKey().windowedBy(SessionWindows…).count()``, a persistent session store), every update sent on keyed by
  the record's key, a merged session's tombstone too: the session windows issue #29 splits;
- ``aggregate`` (DSL only): the amount summed per key by a Python aggregator (``groupByKey().aggregate(…)``, a
  persistent timestamped store), every update sent on: an aggregation with user code, where issue #16 asks ≥ 1.0×.

``streamproc run --topology bench.workloads:count`` takes no arguments, so the topics come from the environment
(``STREAMPROC_BENCH_INPUT``, ``STREAMPROC_BENCH_OUTPUT``), which Spark's local workers inherit. The same workloads
written with the DSL (``dsl_pass_through``, ``dsl_count``, ``dsl_window``: :data:`DSL_WORKLOADS`) are the calls of
``BenchApps.dsl`` less its ``peek`` (Kafka Streams' counter for its stop condition; streamproc counts records itself),
so that the comparison measures the DSL's processors (lambdas, the count and window aggregate processors) against
Kafka Streams' own DSL.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from bench.process_topologies import Count  # the one counting processor of the benchmarks
from streamproc import Processor, ProcessorContext, Record, Stores, Topology, serde_for
from streamproc.dsl import (
    Consumed,
    Materialized,
    Produced,
    Repartitioned,
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
)
from streamproc.state.stores import ValueAndTimestamp

WINDOW_MS = 60_000
SESSION_GAP_MS = 300_000
GRACE_MS = 7 * 86_400_000  # longer than any data set spans: no system drops a record as late
#: the window workload's repartition topic (``<application.id>-rekeyed-repartition`` at run time)
REKEYED = "rekeyed-repartition"
_BYTES = serde_for("ByteArray")
_LONG = serde_for("Long")


def _topics() -> tuple[str, str]:
    return os.environ["STREAMPROC_BENCH_INPUT"], os.environ["STREAMPROC_BENCH_OUTPUT"]


def amount(value: bytes) -> int:
    return int(value[6:12])


class FilterMap(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        value = record.value
        if value[11] != 48:  # b"0"
            self.context.forward(record.with_value(value[:12]))


class Rekey(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_key(record.value[:5]))


class WindowSum(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store("sums")

    def process(self, record: Record[Any, Any]) -> None:
        start = record.timestamp - record.timestamp % WINDOW_MS
        old = self.store.fetch_at(record.key, start)
        total = (0 if old is None else old.value) + amount(record.value)
        self.store.put(record.key, ValueAndTimestamp(total, record.timestamp), start)
        self.context.forward(record.with_value(total))


def _source(t: Topology, name: str, topic: str) -> None:
    t.add_source(name, topic, key_deserializer=_BYTES.deserializer, value_deserializer=_BYTES.deserializer)


def pass_through() -> Topology:
    source, sink = _topics()
    t = Topology()
    _source(t, "in", source)
    t.add_processor("filter-map", FilterMap, "in")
    t.add_sink("out", sink, "filter-map", key_serializer=_BYTES.serializer, value_serializer=_BYTES.serializer)
    return t


def count() -> Topology:
    source, sink = _topics()
    t = Topology()
    _source(t, "in", source)
    t.add_processor("count", Count, "in")
    store = Stores.persistent_timestamped_key_value_store("counts")
    t.add_state_store(Stores.timestamped_key_value_store_builder(store, _BYTES, _LONG), "count")
    t.add_sink("out", sink, "count", key_serializer=_BYTES.serializer, value_serializer=_LONG.serializer)
    return t


def window() -> Topology:
    source, sink = _topics()
    t = Topology()
    _source(t, "in", source)
    t.add_processor("rekey", Rekey, "in")
    t.add_internal_topic(REKEYED)
    t.add_sink("to-rekeyed", REKEYED, "rekey", key_serializer=_BYTES.serializer, value_serializer=_BYTES.serializer)
    _source(t, "from-rekeyed", REKEYED)
    t.add_processor("sum", WindowSum, "from-rekeyed")
    store = Stores.persistent_timestamped_window_store("sums", WINDOW_MS + GRACE_MS, WINDOW_MS)
    t.add_state_store(Stores.timestamped_window_store_builder(store, _BYTES, _LONG), "sum")
    t.add_sink("out", sink, "sum", key_serializer=_BYTES.serializer, value_serializer=_LONG.serializer)
    return t


# -- the same workloads with the DSL (BenchApps.dsl) ------------------------------------------------------------------


def _dsl_stream(builder: StreamsBuilder, source: str) -> Any:
    return builder.stream(source, Consumed.with_(_BYTES, _BYTES))


def dsl_pass_through() -> Topology:
    """``filter(keep).mapValues(project).to(output)``: two Python lambdas per record."""
    source, sink = _topics()
    b = StreamsBuilder()
    stream = _dsl_stream(b, source).filter(lambda k, v: v[11] != 48).map_values(lambda v: v[:12])
    stream.to(sink, Produced.with_(_BYTES, _BYTES))
    return b.build()


def dsl_count() -> Topology:
    """``groupByKey().count(Materialized.as(persistentTimestampedKeyValueStore("counts")))``: no user code."""
    source, sink = _topics()
    b = StreamsBuilder()
    store = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    table = (
        _dsl_stream(b, source).group_by_key().count(materialized=store.with_key_serde(_BYTES).with_value_serde(_LONG))
    )
    table.to_stream().to(sink, Produced.with_(_BYTES, _LONG))
    return b.build()


def dsl_filter_count() -> Topology:
    """Issue #16's ``filter → map_values → group_by_key → count``: pass_through's two lambdas, then count's store.

    DSL only (no Processor API twin): ``BenchApps.dsl``'s ``filter_count`` is the Java program.
    """
    source, sink = _topics()
    b = StreamsBuilder()
    store = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    stream = _dsl_stream(b, source).filter(lambda k, v: v[11] != 48).map_values(lambda v: v[:12])
    table = stream.group_by_key().count(materialized=store.with_key_serde(_BYTES).with_value_serde(_LONG))
    table.to_stream().to(sink, Produced.with_(_BYTES, _LONG))
    return b.build()


def dsl_window() -> Topology:
    """``selectKey(item).repartition("rekeyed").groupByKey().windowedBy(60 s tumbling).aggregate(sum)``.

    Java's ``toStream((windowed, sum) -> windowed.key())`` is ``toStream().selectKey(…)`` (what ``KTableImpl`` does).
    """
    source, sink = _topics()
    b = StreamsBuilder()
    rekeyed = _dsl_stream(b, source).select_key(lambda k, v: v[:5])
    rekeyed = rekeyed.repartition(Repartitioned.with_(_BYTES, _BYTES).with_name("rekeyed"))
    sums = (
        rekeyed.group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
        .aggregate(
            lambda: 0,
            lambda k, v, total: total + int(v[6:12]),
            materialized=Materialized.as_("sums").with_key_serde(_BYTES).with_value_serde(_LONG),
        )  # fmt: skip
    )
    sums.to_stream().select_key(lambda windowed, total: windowed.key).to(sink, Produced.with_(_BYTES, _LONG))
    return b.build()


def dsl_window_count() -> Topology:
    """``groupByKey().windowedBy(60 s tumbling).count(Materialized.as("counts"))``: the built-in count per window.

    ``toStream((windowed, count) -> windowed.key())`` as in ``window``; DSL only (``BenchApps.dsl``'s
    ``window_count`` is the Java program).
    """
    return _windowed_count(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS), "counts")


def dsl_session_count() -> Topology:
    """``groupByKey().windowedBy(SessionWindows(5 min gap, a week's grace)).count(Materialized.as("sessions"))``.

    ``toStream((windowed, count) -> windowed.key())``: a session merged into a later one is sent on as a tombstone
    (a null count), as Kafka Streams sends it; DSL only (``BenchApps.dsl``'s ``session_count``).
    """
    return _windowed_count(SessionWindows.of_inactivity_gap_and_grace(SESSION_GAP_MS, GRACE_MS), "sessions")


def _windowed_count(windows: Any, store: str) -> Topology:
    """The bench's grouped stream counted in ``windows`` in a store named ``store``, each update sent on keyed by the
    record's key."""
    source, sink = _topics()
    b = StreamsBuilder()
    counts = (
        _dsl_stream(b, source)
        .group_by_key()
        .windowed_by(windows)
        .count(materialized=Materialized.as_(store).with_key_serde(_BYTES).with_value_serde(_LONG))
    )
    counts.to_stream().select_key(lambda windowed, count: windowed.key).to(sink, Produced.with_(_BYTES, _LONG))
    return b.build()


def dsl_aggregate() -> Topology:
    """``groupByKey().aggregate(() -> 0L, (k, v, sum) -> sum + amount(v), Materialized.as("sums"))``: a Python
    aggregator per record.

    DSL only (``BenchApps.dsl``'s ``aggregate`` is the Java program).
    """
    source, sink = _topics()
    b = StreamsBuilder()
    sums = (
        _dsl_stream(b, source)
        .group_by_key()
        .aggregate(
            lambda: 0,
            lambda k, v, total: total + int(v[6:12]),
            materialized=Materialized.as_("sums").with_key_serde(_BYTES).with_value_serde(_LONG),
        )
    )
    sums.to_stream().to(sink, Produced.with_(_BYTES, _LONG))
    return b.build()


#: workload name → topology factory, Processor API
PAPI_WORKLOADS: dict[str, Callable[[], Topology]] = {"pass_through": pass_through, "count": count, "window": window}
#: the same workloads written with the DSL (issue #16); ``bench.workloads:dsl_<name>`` for ``streamproc run``
DSL_WORKLOADS: dict[str, Callable[[], Topology]] = {
    "pass_through": dsl_pass_through,
    "count": dsl_count,
    "window": dsl_window,
    "filter_count": dsl_filter_count,
    "window_count": dsl_window_count,
    "session_count": dsl_session_count,
    "aggregate": dsl_aggregate,
}
