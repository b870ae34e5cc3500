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
  wrote ends at shard s's last changelog record for it;
- the report: what every shard computed the same (records processed, steps, stream time, offsets and partition
  times, inputs, restores) from shard 0, counts summed, objects and bytes the merge's own.

The task's report is published last, as always; then the shards' objects are deleted.
"""

from __future__ import annotations

import json
import logging
import shutil
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.dropped_records import DroppedRecord
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.records import ConsumerRecord, RawRecord
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import store_builders
from streamproc.engine.topology_loader import load_topology
from streamproc.errors import ProcessingError
from streamproc.spark.task_output import (
    _WRITE_OPTIONS,
    CHANGELOG_SCHEMA,
    OUTPUT_SCHEMA,
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
from streamproc.state.changelog_reduction import last_write_per_key
from streamproc.state.processor_state_manager import open_store
from streamproc.state.store_builders import store_definitions
from streamproc.state.stores import StoreContext
from streamproc.storage.object_store import ObjectStore, load_store

logger = logging.getLogger(__name__)

#: The sort keys of the merge, in order.
_ORDER = [("position", "ascending"), ("phase", "ascending"), ("sequence", "ascending")]
_DLQ_KEY = "dlq"
#: The column the merge numbers each row's file in (``_ordered_by_file``).
_FILE = "file"


def merge_shards(work: Any, count: int, *, attempt: int = 0) -> dict[str, Any]:
    """Merge the ``count`` shards of ``work``'s task into the task's objects and report (see the module doc).

    ``work`` is the task's :class:`~streamproc.spark.task_runner.TaskWork` (without a shard)."""
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
    work_dir = Path(tempfile.mkdtemp(prefix=f"streamproc-merge-{task_id}-", dir=work.local_dir))
    try:
        written: dict[str, int] = {}
        outputs, dead_letters = _merge_outputs(store, shards, reports, work_dir / "outputs")
        for (topic, partition), path in outputs.items():
            written[objects.output(topic, partition)] = publish_file(store, objects.output(topic, partition), path)
        changelog = _merged_rows(store, shards, reports, "changelogs", lambda s, n: s.changelog(*_split(n)))
        changelog_files = _write_by_file(changelog, CHANGELOG_SCHEMA, work_dir / "changelogs")
        for (topic, partition), path in changelog_files.items():
            written[objects.changelog(topic, partition)] = publish_file(
                store, objects.changelog(topic, partition), path
            )
        check_file(DEAD_LETTER_QUEUE, dead_letters, objects.dead_letter_queue, work.task_id)
        written[objects.dead_letter_queue] = publish_file(store, objects.dead_letter_queue, dead_letters)
        drops = drops_bytes(_merged_drops(store, shards))
        check_file(DROPS, drops, objects.drops, work.task_id)
        store.put(objects.drops, drops)
        written[objects.drops] = len(drops)
        first = reports[0]
        if shards[0].stores in first["objects"]:
            bundle = _merged_bundle(work, store, shards[0], changelog, work_dir / "bundle")
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


def _split(name: str) -> tuple[str, int]:
    """``topic+partition`` (a report's key) as ``(topic, partition)``."""
    topic, _, partition = name.rpartition("+")
    return topic, int(partition)


def _read(store: ObjectStore, name: str, shard: int) -> pa.Table:
    table = pq.read_table(pa.BufferReader(store.get(name)))
    return table.append_column("shard", pa.array(np.full(table.num_rows, shard, dtype=np.int32)))


def _merged_rows(
    store: ObjectStore, shards: Sequence[ShardObjects], reports: Sequence[dict[str, Any]], section: str, name: Any
) -> pa.Table:
    """Every shard's rows of the report's ``section`` (file keys), in the task's order per file, ``sequence``
    renumbered."""
    tables = [
        _read(store, name(shard, file), index)
        for index, (shard, report) in enumerate(zip(shards, reports, strict=True))
        for file in sorted(report[section])
    ]
    if not tables:
        return pa.table({})
    table = pa.concat_tables(tables)
    return _ordered_by_file(table, _file_numbers(table))


def _file_numbers(table: pa.Table, dead_letters: np.ndarray | None = None) -> np.ndarray:
    """A number per row naming the file it belongs in: its (topic, partition), ``-1`` for a dead letter (one file of
    its own); numbers rise with topic (in order of first appearance) then partition."""
    topics = pc.dictionary_encode(table.column("topic")).combine_chunks().indices.to_numpy(zero_copy_only=False)
    partitions = table.column("partition").to_numpy().astype(np.int64)
    span = int(partitions.max()) + 2 if len(partitions) else 1  # UNASSIGNED (-1) included
    numbers: np.ndarray = topics.astype(np.int64) * span + partitions + 1
    if dead_letters is not None:
        numbers[dead_letters] = -1
    return numbers


