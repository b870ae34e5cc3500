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
from streamproc.dsl.internals.changed_serde import changed_serde
from streamproc.dsl.internals.kstream_aggregate import KStreamAggregate, count_initializer, counting_aggregator
from streamproc.dsl.internals.kstream_kstream_join import KStreamJoinWindow, KStreamKStreamJoin, TimeTrackerSupplier
from streamproc.dsl.internals.kstream_ktable_join import KStreamKTableJoin
from streamproc.dsl.internals.kstream_pass_through import KStreamPassThrough
from streamproc.dsl.internals.kstream_session_window_aggregate import KStreamSessionWindowAggregate
from streamproc.dsl.internals.kstream_sliding_window_aggregate import KStreamSlidingWindowAggregate
from streamproc.dsl.internals.kstream_window_aggregate import (
    KStreamWindowAggregate,
    reduce_aggregator,
    reduce_initializer,
)
from streamproc.dsl.internals.ktable_aggregate import KTableAggregate
from streamproc.dsl.internals.ktable_filter import KTableFilter
from streamproc.dsl.internals.ktable_ktable_join import JoinKind, KTableKTableJoin, KTableKTableJoinMerger
from streamproc.dsl.internals.ktable_map_values import KTableMapValues
from streamproc.dsl.internals.ktable_repartition_map import KTableRepartitionMap
from streamproc.dsl.internals.ktable_source import KTableSource
from streamproc.dsl.internals.ktable_suppress_processor import (
    KTableSuppressProcessorSupplier,
    Suppressed,
    WindowedKeys,
)
from streamproc.dsl.internals.outer_join_store import outer_join_value_serde, timestamped_key_and_join_side_serde
from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.dsl.internals.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows
from streamproc.dsl.stores import suppress_buffer_store
from streamproc.engine.records import Record
from streamproc.engine.serdes import LongDeserializer, LongSerializer, Serde, serde_for
from streamproc.engine.topology import Topology
from streamproc.state.store_builders import Stores
from streamproc.state.stores import Windowed

STRING: Serde[Any] = serde_for("String")
LONG: Serde[Any] = Serde(LongSerializer(), LongDeserializer())
SEEDS = range(1, 13)
AGG_STORE = "KSTREAM-AGGREGATE-STATE-STORE-0000000001"
SUPPRESS_STORE = "KTABLE-SUPPRESS-STATE-STORE-0000000005"
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


def _out(t: Topology, parent: str, topic: str = "out") -> Topology:
    t.add_processor(f"to-{topic}", ToOut, parent)
    t.add_sink(
        f"sink-{topic}", topic, f"to-{topic}", key_serializer=STRING.serializer, value_serializer=STRING.serializer
    )
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
    if not params.get("suppress"):
        return _out(t, node)
    t.add_processor("KTABLE-MAPVALUES-0000000003", KTableMapValues(supplier, lambda k, v: str(v)), node)
    suppress = KTableSuppressProcessorSupplier(
        Suppressed.until_window_closes_unbounded(windows.grace_period_ms()),
        SUPPRESS_STORE,
        WindowedKeys(False, windows.size()),
    )
    t.add_processor("KTABLE-SUPPRESS-0000000004", suppress, "KTABLE-MAPVALUES-0000000003")
    t.add_state_store(suppress_buffer_store(SUPPRESS_STORE, STRING, STRING), "KTABLE-SUPPRESS-0000000004")
    return _out(t, "KTABLE-SUPPRESS-0000000004")


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


def sliding_topology(params: dict[str, Any]) -> Topology:
    windows = SlidingWindows.of_time_difference_and_grace(params["difference"], params["grace"])
    t = Topology()
    _source(t, "KSTREAM-SOURCE-0000000000", "in")
    supplier = KStreamSlidingWindowAggregate(
        windows, AGG_STORE, lambda: "", lambda k, v, agg: f"{java_str(agg)}{java_str(v)}"
    )
    t.add_processor("KSTREAM-AGGREGATE-0000000002", supplier, "KSTREAM-SOURCE-0000000000")
    d = windows.time_difference_ms
    store = Stores.timestamped_window_store_builder(
        Stores.persistent_timestamped_window_store(AGG_STORE, 2 * d + windows.grace_period_ms(), d), STRING, STRING
    )
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
    getters = table.view()
    t.add_processor("KTABLE-SOURCE-0000000003", table, "KSTREAM-SOURCE-0000000002")
    store = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store(TABLE_STORE), STRING, STRING
    )
    t.add_state_store(store, "KTABLE-SOURCE-0000000003")
    join = KStreamKTableJoin(getters, joiner, params["kind"] == "left")
    t.add_processor("KSTREAM-JOIN-0000000004", join, "KSTREAM-SOURCE-0000000000")
    t.connect_processor_and_state_stores("KSTREAM-JOIN-0000000004", TABLE_STORE)
    return _out(t, "KSTREAM-JOIN-0000000004")


