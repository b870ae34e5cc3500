"""The last step of a split task (issue #29, docs/split.md): K shards' objects merged into the task's own objects.

Each shard (``spark/task_shards.py``) published its rows stamped ``(position, phase, sequence)``; every
``(position, phase)`` belongs to one shard, so sorting all shards' rows on the stamp gives the unsplit task's order.
The merge writes, under the task's names (:class:`~streamproc.spark.task_output.TaskObjects`) and with the task's
writer (``_ParquetFiles``, the same row groups and settings), exactly the files the unsplit task writes:

- outputs and dead-letter records: one production order (``sequence``) across every output file and the DLQ file,
  renumbered from the merged order;
- changelog records: their own ``sequence`` across every changelog file, the same way;
- drops: in merged order, each with the ``records_processed`` the unsplit task had (every shard counts every step);
- the store bundle: shard 0's stores (restored like the unsplit task's, then written for shard 0's keys), with every
  other shard's last changelog record per key applied as a restore applies it (``StateStore.restore_batch``;
  ``state/changelog_reduction.py``: for a key-value store the last write of a key is its state). Shards own
  disjoint keys and every write to a persistent store is logged (the executor splits only then, ``job.py``), so
  that is the unsplit task's store entry for entry: a key no shard wrote keeps its restored value, a key shard s
  wrote ends at shard s's last changelog record for it. A window or session store takes only the records its store
  wrote (one whose segment had expired at the store's stream time was logged, not written), and a window store
  keeping duplicates each under its store key (``_store_puts``: both from the store's puts across shards in rank
  order);
- the report: what every shard computed the same (records processed, steps, stream time, offsets and partition
  times, inputs, restores) from shard 0, counts summed, objects and bytes the merge's own.

The task's report is published last, as always; then the shards' objects are deleted.

The merge is a serial step after the shards, so its cost comes straight off the split's speed-up: it decodes the
stamp columns of every shard's file of a kind at once (to rank them), then each file's rows in turn, and moves rows
only where several shards wrote one file (``_in_task_order``). Its three parts share nothing but the changelog's
ranks, so where the merge wave leaves cores idle (fewer merges than cores: a one-partition task's) they run side by
side: the outputs and dead letters on one thread, the changelog files on the calling one, and the store bundle (once
the changelog is ranked) on another. Parquet, Arrow and numpy do most of the work with the GIL released (the merge
of a session count of 1 M records: 2.82 s → 2.18-2.30 s wall, for about a fifth more CPU, docs/split.md). Its memory:
the shards' files are copied to the merge's local directory and read from there (memory-mapped); each file is merged
a few row groups at a time, and the store is rebuilt and settled a row group of the changelog records at a time;
what it holds whole is every row's stamps and ranks of a kind, and a window or session store's put times
(docs/split.md, "The rest of #29").
"""

from __future__ import annotations

import json
import logging
import shutil
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.records import ConsumerRecord, RawRecord, TimestampType
from streamproc.engine.slotted_init import build_slotted
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import store_builders
from streamproc.engine.topology_loader import load_topology
from streamproc.errors import ProcessingError
from streamproc.spark.task_output import (
    _WRITE_OPTIONS,
    CHANGELOG_SCHEMA,
    OUTPUT_SCHEMA,
    ROW_GROUP_ROWS,
    UNASSIGNED,
    TaskObjects,
    _ParquetFiles,
    bundle_bytes,
    drops_bytes,
    publish_file,
    report_bytes,
)
from streamproc.spark.task_schemas import DEAD_LETTER_QUEUE, DROPS, check_file, check_report
from streamproc.spark.task_shards import ShardObjects, shards_prefix
from streamproc.state import bundle_archive
from streamproc.state.changelog import SEQNUM_MASK
from streamproc.state.changelog_reduction import last_write_per_key
from streamproc.state.processor_state_manager import open_store
from streamproc.state.store_builders import store_definitions
from streamproc.state.stores import SessionStore, StoreContext, WindowStore
from streamproc.storage.object_store import ObjectStore, load_store
from streamproc.storage.segments import serialized_sizes

