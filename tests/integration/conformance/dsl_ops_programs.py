"""The DSL operator programs of ``DslOpsRunner`` (the oracle's ``dsl_ops`` section), built here with the Processor
API from ``streamproc.dsl.internals`` with the node and store names Kafka's ``StreamsBuilder`` generates, and the
seeded inputs both sides run: out-of-order timestamps, records late past the grace period, null keys and values,
tombstones, repeated keys.

An input is ``[topic, key, value, timestamp]``; an output ``[key, value, timestamp]`` with windowed keys written
``key@start/end`` (as the Java programs map them).
"""

from __future__ import annotations

import random
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.kstream_aggregate import KStreamAggregate, count_initializer, counting_aggregator
from streamproc.dsl.internals.kstream_kstream_join import KStreamJoinWindow, KStreamKStreamJoin, TimeTrackerSupplier
from streamproc.dsl.internals.kstream_ktable_join import KStreamKTableJoin
from streamproc.dsl.internals.kstream_pass_through import KStreamPassThrough
from streamproc.dsl.internals.kstream_session_window_aggregate import KStreamSessionWindowAggregate
from streamproc.dsl.internals.kstream_window_aggregate import (
    KStreamWindowAggregate,
    reduce_aggregator,
    reduce_initializer,
)
from streamproc.dsl.internals.ktable_source import KTableSource
from streamproc.dsl.internals.outer_join_store import outer_join_value_serde, timestamped_key_and_join_side_serde
from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.dsl.internals.windows import JoinWindows, SessionWindows, TimeWindows
from streamproc.engine.records import Record
from streamproc.engine.serdes import LongDeserializer, LongSerializer, Serde, serde_for
from streamproc.engine.topology import Topology
from streamproc.state.store_builders import Stores
from streamproc.state.stores import Windowed

STRING: Serde[Any] = serde_for("String")
LONG: Serde[Any] = Serde(LongSerializer(), LongDeserializer())
SEEDS = range(1, 13)
AGG_STORE = "KSTREAM-AGGREGATE-STATE-STORE-0000000001"
REDUCE_STORE = "KSTREAM-REDUCE-STATE-STORE-0000000001"


def java_str(value: Any) -> str:
    """Java's string concatenation of a value: ``null`` for null."""
    return "null" if value is None else str(value)


def joiner(key: Any, left: Any, right: Any) -> str:
    """``(a, b) -> a + "+" + b``."""
    return f"{java_str(left)}+{java_str(right)}"


def windowed_text(key: Windowed[Any]) -> str:
    return f"{key.key}@{key.window.start}/{key.window.end}"


class ToOut(ContextualProcessor):
    """``toStream().map(...)``/``mapValues(String::valueOf)`` of the Java programs: the new value as a string, a
    windowed key as ``key@start/end``."""

    def process(self, record: Record[Any, Any]) -> None:
        key = windowed_text(record.key) if isinstance(record.key, Windowed) else record.key
        value = record.value.new_value if isinstance(record.value, Change) else record.value
        self.context().forward(record.with_key(key).with_value(None if value is None else str(value)))


def _source(t: Topology, name: str, topic: str) -> None:
    t.add_source(name, topic, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)


def _out(t: Topology, parent: str) -> Topology:
    t.add_processor("to-out", ToOut, parent)
    t.add_sink("sink", "out", "to-out", key_serializer=STRING.serializer, value_serializer=STRING.serializer)
    return t


def window_topology(params: dict[str, Any], *, reduce: bool) -> Topology:
    windows = TimeWindows.of_size_and_grace(params["size"], params["grace"]).advance_by(params["advance"])
    store_name = params["store"]
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "in")
    if reduce:
        node = "KSTREAM-REDUCE-0000000002"
        supplier = KStreamWindowAggregate(
            windows, store_name, reduce_initializer, reduce_aggregator(lambda a, b: f"{a},{b}")
        )
    else:
        node = "KSTREAM-AGGREGATE-0000000002"
        supplier = KStreamWindowAggregate(windows, store_name, count_initializer, counting_aggregator)
    t.add_processor(node, supplier, "KSTREAM-SOURCE-0000000000")
    retention = windows.size() + windows.grace_period_ms()
    store = Stores.timestamped_window_store_builder(
        Stores.persistent_timestamped_window_store(store_name, retention, windows.size()),
        STRING,
        STRING if reduce else LONG,
    )
    t.add_state_store(store, node)
    return _out(t, node)


