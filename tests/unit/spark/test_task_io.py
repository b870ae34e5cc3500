"""The task's segment reader and output files: the columnar shortcuts keep the per-record rules.

``read_records`` checks offsets on a batch's column instead of record by record; ``_ParquetFiles`` buffers row
tuples and transposes them per row group. These check the same records, errors and bytes come out.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamproc.engine.records import ConsumerRecord
from streamproc.errors import ManifestError
from streamproc.spark.task_input import StagedRange, _first_misplaced, read_records
from streamproc.spark.task_output import OUTPUT_SCHEMA, ROW_GROUP_ROWS, _ParquetFiles
from streamproc.storage import LocalObjectStore
from streamproc.storage.segments import SegmentWriter


def _staged(store: LocalObjectStore, offsets: list[int], start: int, end: int) -> StagedRange:
    writer = SegmentWriter("orders", 0)
    writer.extend(ConsumerRecord.raw("orders", 0, o, 100 + o, b"k", b"v%d" % o) for o in offsets)
    written = writer.write(store, start, end)
    return StagedRange("orders", 0, start, end, (written.name,), len(offsets), written.size_bytes)


def test_read_records_gives_the_segment_records_in_offset_order(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    staged = _staged(store, list(range(5, 20_000, 2)), 5, 20_000)
    records = list(read_records(store, staged, task="0_0"))
    assert [r.offset for r in records] == list(range(5, 20_000, 2))
    assert records[3] == ConsumerRecord.raw("orders", 0, 11, 111, b"k", b"v11")


@pytest.mark.parametrize(
    ("offsets", "last", "misplaced"),
    [([10, 11, 12], -1, None), ([10, 12, 11], -1, 11), ([12, 13], 12, 12), ([18, 20], 12, 20), ([9, 11], -1, 9)],
)
def test_the_first_offset_out_of_order_or_range_is_found_on_the_column(
    offsets: list[int], last: int, misplaced: int | None
) -> None:
    staged = StagedRange("orders", 0, 10, 20, (), 0, 0)
    assert _first_misplaced(pa.array(offsets, pa.int64()), last, staged) == misplaced


def test_a_segment_outside_the_staged_range_is_a_manifest_error(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    staged = _staged(store, [5, 6, 7], 5, 8)
    narrower = StagedRange("orders", 0, 5, 7, staged.segments, 3, staged.bytes)
    with pytest.raises(ManifestError, match=r"task \[0_0\] .*offset 7 is out of order or outside \[5, 7\)"):
        list(read_records(store, narrower, task="0_0"))


def test_parquet_files_write_row_groups_of_the_rows_in_order(tmp_path: Path) -> None:
    files = _ParquetFiles(OUTPUT_SCHEMA, tmp_path)
    total = 2 * ROW_GROUP_ROWS + 100
    headers = [{"key": "h", "value": b"x"}]
    for i in range(total):
        files.append(("out", i % 2), (i, "out", i % 2, 1000 + i, b"k%d" % i, None, headers if i % 7 else [], "sink"))
    assert files.counts == {("out", 0): total // 2, ("out", 1): total // 2}
    paths = files.close()
    assert files.counts == {("out", 0): total // 2, ("out", 1): total // 2}
    table = pq.read_table(paths[("out", 1)])
    assert table.column("sequence").to_pylist() == list(range(1, total, 2))
    assert table.column("key").to_pylist() == [b"k%d" % i for i in range(1, total, 2)]
    assert table.column("headers").to_pylist()[:2] == [headers, headers]
    assert table.column("headers").to_pylist()[3] == []  # sequence 7
    assert pq.ParquetFile(paths[("out", 0)]).metadata.num_row_groups == 2


def test_a_task_runs_with_young_collections_spaced_and_restores_the_threshold() -> None:
    import gc

    from streamproc.spark.task_runner import TASK_GC_THRESHOLD, _young_collections_spaced, run_task

    before = gc.get_threshold()
    with pytest.raises(RuntimeError), _young_collections_spaced():
        assert gc.get_threshold() == (max(before[0], TASK_GC_THRESHOLD), *before[1:])
        raise RuntimeError("the task failed")
    assert gc.get_threshold() == before
    assert hasattr(run_task, "__wrapped__")  # run_task is the one wrapped
