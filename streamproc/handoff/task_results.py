"""What the process step left for one task (``docs/process.md``), read back for the hand-off.

The report is the process step's commit marker: a task without one did not finish, and the hand-off refuses the
whole plan rather than publish part of it.
"""

from __future__ import annotations

import io
import itertools
import json
import tarfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.plan.run_plan import PlannedTask, RunPlan
from streamproc.spark.task_output import TaskObjects
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import ARROW_USE_THREADS

#: Record headers as the producer takes them: (key, value) pairs; empty for nearly every record.
Headers = tuple[tuple[str, bytes | None], ...]
#: One stored record as the hand-off produces it: (timestamp, key, value, headers), in a file's row order.
Row = tuple[int, bytes | None, bytes | None, Headers]


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """One record to produce: ``partition`` -1 lets the producer choose (a null key without a partitioner)."""

    topic: str
    partition: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True)
class InputCommit:
    """The offset to commit for one input partition and the partition time for its commit metadata."""

    partition: TopicPartition
    next_offset: int
    partition_time: int


@dataclass(frozen=True, slots=True)
class TaskResults:
    """One finished task's objects: its report, output and changelog object names, and its store bundle."""

    task: PlannedTask
    objects: TaskObjects
    report: dict[str, Any]
    store: ObjectStore

    @property
    def task_id(self) -> str:
        return self.task.task_id

    def commits(self, planned: Mapping[str, tuple[int, int]] | None = None) -> list[InputCommit]:
        """The report's next offset and partition time per input partition (the task's committable offsets).

        ``planned`` (partition name → the plan's "after" offset and partition time) adds the task's partitions the
        report does not name: a range with nothing processed that the plan still moves to its end (a start
        position the user chose), as the plan's hand-off preview says.
        """
        entries = {
            name: (entry["next_offset"], entry["partition_time"])
            for name, entry in self.report.get("offsets", {}).items()
        }
        for name in self.task.source_partitions:
            if name not in entries and planned is not None and name in planned:
                entries[name] = planned[name]
        commits = []
        for name, (offset, partition_time) in sorted(entries.items()):
            topic, _, partition = name.rpartition("-")
            commits.append(InputCommit(TopicPartition(topic, int(partition)), offset, partition_time))
        return commits

    def output_partitions(self) -> list[tuple[str, int]]:
        return [_split(name) for name in sorted(self.report.get("outputs", {}))]

    def changelog_partitions(self) -> list[tuple[str, int]]:
        return [_split(name) for name in sorted(self.report.get("changelogs", {}))]

    def outputs(self, topic: str, partition: int) -> Iterator[OutgoingRecord]:
        """The records the task's sinks sent to ``topic``/``partition``, in production order."""
        yield from _records(self.output_rows(topic, partition), topic, partition)

    def changelog(self, topic: str, partition: int) -> Iterator[OutgoingRecord]:
        """The task's changelog records for one changelog partition, in write order."""
        yield from _records(self.changelog_rows(topic, partition), topic, partition)

    def output_rows(self, topic: str, partition: int) -> Iterator[Row]:
        """:meth:`outputs` as plain rows, without a record object per row."""
        for batch in self.output_batches(topic, partition):
            yield from batch_rows(batch)

    def output_batches(self, topic: str, partition: int) -> Iterator[pa.RecordBatch]:
        """:meth:`outputs` as batches of :data:`ROW_COLUMNS`: what the publish loop produces, in file order."""
        return _batches(self.store, self.objects.output(topic, partition))

    def changelog_rows(self, topic: str, partition: int) -> Iterator[Row]:
        """:meth:`changelog` as plain rows."""
        for batch in self.changelog_batches(topic, partition):
            yield from batch_rows(batch)

    def changelog_batches(self, topic: str, partition: int) -> Iterator[pa.RecordBatch]:
        """:meth:`changelog` as batches of :data:`ROW_COLUMNS`, in write order."""
        return _batches(self.store, self.objects.changelog(topic, partition))

    def changelog_older_than(self, topic: str, partition: int, cutoff_ms: int) -> int:
        """How many of :meth:`changelog`'s records have a timestamp before ``cutoff_ms``, counted on the timestamp
        column alone (a record object per changelog record cost ≈ 1 CPU-s per million of them)."""
        data = self.store.get(self.objects.changelog(topic, partition))
        stamps = pq.read_table(pa.BufferReader(data), columns=["timestamp"]).column("timestamp")
        older: int | None = pc.sum(pc.less(stamps, cutoff_ms)).as_py()
        return older or 0

    def changelog_table(self, topic: str, partition: int) -> pa.Table:
        """:meth:`changelog` as one table of :data:`ROW_COLUMNS` (to be reduced whole, then produced)."""
        data = self.store.get(self.objects.changelog(topic, partition))
        return pq.read_table(pa.BufferReader(data), columns=ROW_COLUMNS, use_threads=ARROW_USE_THREADS)

    @property
    def has_bundle(self) -> bool:
        """The process step wrote a store bundle (the task has persistent stores)."""
        return self.objects.stores in self.report.get("objects", {})

    def bundle(self) -> bytes | None:
        """The task's ``stores.tar`` (Kafka Streams' layout, no ``.checkpoint``), ``None`` without persistent stores."""
        if not self.has_bundle:
            return None
        return self.store.get(self.objects.stores)

    def persistent_stores(self, bundle: bytes) -> frozenset[str]:
        """Store names the bundle holds a directory for: ``rocksdb/<name>`` or a segmented ``<name>/``."""
        names: set[str] = set()
        with tarfile.open(fileobj=io.BytesIO(bundle)) as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if len(parts) >= 2 and parts[0] == "rocksdb":
                    names.add(parts[1])
                elif parts:
                    names.add(parts[0])
        return frozenset(names)


