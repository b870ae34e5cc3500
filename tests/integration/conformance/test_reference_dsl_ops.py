"""The DSL's stateful processors (``streamproc.dsl.internals``) against Kafka Streams' own, program by program.

Each program of :mod:`tests.integration.conformance.dsl_ops_programs` is written twice: with Kafka's
``StreamsBuilder`` in the oracle (``DslOpsRunner``, run on Kafka's ``TopologyTestDriver`` with the record cache off)
and with the Processor API from our processors under the store names Kafka generates. On inputs generated from
fixed seeds (out-of-order and late records, null keys and values, tombstones, repeated keys) every output record
(key, value, timestamp, order; windowed keys with their window start/end) and the final store contents must be
Kafka's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology import Topology
from streamproc.state.stores import SessionStore, TimestampedKeyValueStore, WindowStore
from streamproc.testing import TestRecord, TopologyTestDriver
from streamproc_dev.conformance.reference import run_reference
from tests.integration.conformance.dsl_ops_programs import (
    REPARTITION_COPY,
    SEEDS,
    STRING,
    count_topology,
    dsl_ops_inputs,
    session_topology,
    sliding_topology,
    stream_stream_join_topology,
    stream_table_join_topology,
    table_ops_topology,
    table_suppress_topology,
    table_table_join_topology,
    window_topology,
    windowed_text,
)

INPUTS = {seed: dsl_ops_inputs(seed) for seed in SEEDS}


@pytest.fixture(scope="module")
def kafka_dsl_ops() -> dict[int, dict[str, Any]]:
    """Kafka's answers for every seed (one oracle run)."""
    answer = run_reference({"dsl_ops": [INPUTS[seed] for seed in SEEDS]})
    return dict(zip(SEEDS, answer["dsl_ops"], strict=True))


def run(topology: Topology, inputs: list[list[Any]]) -> tuple[list[list[Any]], TopologyTestDriver]:
    driver = TopologyTestDriver(topology, TaskConfig(application_id="dsl-ops-app"))
    for topic, key, value, timestamp in inputs:
        driver.create_input_topic(topic, STRING, STRING).pipe_record(TestRecord(key, value, timestamp))
    out = driver.create_output_topic("out", STRING, STRING)
    return [[r.key, r.value, r.timestamp] for r in out.read_records_to_list()], driver


def check(
    kafka: dict[str, Any], program: str, topology: Topology, params: dict[str, Any], stores: Callable[..., Any]
) -> None:
    out, driver = run(topology, params["inputs"])
    with driver:
        expected = kafka[program]
        context = f"{program} {params}\nKafka's topology:\n{expected['describe']}"
        assert out == expected["out"], context
        drops = driver.dropped_records()
        assert len(drops) == expected["dropped"], f"dropped records {drops}: {context}"
        stores(driver, expected, context)


def timestamped_window_contents(driver: TopologyTestDriver, name: str) -> list[list[Any]]:
    store = driver.get_state_store(name)
    assert isinstance(store, WindowStore)
    return [[windowed_text(k), None if v is None else str(v.value), v.timestamp] for k, v in store.all()]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("program", ["window_count", "window_reduce"])
def test_time_window_aggregate_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int, program: str) -> None:
    params = INPUTS[seed][program]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        assert timestamped_window_contents(driver, params["store"]) == expected["store"], context

    topology = window_topology(params, reduce=program == "window_reduce")
    check(kafka_dsl_ops[seed], program, topology, params, stores)