def _table_source(t: Topology, topic: str, store_name: str, source: str, node: str) -> KTableSource:
    table = KTableSource(store_name)
    _source(t, source, topic)
    t.add_processor(node, table, source)
    return table


def _table_store(t: Topology, name: str, *owners: str) -> None:
    builder = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store(name), STRING, STRING
    )
    t.add_state_store(builder, *owners)


REPARTITION_COPY = "repartition-copy"
TABLE_OPS_STORES = ("table-STATE-STORE-0000000000", "KTABLE-AGGREGATE-STATE-STORE-0000000008")


def _group(key: str, value: str) -> tuple[str, str]:
    group, amount = value.split(":")
    return group, amount


def table_ops_topology(params: dict[str, Any]) -> Topology:
    """``table -> filter -> [mapValues -> out; groupBy -> aggregate -> out2]``; the repartition topic between
    ``groupBy`` and ``aggregate`` is left out (one partition: its records are processed right after the update that
    sent them, in the same order, so outputs and stores are the same)."""
    table_store, agg_store = TABLE_OPS_STORES
    t = Topology()
    source = _table_source(t, "table", table_store, "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002")
    filtered = KTableFilter(source, lambda k, v: not v.endswith("0"), False)
    select = KTableRepartitionMap(filtered, _group)
    select.enable_sending_old_values(True)
    _table_store(t, table_store, "KTABLE-SOURCE-0000000002")
    t.add_processor("KTABLE-FILTER-0000000003", filtered, "KTABLE-SOURCE-0000000002")
    t.add_processor("KTABLE-MAPVALUES-0000000004", KTableMapValues(filtered, lambda k, v: f"{v}!"),
                    "KTABLE-FILTER-0000000003")  # fmt: skip
    _out(t, "KTABLE-MAPVALUES-0000000004")
    t.add_processor("KTABLE-SELECT-0000000007", select, "KTABLE-FILTER-0000000003")
    # what the Java program writes to its repartition topic, as bytes: the Changed serde's layout
    t.add_sink(
        "repartition-copy",
        REPARTITION_COPY,
        "KTABLE-SELECT-0000000007",
        key_serializer=STRING.serializer,
        value_serializer=changed_serde(STRING).serializer,
    )
    aggregate = KTableAggregate(agg_store, lambda: "", lambda k, v, agg: f"{agg}+{v}", lambda k, v, agg: f"{agg}-{v}")
    t.add_processor("KTABLE-AGGREGATE-0000000011", aggregate, "KTABLE-SELECT-0000000007")
    _table_store(t, agg_store, "KTABLE-AGGREGATE-0000000011")
    return _out(t, "KTABLE-AGGREGATE-0000000011", "out2")


SUPPRESS_TABLE_STORE = "table-STATE-STORE-0000000000"


def table_suppress_topology(params: dict[str, Any]) -> Topology:
    """``table -> suppress(untilTimeLimit) -> out``; suppress makes its parent table send old values (and so
    materializes it), as ``KTableSuppressProcessorSupplier``'s constructor does."""
    t = Topology()
    source = _table_source(t, "table", SUPPRESS_TABLE_STORE, "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002")
    source.enable_sending_old_values(True)
    _table_store(t, SUPPRESS_TABLE_STORE, "KTABLE-SOURCE-0000000002")
    suppress = KTableSuppressProcessorSupplier(
        Suppressed.until_time_limit(params["wait"], params["max_records"]), SUPPRESS_STORE
    )
    t.add_processor("KTABLE-SUPPRESS-0000000003", suppress, "KTABLE-SOURCE-0000000002")
    t.add_state_store(suppress_buffer_store(SUPPRESS_STORE, STRING, STRING), "KTABLE-SUPPRESS-0000000003")
    return _out(t, "KTABLE-SUPPRESS-0000000003")


