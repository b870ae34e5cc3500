"""Reading one planned range back from its staged segments, one Parquet row group at a time.

A task's input partition may hold millions of records; the replay only needs a few per partition at a time
(``buffered.records.per.partition``), so records are decoded from one row group of one segment at a time
(``ParquetFile.iter_batches``), never a whole partition (``../shared/notes/airflow-spark.md``: ``read_table``
grows the worker's RSS, ``iter_batches`` keeps it flat). Records are built from a batch's columns and its
offsets checked on the column (``records_from_batch``), not field by field in Python. Before the first record, the
range's manifests must tile ``[start, end)`` completely (``storage.staging.range_status``): a missing or broken
segment is an error naming the task, the range and the object, raised before the task has produced anything.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.records import RawRecord
from streamproc.errors import ManifestError
from streamproc.storage.object_store import LocalObjectStore, ObjectStore
from streamproc.storage.segments import SEGMENT_SCHEMA_FINGERPRINT, records_from_batch, schema_fingerprint
from streamproc.storage.staging import range_status

logger = logging.getLogger(__name__)

#: Rows decoded at a time: a row group of a segment is 64 Ki rows, so this keeps a few MB per partition in Python.
BATCH_ROWS = 8 * 1024


@dataclass(frozen=True, slots=True)
class StagedRange:
    """``[start, end)`` of one partition, proved staged: the segment objects that tile it, in offset order."""

    topic: str
    partition: int
    start: int
    end: int
    segments: tuple[str, ...]
    records: int
    bytes: int


def staged_range(store: ObjectStore, topic: str, partition: int, start: int, end: int, *, task: str) -> StagedRange:
    """The segments of ``[start, end)``; raises ``ManifestError`` naming the task and what is missing."""
    status = range_status(store, topic, partition, start, end)
    if not status.is_complete:
        missing = ", ".join(f"[{a}, {b})" for a, b in status.missing)
        raise ManifestError(
            f"task [{task}] input {topic}-{partition} [{start}, {end}): offsets {missing} are not staged with a valid "
            f"manifest in {store.uri}; run `streamproc fetch` with the same plan and store, then `streamproc verify`"
        )
    manifests = sorted(status.complete, key=lambda m: m.start)
    return StagedRange(
        topic,
        partition,
        start,
        end,
        tuple(m.key.segment_name for m in manifests),
        sum(m.record_count for m in manifests),
        sum(m.size_bytes for m in manifests),
    )


def _open(store: ObjectStore, name: str) -> pq.ParquetFile:
    try:
        if isinstance(store, LocalObjectStore):
            return pq.ParquetFile(store.root.joinpath(*name.split("/")))
        return pq.ParquetFile(pa.BufferReader(store.get(name)))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ManifestError(
            f"object '{name}' in {store.uri} is not a readable Parquet segment ({exc}); delete it and fetch its range "
            "again"
        ) from exc


def open_segment(store: ObjectStore, name: str, *, task: str) -> pq.ParquetFile:
    """A staged segment, opened and checked to have the segment schema (else the error says to fetch it again)."""
    parquet = _open(store, name)
    if schema_fingerprint(parquet.schema_arrow) != SEGMENT_SCHEMA_FINGERPRINT:
        raise ManifestError(
            f"task [{task}] object '{name}' in {store.uri} does not have the segment schema; delete it and fetch "
            "its range again"
        )
    return parquet


def read_records(store: ObjectStore, staged: StagedRange, *, task: str) -> Iterator[RawRecord]:
    """The records of the range in offset order, decoded ``BATCH_ROWS`` at a time, segment after segment."""
    for batch in checked_batches(store, staged, task=task):
        yield from records_from_batch(batch)


def checked_batches(
    store: ObjectStore,
    staged: StagedRange,
    *,
    task: str,
    columns: list[str] | None = None,
    batch_size: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The range's record batches (``columns`` of them, all by default) in offset order, segment after segment: each
    segment's schema and each batch's offsets checked (in order, inside the range) before it is handed out."""
    for name in staged.segments:
        parquet = open_segment(store, name, task=task)
        last = -1
        for batch in parquet.iter_batches(batch_size=batch_size, columns=columns, use_threads=False):
            if batch.num_rows == 0:
                continue
            bad = _first_misplaced(batch.column("offset"), last, staged)
            if bad is not None:
                raise ManifestError(
                    f"task [{task}] object '{name}' in {store.uri}: offset {bad} is out of order or "
                    f"outside [{staged.start}, {staged.end}); delete it and fetch its range again"
                )
            last = batch.column("offset")[-1].as_py()
            yield batch


def _first_misplaced(offsets: pa.Array, last: int, staged: StagedRange) -> int | None:
    """The first offset of a batch that does not follow ``last`` (the previous one) in increasing order inside the
    range, or None: the per-record check of the reader, done on the column."""
    previous = pa.concat_arrays([pa.array([last], pa.int64()), offsets.slice(0, len(offsets) - 1)])
    misplaced = pc.or_(
        pc.less_equal(offsets, previous),
        pc.or_(pc.less(offsets, staged.start), pc.greater_equal(offsets, staged.end)),
    )
    index = pc.index(misplaced, True).as_py()
    if index < 0:
        return None
    first: int = offsets[index].as_py()
    return first
