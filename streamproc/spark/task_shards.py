"""What one key shard of a split task writes (issue #29, docs/split.md): the task's files with each row's stamp.

A shard (``engine/key_shards.py``) writes the same outputs, dead-letter records, changelog records and drops as the
unsplit task would for its records, each row with two more columns: ``position`` (the record's step in the task's
order) and ``phase`` (``POLL``/``PROCESS``); ``sequence`` is the shard's own production order. The merge
(``spark/shard_merge.py``) orders the shards' rows on ``(position, phase, sequence)``, renumbers ``sequence`` the
task's way and writes the task's files under the task's names. Shard objects live beside the task's, under
``process/<plan id>/shards/<task id>/<index>-of-<count>/``, so nothing that reads a task's prefix sees them; the
merge deletes them once the task's report is published.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamproc.engine.dead_letter_queue import DeadLetterQueueRecord
from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.key_shards import PROCESS, ShardGate, ShardSpec, Stamp
from streamproc.engine.processor_topology import Partitioner
from streamproc.engine.records import Headers, TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.spark.task_output import (
    _NO_HEADERS,
    _WRITE_OPTIONS,
    CHANGELOG_SCHEMA,
    DROPS_SCHEMA,
    OUTPUT_SCHEMA,
    ROW_GROUP_ROWS,
    TaskChangelogCollector,
    TaskObjects,
    TaskOutputCollector,
    _headers,
    _ParquetFiles,
)
from streamproc.state.changelog import ChangelogRecord

if TYPE_CHECKING:
    from streamproc.engine.stream_task import StreamTask

_STAMP_FIELDS = [pa.field("position", pa.int64(), nullable=False), pa.field("phase", pa.int8(), nullable=False)]
#: A shard's outputs and dead-letter records: the task's columns, then the stamp.
SHARD_OUTPUT_SCHEMA = pa.schema([*OUTPUT_SCHEMA, *_STAMP_FIELDS])
#: A shard's changelog records.
SHARD_CHANGELOG_SCHEMA = pa.schema([*CHANGELOG_SCHEMA, *_STAMP_FIELDS])
#: A shard's drops: the task's columns, then the stamp with the shard's sequence of drops.
SHARD_DROPS_SCHEMA = pa.schema([*DROPS_SCHEMA, *_STAMP_FIELDS, pa.field("sequence", pa.int64(), nullable=False)])


@dataclass(frozen=True, slots=True)
class ShardObjects(TaskObjects):
    """The object names of one shard of one task: the task's names under the shard's own prefix."""

    shard: ShardSpec

    @property
    def prefix(self) -> str:
        return f"{shards_prefix(self.plan_id, self.task_id)}{self.shard}/"


def shards_prefix(plan_id: str, task_id: TaskId) -> str:
    """Where every shard of a task writes (deleted by the merge once the task's report is published)."""
    return f"process/{plan_id}/shards/{task_id}/"


class _StampedFiles(_ParquetFiles):
    """A shard's output or changelog files: a row's last cell is its stamp, ``(position, phase)``, which a row group
    turns into the schema's two stamp columns at once."""

    def __init__(self, schema: pa.Schema, work_dir: Path) -> None:
        super().__init__(schema, work_dir)
        self._getters = self._getters[:-2]  # the cells before the stamp; the stamp is the row's last

    def _flush(self, key: tuple[str, int]) -> None:
        rows = self._rows[key]
        if not rows:
            return
        columns = [list(map(getter, rows)) for getter in self._getters]
        self._write(key, pa.table([*columns, *self._stamp_columns(rows)], schema=self.schema))
        rows.clear()

    def _stamp_columns(self, rows: list[tuple[Any, ...]]) -> list[Any]:
        stamps = list(map(itemgetter(-1), rows))
        return [list(map(itemgetter(0), stamps)), list(map(itemgetter(1), stamps))]


class _StepStampedFiles(_StampedFiles):
    """A shard's files when it reads only its own records (``spark/owned_input.py``): every event is kept and
    happens while a record is processed, at that record's position, so a row's stamp is only the shard's step (the
    task's ``records_processed`` as it was sent), which a row group turns into positions at once. The gate's call
    per row cost a shard about a twentieth of its time (issue #29's count, 1 M records)."""

    def __init__(self, schema: pa.Schema, work_dir: Path, task: StreamTask, positions: np.ndarray) -> None:
        super().__init__(schema, work_dir)
        self._task = task
        self._positions = np.asarray(positions, dtype=np.int64)

    def _stamp_columns(self, rows: list[tuple[Any, ...]]) -> list[Any]:
        if self._task.skip_steps:
            raise AssertionError("a shard reading only its own records skipped a step: its steps are not positions")
        positions = self._positions
        steps = np.fromiter(map(itemgetter(-1), rows), dtype=np.int64, count=len(rows))
        # after the last step (a flush at the commit, a store that logs on flush): one past the last position,
        # as ShardGate.position says
        after = int(positions[-1]) + 1 if len(positions) else 0
        stamped = np.where(steps < len(positions), positions[np.minimum(steps, max(len(positions) - 1, 0))], after)
        return [stamped, np.full(len(rows), PROCESS, dtype=np.int8)]


def _stamp_by_step(
    collector: ShardOutputCollector | ShardChangelogCollector, task: StreamTask, positions: np.ndarray
) -> None:
    """Before the task runs, for a shard that reads only its own records (``positions``: theirs in the whole task,
    by step): a row's stamp is the task's step, read without a call of Python's, and its files stamp it."""
    assert not collector.files.counts, "rows already written"
    collector.files = _StepStampedFiles(collector.files.schema, collector.files._work_dir, task, positions)
    collector.stamp = partial(getattr, task, "records_processed")


class ShardOutputCollector(TaskOutputCollector):
    """The task's output collector for one shard: every row stamped; poll-phase dead letters only in shard 0."""

    def __init__(self, partition_counts: Mapping[str, int], work_dir: Path, task_id: TaskId, gate: ShardGate) -> None:
        super().__init__(partition_counts, work_dir, task_id)
        self.gate = gate
        self.files = _StampedFiles(SHARD_OUTPUT_SCHEMA, work_dir)
        self.dead_letters = _ParquetFiles(SHARD_OUTPUT_SCHEMA, work_dir / "dlq")
        #: Each row's stamp, called once per row (``None``: another shard's event, not written).
        self.stamp: Callable[[], object | None] = gate.stamp_now

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        processor_node_id: str,
        partitioner: Partitioner | None,
    ) -> None:
        stamp = self.stamp()
        if stamp is None:
            return
        partition = self.partition(topic, key, value, processor_node_id, partitioner)
        cell = _NO_HEADERS if not headers else _headers(headers)
        row = (self.sent, topic, partition, timestamp, key, value, cell, processor_node_id, stamp)
        # self.files.append inlined, as the task's collector does: once per output record
        where = (topic, partition)
        rows = self.files._rows.get(where)
        if rows is None or len(rows) >= ROW_GROUP_ROWS - 1:
            self.files.append(where, row)
        else:
            rows.append(row)
        self.sent += 1

    def stamp_by_step(self, task: StreamTask, positions: np.ndarray) -> None:
        """For a shard that reads only its own records: see :func:`_stamp_by_step`."""
        _stamp_by_step(self, task, positions)

    def send_dead_letter_queue_record(self, record: DeadLetterQueueRecord, processor_node_id: str) -> None:
        if self.gate.keeps:
            self.append_dead_letter(record, processor_node_id, self.gate.tag())


