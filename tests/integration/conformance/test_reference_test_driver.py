"""``streamproc.testing.TopologyTestDriver`` against Kafka's own ``TopologyTestDriver`` (kafka-streams-test-utils
4.2.2), program by program, on inputs generated from fixed seeds.

The programs are ``tests/driver_programs.py`` here and ``TestDriverRunner`` in the oracle project; the oracle's
``reference`` mode runs Kafka's driver on :func:`streamproc_dev.conformance.reference.driver_program_inputs` at test
time and every output record (key, value, timestamp, headers, order), store content, queue size and refusal must
be the same here. What each program shows: ``filter`` the input topic's clock and headers; ``counter`` stream-time
and wall-clock punctuation (due times, catch-up, key order); ``rekey`` a topic the topology both writes and reads,
and ``describe()``; ``fanout`` that a step's sends are all enqueued before the next record is chosen; ``pattern``
one offset counter for every topic a pattern source matches; ``idle`` ``max.task.idle.ms`` on the wall clock.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from streamproc.engine.stream_task import TaskConfig
from streamproc.errors import TopologyError
from streamproc.testing import TestOutputTopic, TestRecord, TopologyTestDriver
from streamproc_dev.conformance.reference import TEST_DRIVER_SEEDS, driver_program_inputs
from tests.driver_programs import (
    APP,
    LONG,
    STRING,
    KeyValueStore,
    config,
    counter_topology,
    fanout_topology,
    filter_topology,
    global_store_topology,
    pattern_topology,
    rekey_topology,
)

SEEDS = list(TEST_DRIVER_SEEDS)
INPUTS = {seed: driver_program_inputs(seed) for seed in SEEDS}


def kafka(answer: dict[str, Any], seed: int, program: str) -> dict[str, Any]:
    result: dict[str, Any] = answer["test_driver"][SEEDS.index(seed)][program]
    return result


def records(output: TestOutputTopic[Any, Any]) -> list[dict[str, Any]]:
    """Output records in the reference mode's shape."""
    return [
        {
            "key": r.key,
            "value": r.value,
            "timestamp": r.timestamp,
            "headers": [[k, None if v is None else v.decode("utf-8")] for k, v in r.headers],
        }
        for r in output.read_records_to_list()
    ]


def record(entry: list[Any]) -> TestRecord[Any, Any]:
    headers = tuple((k, v.encode("utf-8")) for k, v in (entry[3] if len(entry) > 3 else []))
    return TestRecord(entry[0], entry[1], entry[2], headers)


@pytest.mark.parametrize("seed", SEEDS)
def test_filter_keeps_the_input_clock_and_headers_like_kafka(kafka_reference: dict[str, Any], seed: int) -> None:
    given = INPUTS[seed]["filter"]
    with TopologyTestDriver(filter_topology(), config()) as driver:
        source = driver.create_input_topic(
            "in",
            STRING,
            STRING,
            start_timestamp_ms=given["start_timestamp_ms"],
            auto_advance_ms=given["auto_advance_ms"],
        )
        out = driver.create_output_topic("out", STRING, STRING)
        for entry in given["records"]:
            source.pipe_record(record(entry))
        assert records(out) == kafka(kafka_reference, seed, "filter")["out"]


@pytest.mark.parametrize("seed", SEEDS)
def test_counter_punctuates_like_kafka(kafka_reference: dict[str, Any], seed: int) -> None:
    given, java = INPUTS[seed]["counter"], kafka(kafka_reference, seed, "counter")
    t, _ = counter_topology()
    with TopologyTestDriver(t, config()) as driver:
        words = driver.create_input_topic("words", STRING, STRING)
        counts = driver.create_output_topic("counts", STRING, LONG)
        for key, timestamp in given["words"]:
            words.pipe_input(key, "x", timestamp)
        assert records(counts) == java["after_records"]
        after = []
        for advance in given["wall_clock_advances"]:
            driver.advance_wall_clock_time(advance)
            after.append(records(counts))
        assert after == java["after_each_advance"]
        store = driver.get_state_store("counts")
        assert isinstance(store, KeyValueStore)
        assert store.data == java["store"]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_topic_written_and_read_by_the_topology_like_kafka(kafka_reference: dict[str, Any], seed: int) -> None:
    java = kafka(kafka_reference, seed, "rekey")
    t, _ = rekey_topology()
    assert str(t) == java["describe"]
    with TopologyTestDriver(t, config()) as driver:
        orders = driver.create_input_topic("orders", STRING, STRING)
        for entry in INPUTS[seed]["rekey"]["orders"]:
            orders.pipe_record(record(entry))
        assert records(driver.create_output_topic("orders-by-customer", STRING, STRING)) == java["orders-by-customer"]
        assert records(driver.create_output_topic("totals", STRING, LONG)) == java["totals"]
        assert sorted(driver.produced_topic_names()) == java["produced_topic_names"]


