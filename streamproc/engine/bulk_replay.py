"""The bulk replay loop: ``while task.process(): punctuate`` with the per-record bookkeeping on plain Python values.

:func:`streamproc.engine.replay.replay` processes every buffered record with ``StreamTask.process`` followed by the
STREAM_TIME and WALL_CLOCK_TIME checks (ordering.md §9.1). That path allocates a deserialized ``ConsumerRecord``, a
``StampedRecord`` and a ``ProcessorRecordContext`` per record, keys ``java.util.PriorityQueue`` operations through
attribute reads, and hashes a ``TopicPartition`` to mark each offset consumed. :func:`process_buffered` runs the
same algorithm with the state of ``PartitionGroup``/``RecordQueue`` held in local lists indexed by partition:

* the heap of non-empty queues is a list of partition indices with their head timestamps in a parallel list, and
  ``poll``/``offer`` are OpenJDK's ``siftDownUsingComparator``/``siftUpUsingComparator`` step for step
  (:mod:`~streamproc.engine.java_priority_queue`), so ties break exactly as in Kafka Streams (PG-4);
* a head is ``(raw, key, value)`` when it was deserialized here; it is taken, as in ``RecordQueue.updateHead``,
  right after the previous head of the same partition is polled and before that record is processed (RQ-9), so
  deserializers, refills and drops run in the same order as the record-at-a-time path;
* partition times, consumed offsets and the buffered count are written back when the loop ends (or fails); what a
  processor or punctuator can observe (stream time, ``records_processed``, record context, system time) is live.
  After a fatal error the buffered count is the true one, where ``PartitionGroup`` leaves the count from before
  the failed step (the task is dead either way: ``replay`` propagates the error).

Anything unusual for a head goes to ``RecordQueue``'s own code: a negative broker timestamp, a timestamp extractor
other than the record-metadata ones (``ExtractRecordMetadataTimestamp.extract``, which for a timestamp ≥ 0 returns
it unchanged), or a deserialization error (handed to ``RecordDeserializer``'s handler, then ``updateHead`` continues
from the next raw record). Punctuation is checked with the task's own methods whenever a schedule may be due:
the checks after every step are no-ops unless stream time reached the earliest STREAM_TIME due time, the frozen
wall clock reached the earliest WALL_CLOCK_TIME due time, or a schedule was registered since the last look.

The loop is not used (``process_buffered`` returns ``None`` and the caller keeps ``StreamTask.process``) unless
idling is disabled (D-2), the wall clock is the frozen :class:`~streamproc.engine.wall_clock.VirtualWallClock`
(D-4), and task, partition group, queues and deserializers are the engine's own classes (a subclass may change
what a step does). ``tests/unit/engine/test_bulk_replay.py`` checks with hypothesis that both paths agree on every
observable: processing order and record contexts, stream time, committed offsets and partition times, drops, skip
steps, punctuations and errors.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from typing import Any, NoReturn

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.partition_group import MAX_TASK_IDLE_MS_DISABLED, PartitionGroup
from streamproc.engine.processor_context import ProcessorContextImpl
from streamproc.engine.processor_topology import Deserializer, ProcessorNode, SourceNode
from streamproc.engine.punctuation_queue import LONG_MAX_VALUE, PunctuationQueue
from streamproc.engine.record_deserializer import RecordDeserializer, deserialized_record
from streamproc.engine.record_queue import UNKNOWN, RawRecord, RecordQueue
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.serdes import direct
from streamproc.engine.stamped_record import StampedRecord
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.timestamp_extractor import ExtractRecordMetadataTimestamp
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import StreamsError

try:
    from streamproc.engine import _bulk_kernel
except ImportError:  # not built (a source checkout without `make install`): the Python loop does the same
    _bulk_kernel = None  # type: ignore[assignment]

#: Set to a true value to run the Python loop even when the compiled one is built (the tests compare them).
PURE_PYTHON_ENV = "STREAMPROC_PURE_PYTHON_REPLAY"

#: Later than any due time (due times are clamped to ``Long.MAX_VALUE``): "no schedule".
NEVER = LONG_MAX_VALUE + 1

#: A head deserialized here ``(raw, key, value)``, or one ``RecordQueue`` produced (``StampedRecord`` or
#: ``CorruptedRecord``), or ``None`` for an empty queue.
Head = tuple[RawRecord, object, object] | StampedRecord | None

#: How a partition's source hands a record on: ``context.forward`` (source installed) or ``SourceNode.process``.
Forward = Callable[[Record[Any, Any]], None]

#: Per partition: FIFO, whether the timestamp is the record's own (record-metadata extractors), key and value
#: deserializers, source node, how it forwards, and the source's children when the compiled loop may run
#: ``ProcessorContextImpl.forward`` itself (an unchanged context class) else ``None``.
Statics = tuple[deque[RawRecord], bool, Deserializer, Deserializer, SourceNode, Forward, list[ProcessorNode] | None]


#: The fields of a raw record the loop reads, in the order ``_bulk_kernel.c`` expects them.
_RAW_FIELDS = ("timestamp", "topic", "key", "value", "headers", "offset")


def _raw_fields() -> tuple[type, tuple[object, ...]] | None:
    """``ConsumerRecord`` and its slot descriptors, which the compiled loop reads directly; None: by attribute."""
    descriptors = tuple(ConsumerRecord.__dict__.get(name) for name in _RAW_FIELDS)
    if not all(type(d).__name__ == "member_descriptor" for d in descriptors):
        return None
    return ConsumerRecord, descriptors


def _record_slots() -> tuple[object, ...] | None:
    """``Record``'s slot descriptors when ``Record(k, v, t, h)`` only stores them (``fast_frozen_init``), else None."""
    fields = getattr(Record.__init__, "__slot_fields__", None)
    if Record.__new__ is not object.__new__ or fields != ("key", "value", "timestamp", "headers"):
        return None
    return tuple(Record.__dict__[name] for name in fields)


