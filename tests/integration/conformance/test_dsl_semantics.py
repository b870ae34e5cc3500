"""DSL programs give Kafka Streams' results: outputs and final store contents of ``tests/driver_programs.py``'s
``dsl_topology`` on streamproc's ``TopologyTestDriver`` equal those of its Java twin (``TestDriverRunner#dsl``) on
Kafka's own ``TopologyTestDriver``, seed by seed.

Kafka's record cache is off on the Java side (``statestore.cache.max.bytes=0``): with a cache, which of a key's
updates reach the output depends on when the cache is flushed (commit timing, cache size), which no replay can
reproduce; without it every update is forwarded, which is what streamproc does. Covered here: filter, map_values,
map, to, group_by_key (with and without a repartition topic), count, aggregate, a source KTable with tombstones and
null keys, to_stream, and describe().
"""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.engine.stream_task import TaskConfig
from streamproc.testing import TestRecord, TopologyTestDriver
from streamproc_dev.conformance.reference import TEST_DRIVER_SEEDS, driver_program_inputs
from tests.driver_programs import (
    APP,
    LONG,
    STRING,
    dsl_joins_topology,
    dsl_more_topology,
    dsl_topology,
    dsl_windows_topology,
)

SEEDS = list(TEST_DRIVER_SEEDS)


def _records(driver: TopologyTestDriver, topic: str, value_serde: Any) -> list[dict[str, Any]]:
    return [
        {"key": r.key, "value": r.value, "timestamp": r.timestamp, "headers": []}
        for r in driver.create_output_topic(topic, STRING, value_serde).read_records_to_list()
    ]


@pytest.mark.parametrize("seed", SEEDS)
def test_dsl_program_outputs_and_stores_equal_kafkas(kafka_reference: dict[str, Any], seed: int) -> None:
    java = kafka_reference["test_driver"][SEEDS.index(seed)]["dsl"]
    inputs = driver_program_inputs(seed)["dsl"]["records"]
    topology = dsl_topology()
    assert str(topology.describe()) == java["describe"]
    with TopologyTestDriver(
        topology, TaskConfig(application_id=APP), default_key_serde=STRING, default_value_serde=STRING
    ) as driver:
        topics = {"in": driver.create_input_topic("dsl-in", STRING, STRING)}
        topics["table"] = driver.create_input_topic("dsl-table", STRING, STRING)
        for topic, key, value, timestamp in inputs:
            topics[topic].pipe_record(TestRecord(key, value, timestamp=timestamp))
        assert _records(driver, "dsl-mapped", STRING) == java["dsl-mapped"]
        assert _records(driver, "dsl-counts-out", LONG) == java["dsl-counts-out"]
        assert _records(driver, "dsl-agg-out", STRING) == java["dsl-agg-out"]
        assert _records(driver, "dsl-table-out", STRING) == java["dsl-table-out"]
        for name, expected in java["stores"].items():
            store: Any = driver.get_state_store(name)
            assert {str(k): [v.value, v.timestamp] for k, v in store.all()} == expected, name


@pytest.mark.parametrize("seed", SEEDS)
def test_dsl_joins_windows_and_tables_equal_kafkas(kafka_reference: dict[str, Any], seed: int) -> None:
    """Stream-table left join, a tumbling window count with grace (late records dropped), KTable filter and
    map_values, KTable group_by + count (subtracting old values), a table-table join and a stream-stream left join
    (its null-partner results when the window closes)."""
    java = kafka_reference["test_driver"][SEEDS.index(seed)]["dsl_joins"]
    inputs = driver_program_inputs(seed)["dsl_joins"]["records"]
    topology = dsl_joins_topology()
    assert str(topology.describe()) == java["describe"]
    with TopologyTestDriver(
        topology, TaskConfig(application_id=APP), default_key_serde=STRING, default_value_serde=STRING
    ) as driver:
        topics = {
            t: driver.create_input_topic(t, STRING, STRING)
            for t in ("j-orders", "j-payments", "j-customers", "j-regions")
        }
        for topic, key, value, timestamp in inputs:
            topics[topic].pipe_record(TestRecord(key, value, timestamp=timestamp))
        for topic in ("j-enriched", "j-customers-out", "j-customer-regions", "j-paid"):
            assert _records(driver, topic, STRING) == java[topic], topic
        for topic in ("j-windowed", "j-by-name"):
            assert _records(driver, topic, LONG) == java[topic], topic


@pytest.mark.parametrize("seed", SEEDS)
def test_dsl_branches_sessions_and_outer_joins_equal_kafkas(kafka_reference: dict[str, Any], seed: int) -> None:
    """split/branch, flat_map, merge, repartition, a session-window count (merges, grace), KTable group_by reduce
    (adder and subtractor), table-table left and outer joins, a stream-stream outer join."""
    java = kafka_reference["test_driver"][SEEDS.index(seed)]["dsl_more"]
    inputs = driver_program_inputs(seed)["dsl_more"]["records"]
    topology = dsl_more_topology()
    assert str(topology.describe()) == java["describe"]
    with TopologyTestDriver(
        topology, TaskConfig(application_id=APP), default_key_serde=STRING, default_value_serde=STRING
    ) as driver:
        topics = {t: driver.create_input_topic(t, STRING, STRING) for t in ("m-events", "m-other", "m-left", "m-right")}
        for topic, key, value, timestamp in inputs:
            topics[topic].pipe_record(TestRecord(key, value, timestamp=timestamp))
        for topic in ("m-merged", "m-reduced", "m-left-join", "m-outer-join", "m-stream-outer"):
            assert _records(driver, topic, STRING) == java[topic], topic
        assert _records(driver, "m-sessions", LONG) == java["m-sessions"]


@pytest.mark.parametrize("seed", SEEDS)
def test_dsl_sliding_windows_and_suppress_equal_kafkas(kafka_reference: dict[str, Any], seed: int) -> None:
    """A sliding-window count, a tumbling count suppressed until its window closes (final results only) and a count
    suppressed until a time limit."""
    java = kafka_reference["test_driver"][SEEDS.index(seed)]["dsl_windows"]
    topology = dsl_windows_topology()
    assert str(topology.describe()) == java["describe"]
    with TopologyTestDriver(
        topology, TaskConfig(application_id=APP), default_key_serde=STRING, default_value_serde=STRING
    ) as driver:
        source = driver.create_input_topic("w-in", STRING, STRING)
        for key, value, timestamp in driver_program_inputs(seed)["dsl_windows"]["records"]:
            source.pipe_record(TestRecord(key, value, timestamp=timestamp))
        for topic in ("w-sliding", "w-final", "w-limited"):
            assert _records(driver, topic, LONG) == java[topic], topic