def planned_commits(plan: RunPlan) -> dict[str, tuple[int, int]]:
    """The plan's commits the hand-off makes whatever the reports say (partition → offset, partition time): those
    that move the group's offset (a start the user chose, with nothing processed). A repartition partition the plan
    leaves where it is is committed only if the report names it (the upstream stage appended records to it)."""
    times = {r.name: r.partition_time for r in plan.ranges}
    return {c.partition: (c.after, times.get(c.partition, -1)) for c in plan.commits if c.moves}


def task_commits(
    results: TaskResults,
    planned: Mapping[str, tuple[int, int]],
    resolve_offset: Callable[[TopicPartition, int], int] | None = None,
) -> list[InputCommit]:
    """The offsets one task's transaction commits: the report's (plus ``planned`` for partitions it does not name),
    each through ``resolve_offset`` (a repartition partition past this run's appended records: its log end).
    The hand-off commits exactly these; the preview shows exactly these."""
    commits = results.commits(planned)
    if resolve_offset is None:
        return commits
    return [replace(c, next_offset=resolve_offset(c.partition, c.next_offset)) for c in commits]


def _split(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("+")
    return topic, int(partition)


def _records(rows: Iterable[Row], topic: str, partition: int) -> Iterator[OutgoingRecord]:
    for timestamp, key, value, headers in rows:
        yield OutgoingRecord(topic, partition, timestamp, key, value, headers)


#: Rows decoded at a time: a process step's row group (``task_output.ROW_GROUP_ROWS``) is 16 Ki rows.
_BATCH_ROWS = 64 * 1024


#: The columns of an output or changelog object that its records are produced from, in :data:`Row` order.
ROW_COLUMNS = ["timestamp", "key", "value", "headers"]


def _batches(store: ObjectStore, name: str) -> Iterator[pa.RecordBatch]:
    """One output or changelog object's :data:`ROW_COLUMNS`, in file order, a batch at a time."""
    parquet = pq.ParquetFile(pa.BufferReader(store.get(name)))
    yield from parquet.iter_batches(batch_size=_BATCH_ROWS, columns=ROW_COLUMNS, use_threads=ARROW_USE_THREADS)


def table_batches(table: pa.Table) -> list[pa.RecordBatch]:
    """A table of :data:`ROW_COLUMNS` (e.g. a reduced changelog) as the batches the publish produces, in order."""
    batches: list[pa.RecordBatch] = table.to_batches(max_chunksize=_BATCH_ROWS)
    return batches


def table_rows(table: pa.Table) -> Iterator[Row]:
    """The rows of a table of :data:`ROW_COLUMNS`, in table order."""
    for batch in table_batches(table):
        yield from batch_rows(batch)


def batch_rows(batch: pa.RecordBatch) -> Iterator[Row]:
    """The rows of a batch of :data:`ROW_COLUMNS`, in batch order."""
    timestamps, keys, values = (batch.column(i).to_pylist() for i in range(3))
    yield from zip(timestamps, keys, values, _headers(batch.column(3)), strict=True)


_NO_HEADERS: Headers = ()


def epoch_timestamps(batch: pa.RecordBatch) -> int:
    """How many rows of a batch of :data:`ROW_COLUMNS` have timestamp 0, which the producer cannot send (a
    ``rd_kafka_producev`` timestamp of 0 means "now")."""
    count: int = pc.sum(pc.equal(batch.column("timestamp"), 0)).as_py() or 0
    return count


def has_headers(column: pa.Array) -> bool:
    """Whether any row of a ``headers`` column has a header (nearly no batch does)."""
    return bool(pc.any(pc.greater(pc.list_value_length(column), 0)).as_py())


def _headers(column: pa.Array) -> Iterable[Headers]:
    """Each row's headers as (key, value) pairs. A batch without any header (the usual case) shares one empty
    tuple: converting the column to Python lists of dicts cost a third of the hand-off's decoding."""
    if not has_headers(column):
        return itertools.repeat(_NO_HEADERS, len(column))
    return [tuple((h["key"], h["value"]) for h in header) for header in column.to_pylist()]


def load_results(plan: RunPlan, plan_id: str, store: ObjectStore) -> list[TaskResults]:
    """Every planned task's results, in stage order then task order; refuses when any task has no report."""
    missing = []
    results: dict[str, TaskResults] = {}
    for task in plan.tasks:
        objects = TaskObjects(plan_id, TaskId.parse(task.task_id))
        if not store.exists(objects.report):
            missing.append(task.task_id)
            continue
        report = json.loads(store.get(objects.report))
        results[task.task_id] = TaskResults(task, objects, report, store)
    if missing:
        raise HandoffError(
            f"the process step did not finish task(s) {', '.join(missing)} of plan {plan_id} (no report under "
            f"{TaskObjects(plan_id, TaskId.parse(missing[0])).prefix}); nothing was handed off: run `streamproc "
            "process` again with the same plan and store until every task is done"
        )
    order = {sub: i for i, stage in enumerate(plan.stages) for sub in stage}
    return sorted(results.values(), key=lambda r: (order.get(r.task.subtopology, 0), TaskId.parse(r.task_id)))
