"""Which offsets a task commits, with which metadata, and what it purges (``PI/StreamTask.java``, 4.2.0).

- ``TaskExecutor.commitTasksAndMaybeUpdateCommittableOffsets`` asks a task for offsets only when
  ``StreamTask.commitNeeded()``: it processed (or punctuated) since its last commit, or a consumer position moved
  past its last processed offset. A task that processed nothing since it was created commits nothing, even when
  processor metadata needs committing (state.md §8.1).
- ``committableOffsetsAndMetadata``: a RUNNING/SUSPENDED task commits every input partition it processed a record
  from since the task was created, or all its input partitions when processor metadata needs committing; the offset
  is the head buffered record's, else the consumer's next fetch position (partitions with neither are skipped), and
  the metadata is ``TopicPartitionMetadata(partition time, processor metadata).encode()`` (state.md §8.1).
- ``RecordQueue`` partition time (state.md §8.2) is the engine's ``RecordQueue.partition_time``, the one rule; a
  commit carries whatever the task's queues hold (``PartitionCommitState.partition_time``).
- ``purgeableOffsets`` + ``TaskManager.maybePurgeCommittedRecords``: for the active tasks the stream thread owns
  (``activeRunningTaskIterable``: RUNNING, or SUSPENDED during a rebalance; restoring tasks sit in the state
  updater), ``DeleteRecords(before = committed offset)`` for each repartition input partition the task committed
  in this run (the map starts at -1 for every partition; 0 is included) (state.md §9).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from streamproc.engine.records import TopicPartition
from streamproc.state.commit_metadata import UNKNOWN, ProcessorMetadata, TopicPartitionMetadata

#: The initial value of ``StreamTask.committedOffsets`` for every input partition: nothing committed in this run.
NOT_COMMITTED = -1


class TaskState(enum.Enum):
    """``Task.State``."""

    CREATED = "CREATED"
    RESTORING = "RESTORING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    CLOSED = "CLOSED"


@dataclass(frozen=True, slots=True)
class PartitionCommitState:
    """What ``StreamTask`` knows about one input partition at commit time.

    ``processed_any``: a record of it was processed since the task object was created (``consumedOffsets``);
    ``head_buffered_offset``: offset of the next buffered record (``PartitionGroup.headRecordOffset``), ``None`` if
    the queue is empty; ``next_offset_to_consume``: the consumer's next fetch position
    (``ConsumerRecords.nextOffsets``), ``None`` if never fetched.
    """

    processed_any: bool
    head_buffered_offset: int | None
    next_offset_to_consume: int | None
    partition_time: int = UNKNOWN
    head_leader_epoch: int | None = None
    next_leader_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """``OffsetAndMetadata``: the committed offset N, its leader epoch and Kafka Streams' metadata string."""

    offset: int
    metadata: str
    leader_epoch: int | None = None


def commit_offsets(
    partitions: Mapping[TopicPartition, PartitionCommitState],
    processor_metadata: ProcessorMetadata = ProcessorMetadata(),  # noqa: B008 - immutable value
    *,
    processor_metadata_needs_commit: bool = False,
    task_state: TaskState = TaskState.RUNNING,
    commit_needed: bool | None = None,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The offsets this task would commit now: ``commitNeeded()`` then ``committableOffsetsAndMetadata``.

    ``commit_needed`` is ``StreamTask.commitNeeded()``; ``None`` derives it from ``partitions`` as for a task that
    has not committed since it was created: needed exactly when some partition processed a record (processing sets
    the flag; with nothing processed, ``consumedOffsets`` is empty, so no position can have moved past it).
    """
    if task_state not in (TaskState.RUNNING, TaskState.SUSPENDED):
        return {}
    if commit_needed is None:
        commit_needed = any(state.processed_any for state in partitions.values())
    if not commit_needed:
        return {}
    result: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, state in partitions.items():
        if not (processor_metadata_needs_commit or state.processed_any):
            continue
        if state.head_buffered_offset is not None:
            offset, epoch = state.head_buffered_offset, state.head_leader_epoch
        elif state.next_offset_to_consume is not None:
            offset, epoch = state.next_offset_to_consume, state.next_leader_epoch
        else:
            continue
        metadata = TopicPartitionMetadata(state.partition_time, processor_metadata).encode()
        result[tp] = OffsetAndMetadata(offset, metadata, epoch)
    return result


def purge_offsets(
    task_committed_offsets: Mapping[TopicPartition, int],
    repartition_topics: Iterable[str],
    *,
    task_state: TaskState = TaskState.RUNNING,
) -> dict[TopicPartition, int]:
    """``StreamTask.purgeableOffsets`` for a task in ``task_state``: partition → DeleteRecords ``before_offset``."""
    if task_state not in (TaskState.RUNNING, TaskState.SUSPENDED):
        return {}
    repartition = set(repartition_topics)
    return {
        tp: offset
        for tp, offset in task_committed_offsets.items()
        if tp.topic in repartition and offset > NOT_COMMITTED
    }


def repartition_commit_offset(next_offset: int, planned_end: int, log_end: Callable[[], int]) -> int:
    """The offset the hand-off commits for a repartition partition whose task reported ``next_offset``.

    Within the planned backlog (``next_offset <= planned_end``) it is the report's offset, as for any input. Beyond
    it the task consumed records this run's upstream tasks appended; the hand-off published those in one
    transaction per upstream task, each followed by its commit marker, so the partition is committed at its log end
    after them (``log_end()``, asked only then): Kafka Streams' consumer position would be past the markers too,
    and a committed offset short of them would leave the resumed application a lag of markers it can never consume.
    """
    if next_offset <= planned_end:
        return next_offset
    return max(next_offset, log_end())


#: A committed transaction adds one control record (``ControlRecordType.COMMIT``) to each partition it wrote to.
COMMIT_MARKERS_PER_TRANSACTION = 1


def log_end_after_transactions(log_end: int, records_per_transaction: Iterable[int]) -> int:
    """A partition's log end after committed transactions that each append the given number of records to it.

    Each transaction's records take an offset each, and its commit marker one more; a transaction that wrote
    nothing to the partition adds nothing (no marker either). This is how the preview knows, before the hand-off,
    the log end :func:`repartition_commit_offset` will find."""
    return log_end + sum(n + COMMIT_MARKERS_PER_TRANSACTION for n in records_per_transaction if n > 0)