def session_topology(params: dict[str, Any]) -> Topology:
    windows = SessionWindows.of_inactivity_gap_and_grace(params["gap"], params["grace"])
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "in")
    supplier = KStreamSessionWindowAggregate(
        windows, AGG_STORE, lambda: "", lambda k, v, agg: f"{agg}{java_str(v)}", lambda k, a, b: f"{a}|{b}"
    )
    t.add_processor("KSTREAM-AGGREGATE-0000000002", supplier, "KSTREAM-SOURCE-0000000000")
    retention = windows.inactivity_gap_ms + windows.grace_period_ms()
    store = Stores.session_store_builder(Stores.persistent_session_store(AGG_STORE, retention), STRING, STRING)
    t.add_state_store(store, "KSTREAM-AGGREGATE-0000000002")
    return _out(t, "KSTREAM-AGGREGATE-0000000002")


def count_topology(params: dict[str, Any]) -> Topology:
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "in")
    supplier = KStreamAggregate(AGG_STORE, count_initializer, counting_aggregator)
    t.add_processor("KSTREAM-AGGREGATE-0000000002", supplier, "KSTREAM-SOURCE-0000000000")
    store = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store(AGG_STORE), STRING, LONG
    )
    t.add_state_store(store, "KSTREAM-AGGREGATE-0000000002")
    return _out(t, "KSTREAM-AGGREGATE-0000000002")


def join_store_names(kind: str) -> tuple[str, str, str | None]:
    """This side's and the other side's window store and the shared outer store, as ``KStreamImplJoin`` names them."""
    this = "KSTREAM-OUTERTHIS-0000000004" if kind == "outer" else "KSTREAM-JOINTHIS-0000000004"
    other = "KSTREAM-JOINOTHER-0000000005" if kind == "inner" else "KSTREAM-OUTEROTHER-0000000005"
    shared = None if kind == "inner" else "KSTREAM-OUTERSHARED-0000000004-store"
    return f"{this}-store", f"{other}-store", shared


def stream_stream_join_topology(params: dict[str, Any]) -> Topology:
    kind = params["kind"]
    windows = JoinWindows.of_time_difference_and_grace(params["after"], params["grace"]).before(params["before"])
    this_store, other_store, shared = join_store_names(kind)
    this_name, other_name = this_store.removesuffix("-store"), other_store.removesuffix("-store")
    trackers = TimeTrackerSupplier()
    # Kafka's TopologyTestDriver sets the internal emit interval of the outer-join fix to 0 (no wall-clock throttle)
    emit = {"emit_interval_ms": 0}
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "left")
    _source(t, "KSTREAM-SOURCE-0000000001", "right")
    t.add_processor("KSTREAM-WINDOWED-0000000002", KStreamJoinWindow(this_store), "KSTREAM-SOURCE-0000000000")
    t.add_processor("KSTREAM-WINDOWED-0000000003", KStreamJoinWindow(other_store), "KSTREAM-SOURCE-0000000001")
    left = KStreamKStreamJoin(
        other_store,
        windows,
        joiner,
        left_side=True,
        outer=kind != "inner",
        outer_join_store_name=shared,
        time_trackers=trackers,
        **emit,
    )
    right = KStreamKStreamJoin(
        this_store, windows, joiner, left_side=False, outer=kind == "outer", outer_join_store_name=shared,
        time_trackers=trackers, **emit,
    )  # fmt: skip
    t.add_processor(this_name, left, "KSTREAM-WINDOWED-0000000002")
    t.add_processor(other_name, right, "KSTREAM-WINDOWED-0000000003")
    t.add_processor("KSTREAM-MERGE-0000000006", KStreamPassThrough(), this_name, other_name)
    size = windows.size()
    for name, owners in ((this_store, ("KSTREAM-WINDOWED-0000000002", other_name)),
                         (other_store, ("KSTREAM-WINDOWED-0000000003", this_name))):  # fmt: skip
        supplier = Stores.persistent_window_store(name, size + windows.grace_period_ms(), size, True)
        t.add_state_store(Stores.window_store_builder(supplier, STRING, STRING), *owners)
    if shared is not None:
        builder = Stores.key_value_store_builder(
            Stores.persistent_key_value_store(shared),
            timestamped_key_and_join_side_serde(STRING),
            outer_join_value_serde(STRING, STRING),
        )
        t.add_state_store(builder, this_name, other_name)
    return _out(t, "KSTREAM-MERGE-0000000006")


