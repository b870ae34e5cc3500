"""A deterministic driver for a :class:`~streamproc.engine.topology.Topology`: no broker, no Spark.

Mirrors ``org.apache.kafka.streams.TopologyTestDriver``, ``TestInputTopic``, ``TestOutputTopic`` and
``test.TestRecord`` of kafka-streams-test-utils (read against 4.2.0): pipe records into input topics through
serializers, read output topics through deserializers, move the mocked wall clock, look at state stores.

What ``TopologyTestDriver`` does, and this driver with it (default, ``partition_counts=None``):

- One task, ``TaskId(0, 0)`` (``TASK_ID``), runs *every* non-global sub-topology at once
  (``InternalTopologyBuilder#buildTopology``), reading partition 0 of each source topic; every topic has one
  partition. So all sub-topologies share one ``PartitionGroup`` and one stream time.
- Piping a record assigns it the next offset of its partition, adds it to the task, then runs
  ``completeAllProcessableWork``: while the task has buffered records and is processable, process one record,
  run one stream-time punctuation check, and capture what the sinks sent.
- Captured records are kept per topic for the output topics, and a record sent to a topic the topology reads
  (a repartition topic, or any source topic) is added back to the task's queue at once
  (``captureOutputsAndReEnqueueInternalResults``). It is processed before the next piped record, but **not**
  depth-first: every record one step sent is enqueued first, then the task's ``PartitionGroup`` picks the next record
  by head timestamp, ties in heap order (ordering.md PG-1, PG-4). With two records of equal timestamps sent to one
  repartition topic, both are processed before the records the first one causes downstream.
- ``advance_wall_clock_time`` moves the mocked clock, runs one wall-clock punctuation check, then the same
  processing loop. Stream-time punctuation runs after each processed record, never on its own.

With ``partition_counts`` the driver instead builds the real task layout (``Topology.tasks``): one task per
``TaskId``, each with its own sub-topology graph, stores and stream time. A record piped or sent to a topic of
several partitions goes to the partition the sink's partitioner chose, else to murmur2 of its serialized key
(``BuiltInPartitioner``); a null key needs an explicit partition. Tasks take turns, one record each, in
``TaskId`` order, until none has a record (``TaskExecutor#process`` with one iteration per task); Kafka Streams
itself has no deterministic order across tasks.

Global stores (``GlobalStateUpdateTask``): a record piped to a global topic (or sent to one by a sink) gets the next
offset of its one partition and goes straight through the store's source and state-update processor, synchronously,
before ``pipe`` returns; no stream task runs for it (``TopologyTestDriver#processGlobalRecord``). Every task reads the
same global store instances; ``get_state_store`` finds them too; the global processor's drops count in
``dropped_records`` (task ``-1_-1``). A global record the source cannot deserialize is dropped whatever
``deserialization.exception.handler`` says: Kafka's driver gives its global task a ``LogAndContinueExceptionHandler``.

Not covered yet: state-store caching and its flush on commit, exactly-once commits. The wall clock starts at
``initial_wall_clock_time_ms`` (default 0, where Kafka's driver reads the system clock), so runs are reproducible.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.global_state_task import GlobalStateUpdateTask, read_only_view
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor_topology import CollectedRecord, ProcessorTopology, RecordCollector, SinkNode
from streamproc.engine.records import ConsumerRecord, Headers, TopicPartition
from streamproc.engine.serdes import Serde
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import (
    RoutingSinkNode,
    analyze_topology,
    build_global_stores,
    build_processor_topology,
    build_stores,
    matching_source,
    tasks,
)
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import ConfigError, ProcessingError, StreamprocError, TopologyError
from streamproc.state.stores import StoreContext

logger = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

#: ``TopologyTestDriver.PARTITION_ID`` and ``TASK_ID``: the one partition of every topic and the one task.
PARTITION_ID = 0
TASK_ID = TaskId(0, PARTITION_ID)

SerializerLike = Callable[[str, Any], bytes | None] | object
DeserializerLike = Callable[[str, bytes | None], Any] | object


class NoSuchRecord(StreamprocError, LookupError):
    """An output topic was read past its end (``NoSuchElementException: Empty topic``) or never written to."""


def _serializer(given: SerializerLike) -> Callable[[str, Any], bytes | None]:
    chosen = given.serializer if isinstance(given, Serde) else given
    method = getattr(chosen, "serialize", None)
    if callable(method):
        return cast(Callable[[str, Any], bytes | None], method)
    if callable(chosen):
        return cast(Callable[[str, Any], bytes | None], chosen)
    raise ConfigError(f"{given!r} is not a serializer: give a Serializer, a Serde or a callable (topic, value)")


def _deserializer(given: DeserializerLike) -> Callable[[str, bytes | None], Any]:
    chosen = given.deserializer if isinstance(given, Serde) else given
    method = getattr(chosen, "deserialize", None)
    if callable(method):
        return cast(Callable[[str, bytes | None], Any], method)
    if callable(chosen):
        return cast(Callable[[str, bytes | None], Any], chosen)
    raise ConfigError(f"{given!r} is not a deserializer: give a Deserializer, a Serde or a callable (topic, bytes)")


@dataclass(frozen=True, slots=True)
class TestRecord(Generic[K, V]):
    """``test.TestRecord``: key, value, timestamp (``None``: the input topic's clock) and headers."""

    __test__ = False

    key: K
    value: V
    timestamp: int | None = None
    headers: Headers = ()


class _DriverClock(VirtualWallClock):
    """``MockTime``: a wall clock that only the test moves (``advance_wall_clock_time``).

    ``StreamTask`` warns about WALL_CLOCK_TIME schedules on a clock that neither follows stream time nor moves;
    this one moves, so it reports ``follow_stream_time`` and reads ``now_ms`` alone.
    """

    def __init__(self, now_ms: int) -> None:
        super().__init__(now_ms, follow_stream_time=True)

    def milliseconds(self) -> int:
        return self.now_ms


class TopologyTestDriver:
    """``TopologyTestDriver``: runs a ``Topology`` record by record in Kafka Streams' order (see the module doc)."""

    def __init__(
        self,
        topology: Topology,
        config: TaskConfig | None = None,
        *,
        initial_wall_clock_time_ms: int = 0,
        default_key_serde: Serde[Any] | None = None,
        default_value_serde: Serde[Any] | None = None,
        partition_counts: Mapping[str, int] | None = None,
    ) -> None:
        self.config = config if config is not None else TaskConfig()
        self._clock = _DriverClock(initial_wall_clock_time_ms)
        self._tasks: dict[TaskId, StreamTask] = {}
        self._stores: dict[TaskId, dict[str, object]] = {}
        self._task_of: dict[TopicPartition, StreamTask] = {}
        self._partition_counts: dict[str, int] = {}
        self._next_offset: dict[TopicPartition, int] = {}
        self._outputs: dict[str, deque[CollectedRecord]] = {}
        self._sink_topics: set[str] = set()
        self._single_task = partition_counts is None
        self._closed = False
        self._global_stores = build_global_stores(topology)
        self._global_task: GlobalStateUpdateTask | None = None
        if self._global_stores:
            self._global_task = GlobalStateUpdateTask(
                topology,
                self._global_stores,
                application_id=self.config.application_id,
                default_key_serde=default_key_serde,
                default_value_serde=default_value_serde,
                # Kafka's driver builds its GlobalStateUpdateTask with a LogAndContinueExceptionHandler whatever the
                # config says (the GlobalStreamThread of a real app uses the configured handler, as a Spark task does)
                deserialization_exception_handler=LogAndContinueExceptionHandler(),
            )
            for topic in self._global_task.topics:
                self._next_offset[TopicPartition(topic, PARTITION_ID)] = 0
        layout: dict[TaskId, tuple[ProcessorTopology, tuple[TopicPartition, ...], dict[str, object]]] = {}
        if partition_counts is None:
            graph = build_processor_topology(
                topology,
                None,
                application_id=self.config.application_id,
                default_key_serde=default_key_serde,
                default_value_serde=default_value_serde,
            )
            partitions = tuple(TopicPartition(topic, PARTITION_ID) for topic in graph.source_topics)
            layout[TASK_ID] = (graph, partitions, build_stores(topology, None))
            self._sink_topics.update(_static_sink_topics(graph))
            self._partition_counts.update(dict.fromkeys((*graph.source_topics, *self._sink_topics), 1))
        else:
            analysis = analyze_topology(topology, self.config.application_id, partition_counts)
            self._partition_counts.update(partition_counts)
            self._partition_counts.update(analysis.internal_topics)
            for task_id, owned in tasks(
                topology, partition_counts, application_id=self.config.application_id, analysis=analysis
            ).items():
                graph = build_processor_topology(
                    topology,
                    task_id.subtopology,
                    analysis=analysis,
                    default_key_serde=default_key_serde,
                    default_value_serde=default_value_serde,
                )
                layout[task_id] = (graph, owned, build_stores(topology, task_id.subtopology))
                self._sink_topics.update(_static_sink_topics(graph))
        self._collector = RecordCollector(self._partition_counts)
        for task_id, (graph, owned, stores) in layout.items():
            task = StreamTask(
                task_id,
                graph,
                owned,
                config=self.config,
                stores={**stores, **{name: read_only_view(s) for name, s in self._global_stores.items()}},
                wall_clock=self._clock,
                collector=self._collector,
            )
            self._tasks[task_id] = task
            self._stores[task_id] = stores
            _attach_stores(stores, task.context.record_timestamp, task.context.record_dropped)
            for partition in owned:
                self._task_of[partition] = task
                self._next_offset[partition] = 0
        self._input_topics = tuple(dict.fromkeys(p.topic for p in self._task_of))
        self._global_topics = () if self._global_task is None else self._global_task.topics
        if self._global_task is not None:
            self._global_task.initialize()
        for task in self._tasks.values():
            task.initialize_topology()
        logger.info(
            "Test driver started %s task(s) %s on input topics %s",
            len(self._tasks),
            [str(t) for t in self._tasks],
            list(self._input_topics),
        )

    # -- topics ----------------------------------------------------------------------------------------------------

    def create_input_topic(
        self,
        topic: str,
        key_serializer: SerializerLike,
        value_serializer: SerializerLike,
        *,
        start_timestamp_ms: int | None = None,
        auto_advance_ms: int = 0,
    ) -> TestInputTopic[Any, Any]:
        """``createInputTopic``: its clock starts at ``start_timestamp_ms`` (default: the driver's wall clock)."""
        start = self._clock.now_ms if start_timestamp_ms is None else start_timestamp_ms
        return TestInputTopic(self, topic, key_serializer, value_serializer, start, auto_advance_ms)

    def create_output_topic(
        self, topic: str, key_deserializer: DeserializerLike, value_deserializer: DeserializerLike
    ) -> TestOutputTopic[Any, Any]:
        """``createOutputTopic``: reads what the topology sent to ``topic``, oldest first."""
        return TestOutputTopic(self, topic, key_deserializer, value_deserializer)

    def produced_topic_names(self) -> frozenset[str]:
        """``producedTopicNames``: every topic a sink has sent to, internal ones included."""
        return frozenset(self._outputs)

    # -- time ------------------------------------------------------------------------------------------------------

    @property
    def wall_clock_time_ms(self) -> int:
        return self._clock.now_ms

    def advance_wall_clock_time(self, advance_ms: int) -> None:
        """``advanceWallClockTime``: move the clock, run one wall-clock punctuation check per task, then process."""
        if advance_ms < 0:
            raise ValueError(f"advance_ms must not be negative, got {advance_ms}")
        self._check_open()
        self._clock.now_ms += advance_ms
        for task in self._tasks.values():
            task.maybe_punctuate_system_time()
        self._complete_all_processable_work()

    # -- metrics ---------------------------------------------------------------------------------------------------

    def dropped_records(self) -> tuple[DroppedRecord, ...]:
        """The records the tasks dropped, in order per task, the global task's last (Kafka's
        ``dropped-records-total`` metric counts them): each with its reason, topic, partition and offset."""
        events = [event for task in self._tasks.values() for event in task.dropped.events]
        if self._global_task is not None:
            events.extend(self._global_task.dropped.events)
        return tuple(events)

    # -- stores ----------------------------------------------------------------------------------------------------

    @property
    def task_ids(self) -> tuple[TaskId, ...]:
        return tuple(self._tasks)

    def get_state_store(self, name: str, task_id: TaskId | None = None) -> object | None:
        """``getStateStore``: the store ``name`` (of ``task_id`` when several tasks have one), ``None`` if absent."""
        if name in self._global_stores:
            return self._global_stores[name]
        if task_id is not None:
            return self._stores.get(task_id, {}).get(name)
        owners = [tid for tid, stores in self._stores.items() if name in stores]
        if len(owners) > 1:
            raise TopologyError(f"store {name} exists in tasks {[str(t) for t in owners]}; pass task_id to choose one")
        return self._stores[owners[0]][name] if owners else None

    def get_all_state_stores(self) -> dict[str, object]:
        """``getAllStateStores`` (single-task driver); with several tasks use :meth:`get_state_store` per task."""
        names = dict.fromkeys([*(name for stores in self._stores.values() for name in stores), *self._global_stores])
        return {name: self.get_state_store(name) for name in names}

    # -- close -----------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """``close``: close every task (``Processor.close``); what they send on close is still readable."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks.values():
            task.close()
        if self._global_task is not None:
            self._global_task.close()
        self._capture_outputs(reenqueue=False)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # -- the processing loop ---------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ProcessingError("the test driver is closed; create a new one")

    def pipe_raw(
        self,
        topic: str,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers = (),
        *,
        partition: int | None = None,
    ) -> None:
        """``pipeRecord`` with serialized key and value: enqueue to the reading task, then process all work."""
        self._check_open()
        if topic in self._global_topics:
            self._update_global(topic, timestamp, key, value, headers)
            return
        self._enqueue(topic, self._input_partition(topic, key, partition), timestamp, key, value, headers)
        self._complete_all_processable_work()

    def _update_global(
        self, topic: str, timestamp: int, key: bytes | None, value: bytes | None, headers: Headers
    ) -> None:
        """``processGlobalRecord``: the next offset of the topic's one partition, through the global processor."""
        assert self._global_task is not None
        partition = TopicPartition(topic, PARTITION_ID)
        offset = self._next_offset[partition]
        self._next_offset[partition] = offset + 1
        self._global_task.update(
            ConsumerRecord.raw(topic, PARTITION_ID, offset, timestamp, key, value, headers=headers)
        )

    def _input_partition(self, topic: str, key: bytes | None, partition: int | None) -> TopicPartition:
        source = matching_source(self._input_topics, topic)
        if source is None:
            raise TopologyError(
                f"Unknown topic: {topic}; the topology reads {[*self._input_topics, *self._global_topics]}"
            )
        count = self._partition_counts.get(source, 1)
        if partition is not None:
            if not 0 <= partition < count:
                raise ConfigError(f"topic {topic} has partitions 0..{count - 1}, not {partition}")
            return TopicPartition(source, partition)
        if count == 1 or self._single_task:
            return TopicPartition(source, PARTITION_ID)
        if key is None:
            raise ConfigError(
                f"a record with a null key for {topic} ({count} partitions): Kafka's producer would choose with its "
                "sticky partitioner, which cannot be reproduced; pass partition="
            )
        return TopicPartition(source, partition_for_key(key, count))

    def _enqueue(
        self,
        topic: str,
        partition: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers,
    ) -> None:
        """``enqueueTaskRecord``: the next offset of the partition; the record keeps the topic it was sent to."""
        offset = self._next_offset[partition]
        self._next_offset[partition] = offset + 1
        record = ConsumerRecord.raw(topic, partition.partition, offset, timestamp, key, value, headers=headers)
        self._task_of[partition].add_records(partition, (record,))

    def _complete_all_processable_work(self) -> None:
        """``completeAllProcessableWork``: process until no task has a processable record."""
        self._capture_outputs()
        now = self._clock.milliseconds()
        progressed = True
        while progressed:
            progressed = False
            for task in self._tasks.values():
                if task.partition_group.num_buffered() > 0 and task.process(now):
                    task.maybe_punctuate_stream_time()
                    self._capture_outputs()
                    progressed = True
        for task in self._tasks.values():
            if task.partition_group.num_buffered() > 0:
                task.log.info(
                    "Due to the max.task.idle.ms configuration, there are currently some records that cannot be "
                    "processed. Advancing wall-clock time or enqueuing records on the empty topics will allow "
                    "Streams to process more."
                )

    def _capture_outputs(self, *, reenqueue: bool = True) -> None:
        """``captureOutputsAndReEnqueueInternalResults``: keep what the sinks sent; feed the topology's own topics."""
        sent = list(self._collector.records)
        self._collector.records.clear()
        for record in sent:
            self._outputs.setdefault(record.topic, deque()).append(record)
            if reenqueue and record.topic in self._global_topics:
                self._update_global(record.topic, record.timestamp, record.key, record.value, record.headers)
                continue
            if not reenqueue or matching_source(self._input_topics, record.topic) is None:
                continue
            chosen = None if self._single_task else record.partition
            try:
                partition = self._input_partition(record.topic, record.key, chosen)
            except ConfigError as exc:
                raise ProcessingError(
                    f"sink {record.processor_node_id} sent a record with a null key to {record.topic}, which has "
                    "several partitions; give the sink a partitioner"
                ) from exc
            self._enqueue(record.topic, partition, record.timestamp, record.key, record.value, record.headers)

    # -- reading ---------------------------------------------------------------------------------------------------

    def read_raw(self, topic: str) -> CollectedRecord:
        """The oldest unread record sent to ``topic`` (serialized), as ``readRecord`` polls it."""
        queue = self._outputs.get(topic)
        if queue is None:
            if topic not in self._sink_topics:
                logger.warning(
                    "Unrecognized topic: %s, this can occur if dynamic routing is used and no output has been sent to "
                    "this topic yet. If not using a TopicNameExtractor, check that the output topic is correct.",
                    topic,
                )
            raise NoSuchRecord(f"Uninitialized topic: {topic}; nothing was sent to it")
        if not queue:
            raise NoSuchRecord(f"Empty topic: {topic}; every record sent to it was read")
        return queue.popleft()

    def queue_size(self, topic: str) -> int:
        queue = self._outputs.get(topic)
        return 0 if queue is None else len(queue)


def _attach_stores(
    stores: Mapping[str, object], record_timestamp: Callable[[], int], record_dropped: Callable[[str], None]
) -> None:
    """Stores built by ``streamproc.Stores`` stamp changelog records with the task's current record timestamp
    (``ProcessorStateManager.attach`` does the same in a run); other store objects are left alone."""
    for store in stores.values():
        context = getattr(store, "context", None)
        if isinstance(context, StoreContext):
            context.record_timestamp = record_timestamp
            context.record_dropped = record_dropped


def _static_sink_topics(graph: ProcessorTopology) -> list[str]:
    return [
        node.topic
        for node in graph.nodes
        if isinstance(node, SinkNode) and not (isinstance(node, RoutingSinkNode) and node.topic_extractor is not None)
    ]


class TestInputTopic(Generic[K, V]):
    """``TestInputTopic``: serializes and pipes records; a record without a timestamp takes the topic's clock,
    which then advances by ``auto_advance_ms``."""

    __test__ = False

    def __init__(
        self,
        driver: TopologyTestDriver,
        topic: str,
        key_serializer: SerializerLike,
        value_serializer: SerializerLike,
        start_timestamp_ms: int,
        auto_advance_ms: int = 0,
    ) -> None:
        if auto_advance_ms < 0:
            raise ValueError("autoAdvance must be positive")
        self._driver = driver
        self.topic = topic
        self._key_serializer = _serializer(key_serializer)
        self._value_serializer = _serializer(value_serializer)
        self._current_time = start_timestamp_ms
        self._advance = auto_advance_ms

    def advance_time(self, advance_ms: int) -> None:
        """``advanceTime``: move this topic's record clock (not the wall clock)."""
        if advance_ms < 0:
            raise ValueError("advance must be positive")
        self._current_time += advance_ms

    def _timestamp_and_advance(self) -> int:
        timestamp = self._current_time
        self._current_time += self._advance
        return timestamp

    def pipe_record(self, record: TestRecord[K, V], *, partition: int | None = None) -> None:
        """``pipeInput(TestRecord)``."""
        timestamp = self._timestamp_and_advance() if record.timestamp is None else record.timestamp
        key = self._key_serializer(self.topic, record.key)
        value = self._value_serializer(self.topic, record.value)
        self._driver.pipe_raw(self.topic, timestamp, key, value, record.headers, partition=partition)

    def pipe_input(
        self,
        key: K,
        value: V,
        timestamp_ms: int | None = None,
        *,
        headers: Headers = (),
        partition: int | None = None,
    ) -> None:
        """``pipeInput(key, value[, timestamp])``."""
        self.pipe_record(TestRecord(key, value, timestamp_ms, headers), partition=partition)

    def pipe_value(self, value: V, timestamp_ms: int | None = None) -> None:
        """``pipeInput(value[, timestamp])``: a null key."""
        self.pipe_record(TestRecord(cast(K, None), value, timestamp_ms))

    def pipe_record_list(self, records: Iterable[TestRecord[K, V]]) -> None:
        for record in records:
            self.pipe_record(record)

    def pipe_key_value_list(
        self, pairs: Iterable[tuple[K, V]], start_timestamp_ms: int | None = None, advance_ms: int = 0
    ) -> None:
        """``pipeKeyValueList``: with a start, timestamps ``start, start + advance, ...``; else the topic's clock."""
        timestamp = start_timestamp_ms
        for key, value in pairs:
            self.pipe_input(key, value, timestamp)
            if timestamp is not None:
                timestamp += advance_ms

    def pipe_value_list(self, values: Iterable[V], start_timestamp_ms: int | None = None, advance_ms: int = 0) -> None:
        timestamp = start_timestamp_ms
        for value in values:
            self.pipe_value(value, timestamp)
            if timestamp is not None:
                timestamp += advance_ms

    def __repr__(self) -> str:
        return f"TestInputTopic[topic='{self.topic}']"


class TestOutputTopic(Generic[K, V]):
    """``TestOutputTopic``: reads and deserializes what the topology sent to one topic, oldest first."""

    __test__ = False

    def __init__(
        self,
        driver: TopologyTestDriver,
        topic: str,
        key_deserializer: DeserializerLike,
        value_deserializer: DeserializerLike,
    ) -> None:
        self._driver = driver
        self.topic = topic
        self._key_deserializer = _deserializer(key_deserializer)
        self._value_deserializer = _deserializer(value_deserializer)

    def read_record(self) -> TestRecord[K, V]:
        """``readRecord``; raises :class:`NoSuchRecord` when nothing is left."""
        raw = self._driver.read_raw(self.topic)
        key = cast(K, self._key_deserializer(raw.topic, raw.key))
        value = cast(V, self._value_deserializer(raw.topic, raw.value))
        return TestRecord(key, value, raw.timestamp, raw.headers)

    def read_value(self) -> V:
        return self.read_record().value

    def read_key_value(self) -> tuple[K, V]:
        record = self.read_record()
        return record.key, record.value

    def read_records_to_list(self) -> list[TestRecord[K, V]]:
        return [self.read_record() for _ in range(self.queue_size())]

    def read_key_values_to_list(self) -> list[tuple[K, V]]:
        return [self.read_key_value() for _ in range(self.queue_size())]

    def read_values_to_list(self) -> list[V]:
        return [self.read_value() for _ in range(self.queue_size())]

    def read_key_values_to_map(self) -> dict[K, V]:
        """``readKeyValuesToMap``: the last value per key; a null key is refused, as in Kafka."""
        result: dict[K, V] = {}
        for key, value in self.read_key_values_to_list():
            if key is None:
                raise ValueError("Null keys not allowed with readKeyValuesToMap method")
            result[key] = value
        return result

    def queue_size(self) -> int:
        return self._driver.queue_size(self.topic)

    def is_empty(self) -> bool:
        return self.queue_size() == 0

    def __repr__(self) -> str:
        return f"TestOutputTopic[topic='{self.topic}', size={self.queue_size()}]"


__all__ = [
    "PARTITION_ID",
    "TASK_ID",
    "NoSuchRecord",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TopologyTestDriver",
]
