"""``streamproc.testing.TopologyTestDriver``: its own rules (refusals, task layout, internal topic names).

What Kafka's ``TopologyTestDriver`` outputs for the same programs is not written here: Kafka's driver computes it at
test time on generated inputs (``tests/integration/conformance/test_reference_test_driver.py``, the oracle's
``reference`` mode). The programs live in ``tests/driver_programs.py``.
"""

from __future__ import annotations

import pytest

from streamproc import TopologyTestDriver as ExportedDriver
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import StoreSpec, Topology
from streamproc.errors import ConfigError, StreamsError, TopologyError
from streamproc.testing import TASK_ID, NoSuchRecord, TopologyTestDriver
from tests.driver_programs import (
    APP,
    LONG,
    STRING,
    Counter,
    Filter,
    KeyValueStore,
    config,
    filter_topology,
    rekey_topology,
    strings,
)


def test_the_driver_is_exported_from_the_package() -> None:
    assert ExportedDriver is TopologyTestDriver


def test_internal_repartition_topics_are_prefixed_with_the_application_id() -> None:
    t, _ = rekey_topology(internal=True)
    with TopologyTestDriver(t, config()) as driver:
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "alice:10", 1)
        assert driver.produced_topic_names() == {f"{APP}-orders-by-customer-repartition", "totals"}
        assert driver.create_output_topic("totals", STRING, LONG).read_key_value() == ("alice", 10)


def test_unknown_input_topic_is_refused() -> None:
    t, _ = rekey_topology()
    with TopologyTestDriver(t, config()) as driver, pytest.raises(TopologyError, match="Unknown topic: nope"):
        driver.create_input_topic("nope", STRING, STRING).pipe_input("k", "v", 0)


def test_a_fatal_processing_error_reaches_the_test() -> None:
    t, _ = rekey_topology()
    with TopologyTestDriver(t, config()) as driver, pytest.raises(StreamsError) as caught:
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "no-colon", 4)
    assert caught.value.topic == "orders"
    assert caught.value.offset == 0
    assert caught.value.task_id == "0_0"


def test_missing_serde_names_the_default_serdeconfig() -> None:
    t = Topology()
    t.add_source("src", "in")
    t.add_processor("filter", Filter, "src")
    with pytest.raises(ConfigError, match=r"default\.key\.serde"):
        TopologyTestDriver(t, config())
    with TopologyTestDriver(t, config(), default_key_serde=STRING, default_value_serde=STRING) as driver:
        driver.create_input_topic("in", STRING, STRING).pipe_input("k", "v", 0)


def test_a_store_added_as_a_spec_cannot_run() -> None:
    t = Topology()
    strings(t, "src", "words")
    t.add_processor("count", Counter, "src")
    t.add_state_store(StoreSpec("counts"), "count")
    with pytest.raises(TopologyError, match="cannot build a store"):
        TopologyTestDriver(t, config())


def test_with_partition_counts_each_task_gets_the_partition_murmur2_gives() -> None:
    """The real task layout: sub-topology 1 has three tasks, each with its own ``totals`` store; a re-keyed record
    lands in the task of ``murmur2(key) % 3``, so each customer's total lives in exactly one task."""
    t, builder = rekey_topology()
    counts = {"orders": 2, "orders-by-customer": 3, "totals": 3}
    with TopologyTestDriver(t, config(), partition_counts=counts) as driver:
        assert driver.task_ids == (TaskId(0, 0), TaskId(0, 1), TaskId(1, 0), TaskId(1, 1), TaskId(1, 2))
        orders = driver.create_input_topic("orders", STRING, STRING)
        orders.pipe_input("o1", "alice:10", 1)
        orders.pipe_input("o2", "bob:5", 2)
        orders.pipe_input("o3", "alice:7", 3)
        assert driver.create_output_topic("totals", STRING, LONG).read_key_values_to_list() == [
            ("alice", 10),
            ("bob", 5),
            ("alice", 17),
        ]
        for customer, total in (("alice", 17), ("bob", 5)):
            owner = TaskId(1, partition_for_key(customer.encode(), 3))
            store = driver.get_state_store("totals", owner)
            assert isinstance(store, KeyValueStore)
            assert store.data[customer] == total
        with pytest.raises(TopologyError, match="pass task_id"):
            driver.get_state_store("totals")
        with pytest.raises(ConfigError, match="null key"):
            orders.pipe_value("carol:1")
    assert len(builder.built) == 3


def test_a_closed_driver_refuses_input() -> None:
    t, _ = rekey_topology()
    driver = TopologyTestDriver(t, config())
    source = driver.create_input_topic("orders", STRING, STRING)
    driver.close()
    with pytest.raises(Exception, match="closed"):
        source.pipe_input("o1", "alice:1", 0)


def test_reading_an_empty_or_unknown_output_topic_is_refused() -> None:
    with TopologyTestDriver(filter_topology(), config()) as driver:
        out = driver.create_output_topic("out", STRING, STRING)
        driver.create_input_topic("in", STRING, STRING).pipe_input("k", "v", 0)
        assert out.read_key_value() == ("k", "v")
        assert out.is_empty()
        with pytest.raises(NoSuchRecord, match="Empty topic: out"):
            out.read_record()
        with pytest.raises(NoSuchRecord, match="Uninitialized topic: nowhere"):
            driver.create_output_topic("nowhere", STRING, STRING).read_value()


def test_two_sub_topologies_run_as_one_task_with_one_store() -> None:
    """Without partition counts every sub-topology is task 0_0, as in Kafka's driver: one store is built."""
    t, builder = rekey_topology()
    with TopologyTestDriver(t, config()) as driver:
        assert driver.task_ids == (TASK_ID,)
        driver.create_input_topic("orders", STRING, STRING).pipe_input("o1", "alice:10", 1)
    assert len(builder.built) == 1