def _ordered_by_file(table: pa.Table, files: np.ndarray) -> pa.Table:
    """``table``'s rows (every shard's, stamped) grouped by file (``files``: a number per row), each file's rows in
    the task's order, and ``sequence`` renumbered from 0 in that order across every file.

    The task's order is ``(position, phase, sequence)``: each ``(position, phase)`` belongs to one shard, whose
    ``sequence`` orders its rows (``spark/task_shards.py``). One lexicographic sort gives each row's rank in it; a
    stable sort of the ranked rows by file groups them without disturbing it, and a row's place in that rank is its
    new ``sequence``: the order the unsplit task produced its rows in. One ``take`` then moves every column."""
    position = table.column("position").to_numpy()
    phase = table.column("phase").to_numpy()
    sequence = table.column("sequence").to_numpy()
    merged = np.lexsort((sequence, phase, position))
    by_file = np.argsort(files[merged], kind="stable")
    order = merged[by_file]
    table = table.take(pa.array(order))
    table = table.set_column(table.schema.get_field_index("sequence"), "sequence", pa.array(by_file, pa.int64()))
    return table.append_column(_FILE, pa.array(files[order], pa.int64()))


def _merge_outputs(
    store: ObjectStore, shards: Sequence[ShardObjects], reports: Sequence[dict[str, Any]], work_dir: Path
) -> tuple[dict[tuple[str, int], Path], Path]:
    """The task's output files and its DLQ file: one production order (``sequence``) over both."""
    outputs: list[pa.Table] = []
    letters: list[pa.Table] = []
    for index, (shard, report) in enumerate(zip(shards, reports, strict=True)):
        outputs.extend(_read(store, shard.output(*_split(file)), index) for file in sorted(report["outputs"]))
        letters.append(_read(store, shard.dead_letter_queue, index))
    table = pa.concat_tables([*outputs, *letters])
    dead_letters = np.zeros(table.num_rows, dtype=bool)
    dead_letters[sum(t.num_rows for t in outputs) :] = True
    written = _write_by_file(_ordered_by_file(table, _file_numbers(table, dead_letters)), OUTPUT_SCHEMA, work_dir)
    closed = written.pop((_DLQ_KEY, UNASSIGNED), None)
    if closed is None:  # as TaskOutputCollector.dead_letter_file: an empty file when nothing went there
        (work_dir / _DLQ_KEY).mkdir(parents=True, exist_ok=True)
        closed = work_dir / _DLQ_KEY / f"{_DLQ_KEY}+{UNASSIGNED}.parquet"
        pq.write_table(OUTPUT_SCHEMA.empty_table(), closed, **_WRITE_OPTIONS)
    return written, closed


def _write_by_file(table: pa.Table, schema: pa.Schema, work_dir: Path) -> dict[tuple[str, int], Path]:
    """``table``'s rows (grouped by file, each in the task's order: :func:`_ordered_by_file`) into one file per
    (topic, partition) and the dead letters' own file, in the task's row groups."""
    work_dir.mkdir(parents=True, exist_ok=True)
    files = _ParquetFiles(schema, work_dir)
    letters = _ParquetFiles(schema, work_dir / _DLQ_KEY)
    if table.num_rows:
        numbers = table.column(_FILE).to_numpy()
        starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
        ends = np.r_[starts[1:], len(numbers)]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            rows = table.slice(start, end - start).select(schema.names).cast(schema)
            if numbers[start] < 0:
                (work_dir / _DLQ_KEY).mkdir(exist_ok=True)
                letters.append_table((_DLQ_KEY, UNASSIGNED), rows)
            else:
                topic, partition = rows.column("topic")[0].as_py(), rows.column("partition")[0].as_py()
                files.append_table((topic, partition), rows)
    return {**files.close(), **letters.close()}


def _merged_drops(store: ObjectStore, shards: Sequence[ShardObjects]) -> tuple[DroppedRecord, ...]:
    tables = [_read(store, shard.drops, index) for index, shard in enumerate(shards)]
    table = pa.concat_tables(tables).combine_chunks()
    table = table.take(pc.sort_indices(table, sort_keys=_ORDER))
    columns = [
        table.column(name).to_pylist() for name in ("topic", "partition", "offset", "reason", "records_processed")
    ]
    return tuple(DroppedRecord(*row) for row in zip(*columns, strict=True))


def _merged_bundle(work: Any, store: ObjectStore, first: ShardObjects, changelog: pa.Table, where: Path) -> bytes:
    """Shard 0's store bundle with the other shards' changelog records applied (see the module doc)."""
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
    others = changelog.filter(pc.not_equal(changelog.column("shard"), 0)) if changelog.num_rows else changelog
    for name, definition in sorted(definitions.items()):
        rows = others.filter(pc.equal(others.column("store"), name)) if others.num_rows else others
        rows = last_write_per_key(rows)
        opened = open_store(definition, StoreContext(), where, task=work.task_id)
        try:
            if rows.num_rows:
                opened.restore_batch(_as_records(rows))
            opened.flush()
        finally:
            opened.close()
    return bundle_bytes(where)


def _as_records(rows: pa.Table) -> list[RawRecord]:
    columns = [rows.column(n).to_pylist() for n in ("topic", "partition", "sequence", "timestamp", "key", "value")]
    return [ConsumerRecord.raw(*row) for row in zip(*columns, strict=True)]


def _task_report(
    first: dict[str, Any], reports: Sequence[dict[str, Any]], written: dict[str, int], attempt: int, started: float
) -> dict[str, Any]:
    def summed(section: str) -> dict[str, int]:
        total: Counter[str] = Counter()
        for report in reports:
            total.update(report[section])
        return dict(sorted((k, v) for k, v in total.items() if v))

    report = {key: value for key, value in first.items() if key not in ("shard", "skipped")}
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
