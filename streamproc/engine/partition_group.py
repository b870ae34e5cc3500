"""``PartitionGroup``: which buffered record of a task goes next, and the task's stream time (ordering.md PG-1..PG-11).

Mirrors ``org.apache.kafka.streams.processor.internals.PartitionGroup`` (4.2.0). Non-empty queues sit in a
``java.util.PriorityQueue`` keyed by their head record's timestamp (PG-1); a queue is offered when it goes from
empty to non-empty on add (PG-2), and each step polls the root, polls that queue, and offers it back unless it
drained (PG-3). Stream time is the maximum timestamp handed out, raised before processing (PG-6). Readiness with
``max.task.idle.ms`` follows KIP-695 (PG-7).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamproc.engine.java_priority_queue import JavaPriorityQueue
from streamproc.engine.record_queue import UNKNOWN, RawRecord, RecordQueue
from streamproc.engine.records import TopicPartition
from streamproc.engine.stamped_record import StampedRecord
from streamproc.errors import ProcessingError

#: ``StreamsConfig.MAX_TASK_IDLE_MS_DISABLED``: process whatever is buffered, never wait.
MAX_TASK_IDLE_MS_DISABLED = -1

#: A partition's fetched lag (records on the broker not yet fetched), or ``None`` when not known yet.
LagProvider = Callable[[TopicPartition], int | None]


#: The heap key (``RecordQueue::headRecordTimestamp``), read in C rather than through a Python function.
_head_timestamp: Callable[[RecordQueue], int] = operator.attrgetter("head_timestamp")


@dataclass(slots=True)
class RecordInfo:
    """``PartitionGroup.RecordInfo``: the queue the last record came from (the task needs partition and source)."""

    queue: RecordQueue | None = None

    @property
    def partition(self) -> TopicPartition:
        assert self.queue is not None
        return self.queue.partition


class PartitionGroup:
    """The queues of one task, the heap of non-empty ones, and the task's stream time."""

    def __init__(
        self,
        queues: Mapping[TopicPartition, RecordQueue],
        *,
        max_task_idle_ms: int = 0,
        lag_provider: LagProvider | None = None,
        log: logging.LoggerAdapter[Any] | logging.Logger | None = None,
    ) -> None:
        self._queues: dict[TopicPartition, RecordQueue] = dict(queues)
        self._non_empty_queues_by_time: JavaPriorityQueue[RecordQueue] = JavaPriorityQueue(_head_timestamp)
        self._total_buffered = 0
        self._all_buffered = False
        self.stream_time = UNKNOWN
        self._max_task_idle_ms = max_task_idle_ms
        self._lag_provider = lag_provider
        self._idle_deadlines: dict[TopicPartition, int] = {}
        self._log = log if log is not None else logging.getLogger(__name__)

    def partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(self._queues)

    def queue(self, partition: TopicPartition) -> RecordQueue:
        try:
            return self._queues[partition]
        except KeyError:
            raise ProcessingError(
                f"Partition {partition} not found. The task's input partitions are "
                f"{sorted(str(p) for p in self._queues)}; create the task with every partition it reads"
            ) from None

    def add_raw_records(self, partition: TopicPartition, records: Iterable[RawRecord]) -> int:
        """Buffer a batch (PG-2); the queue enters the heap only when it goes from empty to non-empty."""
        queue = self.queue(partition)
        old_size = queue.size()
        new_size = queue.add_raw_records(records)
        if old_size == 0 and new_size > 0:
            self._non_empty_queues_by_time.offer(queue)
            if len(self._non_empty_queues_by_time) == len(self._queues):
                self._all_buffered = True
        self._total_buffered += new_size - old_size
        return new_size

    def next_record(self, info: RecordInfo) -> StampedRecord | None:
        """PG-3: poll the heap root, poll its queue, offer it back unless drained, raise stream time."""
        queue = self._non_empty_queues_by_time.poll()
        info.queue = queue
        if queue is None:
            return None
        old_size = queue.size()
        record = queue.poll()
        new_size = queue.size()
        self._total_buffered -= old_size - new_size
        if new_size == 0:
            self._all_buffered = False
        else:
            self._non_empty_queues_by_time.offer(queue)
        timestamp = record.timestamp
        if timestamp > self.stream_time:
            self.stream_time = timestamp
        return record

    def set_partition_time(self, partition: TopicPartition, partition_time: int) -> None:
        """ST-8: restore a committed partition time; stream time becomes the max of them."""
        self.queue(partition).set_partition_time(partition_time)
        if partition_time > self.stream_time:
            self.stream_time = partition_time

    def partition_timestamp(self, partition: TopicPartition) -> int:
        return self.queue(partition).partition_time

    def head_record_offset(self, partition: TopicPartition) -> int | None:
        return self.queue(partition).head_record_offset()

    def num_buffered(self, partition: TopicPartition | None = None) -> int:
        """``numBuffered()`` (all queues, heads included) or ``numBuffered(tp)``."""
        if partition is None:
            return self._total_buffered
        return self.queue(partition).size()

    def all_partitions_buffered_locally(self) -> bool:
        """PG-9: only informative in 4.2 (a TRACE log and tests), never a processing condition."""
        return self._all_buffered

    def ready_to_process(self, wall_clock_time: int) -> bool:
        """PG-7 (KIP-695): whether the task may process now, given buffered data, fetched lags and idling."""
        if self._max_task_idle_ms == MAX_TASK_IDLE_MS_DISABLED:
            return True
        enforced: list[TopicPartition] = []
        some_buffered = False
        for partition, queue in self._queues.items():
            if not queue.is_empty():
                self._idle_deadlines.pop(partition, None)
                some_buffered = True
                continue
            lag = self._lag_provider(partition) if self._lag_provider is not None else 0
            if lag is None:
                self._idle_deadlines.pop(partition, None)
                self._log.debug("Waiting to fetch data for %s", partition)
                return False
            if lag > 0:
                self._idle_deadlines.pop(partition, None)
                self._log.debug(
                    "Partition %s has current lag %s, but no data is buffered locally. Waiting to buffer some records.",
                    partition,
                    lag,
                )
                return False
            deadline = self._idle_deadlines.setdefault(partition, wall_clock_time + self._max_task_idle_ms)
            if wall_clock_time < deadline:
                self._log.debug(
                    "Partition %s has current lag 0 and current time is %s. Waiting for new data to be produced for "
                    "configured idle time %s (deadline is %s).",
                    partition,
                    wall_clock_time,
                    self._max_task_idle_ms,
                    deadline,
                )
                return False
            enforced.append(partition)
        if not enforced:
            return True
        if not some_buffered:
            self._log.debug("No partitions were buffered locally, so this task is not ready for processing.")
            return False
        return True

    def disable_idling(self) -> None:
        """Always ready from now on, as with ``max.task.idle.ms = -1`` (streamproc decision D-2)."""
        self._max_task_idle_ms = MAX_TASK_IDLE_MS_DISABLED

    def clear(self) -> None:
        """On suspension: empty queues and heap, reset buffered count and stream time (not ``allBuffered``)."""
        for queue in self._queues.values():
            queue.clear()
        self._non_empty_queues_by_time.clear()
        self._total_buffered = 0
        self.stream_time = UNKNOWN
        self._idle_deadlines.clear()
