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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.records import RawRecord
from streamproc.errors import ManifestError
from streamproc.spark.task_output import OUTPUT_SCHEMA
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


#: The columns of :func:`task_batches`' batches; ``headers`` has the task outputs' header type (a header key may be
#: null there), which the staged segments' type casts to.
TASK_BATCH_COLUMNS = ("offset", "timestamp", "key", "value", "headers")
_TASK_TYPES = {
    "offset": pa.int64(),
    "timestamp": pa.int64(),
    "key": pa.binary(),
    "value": pa.binary(),
    "headers": OUTPUT_SCHEMA.field("headers").type,
}


def task_batches(
    store: ObjectStore,
    staged: StagedRange,
    appended: tuple[str, ...],
    *,
    task: str,
    columns: tuple[str, ...] = TASK_BATCH_COLUMNS,
    batch_size: int = BATCH_ROWS,
    counts: dict[str, int] | None = None,
) -> Iterator[pa.RecordBatch]:
    """A task's input partition as the per-record path processes it, in record batches of at most ``batch_size``
    rows with ``columns`` (``offset`` always first): the staged range (:func:`checked_batches`), then the records of
    the upstream output objects ``appended`` (in upstream ``TaskId`` order) at offsets ``staged.end``,
    ``staged.end + 1``, ... in the order of ``task_runner.upstream_records`` (:func:`merged_upstream`). Read as
    Arrow, one batch of each upstream object at a time. ``counts`` gets the number of upstream records under
    ``topic-partition`` as ``upstream_records`` counts them (no entry when there are none)."""
    wanted = ["offset", *(c for c in columns if c != "offset")]
    unknown = set(wanted) - set(_TASK_TYPES)
    if unknown:
        raise ValueError(f"task_batches: unknown columns {sorted(unknown)}; choose from {TASK_BATCH_COLUMNS}")
    schema = pa.schema([pa.field(c, _TASK_TYPES[c]) for c in wanted])
    for batch in checked_batches(store, staged, task=task, columns=wanted, batch_size=batch_size):
        yield _conformed(batch, schema)
    if not appended:
        return
    offset = staged.end
    name = f"{staged.topic}-{staged.partition}"
    read = [c for c in wanted if c != "offset"]
    for table in merged_upstream(store, appended, columns=read, batch_size=batch_size):
        for chunk in table.to_batches(max_chunksize=batch_size):
            n = chunk.num_rows
            if n == 0:
                continue
            offsets = pa.array(np.arange(offset, offset + n, dtype=np.int64))
            arrays = [offsets, *(chunk.column(c) for c in read)]
            yield _conformed(pa.RecordBatch.from_arrays(arrays, names=wanted), schema)
            offset += n
            if counts is not None:
                counts[name] = counts.get(name, 0) + n


def _conformed(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s (nullable) types: staged and upstream batches alike."""
    if batch.schema.equals(schema):
        return batch
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema], schema=schema)


def merged_upstream(
    store: ObjectStore, names: tuple[str, ...], *, columns: list[str], batch_size: int = BATCH_ROWS
) -> Iterator[pa.Table]:
    """The rows (``columns``, plus ``timestamp`` to order them) of the upstream output objects ``names``, in
    ``task_runner.upstream_records``' order, as tables of consecutive rows.

    ``upstream_records`` merges greedily: the head with the smallest timestamp next, ties to the earlier object.
    An object's rows need not be sorted by timestamp; taking a head ``x`` means every other head is at least ``x``
    (or equal and of a later object), so the rows after ``x`` that are smaller than it follow it at once, as if they
    had its timestamp. The greedy merge is therefore a stable sort by (the object's running maximum timestamp up to
    the row, the object's index, the row's position): a merge of sequences each sorted by that key, done here a
    batch at a time. A buffered row can be emitted once no unread row of any object can sort before it: each
    unread row of object ``j`` has a key of at least (``last_j``, ``j``), ``last_j`` being the running maximum at
    the last row read from ``j``. The object with the smallest (``last_j``, ``j``) has all its buffered rows
    emittable, so every round empties at least one buffer (then read again); at most a batch per object is held.
    ``tests/unit/spark/test_task_batches.py`` checks the order against ``upstream_records`` with hypothesis.
    """
    read = list(dict.fromkeys(["timestamp", *columns]))
    readers = [_upstream_batches(store, name, read, batch_size) for name in names]
    buffers: list[pa.Table | None] = [None] * len(names)
    keys: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(names)
    running = [np.iinfo(np.int64).min] * len(names)
    live = [True] * len(names)
    while True:
        for i, reader in enumerate(readers):
            while live[i] and (buffers[i] is None or buffers[i].num_rows == 0):  # type: ignore[union-attr]
                batch = next(reader, None)
                if batch is None:
                    live[i] = False
                    break
                if batch.num_rows == 0:
                    continue
                stamps = batch.column("timestamp").to_numpy(zero_copy_only=False).astype(np.int64)
                key = np.maximum.accumulate(np.maximum(stamps, running[i]))
                running[i] = int(key[-1])
                buffers[i], keys[i] = pa.Table.from_batches([batch]), key
        pending = [i for i in range(len(names)) if buffers[i] is not None and buffers[i].num_rows]  # type: ignore[union-attr]
        if not pending:
            return
        # the smallest key any unread row can have, per object still being read
        bounds = [(running[j], j) for j in range(len(names)) if live[j]]
        parts: list[pa.Table] = []
        part_keys: list[np.ndarray] = []
        for i in pending:
            buffer, key = buffers[i], keys[i]
            assert buffer is not None
            # rows of i sorting before every (bound, j): key < bound, or key == bound and i <= j
            cut = len(key)
            for bound, j in bounds:
                cut = min(cut, int(np.searchsorted(key, bound, side="right" if i <= j else "left")))
            if cut:
                parts.append(buffer.slice(0, cut))
                part_keys.append(key[:cut])
                buffers[i], keys[i] = buffer.slice(cut), key[cut:]
        merged = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        order = np.argsort(np.concatenate(part_keys), kind="stable")  # parts are in object order: ties keep it
        if len(parts) > 1:
            merged = merged.take(pa.array(order))
        yield merged.select(columns)


def open_upstream(store: ObjectStore, name: str) -> pq.ParquetFile:
    """An upstream task's output object: a local one read in place (row group by row group), a remote one fetched
    whole (the object store has no ranged read)."""
    if isinstance(store, LocalObjectStore):
        return pq.ParquetFile(store.root.joinpath(*name.split("/")))
    return pq.ParquetFile(pa.BufferReader(store.get(name)))


def _upstream_batches(store: ObjectStore, name: str, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
    """One upstream output object's ``columns``, in production order, ``batch_size`` rows at a time."""
    parquet = open_upstream(store, name)
    yield from parquet.iter_batches(batch_size=batch_size, columns=columns, use_threads=False)
