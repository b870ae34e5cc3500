"""What one task writes: outputs per sink topic and partition, changelog records, drops, store bundle, report.

Object names are fixed by the plan and the task (:class:`TaskObjects`), so a retried or re-run task writes exactly
the same names; rows are written in production order with fixed Parquet settings, so the same plan gives the same
bytes. Files are first written under the executor's local directory (bounded memory: a row group at a time) and
then published as the final object; the report is published last and is the task's commit marker — a task without
a report has not happened, whatever else exists under its prefix, and a re-run skips a task whose report exists.

Records a sink sends are partitioned as ``RecordCollectorImpl#send`` would (``engine/partitioner.py``: murmur2 of the
serialized key, or the sink's ``StreamPartitioner``). A record whose partition the producer would choose at random
(a null key without a partitioner) goes to partition ``-1`` (:data:`UNASSIGNED`): the hand-off lets the producer
choose, as the live application would.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from streamproc.engine.dead_letter_queue import DeadLetterQueueRecord
from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.processor_topology import Partitioner, RecordCollector
from streamproc.engine.records import Headers, TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import ProcessingError
from streamproc.state.changelog import ChangelogRecord
from streamproc.state.changelog_collector import ChangelogCollector
from streamproc.storage.object_store import _TEMP_MARKER, LocalObjectStore, ObjectStore

#: The partition of a record the producer would place itself (null key, no partitioner).
UNASSIGNED = -1
#: Rows buffered per file before a row group is written.
ROW_GROUP_ROWS = 16 * 1024

_HEADERS = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]), nullable=False))

#: Sink output: ``sequence`` is the task-wide production order (outputs of all topics share it).
OUTPUT_SCHEMA = pa.schema(
    [
        pa.field("sequence", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", _HEADERS, nullable=False),
        pa.field("processor_node_id", pa.string(), nullable=False),
    ]
)

#: Changelog records of the task's stores, in write order (``sequence`` shared with nothing else).
CHANGELOG_SCHEMA = pa.schema(
    [
        pa.field("sequence", pa.int64(), nullable=False),
        pa.field("store", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("key", pa.binary(), nullable=False),
        pa.field("value", pa.binary()),
        pa.field("headers", _HEADERS, nullable=False),
    ]
)

#: Records the task dropped (``dropped-records`` sensor events), in the order they were dropped.
DROPS_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("records_processed", pa.int64(), nullable=False),
    ]
)

#: Fixed writer settings: equal rows give equal bytes.
_WRITE_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    # LZ4: staged data is written once and read once, on the same machine or next to it; zstd's denser files cost
    # twice LZ4's CPU to write and three times to read (250 000 records: 0.34 against 0.21-0.25 CPU-s to encode,
    # 0.18-0.22 against 0.07-0.09 to read, for files 1.4x the size)
    "compression": "lz4",
    # Dictionary pages only where values repeat (names, partitions, keys, headers): sequence numbers and timestamps
    # never do and values seldom, and trying them made a 125 000 record count output twice the size (1.17 MB
    # against 0.61) for 40 % more CPU
    "use_dictionary": [
        "topic",
        "partition",
        "key",
        "store",
        "processor_node_id",
        "reason",
        "headers.list.element.key",
        "headers.list.element.value",
    ],
    "write_statistics": True,
    "data_page_version": "1.0",
    "use_compliant_nested_type": True,
    "store_schema": True,
    "write_page_index": False,
    "write_page_checksum": False,
}


@dataclass(frozen=True, slots=True)
class TaskObjects:
    """The object names of one task of one plan: ``process/<plan id>/tasks/<task id>/...``."""

    plan_id: str
    task_id: TaskId

    @property
    def prefix(self) -> str:
        return f"process/{self.plan_id}/tasks/{self.task_id}/"

    def output(self, topic: str, partition: int) -> str:
        return f"{self.prefix}outputs/{topic}+{partition}.parquet"

    def changelog(self, topic: str, partition: int) -> str:
        return f"{self.prefix}changelogs/{topic}+{partition}.parquet"

    @property
    def drops(self) -> str:
        return f"{self.prefix}drops.parquet"

    @property
    def dead_letter_queue(self) -> str:
        return f"{self.prefix}dlq.parquet"

    @property
    def stores(self) -> str:
        return f"{self.prefix}stores.tar"

    @property
    def report(self) -> str:
        return f"{self.prefix}report.json"


class _ParquetFiles:
    """One local Parquet file per key, written a row group at a time, then published under final names.

    Rows are buffered as the tuples the collectors build (one ``list.append`` a record) and turned into columns
    once per row group (``map(itemgetter(i), rows)``, in C): appending each field to its column list cost ~1.6 µs
    a record, a tenth of a pass-through task. Row groups hold ``ROW_GROUP_ROWS`` rows per file, as before, so the
    bytes are the same.
    """

    def __init__(self, schema: pa.Schema, work_dir: Path) -> None:
        self.schema = schema
        self._work_dir = work_dir
        self._rows: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        self._writers: dict[tuple[str, int], pq.ParquetWriter] = {}
        self._written: dict[tuple[str, int], int] = {}
        self._getters = [itemgetter(i) for i in range(len(schema))]
        #: Rows appended as Arrow tables (the columnar count), not yet a whole row group.
        self._tables: dict[tuple[str, int], list[pa.Table]] = {}

    @property
    def counts(self) -> dict[tuple[str, int], int]:
        """Rows appended per key (written or still buffered)."""
        keys = {*self._rows, *self._tables}
        return {
            key: self._written.get(key, 0)
            + len(self._rows.get(key, ()))
            + sum(t.num_rows for t in self._tables.get(key, ()))
            for key in keys
        }

    def append_table(self, key: tuple[str, int], table: pa.Table) -> None:
        """Rows already in columns (``spark/columnar/count.py``), in this file's schema: written in row groups of
        ``ROW_GROUP_ROWS`` rows as :meth:`append` would, so the file's bytes are the same. A file takes rows one
        way only (a task runs either the per-record or the columnar path)."""
        if self._rows.get(key):
            raise AssertionError(f"file {key} already has rows appended one at a time")
        pending = self._tables.setdefault(key, [])
        pending.append(table)
        total = sum(t.num_rows for t in pending)
        if total < ROW_GROUP_ROWS:
            return
        joined = pa.concat_tables(pending)
        whole = total - total % ROW_GROUP_ROWS
        self._write(key, joined.slice(0, whole))
        pending[:] = [joined.slice(whole)] if whole < total else []

    def _write(self, key: tuple[str, int], table: pa.Table) -> None:
        """``table``'s rows into the key's file (opened on first use), in row groups of ``ROW_GROUP_ROWS``."""
        writer = self._writers.get(key)
        if writer is None:
            writer = self._writers[key] = pq.ParquetWriter(self._path(key), self.schema, **_WRITE_OPTIONS)
        # one chunk per column: a chunked column could be paged differently from the per-record path's
        writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP_ROWS)
        self._written[key] = self._written.get(key, 0) + table.num_rows

    def append(self, key: tuple[str, int], row: tuple[Any, ...]) -> None:
        rows = self._rows.get(key)
        if rows is None:
            rows = self._rows[key] = []
        rows.append(row)
        if len(rows) >= ROW_GROUP_ROWS:
            self._flush(key)

    def _path(self, key: tuple[str, int]) -> Path:
        return self._work_dir / f"{key[0]}+{key[1]}.parquet"

    def _flush(self, key: tuple[str, int]) -> None:
        rows = self._rows[key]
        if not rows:
            return
        columns = [list(map(getter, rows)) for getter in self._getters]
        self._write(key, pa.table(columns, schema=self.schema))
        rows.clear()

    def close(self) -> dict[tuple[str, int], Path]:
        for key in list(self._rows):
            self._flush(key)
        for key, pending in self._tables.items():
            if pending:
                self._write(key, pa.concat_tables(pending))
                pending.clear()
        for writer in self._writers.values():
            writer.close()
        return {key: self._path(key) for key in sorted(self._writers)}


#: The ``headers`` cell of a record without headers (shared: pyarrow only reads it).
_NO_HEADERS: list[dict[str, Any]] = []


def _headers(headers: Headers) -> list[dict[str, Any]]:
    if not headers:
        return _NO_HEADERS
    return [{"key": key, "value": value} for key, value in headers]


class TaskOutputCollector(RecordCollector):
    """``RecordCollector`` that streams each sent record into its (topic, partition) file instead of a list."""

    def __init__(self, partition_counts: Mapping[str, int], work_dir: Path, task_id: TaskId) -> None:
        super().__init__(partition_counts)
        self.task_id = task_id
        self.files = _ParquetFiles(OUTPUT_SCHEMA, work_dir)
        #: KIP-1034 records, all in one file (key ``("dlq", UNASSIGNED)``): the producer places them at hand-off.
        self.dead_letters = _ParquetFiles(OUTPUT_SCHEMA, work_dir / "dlq")
        (work_dir / "dlq").mkdir(exist_ok=True)
        self.dead_letter_counts: dict[str, int] = {}
        self.sent = 0

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
        partition = self.partition(topic, key, value, processor_node_id, partitioner)
        cell = _NO_HEADERS if not headers else _headers(headers)
        row = (self.sent, topic, partition, timestamp, key, value, cell, processor_node_id)
        # self.files.append inlined: once per output record
        where = (topic, partition)
        rows = self.files._rows.get(where)
        if rows is None or len(rows) >= ROW_GROUP_ROWS - 1:
            self.files.append(where, row)
        else:
            rows.append(row)
        self.sent += 1

    def partition(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        processor_node_id: str,
        partitioner: Partitioner | None,
    ) -> int:
        """The record's partition as ``RecordCollectorImpl#send`` chooses it (:data:`UNASSIGNED`: the producer's
        choice); a topic whose partition count the run does not know fails the task."""
        count = self.partition_counts.get(topic)
        if count is None:
            raise ProcessingError(
                f"sink {processor_node_id} sent a record to topic {topic}, whose partition count the run does not "
                f"know; pass --partitions {topic}=N to `streamproc process` (the topic's partition count in Kafka)",
                task_id=str(self.task_id),
            )
        partition = None if partitioner is None else partitioner(topic, key, value, count)
        return UNASSIGNED if partition is None else partition

    def send_dead_letter_queue_record(self, record: DeadLetterQueueRecord, processor_node_id: str) -> None:
        """A handler's dead letter queue record: into the task's DLQ file, in the production order it shares with
        the outputs (``sequence``), without a partition (Kafka Streams sends it with none)."""
        self.append_dead_letter(record, processor_node_id, ())

    def append_dead_letter(self, record: DeadLetterQueueRecord, processor_node_id: str, stamp: tuple[int, ...]) -> None:
        """The DLQ row (then ``stamp``'s columns: a key shard's, ``task_shards.py``), counted per topic."""
        row = (
            self.sent,
            record.topic,
            UNASSIGNED,
            record.timestamp,
            record.key,
            record.value,
            _headers(record.headers),
            processor_node_id,
            *stamp,
        )
        self.dead_letters.append(("dlq", UNASSIGNED), row)
        self.dead_letter_counts[record.topic] = self.dead_letter_counts.get(record.topic, 0) + 1
        self.sent += 1

    def dead_letter_file(self) -> Path:
        """The DLQ file, closed (an empty one when no record went to the dead letter queue)."""
        closed = self.dead_letters.close().get(("dlq", UNASSIGNED))
        if closed is not None:
            return closed
        path = self.dead_letters._path(("dlq", UNASSIGNED))
        pq.write_table(self.dead_letters.schema.empty_table(), path, **_WRITE_OPTIONS)
        return path


class TaskChangelogCollector(ChangelogCollector):
    """``ChangelogCollector`` that streams each changelog record into its partition's file."""

    def __init__(self, task_id: TaskId, work_dir: Path) -> None:
        super().__init__(task_id)
        self.files = _ParquetFiles(CHANGELOG_SCHEMA, work_dir)
        self.sent = 0

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None:
        if partition.partition != self.task_id.partition:
            super().send(store_name, partition, record)  # raises the wiring error
        topic = partition.topic
        row = (
            self.sent,
            store_name,
            topic,
            partition.partition,
            record.timestamp,
            record.key,
            record.value,
            _NO_HEADERS if not record.headers else _headers(record.headers),
        )
        # self.files.append inlined: once per store write
        where = (topic, partition.partition)
        rows = self.files._rows.get(where)
        if rows is None or len(rows) >= ROW_GROUP_ROWS - 1:
            self.files.append(where, row)
        else:
            rows.append(row)
        self.sent += 1

    def counts(self) -> dict[TopicPartition, int]:
        return {TopicPartition(topic, part): n for (topic, part), n in sorted(self.files.counts.items())}