logger = logging.getLogger(__name__)

_DLQ_KEY = "dlq"
#: The renumbered ``sequence`` column (the same field in the output and changelog schemas).
_SEQUENCE = OUTPUT_SCHEMA.field("sequence")
#: A shard's stamp columns (``spark/task_shards.py``), the merge's sort keys in order.
_STAMP = ["position", "phase", "sequence"]
#: Rows of one file the merge orders and appends at a time (``_append_in_task_order``).
MERGE_CHUNK_ROWS = 4 * ROW_GROUP_ROWS
#: Threads beside the caller's (``merge_shards``): the outputs' merge and the store bundle's rebuild.
MERGE_THREADS = 2
#: The changelog columns the store rebuild reads (``_as_records``, with the renumbered ``sequence``), and ``store``.
_RESTORED = ["store", "topic", "partition", "timestamp", "key", "value"]


def merge_shards(work: Any, count: int, *, attempt: int = 0, threads: int = 1 + MERGE_THREADS) -> dict[str, Any]:
    """Merge the ``count`` shards of ``work``'s task into the task's objects and report (see the module doc).

    ``work`` is the task's :class:`~streamproc.spark.task_runner.TaskWork` (without a shard). ``threads``: the cores
    the merge may keep busy (the executor gives it the wave's cores over its merges); with one, its parts run one
    after the other, since side threads on a busy core only add their switching to the CPU it spends."""
    started = time.monotonic()
    task_id = TaskId.parse(work.task_id)
    store = load_store(work.store_uri, **dict(work.store_options))
    objects = TaskObjects(work.plan_id, task_id)
    if store.exists(objects.report):
        report: dict[str, Any] = json.loads(store.get(objects.report))
        logger.info("task [%s] already done (report %s exists): skipped", task_id, objects.report)
        return {**report, "skipped": True}
    shards = [ShardObjects(work.plan_id, task_id, ShardSpec(i, count)) for i in range(count)]
    reports = []
    for shard in shards:
        if not store.exists(shard.report):
            raise ProcessingError(
                f"task [{task_id}] shard {shard.shard} has no report ({shard.report}): it did not finish; re-run "
                "the same command",
                task_id=work.task_id,
            )
        reports.append(json.loads(store.get(shard.report)))
    whole = next((r["runs_whole"] for r in reports if "runs_whole" in r), None)
    if whole is not None:
        return _run_unsplit(work, store, task_id, whole, attempt)
    work_dir = Path(tempfile.mkdtemp(prefix=f"streamproc-merge-{task_id}-", dir=work.local_dir))
    try:
        written: dict[str, int] = {}
        first = reports[0]
        with _side_threads(min(threads - 1, MERGE_THREADS), f"merge-{task_id}") as pool:
            merged_outputs = pool.submit(_merge_outputs, store, shards, reports, work_dir / "outputs")
            changelog = _pieces(
                store, shards, reports, "changelogs", lambda s, n: s.changelog(*_split(n)), work_dir / "pieces"
            )
            changelog_ranks = _ranks(changelog)
            merged_bundle = None
            if shards[0].stores in first["objects"]:
                ranked = [(p, r) for p, r in zip(changelog, changelog_ranks, strict=True) if len(r)]
                restored = first.get("restored_segments", {})
                merged_bundle = pool.submit(
                    _merged_bundle, work, store, shards[0], ranked, restored, work_dir / "bundle"
                )
            changelog_files, _ = _write_by_file(changelog, changelog_ranks, CHANGELOG_SCHEMA, work_dir / "changelogs")
            for (topic, partition), path in changelog_files.items():
                written[objects.changelog(topic, partition)] = publish_file(
                    store, objects.changelog(topic, partition), path
                )
            drops = drops_bytes(_merged_drops(store, shards))
            check_file(DROPS, drops, objects.drops, work.task_id)
            store.put(objects.drops, drops)
            written[objects.drops] = len(drops)
            outputs, dead_letters = merged_outputs.result()
            for (topic, partition), path in outputs.items():
                written[objects.output(topic, partition)] = publish_file(store, objects.output(topic, partition), path)
            check_file(DEAD_LETTER_QUEUE, dead_letters, objects.dead_letter_queue, work.task_id)
            written[objects.dead_letter_queue] = publish_file(store, objects.dead_letter_queue, dead_letters)
            if merged_bundle is not None:
                bundle = merged_bundle.result()
                store.put(objects.stores, bundle)
                written[objects.stores] = len(bundle)
        report = _task_report(first, reports, written, attempt, started)
        check_report(report)
        store.put(objects.report, report_bytes(report))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    for name in store.list(shards_prefix(work.plan_id, task_id)):
        store.delete(name)
    logger.info(
        "task [%s] merged from %d key shards: %s records processed, %s output records",
        task_id,
        count,
        report["records_processed"],
        sum(report["outputs"].values()),
    )
    return {**report, "skipped": False}