@pytest.mark.parametrize("seed", SEEDS)
def test_session_window_aggregate_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["session"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        store = driver.get_state_store(params["store"])
        assert isinstance(store, SessionStore)
        keys = sorted({entry[1] for entry in params["inputs"] if entry[1] is not None})
        contents = [[windowed_text(k), v] for key in keys for k, v in store.fetch(key)]
        assert contents == expected["store"], context
        fetched = [[text, store.fetch_session(*_session(text))] for text, _ in expected["fetch_session"]]
        assert fetched == expected["fetch_session"], context

    check(kafka_dsl_ops[seed], "session", session_topology(params), params, stores)


def _session(text: str) -> tuple[str, int, int]:
    """A windowed key's text (``key@start/end``) as ``fetch_session``'s arguments."""
    key, _, window = text.rpartition("@")
    start, _, end = window.partition("/")
    return key, int(start), int(end)


@pytest.mark.parametrize("seed", SEEDS)
def test_sliding_window_aggregate_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["sliding"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        assert timestamped_window_contents(driver, params["store"]) == expected["store"], context

    check(kafka_dsl_ops[seed], "sliding", sliding_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
def test_count_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["count"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        store = driver.get_state_store(params["store"])
        assert isinstance(store, TimestampedKeyValueStore)
        assert [[k, str(v.value), v.timestamp] for k, v in store.all()] == expected["store"], context

    check(kafka_dsl_ops[seed], "count", count_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_stream_stream_join_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int, kind: str) -> None:
    params = INPUTS[seed][f"join_{kind}"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        for name in params["stores"]:
            store = driver.get_state_store(name)
            assert isinstance(store, WindowStore)
            contents = [[windowed_text(k), v] for k, v in store.all()]
            assert contents == expected["stores"][name], f"store {name}: {context}"

    check(kafka_dsl_ops[seed], f"join_{kind}", stream_stream_join_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
def test_stream_table_join_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["stream_table_join"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        store = driver.get_state_store(params["store"])
        assert isinstance(store, TimestampedKeyValueStore)
        assert [[k, v.value, v.timestamp] for k, v in store.all()] == expected["store"], context

    check(kafka_dsl_ops[seed], "stream_table_join", stream_table_join_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
def test_suppress_until_window_closes_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["window_suppress"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        assert timestamped_window_contents(driver, params["store"]) == expected["store"], context

    check(kafka_dsl_ops[seed], "window_suppress", window_topology(params, reduce=False), params, stores)


def kv_contents(driver: TopologyTestDriver, name: str) -> list[list[Any]]:
    store = driver.get_state_store(name)
    assert isinstance(store, TimestampedKeyValueStore), name
    return [[k, v.value, v.timestamp] for k, v in store.all()]


@pytest.mark.parametrize("seed", SEEDS)
def test_table_filter_map_values_group_by_aggregate_equal_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["table_ops"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        out2 = driver.create_output_topic("out2", STRING, STRING)
        assert [[r.key, r.value, r.timestamp] for r in out2.read_records_to_list()] == expected["out2"], context
        for name in params["stores"]:
            assert kv_contents(driver, name) == expected["stores"][name], f"store {name}: {context}"
        copy = driver.create_output_topic(REPARTITION_COPY, STRING, lambda topic, data: data)
        sent = [[r.key, r.value.hex(), r.timestamp] for r in copy.read_records_to_list()]
        assert sent == expected["repartition"], f"repartition topic bytes: {context}"

    check(kafka_dsl_ops[seed], "table_ops", table_ops_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["inner", "left", "outer"])
def test_table_table_join_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int, kind: str) -> None:
    params = INPUTS[seed][f"table_join_{kind}"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        for name in params["stores"]:
            assert kv_contents(driver, name) == expected["stores"][name], f"store {name}: {context}"

    check(kafka_dsl_ops[seed], f"table_join_{kind}", table_table_join_topology(params), params, stores)


@pytest.mark.parametrize("seed", SEEDS)
def test_suppress_until_time_limit_equals_kafka(kafka_dsl_ops: dict[int, Any], seed: int) -> None:
    params = INPUTS[seed]["table_suppress"]

    def stores(driver: TopologyTestDriver, expected: dict[str, Any], context: str) -> None:
        for name in params["stores"]:
            assert kv_contents(driver, name) == expected["stores"][name], f"store {name}: {context}"

    check(kafka_dsl_ops[seed], "table_suppress", table_suppress_topology(params), params, stores)
