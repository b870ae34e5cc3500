"""Build-time rules of the DSL that the side-by-side programs do not show."""

from __future__ import annotations

import pytest

from streamproc.dsl import Consumed, Materialized, StreamsBuilder
from streamproc.dsl.internals.processors import operator_supplier
from streamproc.errors import ConfigError, ProcessingError, TopologyError


def test_topology_optimization_accepts_kafkas_values_only() -> None:
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    with pytest.raises(ConfigError, match="Invalid value everything for configuration topology.optimization"):
        builder.build({"topology.optimization": "everything"})


def test_a_built_program_cannot_grow() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.to("out")
    builder.build()
    with pytest.raises(TopologyError, match="already built"):
        stream.to("later")


def test_foreign_key_table_joins_are_refused_clearly() -> None:
    builder = StreamsBuilder()
    orders = builder.table("orders")
    customers = builder.table("customers")
    with pytest.raises(TopologyError, match="foreign-key KTable joins .* not supported"):
        orders.join(customers, lambda order: order, lambda o, c: o + c)


def test_unnamed_table_is_not_materialized_until_a_join_needs_it() -> None:
    builder = StreamsBuilder()
    builder.table("t", Consumed()).to_stream().to("out")
    assert "(stores: [])" in str(builder.build().describe())


def test_a_store_name_is_validated_like_a_processor_name() -> None:
    with pytest.raises(TopologyError, match='Name "a b" is illegal'):
        Materialized.as_("a b")


def test_default_serdes_fill_stores_the_program_left_without_serdes() -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().aggregate(lambda: "", lambda k, v, a: a + v).to_stream().to("out")
    topology = builder.build({"default.key.serde": "String", "default.value.serde": "String"})
    (store,) = topology.store_builders(None).values()
    assert store.key_serde is not None and store.value_serde is not None


def test_an_operator_without_a_processor_builds_but_refuses_to_run() -> None:
    processor = operator_supplier("no_such_module", "KTableNothing", "KTABLE-NOTHING-0000000001")()
    with pytest.raises(ProcessingError, match="KTABLE-NOTHING-0000000001: the DSL operator KTableNothing"):
        processor.init(None)  # type: ignore[arg-type]