class _InOrder(Executor):
    """An executor that runs each call as it is submitted: the merge's parts one after the other."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - raised where the threaded merge raises it: at result()
            future.set_exception(exc)
        return future


def _side_threads(count: int, name: str) -> Executor:
    """``count`` threads beside the caller's, or none (:class:`_InOrder`)."""
    return ThreadPoolExecutor(count, thread_name_prefix=name) if count > 0 else _InOrder()


def _run_unsplit(work: Any, store: ObjectStore, task_id: TaskId, why: str, attempt: int) -> dict[str, Any]:
    """The task run whole instead of merged, when a shard found it could not stand for its keys (its task-wide times
    may not have been the task's, a declared processor scheduled a punctuation); then the shards' objects are
    deleted, as after a merge."""
    from streamproc.spark.task_runner import run_task

    logger.info("task [%s] runs unsplit after its key shards: %s", task_id, why)
    report = run_task(work, attempt=attempt)
    for name in store.list(shards_prefix(work.plan_id, task_id)):
        store.delete(name)
    return report


def _split(name: str) -> tuple[str, int]:
    """``topic+partition`` (a report's key) as ``(topic, partition)``."""
    topic, _, partition = name.rpartition("+")
    return topic, int(partition)


def _read(store: ObjectStore, name: str) -> pa.Table:
    return pq.read_table(pa.BufferReader(store.get(name)))


