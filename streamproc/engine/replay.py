"""The batch replay of one task (ordering.md §9, decisions D-1..D-7), with bounded buffering.

Steps (§9.1): restore partition times (ST-8), initialise the topology, one STREAM_TIME check if stream time is known
(D-5), add every partition in ascending ``(topic, partition)`` order (D-1), then process one record at a time, never
waiting (D-2), with a STREAM_TIME check (D-3) and a wall-clock check against the virtual clock (D-4) after every
step. A fatal error stops the task and propagates (D-6).

**Bounded buffering.** D-1 adds each partition's *complete* record list up front. A replay of millions of records
instead feeds each partition from an iterator, with at most ``buffered_records_per_partition`` raw records in its
FIFO (plus the deserialized head). The order is identical because Kafka Streams' choices only depend on a queue's
*emptiness* and *head*: ``PartitionGroup.addRawRecords`` looks at size 0 vs > 0, ``nextRecord`` re-offers a queue
unless ``isEmpty()``, and ``RecordQueue.updateHead`` pulls raw records until it finds a valid head or the FIFO is
empty (then leaves a ``CorruptedRecord`` placeholder). The queue refills its FIFO from the iterator the moment the
FIFO runs empty, so none of these ever sees an empty FIFO while the iterator still has records; the head, the heap
operations, the placeholders and hence the order are exactly those of "all records added up front".

**Speed.** The processing loop is :mod:`~streamproc.engine.bulk_replay`'s when the task allows it (idling disabled,
frozen wall clock, the engine's own classes): the same algorithm on plain Python values, property-tested against
``StreamTask.process``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from streamproc.engine.bulk_replay import process_buffered
from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.record_queue import UNKNOWN, RawRecord
from streamproc.engine.records import TopicPartition
from streamproc.engine.stream_task import CommittableOffset, SkipStep, StreamTask
from streamproc.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PartitionInput:
    """One input partition of the task: its records in offset order and the restored partition time (-1: none)."""

    partition: TopicPartition
    records: Iterable[RawRecord]
    committed_partition_time: int = UNKNOWN


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What one task's replay did: counts, skip steps, drops, and what a commit would carry."""

    records_processed: int
    steps: int
    stream_time: int
    skip_steps: tuple[SkipStep, ...]
    dropped_counts: dict[str, int]
    dropped: tuple[DroppedRecord, ...]
    committable_offsets: dict[TopicPartition, CommittableOffset]
    #: Punctuators run (stream-time and wall-clock).
    punctuations: int = 0


def _chunks(records: Iterator[RawRecord], size: int) -> Callable[[], list[RawRecord]]:
    def refill() -> list[RawRecord]:
        return list(islice(records, size))

    return refill


def start_replay(
    task: StreamTask, inputs: Sequence[PartitionInput], *, buffered_records_per_partition: int | None = None
) -> None:
    """§9.1 up to the first record: partition times (ST-8), ``init`` (its punctuation check, D-5), the inputs (D-1).

    Every partition is fed from its iterator with at most ``buffered_records_per_partition`` raw records buffered
    (see the module docstring); after this, :func:`drain` or one ``StreamTask.process`` at a time runs the task.
    """
    size = (
        task.config.buffered_records_per_partition
        if buffered_records_per_partition is None
        else buffered_records_per_partition
    )
    if size < 1:
        raise ConfigError(
            f"task [{task.id}] buffered_records_per_partition must be at least 1, got {size}; "
            "use buffered.records.per.partition's default of 1000 if unsure"
        )
    ordered = sorted(inputs, key=lambda item: item.partition)
    partitions = [item.partition for item in ordered]
    if len(set(partitions)) != len(partitions):
        raise ConfigError(f"task [{task.id}] got the same input partition twice: {[str(p) for p in partitions]}")

    task.disable_idling()
    task.initialize_task_time(
        {item.partition: item.committed_partition_time for item in ordered if item.committed_partition_time != UNKNOWN}
    )
    task.initialize_topology()
    if task.stream_time != UNKNOWN:
        task.maybe_punctuate_stream_time()

    for item in ordered:
        refill = _chunks(iter(item.records), size)
        task.partition_group.queue(item.partition).set_refill(refill)
        task.add_records(item.partition, refill())


def drain(task: StreamTask, *, bulk: bool = True) -> int:
    """Process every record the task has, with the punctuation checks after each step (D-3, D-4); return the steps.

    With ``bulk`` the loop is :func:`~streamproc.engine.bulk_replay.process_buffered` whenever the task allows it.
    """
    bulk_steps = process_buffered(task) if bulk else None
    if bulk_steps is not None:
        return bulk_steps
    steps = 0
    while task.process():
        steps += 1
        task.maybe_punctuate_stream_time()
        task.maybe_punctuate_system_time()
    return steps


def finish_replay(task: StreamTask, steps: int, *, close: bool = True) -> ReplayResult:
    """Log what the task did (as ``replay`` always has), close it if asked, and return its :class:`ReplayResult`."""
    for partition, committable in task.committable_offsets().items():
        task.log.info(
            "Processed records of %s up to offset %s (partition time %s)",
            partition,
            committable.offset - 1,
            committable.partition_time,
        )
    task.log.info(
        "Processed %s records in %s steps; dropped %s (%s); stream time %s",
        task.records_processed,
        steps,
        task.dropped.total,
        task.dropped.counts,
        task.stream_time,
    )
    if task.frozen_wall_clock_schedules:
        task.log.warning(
            "%s WALL_CLOCK_TIME punctuation schedule(s) never fired because the virtual wall clock is frozen (D-4): %s",
            len(task.frozen_wall_clock_schedules),
            task.frozen_wall_clock_schedules,
        )
    if close:
        task.close()
    return ReplayResult(
        records_processed=task.records_processed,
        steps=steps,
        stream_time=task.stream_time,
        skip_steps=tuple(task.skip_steps),
        dropped_counts=task.dropped.counts,
        dropped=task.dropped.events,
        committable_offsets=task.committable_offsets(),
        punctuations=task.punctuations,
    )


def replay(
    task: StreamTask,
    inputs: Sequence[PartitionInput],
    *,
    buffered_records_per_partition: int | None = None,
    close: bool = True,
    bulk: bool = True,
) -> ReplayResult:
    """Run ``task`` over ``inputs`` to the end (§9.1); raises the task's fatal error, if any (D-6).

    With ``bulk`` (the default) the records are processed by :func:`~streamproc.engine.bulk_replay.process_buffered`
    whenever the task allows it, which gives the same result faster; ``bulk=False`` forces ``StreamTask.process``.
    """
    start_replay(task, inputs, buffered_records_per_partition=buffered_records_per_partition)
    steps = drain(task, bulk=bulk)
    return finish_replay(task, steps, close=close)