@pytest.mark.parametrize("seed", SEEDS)
def test_sends_of_a_step_are_enqueued_before_the_next_record_like_kafka(
    kafka_reference: dict[str, Any], seed: int
) -> None:
    with TopologyTestDriver(fanout_topology(), config()) as driver:
        source = driver.create_input_topic("in", STRING, STRING)
        for entry in INPUTS[seed]["fanout"]["inputs"]:
            source.pipe_record(record(entry))
        assert (
            records(driver.create_output_topic("trace", STRING, STRING))
            == kafka(kafka_reference, seed, "fanout")["trace"]
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_a_pattern_source_like_kafka(kafka_reference: dict[str, Any], seed: int) -> None:
    java = kafka(kafka_reference, seed, "pattern")
    with TopologyTestDriver(pattern_topology(), config()) as driver:
        errors: list[str | None] = []
        for topic, key, value, timestamp in INPUTS[seed]["pattern"]["records"]:
            try:
                driver.create_input_topic(topic, STRING, STRING).pipe_input(key, value, timestamp)
                errors.append(None)
            except TopologyError as exc:
                errors.append(str(exc))
        assert [e is None for e in errors] == [e is None for e in java["errors"]]
        for mine, theirs in zip(errors, java["errors"], strict=True):
            assert mine is None or theirs in mine, "streamproc's refusal quotes Kafka's message"
        assert records(driver.create_output_topic("out", STRING, STRING)) == java["out"]


@pytest.mark.parametrize("seed", SEEDS)
def test_max_task_idle_ms_waits_for_the_wall_clock_like_kafka(kafka_reference: dict[str, Any], seed: int) -> None:
    given, java = INPUTS[seed]["idle"], kafka(kafka_reference, seed, "idle")
    with TopologyTestDriver(
        filter_topology("left", "right"), TaskConfig(application_id=APP, max_task_idle_ms=given["max_task_idle_ms"])
    ) as driver:
        out = driver.create_output_topic("out", STRING, STRING)
        left = driver.create_input_topic("left", STRING, STRING)
        for entry in given["left"]:
            left.pipe_record(record(entry))
        assert out.queue_size() == java["after_pipe"]
        sizes = []
        for advance in given["wall_clock_advances"]:
            driver.advance_wall_clock_time(advance)
            sizes.append(out.queue_size())
        assert sizes == java["after_each_advance"]
        assert records(out) == java["out"]


@pytest.mark.parametrize("handler", ["continue", "fail"])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_driver_drops_an_undecodable_global_record_whatever_the_handler_like_kafka(
    kafka_reference: dict[str, Any], seed: int, handler: str
) -> None:
    """``GlobalStateUpdateTask#update`` deserializes through a ``RecordDeserializer``: the handler drops the record
    (counted in ``dropped-records-total``) and the store keeps its value. Kafka's driver gives its global task a
    LogAndContinueExceptionHandler whatever the config says, so LogAndFail continues too (FINDINGS; a real app's
    GlobalStreamThread, like a Spark task, uses the configured handler: ``test_global_state_task.py``)."""
    from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler, LogAndFailExceptionHandler
    from streamproc.errors import StreamsError
    from streamproc.state.stores import KeyValueStore as StateKeyValueStore

    java = kafka(kafka_reference, seed, "global_store")[handler]
    chosen = LogAndContinueExceptionHandler() if handler == "continue" else LogAndFailExceptionHandler()
    piped, error = 0, None
    with TopologyTestDriver(
        global_store_topology(), TaskConfig(application_id=APP, deserialization_exception_handler=chosen)
    ) as driver:
        out = driver.create_output_topic("out", STRING, STRING)
        for topic, key, value, timestamp in INPUTS[seed]["global_store"]["records"]:
            try:
                driver.create_input_topic(topic, STRING, STRING).pipe_input(key, value, timestamp)
            except StreamsError as e:
                error = e.kafka_message
                break
            piped += 1
        store = driver.get_state_store("amounts")
        assert isinstance(store, StateKeyValueStore)
        assert (piped, error, records(out), dict(store.all()), len(driver.dropped_records())) == (
            java["piped"],
            java.get("error"),
            java["out"],
            java["store"],
            java["dropped"],
        )


def test_the_inputs_exercise_each_rule() -> None:
    """The seeds give late records, dropped and null-keyed records, refused topics and idling that both waits and
    ends, so that agreement with Kafka means something."""
    every = list(INPUTS.values())
    assert any(r[1] == "drop" for i in every for r in i["filter"]["records"])
    assert any(r[0] is None for i in every for r in i["filter"]["records"])
    assert any(r[2] is None for i in every for r in i["filter"]["records"])
    assert any(r[3] for i in every for r in i["filter"]["records"])
    assert any(any(b[1] < a[1] for a, b in itertools.pairwise(i["counter"]["words"])) for i in every)
    assert any(r[0] == "other" for i in every for r in i["pattern"]["records"])
    assert any(sum(i["idle"]["wall_clock_advances"]) >= i["idle"]["max_task_idle_ms"] for i in every)
    assert any(i["idle"]["wall_clock_advances"][0] < i["idle"]["max_task_idle_ms"] for i in every)
    undecodable = [len(r[2]) != 4 for i in every for r in i["global_store"]["records"] if r[0] == "amounts" and r[2]]
    assert any(undecodable) and not all(undecodable)