def ineligibility(task: StreamTask) -> str | None:
    """Why the bulk loop cannot stand in for ``StreamTask.process`` on ``task``, or ``None`` when it can."""
    cls = type(task)
    if cls.process is not StreamTask.process or cls._do_process is not StreamTask._do_process:
        return f"{cls.__qualname__} overrides process()"
    group = task.partition_group
    if type(group) is not PartitionGroup:
        return f"the partition group is a {type(group).__qualname__}"
    if group._max_task_idle_ms != MAX_TASK_IDLE_MS_DISABLED:
        return "idling is enabled (max.task.idle.ms is not -1)"
    clock = task.wall_clock
    if type(clock) is not VirtualWallClock or clock.follow_stream_time:
        return "the wall clock is not frozen"
    for queue in group._queues.values():
        if type(queue) is not RecordQueue or type(queue._deserializer) is not RecordDeserializer:
            return f"the queue of {queue.partition} is not a plain RecordQueue"
    return None


def inlines_source_forward(task: StreamTask, source: SourceNode) -> bool:
    """Whether the compiled loop hands ``source``'s records to its children itself (``_bulk_kernel.c``'s
    ``forward_to_children``), with no ``ProcessorContextImpl.forward`` frame: a key shard's gate then forwards the
    same way, so that a traceback a handler records (the DLQ's stack trace header) is the unsplit task's."""
    context = task.context
    return (
        _bulk_kernel is not None
        and not os.environ.get(PURE_PYTHON_ENV)
        and ineligibility(task) is None
        and type(source) is SourceNode
        and source._context is context
        and type(context).forward is ProcessorContextImpl.forward
    )


def _due(queue: PunctuationQueue) -> int:
    due = queue.next_due()
    return NEVER if due is None else due


def process_buffered(task: StreamTask) -> int | None:
    """Process every buffered record of ``task`` as ``while task.process(): maybe_punctuate...`` does.

    Returns the number of steps (records processed plus ``CorruptedRecord`` placeholders skipped), or ``None``
    without touching the task when :func:`ineligibility` says the loop cannot be used. Errors are those of
    ``StreamTask.process`` (with the task id), raised at the same step.
    """
    if (reason := ineligibility(task)) is not None:
        task.log.debug("Processing record at a time: %s", reason)
        return None
    return _BulkLoop(task).run()