def drops_bytes(drops: tuple[DroppedRecord, ...]) -> bytes:
    columns: list[list[Any]] = [[], [], [], [], []]
    for drop in drops:
        for column, value in zip(
            columns, (drop.topic, drop.partition, drop.offset, drop.reason, drop.records_processed), strict=True
        ):
            column.append(value)
    sink = io.BytesIO()
    pq.write_table(pa.table(columns, schema=DROPS_SCHEMA), sink, **_WRITE_OPTIONS)
    return sink.getvalue()


def bundle_bytes(task_dir: Path) -> bytes:
    """The task directory's stores as a tar in Kafka Streams' layout (no ``.lock``/``.checkpoint``): sorted entries,
    no owners or times, so the archive's bytes depend only on the files (RocksDB's own files carry unique ids)."""
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(task_dir.rglob("*")):
            relative = path.relative_to(task_dir)
            if relative.name in (".lock", ".checkpoint"):
                continue
            info = tar.gettarinfo(str(path), arcname=str(relative))
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                with open(path, "rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return sink.getvalue()


def publish_file(store: ObjectStore, name: str, path: Path) -> int:
    """Publish a local file as object ``name``; returns its size.

    In a local store the file is copied to a temporary name beside the target, fsynced, then renamed into place: the
    task's file may be on another filesystem (an executor's scratch disk), and a reader must never see half an
    object. Any other store gets one PUT.
    """
    size = path.stat().st_size
    if isinstance(store, LocalObjectStore):
        target = store.root.joinpath(*name.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}{_TEMP_MARKER}{uuid.uuid4().hex}")
        with open(path, "rb") as source, open(temp, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
        return size
    store.put(name, path.read_bytes())
    return size


def report_bytes(report: Mapping[str, Any]) -> bytes:
    return (json.dumps(report, indent=2, sort_keys=True) + "\n").encode()