@dataclass(frozen=True, slots=True)
class _Piece:
    """One shard's rows of one of the task's files, as the shard wrote them (stamped, in its production order): the
    Parquet file copied to the merge's local directory (not held in memory: a task's files grow with its window),
    decoded column by column as the merge needs them."""

    #: The file's ``(topic, partition)``; ``None`` for the dead-letter file (a file of its own whatever its topics).
    file: tuple[str, int] | None
    shard: int
    path: Path

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        return pq.read_table(self.path, columns=columns, memory_map=True)

    def batches(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The rows in order, a row group at a time."""
        batches: Iterator[pa.RecordBatch] = pq.ParquetFile(self.path, memory_map=True).iter_batches(
            columns=list(columns)
        )
        return batches


def _local_piece(store: ObjectStore, name: str, file: tuple[str, int] | None, shard: int, path: Path) -> _Piece:
    """Object ``name`` copied to ``path``, as shard ``shard``'s piece of ``file``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(store.get(name))
    return _Piece(file, shard, path)


def _pieces(
    store: ObjectStore,
    shards: Sequence[ShardObjects],
    reports: Sequence[dict[str, Any]],
    section: str,
    name: Any,
    work_dir: Path,
) -> list[_Piece]:
    """Every shard's pieces of the files its report lists in ``section`` (``name(shard, file)``: the object),
    copied under ``work_dir``."""
    return [
        _local_piece(store, name(shard, file), _split(file), index, work_dir / section / f"{index}-{number}.parquet")
        for index, (shard, report) in enumerate(zip(shards, reports, strict=True))
        for number, file in enumerate(sorted(report[section]))
    ]


def _ranks(pieces: Sequence[_Piece]) -> list[np.ndarray]:
    """Each piece's rows' places in the task's order over every piece: the rows' new ``sequence``.

    The task's order is ``(position, phase, sequence)``: each ``(position, phase)`` belongs to one shard, whose
    ``sequence`` orders its rows (``spark/task_shards.py``). One lexsort over the stamp columns alone (all the merge
    decodes of every piece at once) ranks every row."""
    if not pieces:
        return []
    stamps = [piece.read(_STAMP) for piece in pieces]
    keys = [np.concatenate([t.column(name).to_numpy() for t in stamps]) for name in reversed(_STAMP)]
    ranks = np.empty(len(keys[0]), dtype=np.int64)
    ranks[np.lexsort(keys)] = np.arange(len(ranks), dtype=np.int64)
    return np.split(ranks, np.cumsum([t.num_rows for t in stamps[:-1]], dtype=np.int64))


def _in_task_order(ranked: Sequence[tuple[pa.Table, np.ndarray]]) -> pa.Table:
    """Rows of one file (one table per shard without ``sequence``, each with its rows' ranks) as one table in rank
    order, its first column ``sequence``: their ranks.

    A file only one shard wrote keeps that shard's rows as they are when their ranks already rise (its production
    order is the task's order): no column but ``sequence`` is touched. A sink partitioned by the key the shards split
    on writes every output file from one shard. Otherwise the rows are interleaved by one ``take`` (a stable sort of
    the ranks: each shard's rows already form a rising run)."""
    if len(ranked) == 1 and bool(np.all(ranked[0][1][1:] > ranked[0][1][:-1])):
        rows, ranks = ranked[0]
    else:
        rows = pa.concat_tables([table for table, _ in ranked])
        ranks = np.concatenate([r for _, r in ranked])
        order = np.argsort(ranks, kind="stable")
        rows, ranks = rows.take(pa.array(order)), ranks[order]
    return rows.add_column(0, _SEQUENCE, pa.array(ranks, pa.int64()))


def _merge_outputs(
    store: ObjectStore, shards: Sequence[ShardObjects], reports: Sequence[dict[str, Any]], work_dir: Path
) -> tuple[dict[tuple[str, int], Path], Path]:
    """The task's output files and its DLQ file: one production order (``sequence``) over both."""
    pieces = _pieces(store, shards, reports, "outputs", lambda s, n: s.output(*_split(n)), work_dir / "pieces")
    pieces += [
        _local_piece(store, shard.dead_letter_queue, None, index, work_dir / "letters" / f"{index}.parquet")
        for index, shard in enumerate(shards)
    ]
    written, closed = _write_by_file(pieces, _ranks(pieces), OUTPUT_SCHEMA, work_dir)
    if closed is None:  # as TaskOutputCollector.dead_letter_file: an empty file when nothing went there
        (work_dir / _DLQ_KEY).mkdir(parents=True, exist_ok=True)
        closed = work_dir / _DLQ_KEY / f"{_DLQ_KEY}+{UNASSIGNED}.parquet"
        pq.write_table(OUTPUT_SCHEMA.empty_table(), closed, **_WRITE_OPTIONS)
    return written, closed


def _write_by_file(
    pieces: Sequence[_Piece], ranks: Sequence[np.ndarray], schema: pa.Schema, work_dir: Path
) -> tuple[dict[tuple[str, int], Path], Path | None]:
    """Every file of ``pieces`` in the task's order (``sequence`` renumbered from 0 across all of them: ``ranks``,
    :func:`_ranks`), with the task's writer and row groups: the (topic, partition) files, and the dead letters'
    file (``None`` without dead letters) in a directory of its own. A file without rows is not written (the task
    writes no such file).

    Each file is merged :data:`MERGE_CHUNK_ROWS` rows at a time (:func:`_append_in_task_order`), so the merge holds
    a few row groups of one file, not the file."""
    work_dir.mkdir(parents=True, exist_ok=True)
    by_file: dict[tuple[str, int] | None, list[tuple[_Piece, np.ndarray]]] = {}
    for piece, piece_ranks in zip(pieces, ranks, strict=True):
        if len(piece_ranks):
            by_file.setdefault(piece.file, []).append((piece, piece_ranks))
    outputs = _ParquetFiles(schema, work_dir)
    letters = _ParquetFiles(schema, work_dir / _DLQ_KEY)
    for file, ranked in by_file.items():
        if file is None:
            (work_dir / _DLQ_KEY).mkdir(exist_ok=True)
            _append_in_task_order(ranked, schema, letters, (_DLQ_KEY, UNASSIGNED))
        else:
            _append_in_task_order(ranked, schema, outputs, file)
    return outputs.close(), letters.close().get((_DLQ_KEY, UNASSIGNED))


def _append_in_task_order(
    ranked: Sequence[tuple[_Piece, np.ndarray]], schema: pa.Schema, files: _ParquetFiles, file: tuple[str, int]
) -> None:
    """One file's pieces appended to ``files`` in rank order, a chunk of :data:`MERGE_CHUNK_ROWS` rows at a time: the
    chunk's last rank bounds what each piece gives it, read on from where the piece's last chunk ended.

    That needs each piece's rows in rank order, which a shard's production order is but for its poll-phase events
    one position ahead (``spark/task_shards.py``); a file with a piece that is not is merged whole. Either way the
    writer cuts the same row groups (``_ParquetFiles.append_table``), so the file's bytes are the same."""
    columns = [name for name in schema.names if name != _SEQUENCE.name]  # the stamps and sequence are ranked
    if not all(bool(np.all(r[1:] > r[:-1])) for _, r in ranked):
        files.append_table(file, _conformed(_in_task_order([(p.read(columns), r) for p, r in ranked]), schema))
        return
    readers = [_PieceRows(piece, columns) for piece, _ in ranked]
    bounds = np.sort(np.concatenate([r for _, r in ranked]))
    taken = [0] * len(ranked)
    for end in range(MERGE_CHUNK_ROWS, len(bounds) + MERGE_CHUNK_ROWS, MERGE_CHUNK_ROWS):
        last = bounds[min(end, len(bounds)) - 1]
        chunk = []
        for index, (reader, (_, piece_ranks)) in enumerate(zip(readers, ranked, strict=True)):
            upto = int(np.searchsorted(piece_ranks, last, side="right"))
            if upto > taken[index]:
                chunk.append((reader.take(upto - taken[index]), piece_ranks[taken[index] : upto]))
                taken[index] = upto
        files.append_table(file, _conformed(_in_task_order(chunk), schema))


def _conformed(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in the file's schema: a shard's file holds the task's columns, only a nullability may differ."""
    rows = rows.select(schema.names)
    return rows if rows.schema.equals(schema) else rows.cast(schema)


class _PieceRows:
    """A piece's rows in its order, handed out a run at a time and read a row group at a time."""

    def __init__(self, piece: _Piece, columns: Sequence[str]) -> None:
        self._batches = piece.batches(columns)
        self._held: list[pa.RecordBatch] = []
        self._held_rows = 0

    def take(self, count: int) -> pa.Table:
        """The next ``count`` rows (the piece has them: its ranks said so)."""
        while self._held_rows < count:
            batch = next(self._batches)
            self._held.append(batch)
            self._held_rows += batch.num_rows
        held = pa.Table.from_batches(self._held)
        rest = held.slice(count)
        self._held, self._held_rows = rest.to_batches(), rest.num_rows
        return held.slice(0, count)


def _merged_drops(store: ObjectStore, shards: Sequence[ShardObjects]) -> tuple[DroppedRecord, ...]:
    table = pa.concat_tables([_read(store, shard.drops) for shard in shards]).combine_chunks()
    table = table.take(pc.sort_indices(table, sort_keys=[(name, "ascending") for name in _STAMP]))
    columns = [
        table.column(name).to_pylist() for name in ("topic", "partition", "offset", "reason", "records_processed")
    ]
    return tuple(DroppedRecord(*row) for row in zip(*columns, strict=True))


def _merged_bundle(
    work: Any,
    store: ObjectStore,
    first: ShardObjects,
    ranked: Sequence[tuple[_Piece, np.ndarray]],
    restored: dict[str, dict[str, Any]],
    where: Path,
) -> bytes:
    """Shard 0's store bundle with the other shards' changelog records applied (see the module doc). ``ranked``:
    every shard's changelog pieces with each row's rank, the ``sequence`` the written changelog gives it;
    ``restored``: shard 0's report's ``restored_segments``, each segmented store as its restore left it.

    A row group at a time, each reduced to its last write per key: shards own disjoint keys, so a shard's own order
    is the task's for each of its keys, and a later group's write of a key overwrites an earlier one's; the merge so
    never holds a shard's whole changelog. A window or session store takes only the writes the unsplit store made
    (:func:`_store_puts`), then the segments the unsplit task would have expired are destroyed
    (``SegmentedBytesStore.settle``)."""
    others = [(piece, ranks) for piece, ranks in ranked if piece.shard != 0]
    where.mkdir(parents=True)
    with tarfile.open(fileobj=pa.BufferReader(store.get(first.stores))) as tar:
        members = tar.getmembers()
        outside = bundle_archive.outside_entries(members)
        if outside:
            raise ProcessingError(
                f"task [{work.task_id}] shard 0's store bundle holds an entry outside it: {outside[0]}"
            )
        bundle_archive.extract(tar, where, members)
    topology, _config = load_topology(work.topology, work.streams_settings)
    definitions = {d.name: d for d in store_definitions(store_builders(topology, work.subtopology)) if d.persistent}
    for name, definition in sorted(definitions.items()):
        opened = open_store(definition, StoreContext(), where, task=work.task_id)
        try:
            if isinstance(opened, WindowStore | SessionStore):
                if name not in restored:
                    raise ProcessingError(
                        f"store {name}: shard 0's report does not say which segments its restore left"
                    )
                _merge_segmented(opened, name, ranked, restored[name])
            else:
                for piece, ranks in others:
                    start = 0
                    for batch in piece.batches(_RESTORED):
                        rows = pa.Table.from_batches([batch])
                        rows = rows.add_column(
                            0, _SEQUENCE, pa.array(ranks[start : start + batch.num_rows], pa.int64())
                        )
                        start += batch.num_rows
                        rows = last_write_per_key(rows.filter(pc.equal(rows.column("store"), name)))
                        if rows.num_rows:
                            opened.restore_batch(_as_records(rows))
            opened.flush()
        finally:
            opened.close()
    return bundle_bytes(where)


@dataclass(frozen=True)
class _StorePuts:
    """A window or session store's changelog records over every shard's pieces, read in the task's order."""

    #: Per piece: whether each of its rows is the store's.
    mine: list[np.ndarray]
    #: Per piece, per row of the store (in the piece's order): whether the unsplit store wrote it.
    written: list[np.ndarray]
    #: Per piece, per row of the store: the store's seqnum for it (a window store keeping duplicates; else empty).
    seqnums: list[np.ndarray]
    #: The times of the puts that move the store's stream time, in the task's order (``SegmentedBytesStore.settle``).
    put_times: np.ndarray


def _store_puts(
    opened: WindowStore[Any, Any] | SessionStore[Any, Any],
    name: str,
    ranked: Sequence[tuple[_Piece, np.ndarray]],
    stream_time: int,
) -> _StorePuts:
    """Which of the store's changelog records the unsplit store wrote, from its restored ``stream_time`` on.

    Every put is logged, but the store writes one only where its segment is still live at the store's stream time
    then, which every key's puts move (``SegmentedBytesStore.refused_puts``: a late record of a join window, or a
    window after a restore whose stream time is later than the run's records): so the puts are read in rank order,
    across shards. Which puts move the stream time and may be refused: a session store's with a value (a removal
    deletes, creating nothing, and never moves it: a session is removed after it was put or restored), a window
    store's every put, but with duplicates kept only one with a value (a null put is skipped whole,
    ``state/changelog.py``), whose seqnum it is: the k-th such put of the run is the store's k-th seqnum, refused
    or not."""
    session = isinstance(opened, SessionStore)
    numbered = isinstance(opened, WindowStore) and opened.retain_duplicates
    mine_of: list[np.ndarray] = []
    valued, times, ranks = [], [], []
    for piece, piece_ranks in ranked:
        mine_at = []
        for rows in piece.batches(["store", "key", "value"]):  # a row group at a time: only the times are kept
            mine = pc.equal(rows.column("store"), name).to_numpy(zero_copy_only=False)
            mine_at.append(mine)
            if mine.any():
                chosen = pa.array(mine)
                valued.append(pc.is_valid(rows.column("value").filter(chosen)).to_numpy(zero_copy_only=False))
                times.append(_segment_times(rows.column("key").filter(chosen), session))
        mine_of.append(np.concatenate(mine_at) if mine_at else np.zeros(0, dtype=bool))
        ranks.append(piece_ranks[mine_of[-1]])
    counts = [int(mine.sum()) for mine in mine_of]
    if not times:
        empty = [np.zeros(count, dtype=bool) for count in counts]
        return _StorePuts(mine_of, empty, [np.zeros(c, dtype=np.int64) for c in counts], np.zeros(0, np.int64))
    order = np.argsort(np.concatenate(ranks), kind="stable")
    with_value = np.concatenate(valued)[order]
    in_order = np.concatenate(times)[order]
    moving = with_value if session or numbered else np.ones(len(order), dtype=bool)
    _, refused = opened.segments.refused_puts(in_order[moving], stream_time)
    accepted = np.zeros(len(order), dtype=bool)
    accepted[np.flatnonzero(moving)] = ~refused
    written = np.empty(len(order), dtype=bool)
    written[order] = (accepted | ~with_value) if session else accepted
    seqnums = np.zeros(len(order) if numbered else 0, dtype=np.int64)
    if numbered:
        seqnums[order] = np.cumsum(with_value) & SEQNUM_MASK
    cuts = np.cumsum(counts[:-1], dtype=np.int64)
    split_seqnums = np.split(seqnums, cuts) if numbered else [seqnums] * len(counts)
    return _StorePuts(mine_of, np.split(written, cuts), split_seqnums, in_order[moving])


def _merge_segmented(
    opened: WindowStore[Any, Any] | SessionStore[Any, Any],
    name: str,
    ranked: Sequence[tuple[_Piece, np.ndarray]],
    restored: dict[str, Any],
) -> None:
    """The other shards' writes into shard 0's window or session store ``opened``, then its segments settled.

    Shard 0's own writes are in it already. The others' are their changelog records the unsplit store wrote
    (:func:`_store_puts`), a row group at a time, each reduced to its last write per key; a window store keeping
    duplicates (a stream-stream join's) takes each under its store key instead: its changelog key holds the
    change-logging layer's seqnum, the store key the store's own, which a null put does not advance."""
    puts = _store_puts(opened, name, ranked, int(restored["stream_time"]))
    numbered = isinstance(opened, WindowStore) and opened.retain_duplicates
    for (piece, ranks), mine, written, seqnums in zip(ranked, puts.mine, puts.written, puts.seqnums, strict=True):
        if piece.shard == 0 or not written.any():
            continue
        at, start = 0, 0
        for batch in piece.batches(_RESTORED):
            rows = pa.Table.from_batches([batch])
            rows = rows.add_column(0, _SEQUENCE, pa.array(ranks[start : start + batch.num_rows], pa.int64()))
            rows = rows.filter(pa.array(mine[start : start + batch.num_rows]))
            start += batch.num_rows
            keep = written[at : at + rows.num_rows]
            numbers = seqnums[at : at + rows.num_rows][keep] if numbered else seqnums
            at += rows.num_rows
            rows = rows.filter(pa.array(keep))
            if not rows.num_rows:
                continue
            if numbered:
                rows = rows.set_column(rows.schema.get_field_index("key"), "key", _renumbered(rows, numbers))
            else:
                rows = last_write_per_key(rows)
            opened.segments.write_unchecked(_segment_entries(rows, opened))
    opened.segments.settle(restored["segments"], int(restored["stream_time"]), puts.put_times)


def _renumbered(rows: pa.Table, seqnums: np.ndarray) -> pa.Array:
    """Window store keys (``key ‖ start ‖ seqnum``) with ``seqnums`` in place of their own."""
    keys = rows.column("key").combine_chunks()
    suffix = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(4), len(seqnums), [None, pa.py_buffer(seqnums.astype(">i4").tobytes())]
    )
    return pc.binary_join_element_wise(pc.binary_slice(keys, 0, -4), suffix.cast(pa.binary()), b"")


def _segment_entries(
    rows: pa.Table, store: WindowStore[Any, Any] | SessionStore[Any, Any]
) -> list[tuple[bytes, bytes | None, int]]:
    """Changelog rows of a window or session store as its restore makes them entries (``restore_batch``, from the
    columns): (store key, value, prefixed by the record's timestamp in a timestamped store, the segment time)."""
    keys = rows.column("key").combine_chunks()
    values = rows.column("value").combine_chunks()
    if store.store_type.timestamped:
        stamps = np.asarray(rows.column("timestamp").to_numpy(), dtype=">i8").tobytes()
        prefixes = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(rows), [None, pa.py_buffer(stamps)])
        values = pc.binary_join_element_wise(prefixes.cast(pa.binary()), values, b"")  # a null value stays null
    times = _segment_times(keys, isinstance(store, SessionStore))
    return list(zip(keys.to_pylist(), values.to_pylist(), times.tolist(), strict=True))


