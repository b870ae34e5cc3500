"""From a ``Topology`` to runtime graphs, stores and tasks (``topology_builder.py``, ``Topology.tasks``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, RecordCollector, SinkNode, SourceNode
from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import StoreSpec, Topology
from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_builder import RoutingSinkNode, StoreBuilder, analyze_topology
from streamproc.errors import ConfigError, TopologyError

STRING = serde_for("String")
APP = "app"
REPARTITION = "KSTREAM-KEY-SELECT-0000000001-repartition"
FULL_REPARTITION = f"{APP}-{REPARTITION}"


class Rekey(Processor):
    """``selectKey``: the value becomes the key."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_key(record.value))


class Forward(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


@dataclass
class DictStoreBuilder:
    name: str
    logging_enabled: bool = True
    built: list[dict[str, Any]] = field(default_factory=list)

    def build(self) -> dict[str, Any]:
        store: dict[str, Any] = {}
        self.built.append(store)
        return store


def _strings(t: Topology, name: str, *topics: str) -> None:
    t.add_source(name, *topics, key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)


def _sink(t: Topology, name: str, topic: str | Callable[..., str], parent: str, **kwargs: Any) -> None:
    t.add_sink(name, topic, parent, key_serializer=STRING.serializer, value_serializer=STRING.serializer, **kwargs)


def two_subtopologies(repartition_count: int | None = None) -> tuple[Topology, DictStoreBuilder]:
    """``stream("orders").selectKey(...).repartition(...)`` then a stateful processor, as the DSL lays it out;
    ``repartition_count`` is ``Repartitioned#withNumberOfPartitions``."""
    t = Topology()
    store = DictStoreBuilder("store")
    t.add_internal_topic(REPARTITION, repartition_count)
    _strings(t, "KSTREAM-SOURCE-0000000000", "orders")
    t.add_processor("KSTREAM-KEY-SELECT-0000000001", Rekey, "KSTREAM-SOURCE-0000000000")
    _sink(t, "KSTREAM-SINK-0000000002", REPARTITION, "KSTREAM-KEY-SELECT-0000000001")
    _strings(t, "KSTREAM-SOURCE-0000000003", REPARTITION)
    t.add_processor("KSTREAM-PROCESSOR-0000000004", Forward, "KSTREAM-SOURCE-0000000003")
    t.add_state_store(store, "KSTREAM-PROCESSOR-0000000004")
    _sink(t, "KSTREAM-SINK-0000000005", "out", "KSTREAM-PROCESSOR-0000000004")
    return t, store


@pytest.mark.parametrize(
    ("counts", "explicit"),
    [
        ({"orders": 1, FULL_REPARTITION: 1, "out": 1}, None),
        ({"orders": 3, FULL_REPARTITION: 3, "out": 2}, None),
        ({"orders": 2, FULL_REPARTITION: 5, "out": 1}, 5),
        ({"orders": 4, FULL_REPARTITION: 1, "out": 7}, 1),
        ({"orders": 6, "out": 1}, None),
    ],
)
def test_tasks_match_analyze(counts: dict[str, int], explicit: int | None) -> None:
    t, _ = two_subtopologies(explicit)
    if FULL_REPARTITION not in counts:
        with pytest.raises(TopologyError, match="internal topics"):
            t.tasks(counts, application_id=APP)
        return
    explicit_counts = {} if explicit is None else {FULL_REPARTITION: explicit}
    expected = analyze(t.describe(), APP, counts, explicit_repartition_counts=explicit_counts).tasks
    actual = t.tasks(counts, application_id=APP)
    assert {task: tuple((p.topic, p.partition) for p in parts) for task, parts in actual.items()} == dict(expected)
    assert list(actual) == sorted(actual)
    assert actual[TaskId(1, 0)] == (TopicPartition(FULL_REPARTITION, 0),)
    assert len([task for task in actual if task.subtopology == 0]) == counts["orders"]


def test_build_processor_topology_is_one_subtopology_in_insertion_order() -> None:
    t, _ = two_subtopologies()
    upstream = t.build_processor_topology(0, application_id=APP)
    downstream = t.build_processor_topology(1, application_id=APP)
    assert [n.name for n in upstream.nodes] == [
        "KSTREAM-SOURCE-0000000000",
        "KSTREAM-KEY-SELECT-0000000001",
        "KSTREAM-SINK-0000000002",
    ]
    assert upstream.source_topics == ("orders",)
    sink = upstream.nodes[2]
    assert isinstance(sink, SinkNode)
    assert sink.topic == FULL_REPARTITION
    assert downstream.source_topics == (FULL_REPARTITION,)
    assert [c.name for c in downstream.nodes[0].children] == ["KSTREAM-PROCESSOR-0000000004"]
    whole = t.build_processor_topology(None, application_id=APP)
    assert [n.name for n in whole.nodes] == [spec.name for spec in t.nodes]


def test_internal_topics_need_an_application_id() -> None:
    t, _ = two_subtopologies()
    with pytest.raises(ConfigError, match="application_id"):
        t.build_processor_topology(0)


def test_each_build_has_fresh_processor_instances() -> None:
    t, store = two_subtopologies()
    first = t.build_processor_topology(1, application_id=APP)
    second = t.build_processor_topology(1, application_id=APP)
    processors = [n.processor for n in (first.nodes[1], second.nodes[1])]
    assert all(isinstance(p, Forward) for p in processors)
    assert processors[0] is not processors[1]
    stores = [t.build_stores(1), t.build_stores(1)]
    assert stores[0]["store"] is not stores[1]["store"]
    assert len(store.built) == 2
    assert t.build_stores(0) == {}
    assert isinstance(store, StoreBuilder)
    assert t.store_builders(1) == {"store": store}
    assert len(store.built) == 2


def test_changelog_topics_of_logged_stores() -> None:
    t, _ = two_subtopologies()
    assert t.changelog_topics(1, APP) == {"store": f"{APP}-store-changelog"}
    t.add_state_store(DictStoreBuilder("quiet", logging_enabled=False), "KSTREAM-PROCESSOR-0000000004")
    t.add_state_store(StoreSpec("spec", logged=False), "KSTREAM-PROCESSOR-0000000004")
    assert t.changelog_topics(1, APP) == {"store": f"{APP}-store-changelog"}


def _raw(topic: str, partition: int, offset: int, timestamp: int, key: str, value: str) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord.raw(topic, partition, offset, timestamp, key.encode(), value.encode())


def test_sink_records_carry_the_partition_murmur2_gives() -> None:
    """One ``StreamTask`` per ``TaskId`` of sub-topology 0, replayed; the repartition sink's records are in the
    partition ``toPositive(murmur2(key)) % n`` of the repartition topic, as the producer would put them."""
    t, _ = two_subtopologies(4)
    counts = {"orders": 2, FULL_REPARTITION: 4, "out": 1}
    analysis = analyze_topology(t, APP, counts)
    values = ["alice", "bob", "carol", "dave", "erin"]
    sent: list[tuple[str | None, int | None]] = []
    for task_id, partitions in t.tasks(counts, application_id=APP).items():
        if task_id.subtopology != 0:
            continue
        collector = RecordCollector({**counts, **analysis.internal_topics})
        task = StreamTask(
            task_id,
            t.build_processor_topology(0, analysis=analysis),
            partitions,
            config=TaskConfig(application_id=APP),
            stores=t.build_stores(0),
            collector=collector,
        )
        (partition,) = partitions
        records = [_raw("orders", partition.partition, i, i, "k", v) for i, v in enumerate(values)]
        result = replay(task, [PartitionInput(partition, records)])
        assert result.records_processed == len(values)
        sent.extend((r.topic, r.partition) for r in collector.records)
        assert [r.key for r in collector.records] == [v.encode() for v in values]
    expected = [(FULL_REPARTITION, partition_for_key(v.encode(), 4)) for v in values]
    assert sent == expected * 2
    assert len({p for _, p in sent}) > 1


def test_null_keys_are_left_to_the_producer() -> None:
    t = Topology()
    _strings(t, "src", "in")
    t.add_processor("p", Forward, "src")
    _sink(t, "sink", "out", "p")
    collector = RecordCollector({"in": 1, "out": 3})
    task = StreamTask(TaskId(0, 0), t.build_processor_topology(0), [TopicPartition("in", 0)], collector=collector)
    replay(task, [PartitionInput(TopicPartition("in", 0), [ConsumerRecord.raw("in", 0, 0, 1, None, b"v")])])
    assert [r.partition for r in collector.records] == [None]


def test_topic_name_extractor_and_stream_partitioner() -> None:
    """A dynamic sink picks its topic per record from key, value and a context with the record's timestamp; a
    ``StreamPartitioner`` sees deserialized key and value and may multicast to a set of partitions."""
    seen: list[tuple[Any, Any, int]] = []

    def route(key: Any, value: Any, context: ProcessorRecordContext) -> str:
        seen.append((key, value, context.timestamp))
        return f"out-{value}"

    class Everywhere:
        def partitions(self, topic: str, key: Any, value: Any, num_partitions: int) -> set[int]:
            return set(range(num_partitions)) if key == "all" else {num_partitions - 1}

    t = Topology()
    _strings(t, "src", "in")
    t.add_processor("p", Forward, "src")
    _sink(t, "sink", route, "p", partitioner=Everywhere())
    graph = t.build_processor_topology(0)
    assert isinstance(graph.nodes[2], RoutingSinkNode)
    collector = RecordCollector({"in": 1, "out-a": 2, "out-b": 3})
    task = StreamTask(TaskId(0, 0), graph, [TopicPartition("in", 0)], collector=collector)
    replay(
        task,
        [PartitionInput(TopicPartition("in", 0), [_raw("in", 0, 0, 7, "all", "a"), _raw("in", 0, 1, 8, "one", "b")])],
    )
    assert [(r.topic, r.partition) for r in collector.records] == [("out-a", 0), ("out-a", 1), ("out-b", 2)]
    assert seen == [("all", "a", 7), ("one", "b", 8)]


def test_pattern_sources_read_the_resolved_topics_or_the_pattern() -> None:
    t = Topology()
    t.add_source("src", pattern="events-.*", key_deserializer=STRING, value_deserializer=STRING)
    t.add_processor("p", Forward, "src")
    assert t.build_processor_topology(0).source_topics == ("events-.*",)
    counts = {"events-eu": 3, "events-us": 2, "other": 1}
    analysis = analyze_topology(t, APP, counts)
    graph = t.build_processor_topology(0, analysis=analysis)
    assert graph.source_topics == ("events-eu", "events-us")
    assert t.tasks(counts, application_id=APP)[TaskId(0, 2)] == (TopicPartition("events-eu", 2),)


def test_unknown_and_global_subtopologies_are_refused() -> None:
    t = Topology()
    t.add_global_store(StoreSpec("g", logged=False), "gsrc", "global", "gproc", lambda: Forward())
    _strings(t, "src", "in")
    t.add_processor("p", Forward, "src")
    with pytest.raises(TopologyError, match=r"sub-topologies are \[1\]"):
        t.build_processor_topology(0)
    with pytest.raises(TopologyError, match="sub-topology 7"):
        t.build_stores(7)
    assert [n.name for n in t.build_processor_topology(None).nodes] == ["src", "p"]


def test_a_supplier_must_return_a_processor() -> None:
    t = Topology()
    _strings(t, "src", "in")
    t.add_processor("p", lambda: object(), "src")
    with pytest.raises(TopologyError, match="has no process"):
        t.build_processor_topology(0)


def test_runtime_nodes_are_kafkas_node_kinds() -> None:
    t, _ = two_subtopologies()
    graph = t.build_processor_topology(1, application_id=APP)
    assert [type(n) for n in graph.nodes] == [SourceNode, ProcessorNode, SinkNode]
