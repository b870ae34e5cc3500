"""The Processor-API Topology builder: Kafka Streams' validation messages and sub-topology numbering."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from streamproc.engine.topology import StoreSpec, Topology
from streamproc.engine.topology_description import Processor, Sink, Source, parse_description
from streamproc.errors import TopologyError
from tests.conftest import SCENARIOS_DIR


def _noop() -> object:
    return object()


def _scenario_text(stem: str) -> str:
    text: str = json.loads((SCENARIOS_DIR / "topology" / f"{stem}.json").read_text(encoding="utf-8"))["input"][
        "describe"
    ]
    return text


def test_t08_global_table_then_stream_prints_kafkas_text() -> None:
    t = Topology()
    t.add_global_store(
        StoreSpec("products-STATE-STORE-0000000000", logged=False),
        "KSTREAM-SOURCE-0000000001",
        "products",
        "KTABLE-SOURCE-0000000002",
        _noop,
    )
    t.add_source("KSTREAM-SOURCE-0000000003", "purchases")
    t.add_processor("KSTREAM-LEFTJOIN-0000000004", _noop, "KSTREAM-SOURCE-0000000003")
    t.add_sink("KSTREAM-SINK-0000000005", "purchases-enriched", "KSTREAM-LEFTJOIN-0000000004")
    assert str(t) == _scenario_text("t08-global-table-join")
    assert t.global_node_groups() == frozenset({0})


def test_t05_builder_in_program_order_prints_kafkas_text() -> None:
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000000", "orders")
    t.add_source("KSTREAM-SOURCE-0000000002", "customers")
    t.add_processor("KTABLE-SOURCE-0000000003", _noop, "KSTREAM-SOURCE-0000000002")
    t.add_state_store(StoreSpec("customers-STATE-STORE-0000000001"), "KTABLE-SOURCE-0000000003")
    t.add_processor("KSTREAM-KEY-SELECT-0000000004", _noop, "KSTREAM-SOURCE-0000000000")
    t.add_processor("KSTREAM-FILTER-0000000006", _noop, "KSTREAM-KEY-SELECT-0000000004")
    t.add_sink("KSTREAM-SINK-0000000005", "KSTREAM-KEY-SELECT-0000000004-repartition", "KSTREAM-FILTER-0000000006")
    t.add_source("KSTREAM-SOURCE-0000000007", "KSTREAM-KEY-SELECT-0000000004-repartition")
    t.add_processor("KSTREAM-JOIN-0000000008", _noop, "KSTREAM-SOURCE-0000000007")
    t.connect_processor_and_state_stores("KSTREAM-JOIN-0000000008", "customers-STATE-STORE-0000000001")
    t.add_sink("KSTREAM-SINK-0000000009", "enriched-orders", "KSTREAM-JOIN-0000000008")
    expected = parse_description(_scenario_text("t05-rekey-stream-table-join"))
    assert t.describe().normalized() == expected.normalized()
    assert str(t) == _scenario_text("t05-rekey-stream-table-join")


def test_shared_store_unites_branches_without_edges() -> None:
    t = Topology()
    t.add_source("a", "ta")
    t.add_source("b", "tb")
    t.add_processor("pa", _noop, "a")
    t.add_processor("pb", _noop, "b")
    assert list(t.node_groups().values()) == [("a", "pa"), ("b", "pb")]
    t.add_state_store(StoreSpec("s"), "pa")
    t.connect_processor_and_state_stores("pb", "s")
    assert t.node_groups() == {0: ("a", "b", "pa", "pb")}
    sub = t.describe().subtopologies[0]
    pb = sub.node("pb")
    assert isinstance(pb, Processor) and pb.stores == ("s",)


def test_ids_follow_the_first_inserted_node_of_each_group() -> None:
    t = Topology()
    t.add_source("late-reader", "x-repartition")
    t.add_source("writer-src", "in")
    t.add_sink("writer-sink", "x-repartition", "writer-src")
    t.add_processor("reader-proc", _noop, "late-reader")
    described = t.describe()
    ids = {s.id: sorted(n.name for n in s.nodes) for s in described.subtopologies}
    assert ids == {0: ["late-reader", "reader-proc"], 1: ["writer-sink", "writer-src"]}


def test_describe_edges_and_kinds() -> None:
    t = Topology()
    t.add_source("s", "in")
    t.add_processor("p1", _noop, "s")
    t.add_processor("p2", _noop, "s", "p1")
    t.add_sink("k", "out", "p2")
    sub = t.describe().subtopologies[0]
    s, p2, k = sub.node("s"), sub.node("p2"), sub.node("k")
    assert isinstance(s, Source) and s.successors == ("p1", "p2")
    assert isinstance(p2, Processor) and p2.predecessors == ("s", "p1") and p2.successors == ("k",)
    assert isinstance(k, Sink) and k.topic == "out"


class _SupplierWithStores:
    def __call__(self) -> object:
        return object()

    def stores(self) -> list[StoreSpec]:
        return [StoreSpec("from-supplier")]


def test_supplier_stores_are_added_and_connected() -> None:
    t = Topology()
    t.add_source("s", "in")
    t.add_processor("p", _SupplierWithStores(), "s")
    assert t.stores_of("p") == ("from-supplier",)


def test_copartition_groups_from_dsl_declarations_are_closed_and_prefixed() -> None:
    t = Topology()
    t.add_source("s1", "a")
    t.add_source("s2", "r-repartition")
    t.add_source("s3", "c")
    t.add_internal_topic("r-repartition")
    t.copartition_sources(["s1", "s2"])
    t.copartition_sources(["s2", "s3"])
    assert t.copartition_groups("app") == [("a", "app-r-repartition", "c")]


def _same_supplier() -> Callable[[], object]:
    shared = object()
    return lambda: shared


def _base() -> Topology:
    t = Topology()
    t.add_source("src", "in")
    t.add_processor("proc", _noop, "src")
    t.add_sink("sink", "out", "proc")
    t.add_state_store(StoreSpec("store"), "proc")
    return t


ERRORS: list[tuple[Callable[[Topology], object], str]] = [
    (lambda t: t.add_source("src", "other"), "Invalid topology: Processor src is already added."),
    (lambda t: t.add_processor("proc", _noop, "src"), "Invalid topology: Processor proc is already added."),
    (lambda t: t.add_processor("p2", _noop, "nope"), "Invalid topology: Parent node nope is unknown."),
    (lambda t: t.add_processor("p2", _noop, "p2"), "Invalid topology: Parent node p2 is unknown (self-reference)."),
    (lambda t: t.add_processor("p2", _noop, "sink"), "Invalid topology: Sink sink cannot be used a parent."),
    (lambda t: t.add_processor("p2", _noop), "Invalid topology: predecessorNames cannot be empty"),
    (lambda t: t.add_source("s2"), "Invalid topology: topics cannot be empty"),
    (lambda t: t.add_source("s2", "in"), "Invalid topology: Topic in has already been registered by another source."),
    (
        lambda t: t.add_source("s2", pattern="i.*"),
        "Invalid topology: Pattern i.* will match a topic that has already been registered by another source.",
    ),
    (lambda t: t.add_state_store(StoreSpec(".checkpoint")), "Illegal store name: .checkpoint, which collides"),
    (
        lambda t: t.add_state_store(StoreSpec("store", logged=False)),
        "Invalid topology: A different StateStore has already been added with the name store",
    ),
    (lambda t: t.connect_processor_and_state_stores("proc", "nope"), "Invalid topology: StateStore nope is not added"),
    (
        lambda t: t.connect_processor_and_state_stores("ghost", "store"),
        "Invalid topology: Processor ghost is not added",
    ),
    (
        lambda t: t.connect_processor_and_state_stores("src", "store"),
        "Invalid topology: State stores cannot be connect to sources or sinks.",
    ),
    (lambda t: t.connect_processor_and_state_stores("proc"), "Invalid topology: stateStoreNames cannot be empty"),
    (lambda t: t.add_processor("p2", _same_supplier(), "src"), "generates single reference."),
    (
        lambda t: t.add_global_store(StoreSpec("g"), "gs", "in", "gp", _noop),
        "Invalid topology: Topic in has already been registered by another source.",
    ),
    (
        lambda t: t.add_global_store(StoreSpec("g"), "gs", "gt", "gs", _noop),
        "Invalid topology: sourceName and processorName must be different.",
    ),
    (
        lambda t: t.add_global_store(StoreSpec("store"), "gs", "gt", "gp", _noop),
        "Invalid topology: A different StateStore has already been added with the name store",
    ),
]


@pytest.mark.parametrize(("action", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_kafka_validation_messages(action: Callable[[Topology], object], message: str) -> None:
    with pytest.raises(TopologyError) as info:
        action(_base())
    assert message in str(info.value)


def test_global_store_cannot_be_connected_explicitly() -> None:
    t = _base()
    t.add_global_store(StoreSpec("g", logged=False), "gs", "gt", "gp", _noop)
    with pytest.raises(TopologyError, match="Global StateStore g can be used by a Processor without being specified"):
        t.connect_processor_and_state_stores("proc", "g")
    with pytest.raises(TopologyError, match="Topic gt has already been registered"):
        t.add_source("again", "gt")


def test_topic_matching_an_earlier_pattern_is_refused() -> None:
    t = Topology()
    t.add_source("p", pattern="ev-.*")
    with pytest.raises(TopologyError, match="Topic ev-1 matches a Pattern already registered by another source."):
        t.add_source("s", "ev-1")


def test_same_store_object_twice_is_compatible() -> None:
    t = _base()
    t.add_processor("p2", _noop, "src")
    t.add_state_store(StoreSpec("store"), "p2")
    assert t.stores_of("p2") == ("store",)