class ShardChangelogCollector(TaskChangelogCollector):
    """The task's changelog collector for one shard: every row stamped (a store is written only while processing)."""

    def __init__(self, task_id: TaskId, work_dir: Path, gate: ShardGate) -> None:
        super().__init__(task_id, work_dir)
        self.gate = gate
        self.files = _StampedFiles(SHARD_CHANGELOG_SCHEMA, work_dir)
        #: Each row's stamp, as :attr:`ShardOutputCollector.stamp`.
        self.stamp: Callable[[], object | None] = gate.stamp_now

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None:
        if partition.partition != self.task_id.partition:
            super(TaskChangelogCollector, self).send(store_name, partition, record)  # raises the wiring error
        stamp = self.stamp()
        if stamp is None:
            return
        row = (
            self.sent,
            store_name,
            partition.topic,
            partition.partition,
            record.timestamp,
            record.key,
            record.value,
            _NO_HEADERS if not record.headers else _headers(record.headers),
            stamp,
        )
        where = (partition.topic, partition.partition)
        rows = self.files._rows.get(where)
        if rows is None or len(rows) >= ROW_GROUP_ROWS - 1:
            self.files.append(where, row)
        else:
            rows.append(row)
        self.sent += 1

    def stamp_by_step(self, task: StreamTask, positions: np.ndarray) -> None:
        """For a shard that reads only its own records: see :func:`_stamp_by_step`."""
        _stamp_by_step(self, task, positions)


def shard_drops_bytes(drops: Sequence[DroppedRecord], stamps: Sequence[Stamp]) -> bytes:
    """A shard's drops with their stamps (the task's drop sensor's events, in order, and the gate's stamps)."""
    if len(drops) != len(stamps):
        raise AssertionError(f"{len(drops)} drops but {len(stamps)} stamps")
    columns = [
        [d.topic for d in drops],
        [d.partition for d in drops],
        [d.offset for d in drops],
        [d.reason for d in drops],
        [d.records_processed for d in drops],
        [s.position for s in stamps],
        [s.phase for s in stamps],
        [s.sequence for s in stamps],
    ]
    sink = io.BytesIO()
    pq.write_table(pa.table(columns, schema=SHARD_DROPS_SCHEMA), sink, **_WRITE_OPTIONS)
    return sink.getvalue()


def keep_restored_segments(stores: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """Before a shard processes a record: each persistent segmented store's segments and stream time as its restore
    left them (the merge's start for what the unsplit task would have expired, ``SegmentedBytesStore.settle``), and
    from now on the store keeps every segment it creates (the shard's stream time is not the task's)."""
    kept: dict[str, dict[str, object]] = {}
    for name, store in sorted(stores.items()):
        segments = getattr(store, "segments", None)
        if segments is None or not store.persistent:  # type: ignore[attr-defined]
            continue
        kept[name] = {"segments": segments.segment_ids(), "stream_time": segments.observed_stream_time}
        segments.keeps_expired_segments = True
    return kept