def _segment_times(keys: pa.Array, session: bool) -> np.ndarray:
    """The time each key is segmented by: a window store key's start (``key ‖ start ‖ seqnum``: the 8 bytes before
    the last 4), a session store key's end (``key ‖ end ‖ start``: the 8 bytes before the last 8)."""
    times = (pc.binary_slice(keys, -16, -8) if session else pc.binary_slice(keys, -12, -4)).cast(pa.binary(8))
    return np.frombuffer(times.buffers()[1], dtype=">i8", count=len(times), offset=times.offset * 8).astype(np.int64)


def _as_records(rows: pa.Table) -> list[RawRecord]:
    """The rows as ``ConsumerRecord.raw(topic, partition, sequence, timestamp, key, value)`` builds them, built from
    the columns (``build_slotted``, as ``storage/segments.records_from_batch`` builds a segment's records)."""
    count = rows.num_rows
    key, value = rows.column("key"), rows.column("value")
    columns = [
        *(rows.column(name).to_pylist() for name in ("topic", "partition", "sequence", "timestamp")),
        [TimestampType.CREATE_TIME] * count,
        key.to_pylist(),
        value.to_pylist(),
        [()] * count,
        [None] * count,
        serialized_sizes(key),
        serialized_sizes(value),
    ]
    return build_slotted(ConsumerRecord, columns)


def _task_report(
    first: dict[str, Any], reports: Sequence[dict[str, Any]], written: dict[str, int], attempt: int, started: float
) -> dict[str, Any]:
    def summed(section: str) -> dict[str, int]:
        total: Counter[str] = Counter()
        for report in reports:
            total.update(report[section])
        return dict(sorted((k, v) for k, v in total.items() if v))

    shard_only = ("shard", "skipped", "restored_segments", "runs_whole")
    report = {key: value for key, value in first.items() if key not in shard_only}
    report.update(
        attempt=attempt,
        dropped=summed("dropped"),
        dead_letter_queue=summed("dead_letter_queue"),
        outputs=summed("outputs"),
        changelogs=summed("changelogs"),
        punctuations=sum(r["punctuations"] for r in reports),
        objects=dict(sorted(written.items())),
        bytes_written=sum(written.values()),
        shards=len(reports),
        seconds=round(max(r["seconds"] for r in reports) + time.monotonic() - started, 3),
    )
    return report
