"""``StreamTask``: one Kafka Streams task processing its partitions one record at a time (ordering.md §4).

Mirrors ``org.apache.kafka.streams.processor.internals.StreamTask`` (4.2.0): ``process`` takes the next record from
the ``PartitionGroup`` (where deserialization, extraction, drops and their fatal errors happen, RQ-9), skips a
``CorruptedRecord`` placeholder, otherwise installs the record context and runs the sub-topology depth-first; then it
marks the offset consumed. Stream-time punctuation follows ``maybePunctuateStreamTime`` (ST-2), wall-clock
punctuation reads the :class:`~streamproc.engine.wall_clock.VirtualWallClock` (D-4). Errors that end the task are
``StreamsError``/``PunctuationError`` carrying the task id (as ``TaskExecutor`` sets it) and, for records, topic,
partition and offset, chained to the user's exception.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.dead_letter_queue import DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG
from streamproc.engine.deserialization_handler import DeserializationExceptionHandler, LogAndFailExceptionHandler
from streamproc.engine.dropped_records import (
    REASON_PROCESSING_EXCEPTION,
    REASON_PUNCTUATION_EXCEPTION,
    DroppedRecordsSensor,
)
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.partition_group import LagProvider, PartitionGroup, RecordInfo
from streamproc.engine.processing_handler import (
    FAIL_ON_PROCESSING_ERROR_MESSAGE,
    PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProcessingHandlerResult,
)
from streamproc.engine.processor_context import NO_OFFSET, NO_PARTITION, ProcessorContextImpl
from streamproc.engine.processor_topology import FailedProcessingException, ProcessorTopology, RecordCollector
from streamproc.engine.punctuation_queue import (
    Cancellable,
    PunctuationQueue,
    PunctuationSchedule,
    PunctuationType,
    Punctuator,
)
from streamproc.engine.record_deserializer import RecordDeserializer
from streamproc.engine.record_queue import UNKNOWN, RawRecord, RecordQueue
from streamproc.engine.records import ProcessorRecordContext, Record, TopicPartition
from streamproc.engine.stamped_record import StampedRecord
from streamproc.engine.task_id import TaskId
from streamproc.engine.task_log import TaskLoggerAdapter
from streamproc.engine.timestamp_extractor import FailOnInvalidTimestamp, TimestampExtractor
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import ProcessingError, PunctuationError, StreamprocError, StreamsError

logger = logging.getLogger(__name__)

#: ``StreamsConfig.BUFFERED_RECORDS_PER_PARTITION_CONFIG`` default.
DEFAULT_BUFFERED_RECORDS_PER_PARTITION = 1000


@dataclass(frozen=True, slots=True)
class TaskConfig:
    """The settings a task reads: Kafka Streams' property names in the field docs."""

    #: ``application.id``.
    application_id: str = "streamproc"
    #: ``default.timestamp.extractor`` (``None``: ``FailOnInvalidTimestamp``); a source's own extractor wins.
    default_timestamp_extractor: TimestampExtractor | None = None
    #: ``deserialization.exception.handler``.
    deserialization_exception_handler: DeserializationExceptionHandler = field(
        default_factory=LogAndFailExceptionHandler
    )
    #: ``processing.exception.handler``.
    processing_exception_handler: ProcessingExceptionHandler = field(
        default_factory=LogAndFailProcessingExceptionHandler
    )
    #: ``max.task.idle.ms`` (-1 disables idling).
    max_task_idle_ms: int = 0
    #: ``buffered.records.per.partition``.
    buffered_records_per_partition: int = DEFAULT_BUFFERED_RECORDS_PER_PARTITION
    #: Keep every drop (topic, partition, offset, reason) for the run report, not only the counts.
    keep_drop_events: bool = True
    #: ``errors.dead.letter.queue.topic.name`` (KIP-1034): handed to the handlers' ``configure`` as Kafka Streams
    #: does, so that the stock handlers answer with a dead letter queue record for this topic.
    dead_letter_queue_topic: str | None = None
    #: streamproc's ``--record-cache``: ``off`` sends every update (``statestore.cache.max.bytes=0``),
    #: ``flush-at-end`` emulates the DSL stores' record cache flushed once, at the task's commit
    #: (``state/record_cache.py``).
    record_cache: str = "off"

    def __post_init__(self) -> None:
        if self.dead_letter_queue_topic is None:
            return
        configs = {DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG: self.dead_letter_queue_topic}
        for handler in (self.deserialization_exception_handler, self.processing_exception_handler):
            configure = getattr(handler, "configure", None)
            if callable(configure):
                configure(configs)