TABLE_STORE = "table-STATE-STORE-0000000001"


def stream_table_join_topology(params: dict[str, Any]) -> Topology:
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "stream")
    _source(t, "KSTREAM-SOURCE-0000000002", "table")
    table = KTableSource(TABLE_STORE)
    t.add_processor("KTABLE-SOURCE-0000000003", table, "KSTREAM-SOURCE-0000000002")
    store = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store(TABLE_STORE), STRING, STRING
    )
    t.add_state_store(store, "KTABLE-SOURCE-0000000003")
    join = KStreamKTableJoin(table.view(), joiner, params["kind"] == "left")
    t.add_processor("KSTREAM-JOIN-0000000004", join, "KSTREAM-SOURCE-0000000000")
    t.connect_processor_and_state_stores("KSTREAM-JOIN-0000000004", TABLE_STORE)
    return _out(t, "KSTREAM-JOIN-0000000004")


# -- inputs --------------------------------------------------------------------------------------------------------


def _stream(rng: random.Random, topics: list[str], n: int, *, late: float, null_key: float, null_value: float,
            keys: str = "abc") -> list[list[Any]]:  # fmt: skip
    """``n`` records: a clock that mostly moves forward, a ``late`` share far behind it, some null keys/values."""
    clock = rng.randint(0, 5)
    out: list[list[Any]] = []
    for i in range(n):
        clock += rng.choice([0, 1, 2, 3, 5, 8])
        timestamp = max(0, clock - rng.randint(1, 40)) if rng.random() < late else clock
        key = None if rng.random() < null_key else rng.choice(keys)
        value = None if rng.random() < null_value else f"v{i}"
        out.append([rng.choice(topics), key, value, timestamp])
    return out


def dsl_ops_inputs(seed: int) -> dict[str, Any]:
    """Every program's parameters and inputs for one seed."""
    rng = random.Random(seed)
    size = rng.choice([10, 20])
    programs: dict[str, Any] = {
        "window_count": {
            "program": "window_count",
            "size": size,
            "advance": rng.choice([size, size // 2, 5]),
            "grace": rng.choice([0, 5, 20]),
            "store": AGG_STORE,
            "inputs": _stream(rng, ["in"], rng.randint(5, 40), late=0.25, null_key=0.05, null_value=0.0),
        },
        "window_reduce": {
            "program": "window_reduce",
            "size": size,
            "advance": rng.choice([size, 5]),
            "grace": rng.choice([0, 10]),
            "store": REDUCE_STORE,
            "inputs": _stream(rng, ["in"], rng.randint(5, 40), late=0.25, null_key=0.05, null_value=0.0),
        },
        "session": {
            "program": "session",
            "gap": rng.choice([3, 5, 10]),
            "grace": rng.choice([0, 10]),
            "store": AGG_STORE,
            "inputs": _stream(rng, ["in"], rng.randint(5, 40), late=0.25, null_key=0.05, null_value=0.0),
        },
        "count": {
            "program": "count",
            "store": AGG_STORE,
            "inputs": _stream(rng, ["in"], rng.randint(5, 30), late=0.2, null_key=0.1, null_value=0.1),
        },
        "stream_table_join": {
            "program": "stream_table_join",
            "kind": rng.choice(["inner", "left"]),
            "store": TABLE_STORE,
            "inputs": _stream(rng, ["stream", "table"], rng.randint(5, 40), late=0.2, null_key=0.1, null_value=0.15),
        },
    }
    for kind in ("inner", "left", "outer"):
        this_store, other_store, _ = join_store_names(kind)
        before = rng.choice([0, 5, 10])
        programs[f"join_{kind}"] = {
            "program": "stream_stream_join",
            "kind": kind,
            # a window of size 0 joins too, but Kafka's store cannot list its windows (TimeWindow needs end > start)
            "before": before,
            "after": rng.choice([0, 5, 10] if before else [5, 10]),
            "grace": rng.choice([0, 5, 20]),
            "stores": [this_store, other_store],
            "inputs": _stream(rng, ["left", "right"], rng.randint(5, 40), late=0.2, null_key=0.05, null_value=0.05),
        }
    return programs