TABLE_JOIN_STORES = ("left-STATE-STORE-0000000000", "right-STATE-STORE-0000000003")


def table_table_join_topology(params: dict[str, Any]) -> Topology:
    left_store, right_store = TABLE_JOIN_STORES
    kinds = {
        "inner": (JoinKind.INNER, JoinKind.INNER),
        "left": (JoinKind.LEFT, JoinKind.RIGHT),
        "outer": (JoinKind.OUTER, JoinKind.OUTER),
    }[params["kind"]]
    t = Topology()
    left = _table_source(t, "left", left_store, "KSTREAM-SOURCE-0000000001", "KTABLE-SOURCE-0000000002")
    right = _table_source(t, "right", right_store, "KSTREAM-SOURCE-0000000004", "KTABLE-SOURCE-0000000005")

    def table_joiner(a: Any, b: Any) -> str:
        return f"{java_str(a)}+{java_str(b)}"

    # KTableImpl#doJoin: the outer side(s) send old values, so that a tombstone with no partner still yields a row
    if params["kind"] in ("left", "outer"):
        left.enable_sending_old_values(True)
    if params["kind"] == "outer":
        right.enable_sending_old_values(True)
    this = KTableKTableJoin(kinds[0], right.view(), table_joiner, this_is_left=True)
    other = KTableKTableJoin(kinds[1], left.view(), table_joiner, this_is_left=False)
    _table_store(t, left_store, "KTABLE-SOURCE-0000000002")
    _table_store(t, right_store, "KTABLE-SOURCE-0000000005")
    t.add_processor("KTABLE-JOINTHIS-0000000007", this, "KTABLE-SOURCE-0000000002")
    t.add_processor("KTABLE-JOINOTHER-0000000008", other, "KTABLE-SOURCE-0000000005")
    t.connect_processor_and_state_stores("KTABLE-JOINTHIS-0000000007", right_store)
    t.connect_processor_and_state_stores("KTABLE-JOINOTHER-0000000008", left_store)
    t.add_processor(
        "KTABLE-MERGE-0000000006", KTableKTableJoinMerger(), "KTABLE-JOINTHIS-0000000007", "KTABLE-JOINOTHER-0000000008"
    )
    return _out(t, "KTABLE-MERGE-0000000006")


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
    suppress = dict(programs["window_count"])
    suppress.update(
        suppress=True,
        grace=rng.choice([0, 5, 20]),
        inputs=_stream(rng, ["in"], rng.randint(5, 40), late=0.25, null_key=0.05, null_value=0.0),
    )
    programs["window_suppress"] = suppress
    table_ops = _stream(rng, ["table"], rng.randint(5, 40), late=0.2, null_key=0.05, null_value=0.2, keys="abcde")
    for entry in table_ops:
        if entry[2] is not None:
            entry[2] = f"g{rng.randint(1, 3)}:{rng.randint(0, 20)}"
    programs["table_ops"] = {"program": "table_ops", "stores": list(TABLE_OPS_STORES), "inputs": table_ops}
    for kind in ("inner", "left", "outer"):
        programs[f"table_join_{kind}"] = {
            "program": "table_table_join",
            "kind": kind,
            "stores": list(TABLE_JOIN_STORES),
            "inputs": _stream(rng, ["left", "right"], rng.randint(5, 30), late=0.2, null_key=0.05, null_value=0.2),
        }
    programs["table_suppress"] = {
        "program": "table_suppress",
        "wait": rng.choice([0, 5, 20]),
        "max_records": rng.choice([None, 1, 2, 3]),
        "stores": [SUPPRESS_TABLE_STORE],
        "inputs": _stream(rng, ["table"], rng.randint(5, 40), late=0.2, null_key=0.05, null_value=0.2, keys="abcde"),
    }
    programs["sliding"] = {
        "program": "sliding",
        "difference": rng.choice([5, 10, 20]),
        "grace": rng.choice([0, 5, 20]),
        "store": AGG_STORE,
        "inputs": _stream(rng, ["in"], rng.randint(5, 40), late=0.25, null_key=0.05, null_value=0.05),
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