@dataclass(frozen=True, slots=True)
class SkipStep:
    """A ``CorruptedRecord`` placeholder step: nothing processed, the offset consumed (RQ-6, ST-1)."""

    topic: str
    partition: int
    offset: int
    records_processed: int


@dataclass(frozen=True, slots=True)
class CommittableOffset:
    """What a commit of one input partition would carry: next offset to consume, and the partition time."""

    offset: int
    partition_time: int


class RecordCacheFlush(Protocol):
    """The task's record caches (``state/record_cache.RecordCaches``; the engine does not import the state layer)."""

    def check(self) -> None: ...

    def flush(self) -> int: ...


class StreamTask:
    """One active task: its ``PartitionGroup``, processor topology, punctuation queues and bookkeeping."""

    def __init__(
        self,
        task_id: TaskId,
        topology: ProcessorTopology,
        partitions: Iterable[TopicPartition],
        *,
        config: TaskConfig | None = None,
        stores: Mapping[str, object] | None = None,
        wall_clock: VirtualWallClock | None = None,
        collector: RecordCollector | None = None,
        lag_provider: LagProvider | None = None,
    ) -> None:
        self.id = task_id
        self.config = config if config is not None else TaskConfig()
        self.topology = topology
        self.log = TaskLoggerAdapter(logger, task_id)
        self.records_processed = 0
        self.dropped = DroppedRecordsSensor(self._records_processed, keep_events=self.config.keep_drop_events)
        self.wall_clock = wall_clock if wall_clock is not None else VirtualWallClock(0)
        self.collector = collector if collector is not None else RecordCollector()
        default_extractor = self.config.default_timestamp_extractor or FailOnInvalidTimestamp()
        queues: dict[TopicPartition, RecordQueue] = {}
        deserializers: dict[str, RecordDeserializer] = {}
        for partition in partitions:
            source = topology.source(partition.topic)
            deserializer = deserializers.get(source.name)
            if deserializer is None:
                deserializer = RecordDeserializer(
                    source,
                    self.config.deserialization_exception_handler,
                    str(task_id),
                    self.dropped,
                    self.log,
                    self.collector,
                )
                deserializers[source.name] = deserializer
            extractor = source.timestamp_extractor or default_extractor
            queues[partition] = RecordQueue(partition, deserializer, extractor, self.dropped, self.log)
        self.partition_group = PartitionGroup(
            queues, max_task_idle_ms=self.config.max_task_idle_ms, lag_provider=lag_provider, log=self.log
        )
        self.wall_clock.attach(self._stream_time)
        self.context = ProcessorContextImpl(self, self.config.application_id, stores or {}, self.collector)
        self.stream_time_punctuation_queue = PunctuationQueue()
        self.system_time_punctuation_queue = PunctuationQueue()
        self.consumed_offsets: dict[TopicPartition, int] = {}
        self.skip_steps: list[SkipStep] = []
        #: A key shard's (``engine/key_shards.ShardGate.install``): the gate's known owners by key and the shard's
        #: index, so the compiled loop counts a record another shard owns without handing it to the gate.
        self.shard_skip: tuple[dict[Any, int], int] | None = None
        #: WALL_CLOCK_TIME schedules registered while the clock is frozen (D-4): (processor, interval) each.
        self.frozen_wall_clock_schedules: list[tuple[str, int]] = []
        self.commit_needed = False
        #: Set by ``context.commit()`` (``StreamTask.commitRequested``); cleared when the task is committed.
        self.commit_requested = False
        #: Punctuators run (both types), for the run report.
        self.punctuations = 0
        #: How many punctuation schedules were ever registered: the bulk replay re-reads the schedules when it moves.
        self.schedules_registered = 0
        self._record_info = RecordInfo()
        #: The record caches of the task's cached stores (``state/record_cache.RecordCaches``), when the run emulates
        #: Kafka Streams' cache at one flush: checked after ``init`` and flushed at the clean close's commit.
        self.record_caches: RecordCacheFlush | None = None

    # -- clocks --------------------------------------------------------------------------------------------------

    def _records_processed(self) -> int:
        return self.records_processed

    def _stream_time(self) -> int:
        return self.partition_group.stream_time

    @property
    def stream_time(self) -> int:
        """``PartitionGroup.streamTime``: the maximum timestamp handed out (and restored), -1 if unknown."""
        return self.partition_group.stream_time

    # -- start -----------------------------------------------------------------------------------------------------

    def initialize_task_time(self, committed_partition_times: Mapping[TopicPartition, int]) -> None:
        """ST-8 step 1: restore each committed partition time (-1 means none) and raise stream time to their max."""
        for partition, partition_time in committed_partition_times.items():
            if partition_time != UNKNOWN:
                self.partition_group.set_partition_time(partition, partition_time)

    def initialize_topology(self) -> None:
        """ST-8 step 2: ``init`` every node in topology order (their ``schedule`` calls build the punctuation heaps)."""
        handler = self.config.processing_exception_handler
        for node in self.topology.nodes:
            now = self.wall_clock.milliseconds()
            self.context.set(node, ProcessorRecordContext(now, NO_OFFSET, NO_PARTITION, None), now)
            try:
                node.init(self.context, handler, self.dropped)
            except StreamprocError:
                raise
            except Exception as exc:
                raise ProcessingError(
                    f"failed to initialize processor {node.name}: {exc}; fix the processor's init()",
                    task_id=str(self.id),
                ) from exc
            finally:
                self.context.set(None, ProcessorRecordContext(UNKNOWN, NO_OFFSET, NO_PARTITION, None), UNKNOWN)
        if self.record_caches is not None:
            self.record_caches.check()

    def flush_caches(self) -> int:
        """``ProcessorStateManager.flushCache`` at the commit: the cached stores write and forward their dirty
        entries (the records forwarded); nothing without a record cache."""
        if self.record_caches is None:
            return 0
        flushed = self.record_caches.flush()
        self.log.info("flushed the record cache: %s updates forwarded", flushed)
        return flushed

    # -- input -----------------------------------------------------------------------------------------------------

    def add_records(self, partition: TopicPartition, records: Iterable[RawRecord]) -> int:
        """``addRecords``: buffer a batch; the first record's fatal error is raised here (RQ-9 item 3)."""
        try:
            return self.partition_group.add_raw_records(partition, records)
        except StreamsError as exc:
            if exc.task_id is None:
                raise self._with_task_id(exc) from exc
            raise

    def is_processable(self, wall_clock_time: int) -> bool:
        return self.partition_group.ready_to_process(wall_clock_time)

    def disable_idling(self) -> None:
        """D-2: a replay never waits for data, whatever ``max.task.idle.ms`` says (the order is PG-8's merge)."""
        self.partition_group.disable_idling()

    # -- one step --------------------------------------------------------------------------------------------------

    def process(self, wall_clock_time: int | None = None) -> bool:
        """ST-1: process (or skip) the next record; return whether there was one."""
        now = self.wall_clock.milliseconds() if wall_clock_time is None else wall_clock_time
        if not self.partition_group.ready_to_process(now):
            return False
        info = self._record_info
        try:
            record = self.partition_group.next_record(info)
        except StreamsError as exc:
            if exc.task_id is None:
                raise self._with_task_id(exc) from exc
            raise
        if record is None:
            return False
        queue = info.queue
        assert queue is not None
        if isinstance(record, CorruptedRecord):
            self._skip(record)
        else:
            self._do_process(record, queue, now)
            self.records_processed += 1
        self.consumed_offsets[queue.partition] = record.offset
        self.commit_needed = True
        return True

    def _skip(self, record: CorruptedRecord) -> None:
        """A ``CorruptedRecord`` placeholder: nothing is processed, the step is remembered (RQ-6)."""
        self.log.debug("Task skips processing corrupted record %s", record)
        self.skip_steps.append(SkipStep(record.topic, record.partition, record.offset, self.records_processed))

    def _do_process(self, record: StampedRecord, queue: RecordQueue, now: int) -> None:
        source = queue.source
        context = self.context
        timestamp = record.timestamp
        deserialized = record.record
        context.set_record(source, record, now)
        try:
            source.process(Record(deserialized.key, deserialized.value, timestamp, deserialized.headers))
        except Exception as exc:
            failure = self._processing_failure(
                exc, source.name, deserialized.topic, deserialized.partition, deserialized.offset
            )
            raise failure  # noqa: B904 (_processing_failure sets the cause each case needs)
        finally:
            context.current_node = None

    def _processing_failure(
        self, exc: Exception, source_name: str, topic: str, partition: int, offset: int
    ) -> BaseException:
        """The error a failed ``process`` ends the task with, its ``__cause__`` set as ``raise ... from`` would.

        A node's handler that said FAIL (``FailedProcessingException``) becomes a ``StreamsError`` caused by the
        user's exception; a ``StreamsError`` gets this task's id if it has none; anything else is wrapped with the
        name of the node that was running. Shared by :meth:`process` and the bulk replay (``bulk_replay``).
        """
        error: BaseException
        if isinstance(exc, FailedProcessingException):
            message = exc.message or self._process_failure_message(
                exc.failed_processor_node_name, topic, partition, offset
            )
            error = StreamsError(
                message,
                reason=REASON_PROCESSING_EXCEPTION,
                topic=topic,
                partition=partition,
                offset=offset,
                task_id=str(self.id),
            )
            error.__cause__ = exc.cause
            return error
        if isinstance(exc, StreamsError):
            if exc.task_id is not None:
                return exc
            error = self._with_task_id(exc)
            error.__cause__ = exc
            return error
        current = self.context.current_node
        node = current.name if current is not None else source_name
        error = StreamsError(
            self._process_failure_message(node, topic, partition, offset),
            reason=REASON_PROCESSING_EXCEPTION,
            topic=topic,
            partition=partition,
            offset=offset,
            task_id=str(self.id),
        )
        error.__cause__ = exc
        return error

    def _process_failure_message(self, node: str, topic: str, partition: int, offset: int) -> str:
        return process_failure_message(str(self.id), node, topic, partition, offset)

    def _with_task_id(self, exc: StreamsError) -> StreamsError:
        """``TaskExecutor``: a ``StreamsException`` without a task id gets this task's."""
        return StreamsError(
            exc.kafka_message,
            reason=exc.reason,
            topic=exc.topic,
            partition=exc.partition,
            offset=exc.offset,
            task_id=str(self.id),
            kafka_exception=exc.kafka_exception,
        )

    # -- punctuation -----------------------------------------------------------------------------------------------

    def schedule(
        self,
        interval_ms: int,
        punctuation_type: PunctuationType,
        punctuator: Punctuator,
        *,
        start_ms: int | None = None,
    ) -> Cancellable:
        """``StreamTask.schedule``: plain STREAM_TIME is due at 0, WALL_CLOCK_TIME at now + interval; an anchored
        start already in the past moves to the first aligned time strictly after now (ST-6)."""
        node = self.context.current_node
        if node is None:
            raise ProcessingError(
                "Current node is null: schedule() may only be called from init(), process() or a punctuator",
                task_id=str(self.id),
            )
        wall_now = self.wall_clock.milliseconds()
        if start_ms is None:
            first = 0 if punctuation_type is PunctuationType.STREAM_TIME else wall_now + interval_ms
        else:
            first = start_ms
        schedule = PunctuationSchedule(node.name, first, interval_ms, punctuator)
        self.schedules_registered += 1
        now = wall_now if punctuation_type is PunctuationType.WALL_CLOCK_TIME else self.stream_time
        if start_ms is not None and start_ms < now:
            schedule = schedule.next(now)
        if punctuation_type is PunctuationType.STREAM_TIME:
            return self.stream_time_punctuation_queue.schedule(schedule)
        if not self.wall_clock.follow_stream_time:
            self.frozen_wall_clock_schedules.append((node.name, interval_ms))
            self.log.warning(
                "Processor %s scheduled a WALL_CLOCK_TIME punctuation every %s ms; the replay's virtual wall clock is "
                "frozen at %s, so it will not fire (streamproc decision D-4)",
                node.name,
                interval_ms,
                wall_now,
            )
        return self.system_time_punctuation_queue.schedule(schedule)

    def maybe_punctuate_stream_time(self) -> bool:
        """ST-2: if stream time is known, fire every due STREAM_TIME schedule once, with the stream time."""
        stream_time = self.stream_time
        if stream_time == UNKNOWN:
            return False
        punctuated = self.stream_time_punctuation_queue.maybe_punctuate(
            stream_time, PunctuationType.STREAM_TIME, self.punctuate
        )
        if punctuated:
            self.commit_needed = True
        return punctuated

    def maybe_punctuate_system_time(self) -> bool:
        """ST-7 against the virtual wall clock (which, frozen, never reaches a plain schedule's due time)."""
        now = self.wall_clock.milliseconds()
        punctuated = self.system_time_punctuation_queue.maybe_punctuate(
            now, PunctuationType.WALL_CLOCK_TIME, self.punctuate
        )
        if punctuated:
            self.commit_needed = True
        return punctuated

    def punctuate(
        self, node_name: str, timestamp: int, punctuation_type: PunctuationType, punctuator: Punctuator
    ) -> None:
        """``StreamTask.punctuate``: run one punctuator with the punctuation context (SR-4); errors per ST-9."""
        context = self.context
        if context.current_node is not None:
            raise ProcessingError("Current node is not null while punctuating", task_id=str(self.id))
        node = next(n for n in self.topology.nodes if n.name == node_name)
        self.punctuations += 1
        record_context = ProcessorRecordContext(timestamp, NO_OFFSET, NO_PARTITION, None)
        context.set(node, record_context, self.wall_clock.milliseconds())
        try:
            punctuator(timestamp)
        except FailedProcessingException as failed:
            raise self._punctuation_error(node_name) from failed.cause
        except Exception as exc:
            self._handle_punctuation_exception(node_name, record_context, exc)
        finally:
            context.current_node = None

    def _punctuation_error(self, node_name: str, message: str | None = None) -> PunctuationError:
        return PunctuationError(
            message or f"Exception caught while punctuating processor '{node_name}'",
            processor=node_name,
            task_id=str(self.id),
        )

    def _handle_punctuation_exception(
        self, node_name: str, record_context: ProcessorRecordContext, exc: Exception
    ) -> None:
        error_context = ErrorHandlerContext(
            topic=None,
            partition=record_context.partition,
            offset=record_context.offset,
            headers=record_context.headers,
            processor_node_id=node_name,
            task_id=str(self.id),
            timestamp=record_context.timestamp,
            source_raw_key=None,
            source_raw_value=None,
        )
        try:
            response = self.config.processing_exception_handler.handle_error(error_context, None, exc)
            if response is None:
                raise TypeError("Invalid ProcessingExceptionHandler response.")
        except Exception as fatal_user_exception:
            self.log.error(
                "Processing error callback failed after processing error for record: %s", error_context, exc_info=exc
            )
            raise self._punctuation_error(
                node_name, "Fatal user code error in processing error callback"
            ) from fatal_user_exception
        if response.result is ProcessingHandlerResult.FAIL:
            self.log.error(FAIL_ON_PROCESSING_ERROR_MESSAGE, PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG)
            raise self._punctuation_error(node_name) from exc
        self.log.warning(
            "Skipping punctuation due to processing error. processor=[%s] timestamp=[%s]",
            node_name,
            record_context.timestamp,
        )
        self.dropped.record(None, NO_PARTITION, NO_OFFSET, REASON_PUNCTUATION_EXCEPTION)

    # -- commit and close ------------------------------------------------------------------------------------------

    def committable_offsets(self) -> dict[TopicPartition, CommittableOffset]:
        """Per consumed partition: last processed (or skipped) offset + 1, and the partition time for metadata."""
        return {
            partition: CommittableOffset(offset + 1, self.partition_group.partition_timestamp(partition))
            for partition, offset in self.consumed_offsets.items()
        }

    def close(self) -> None:
        """Close every node (``Processor.close``) and drop the punctuation schedules."""
        for node in self.topology.nodes:
            self.context.set(node, self.context.record_context, self.wall_clock.milliseconds())
            try:
                node.close()
            finally:
                self.context.current_node = None
        self.stream_time_punctuation_queue.close()
        self.system_time_punctuation_queue.close()


def process_failure_message(task_id: str, node: str, topic: str, partition: int, offset: int) -> str:
    """Kafka's ``StreamsException`` message for a record whose processing failed the task."""
    return (
        f"Exception caught in process. taskId={task_id}, processor={node}, topic={topic}, "
        f"partition={partition}, offset={offset}"
    )