class _BulkLoop:
    """The state of one bulk run: imported from the task's objects, written back by :meth:`_export`."""

    def __init__(self, task: StreamTask) -> None:
        self.task = task
        group = task.partition_group
        self.group = group
        self.queues: list[RecordQueue] = list(group._queues.values())
        self.partitions: list[TopicPartition] = [queue.partition for queue in self.queues]
        position = {id(queue): index for index, queue in enumerate(self.queues)}
        self.heap: list[int] = [position[id(queue)] for queue in group._non_empty_queues_by_time]
        self.keys: list[int] = [queue.head_timestamp for queue in self.queues]
        self.heads: list[Head] = [queue._head for queue in self.queues]
        self.partition_times: list[int] = [queue.partition_time for queue in self.queues]
        #: Last consumed offset per partition index, in the order partitions were first consumed.
        self.consumed: dict[int, int] = {}
        self.steps = 0
        #: The frozen wall clock's time (D-4): every step's system time.
        self.now: int = task.wall_clock.milliseconds()
        #: The queue of the step that failed, if one did (``RecordInfo.queue``, as ``StreamTask.process`` leaves it).
        self.last_polled: RecordQueue | None = None
        for queue in self.queues:
            queue._head = None
            queue.head_timestamp = UNKNOWN

    def run(self) -> int:
        try:
            return self._steps()
        finally:
            self._export()

    def _slow_head(self, index: int, raw: RawRecord | None, failure: Exception | None) -> int:
        """``updateHead`` by ``RecordQueue`` itself from ``raw`` (pushed back) or after ``raw`` failed to deserialize.

        Returns the new head's timestamp (``UNKNOWN`` when the queue drained). Fatal errors get the task id, as
        ``StreamTask.process`` adds it.
        """
        queue = self.queues[index]
        queue.partition_time = self.partition_times[index]
        self.heads[index] = None  # RecordQueue.poll cleared it: what a failure below leaves
        try:
            if failure is None:
                queue._update_head()
            else:
                assert raw is not None
                queue._deserializer._handle_failure(raw, failure)
                queue._update_head(raw)
        except StreamsError as exc:
            if exc.task_id is None:
                raise self.task._with_task_id(exc) from exc
            raise
        head = queue._head
        queue._head = None
        queue.head_timestamp = UNKNOWN
        self.heads[index] = head
        return UNKNOWN if head is None else head.timestamp

    def _refill(self, index: int) -> None:
        """``RecordQueue._take_raw``'s refill after the FIFO ran empty; a fatal error gets the task id."""
        refill = self.queues[index]._refill
        if refill is None:
            return
        self.heads[index] = None  # RecordQueue.poll cleared it: what a failure below leaves
        try:
            self.queues[index]._fifo.extend(refill())
        except StreamsError as exc:
            if exc.task_id is None:
                raise self.task._with_task_id(exc) from exc
            raise

    def _loop_statics(self) -> list[Statics]:
        """Per partition, what updateHead and process need: one list look-up and an unpack per step."""
        context = self.task.context
        metadata_extract = ExtractRecordMetadataTimestamp.extract
        statics: list[Statics] = []
        for queue in self.queues:
            source = queue.source
            # SourceNode.process is context.forward with the source as current node (which is installed).
            # A source whose ``process`` was replaced on the instance (a key shard's gate, ``key_shards.py``) is
            # called as it is, never bypassed through ``context.forward``.
            via_context = type(source) is SourceNode and source._context is context and "process" not in vars(source)
            inline = via_context and type(context).forward is ProcessorContextImpl.forward
            statics.append(
                (
                    queue._fifo,
                    getattr(type(queue._extractor), "extract", None) is metadata_extract,
                    direct(source.key_deserializer),  # the same call without Deserializer.__call__'s frame
                    direct(source.value_deserializer),
                    source,
                    context.forward if via_context else source.process,
                    source.children if inline else None,
                )
            )
        return statics

    def _start(self) -> tuple[int, int]:
        """What the loop needs before its first step: ``(due, schedules_seen)`` (see :meth:`_punctuate`)."""
        task = self.task
        context = task.context
        # The fast path installs raw records lazily (``set_raw_record``); fix a lazily installed StampedRecord first.
        context.record_context  # noqa: B018
        context._lazy_stamped = None
        due = (
            _due(task.stream_time_punctuation_queue) if self.now < _due(task.system_time_punctuation_queue) else -NEVER
        )
        return due, task.schedules_registered

    def _punctuate(self) -> tuple[int, int]:
        """The checks after a step when one may fire; the next ``(due, schedules_seen)``.

        After a step the checks can only fire something once stream time reaches ``due`` (the earliest
        STREAM_TIME due time), or at once when a WALL_CLOCK_TIME schedule is due at the frozen clock's time, or
        when a schedule was registered since the last look (``schedules_seen``).
        """
        task = self.task
        task.maybe_punctuate_stream_time()
        task.maybe_punctuate_system_time()
        return self._start()[0], task.schedules_registered

    def _slow_process(self, index: int, head: StampedRecord) -> None:
        """``StreamTask.process`` for a head ``RecordQueue`` produced itself (a placeholder or a StampedRecord)."""
        task = self.task
        if isinstance(head, CorruptedRecord):
            task._skip(head)
        else:
            task._do_process(head, self.queues[index], self.now)
            # Fix the record's context (it stays installed) before the fast path's lazy form takes over.
            task.context.record_context  # noqa: B018
            task.context._lazy_stamped = None
            task.records_processed += 1
        self.consumed[index] = head.offset

    def _fail_processing(self, exc: Exception, index: int, raw: RawRecord) -> NoReturn:
        """Raise the error a processing exception ends the task with; called inside the ``except`` of ``exc``."""
        source = self.queues[index].source
        raise self.task._processing_failure(exc, source.name, raw.topic, raw.partition, raw.offset)

    def _steps(self) -> int:
        """The compiled loop (``_bulk_kernel.c``) when it is built, else :meth:`_steps_python`: the same steps."""
        if _bulk_kernel is None or os.environ.get(PURE_PYTHON_ENV):
            return self._steps_python()
        due, schedules_seen = self._start()
        out: list[int] = [0, UNKNOWN]
        try:
            steps: int = _bulk_kernel.steps(
                self,
                self.heap,
                self.keys,
                self.heads,
                self.partition_times,
                self.consumed,
                self._loop_statics(),
                self.task,
                self.group,
                self.task.context,
                Record,
                self.now,
                due,
                schedules_seen,
                UNKNOWN,
                out,
                _record_slots(),
                _raw_fields(),
                self.task.shard_skip,
            )
        except BaseException:
            self.steps, index = out
            if index != UNKNOWN:
                self.last_polled = self.queues[index]
            raise
        self.steps = steps
        return steps

    def _steps_python(self) -> int:
        """The loop (one flat function on purpose: every call per record costs)."""
        task = self.task
        group = self.group
        context = task.context
        queues = self.queues
        heap = self.heap
        keys = self.keys
        heads = self.heads
        partition_times = self.partition_times
        consumed = self.consumed
        statics = self._loop_statics()
        slow_head = self._slow_head
        refill = self._refill
        slow_process = self._slow_process
        punctuate = self._punctuate
        tuple_type = tuple

        now = self.now
        stream_time = group.stream_time
        records_processed = task.records_processed
        due, schedules_seen = self._start()
        steps = 0
        index = UNKNOWN
        try:
            while heap:
                # PartitionGroup.nextRecord: poll the root (siftDownUsingComparator of the last element).
                index = heap[0]
                last = heap.pop()
                size = len(heap)
                if size:
                    last_key = keys[last]
                    half = size >> 1
                    k = 0
                    while k < half:
                        child = 2 * k + 1
                        child_index = heap[child]
                        child_key = keys[child_index]
                        right = child + 1
                        if right < size:
                            right_index = heap[right]
                            right_key = keys[right_index]
                            if child_key > right_key:
                                child = right
                                child_index = right_index
                                child_key = right_key
                        if last_key <= child_key:
                            break
                        heap[k] = child_index
                        k = child
                    heap[k] = last
                head = heads[index]
                timestamp = keys[index]
                fifo, fast_extract, key_deserializer, value_deserializer, source, forward, _ = statics[index]
                # RecordQueue.poll: partition time, then updateHead.
                if timestamp > partition_times[index]:
                    partition_times[index] = timestamp
                if fifo:
                    raw = fifo.popleft()
                    new_key = raw.timestamp
                    if new_key >= 0 and fast_extract:
                        if not fifo:
                            refill(index)
                        topic = raw.topic
                        try:
                            key = key_deserializer(topic, raw.key)
                            value = value_deserializer(topic, raw.value)
                        except Exception as failure:
                            new_key = slow_head(index, raw, failure)
                        else:
                            heads[index] = (raw, key, value)
                    else:
                        fifo.appendleft(raw)
                        new_key = slow_head(index, None, None)
                    keys[index] = new_key
                    # offer: append and siftUpUsingComparator (the queue cannot have drained: a head is left).
                    heap.append(index)
                    k = size
                    while k > 0:
                        parent = (k - 1) >> 1
                        parent_index = heap[parent]
                        if new_key >= keys[parent_index]:
                            break
                        heap[k] = parent_index
                        k = parent
                    heap[k] = index
                else:
                    heads[index] = None
                    keys[index] = UNKNOWN
                    group._all_buffered = False
                if timestamp > stream_time:
                    stream_time = timestamp
                    group.stream_time = timestamp

                # StreamTask.process: the record (or the placeholder's skip), then the offset is consumed.
                if type(head) is tuple_type:
                    raw, key, value = head
                    # ProcessorContextImpl.set_raw_record, inlined.
                    context.current_node = source
                    context._record_context = None
                    context._lazy_record = raw
                    context._lazy_timestamp = timestamp
                    context.system_time_ms = now
                    try:
                        forward(Record(key, value, timestamp, raw.headers))
                    except Exception as exc:
                        error = task._processing_failure(exc, source.name, raw.topic, raw.partition, raw.offset)
                        raise error  # noqa: B904 (_processing_failure sets the cause each case needs)
                    finally:
                        context.current_node = None
                    records_processed += 1
                    task.records_processed = records_processed
                    consumed[index] = raw.offset
                else:
                    assert isinstance(head, StampedRecord)
                    slow_process(index, head)
                    records_processed = task.records_processed
                steps += 1

                # The punctuation checks after each step: only when something may be due (else they are no-ops).
                if stream_time >= due or task.schedules_registered != schedules_seen:
                    due, schedules_seen = punctuate()
        except BaseException:
            self.steps = steps
            if index != UNKNOWN:
                self.last_polled = queues[index]
            raise
        self.steps = steps
        return steps

    def _export(self) -> None:
        """Write the loop's state back into the queues, the partition group and the task."""
        task = self.task
        group = self.group
        for index, queue in enumerate(self.queues):
            head = self.heads[index]
            if type(head) is tuple:
                raw, key, value = head
                queue._head = StampedRecord(deserialized_record(raw, key, value), self.keys[index], raw.key, raw.value)
            else:
                assert head is None or isinstance(head, StampedRecord)
                queue._head = head
            queue.head_timestamp = UNKNOWN if head is None else self.keys[index]
            queue.partition_time = self.partition_times[index]
        heap_queue = group._non_empty_queues_by_time
        heap_queue.clear()
        heap_queue._queue.extend(self.queues[index] for index in self.heap)
        group._total_buffered = sum(queue.size() for queue in self.queues)
        for index, offset in self.consumed.items():
            task.consumed_offsets[self.partitions[index]] = offset
        if self.steps:
            task.commit_needed = True
        task._record_info.queue = self.last_polled
