"""``streamproc.storage.segments``: the segment schema and names (DESIGN.md §3), deterministic encoding, checks."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.engine.records import ConsumerRecord, TimestampType
from streamproc.errors import ConfigError, ManifestError
from streamproc.storage import LocalObjectStore, segments
from streamproc.storage.segments import (
    ROW_GROUP_ROWS,
    SEGMENT_SCHEMA,
    SEGMENT_SCHEMA_FINGERPRINT,
    SegmentColumns,
    SegmentKey,
    SegmentWriter,
    decode_segment,
    encode_segment,
    manifest_name,
    parse_object_name,
    read_segment,
    records_from_table,
    schema_fingerprint,
    segment_name,
)
from tests.unit.storage.store_contract import records


def test_object_names() -> None:
    assert segment_name("orders", 3, 1200, 5000) == (
        "topics/orders/partition=3/orders+3+00000000000000001200+00000000000000005000.parquet"
    )
    assert manifest_name("orders", 3, 1200, 5000) == (
        "topics/orders/partition=3/orders+3+00000000000000001200+00000000000000005000.manifest.json"
    )
    assert segment_name("a.b_c-d", 0, 0, 2**63 - 1).endswith("+00000000000000000000+09223372036854775807.parquet")


def test_names_sort_in_offset_order() -> None:
    names = [segment_name("t", 0, s, s + 1) for s in (9, 100, 10, 0)]
    assert sorted(names) == [segment_name("t", 0, s, s + 1) for s in (0, 9, 10, 100)]


def test_parse_object_name_round_trip() -> None:
    key = SegmentKey("my-topic.v2", 11, 5, 70)
    assert parse_object_name(key.segment_name) == (key, ".parquet")
    assert parse_object_name(key.manifest_name) == (key, ".manifest.json")


@pytest.mark.parametrize(
    "name",
    [
        "topics/orders/partition=0/orders+0+00000000000000000000+00000000000000000010.csv",
        "topics/orders/partition=0/other+0+00000000000000000000+00000000000000000010.parquet",
        "topics/orders/partition=0/orders+1+00000000000000000000+00000000000000000010.parquet",
        "topics/orders/partition=0/orders+0+0+10.parquet",
        "topics/orders/partition=0/orders+0+00000000000000000010+00000000000000000000.parquet",
        "topics/orders/partition=00/orders+00+00000000000000000000+00000000000000000010.parquet",
        "elsewhere/orders/partition=0/orders+0+00000000000000000000+00000000000000000010.parquet",
        "topics/orders/partition=0/notes.txt",
    ],
)
def test_parse_object_name_rejects_other_names(name: str) -> None:
    assert parse_object_name(name) is None


@pytest.mark.parametrize("topic", ["", ".", "..", "a/b", "a+b", "x" * 250, "ü"])
def test_illegal_topic_names(topic: str) -> None:
    with pytest.raises(ConfigError):
        segment_name(topic, 0, 0, 1)


@pytest.mark.parametrize(("partition", "start", "end"), [(-1, 0, 1), (0, -1, 1), (0, 5, 4)])
def test_invalid_ranges(partition: int, start: int, end: int) -> None:
    with pytest.raises(ConfigError):
        SegmentKey("t", partition, start, end)


def test_schema_is_the_contract() -> None:
    fields = {f.name: (f.type, f.nullable) for f in SEGMENT_SCHEMA}
    assert list(fields) == [
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
    ]
    assert fields["topic"] == (pa.string(), False)
    assert fields["partition"] == (pa.int32(), False)
    assert fields["offset"] == (pa.int64(), False)
    assert fields["timestamp"] == (pa.int64(), False)
    assert fields["timestamp_type"] == (pa.int8(), False)
    assert fields["key"] == (pa.binary(), True)
    assert fields["value"] == (pa.binary(), True)
    assert fields["leader_epoch"] == (pa.int32(), True)
    headers_type, headers_nullable = fields["headers"]
    assert not headers_nullable
    assert headers_type.value_type == pa.struct([pa.field("key", pa.string(), False), pa.field("value", pa.binary())])


def test_records_round_trip(tmp_path: Path) -> None:
    recs = records("orders", 2, [3, 4, 5, 6, 12, 15])
    recs.append(
        ConsumerRecord.raw(
            "orders", 2, 20, -1, None, b"", timestamp_type=TimestampType.NO_TIMESTAMP_TYPE, headers=(("a", b""),)
        )
    )
    writer = SegmentWriter("orders", 2)
    writer.extend(recs)
    store = LocalObjectStore(tmp_path)
    written = writer.write(store, 3, 21)
    assert written.name == segment_name("orders", 2, 3, 21)
    assert (written.record_count, written.min_timestamp, written.max_timestamp) == (7, -1, 1015)
    assert written.offsets == (3, 4, 5, 6, 12, 15, 20)
    data = store.get(written.name)
    assert written.sha256 == hashlib.sha256(data).hexdigest() and written.size_bytes == len(data)
    assert list(read_segment(store, written.name)) == recs
    table = pq.read_table(io.BytesIO(data))
    assert table.schema.equals(SEGMENT_SCHEMA)
    assert schema_fingerprint(table.schema) == SEGMENT_SCHEMA_FINGERPRINT


def test_same_records_give_byte_identical_files(tmp_path: Path) -> None:
    recs = records("orders", 0, list(range(0, 3000, 3)))
    first = encode_segment(recs)
    second = encode_segment(list(records("orders", 0, list(range(0, 3000, 3)))))
    assert first == second
    store = LocalObjectStore(tmp_path)
    for _ in range(2):
        writer = SegmentWriter("orders", 0)
        writer.extend(recs)
        writer.write(store, 0, 3000)
    assert store.get(segment_name("orders", 0, 0, 3000)) == first
    assert encode_segment(recs[:-1]) != first


def test_empty_segment(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    written = SegmentWriter("t", 0).write(store, 5, 8)
    assert (written.record_count, written.min_timestamp, written.max_timestamp) == (0, None, None)
    assert list(read_segment(store, written.name)) == []


def test_writer_refuses_other_partitions_and_disorder() -> None:
    writer = SegmentWriter("orders", 0)
    writer.append(records("orders", 0, [5])[0])
    with pytest.raises(ManifestError, match="orders-1@6"):
        writer.append(records("orders", 1, [6])[0])
    with pytest.raises(ManifestError, match="offset 5 after 5"):
        writer.append(records("orders", 0, [5])[0])
    with pytest.raises(ManifestError, match="strictly increasing"):
        writer.append(records("orders", 0, [4])[0])


def test_writer_refuses_records_outside_the_range(tmp_path: Path) -> None:
    writer = SegmentWriter("orders", 0)
    writer.extend(records("orders", 0, [5, 10]))
    with pytest.raises(ManifestError, match=r"\[10\]"):
        writer.write(LocalObjectStore(tmp_path), 5, 10)
    assert LocalObjectStore(tmp_path).list() == []


def test_foreign_object_is_a_manifest_error() -> None:
    name = segment_name("orders", 0, 0, 1)
    with pytest.raises(ManifestError, match=re.escape(f"object '{name}' is not a readable Parquet segment")):
        decode_segment(b"PAR1 but not really", name)


def test_truncated_segment_is_a_manifest_error() -> None:
    data = encode_segment(records("orders", 0, [0, 1, 2]))
    with pytest.raises(ManifestError, match="not a readable Parquet segment"):
        decode_segment(data[: len(data) // 2], "x.parquet")


def test_parquet_with_another_schema_is_a_manifest_error() -> None:
    sink = io.BytesIO()
    pq.write_table(pa.table({"offset": pa.array([1, 2], pa.int64()), "payload": ["a", "b"]}), sink)
    with pytest.raises(ManifestError, match=r"does not have the segment schema \(missing topic.*unexpected payload"):
        decode_segment(sink.getvalue(), "foreign.parquet")


def test_parquet_with_a_changed_type_is_a_manifest_error() -> None:
    changed = SEGMENT_SCHEMA.set(1, pa.field("partition", pa.int64(), False))
    table = pa.Table.from_pylist([], schema=SEGMENT_SCHEMA).cast(changed)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    with pytest.raises(ManifestError, match="partition: int64 not null instead of int32 not null"):
        decode_segment(sink.getvalue(), "changed.parquet")


def test_unsorted_rows_are_a_manifest_error() -> None:
    recs = records("orders", 0, [2, 1])
    with pytest.raises(ManifestError, match="offset 1 follows 2"):
        decode_segment(encode_segment(recs), "x.parquet")


def test_rows_of_another_partition_are_a_manifest_error() -> None:
    data = encode_segment(records("orders", 1, [0, 1]))
    with pytest.raises(ManifestError, match="not only orders-0"):
        decode_segment(data, segment_name("orders", 0, 0, 2))


def test_rows_outside_the_named_range_are_a_manifest_error() -> None:
    data = encode_segment(records("orders", 0, [0, 1]))
    with pytest.raises(ManifestError, match=r"outside its range \[0, 1\)"):
        decode_segment(data, segment_name("orders", 0, 0, 1))


def test_unknown_timestamp_type_is_a_manifest_error() -> None:
    table = pq.read_table(io.BytesIO(encode_segment(records("orders", 0, [0]))))
    broken = table.set_column(4, SEGMENT_SCHEMA.field("timestamp_type"), pa.array([7], pa.int8()))
    with pytest.raises(ManifestError, match="orders-0@0: unknown timestamp type id 7"):
        list(records_from_table(broken))


def test_many_row_groups_read_back_in_order() -> None:
    recs = records("orders", 0, list(range(ROW_GROUP_ROWS + 10)))
    data = encode_segment(recs)
    assert pq.ParquetFile(io.BytesIO(data)).metadata.num_row_groups > 1
    assert list(records_from_table(decode_segment(data, "x.parquet"))) == recs


def test_records_from_a_batch_equal_the_consumer_records_row_by_row() -> None:
    """Built column by column (shared values for uniform columns, the kernel's construction) and from a sliced
    batch (Arrow offsets into the headers' values), the records equal ``ConsumerRecord.raw`` field for field."""
    from streamproc.storage.segments import records_from_batch

    uniform = [
        ConsumerRecord.raw("orders", 3, o, 5_000 - o, b"k%d" % (o % 4), b"v" * o, leader_epoch=2) for o in range(300)
    ]
    mixed = records("orders", 0, list(range(300)))
    for recs in (uniform, mixed):
        batch = decode_segment(encode_segment(recs), "x.parquet").to_batches()[0]
        for start, stop in ((0, 300), (17, 250), (299, 300), (5, 5)):
            built = records_from_batch(batch.slice(start, stop - start))
            assert built == recs[start:stop]
            assert [(r.serialized_key_size, r.serialized_value_size, r.headers) for r in built] == [
                (r.serialized_key_size, r.serialized_value_size, r.headers) for r in recs[start:stop]
            ]
            assert all(type(r) is ConsumerRecord for r in built)


_THREADS_AFTER_DECODING = r"""
import os
from streamproc.engine.records import ConsumerRecord
from streamproc.handoff import task_results
from streamproc.storage import LocalObjectStore
from streamproc.storage.segments import decode_segment, encode_segment
import pyarrow as pa, pyarrow.parquet as pq, sys

def threads():
    return len(os.listdir("/proc/self/task"))

before = threads()
data = encode_segment(ConsumerRecord.raw("t", 0, i, i, b"k%d" % i, b"v" * 50) for i in range(50_000))
decode_segment(data, "t+0")
store = LocalObjectStore(sys.argv[1])
columns = {"timestamp": pa.array(range(50_000), pa.int64()), "key": pa.array([b"k"] * 50_000),
           "value": pa.array([b"v"] * 50_000),
           "headers": pa.array([[]] * 50_000, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))}
pq.write_table(pa.table(columns), os.path.join(sys.argv[1], "out.parquet"))
batches = list(task_results._batches(store, "out.parquet"))
assert sum(1 for batch in batches for _ in task_results.batch_rows(batch)) == 50_000
assert sum(task_results.epoch_timestamps(batch) for batch in batches) == 1
assert not any(task_results.has_headers(batch.column("headers")) for batch in batches)
print(before, threads())
"""


def test_decoding_in_streamprocs_own_process_leaves_no_arrow_thread_to_abort_its_exit(tmp_path: Path) -> None:
    """A thread of Arrow's pool alive at exit aborts the process (``std::terminate``, exit -6; ``ARROW_USE_THREADS``):
    decoding a segment (``streamproc verify``, fetch) and reading task outputs as the hand-off does (batches, their
    rows, the counts of epoch timestamps and headers) start none."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _THREADS_AFTER_DECODING, str(tmp_path)], capture_output=True, text=True, check=True
    )
    before, after = map(int, done.stdout.split())
    assert after == before, done.stdout


_payload = st.one_of(st.none(), st.binary(max_size=12))
_rows = st.lists(
    st.tuples(
        st.just(0), st.integers(-1, 2**45), st.sampled_from([-1, 0, 1]), _payload, _payload,
        st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=4), _payload), max_size=2)),
        st.one_of(st.none(), st.integers(0, 2**31 - 1)),
    ),
    max_size=40,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(_rows)
def test_segment_buffers_encode_as_the_same_rows_built_by_pyarrow_from_python_values(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    """``SegmentColumns`` writes Arrow's buffers itself (bit-packed validity, int32 binary offsets); the bytes must be
    what pyarrow makes of the same rows as Python values, nulls, empty keys and headers included."""
    rows = [(offset, *row[1:]) for offset, row in zip(range(7, 7 + 3 * len(rows), 3), rows, strict=True)]
    columns = SegmentColumns()
    for row in rows:
        columns.append(*row)
    offsets, timestamps, types, keys, values, headers, epochs = (
        (list(c) for c in zip(*rows, strict=True)) if rows else ([],) * 7
    )
    header_type = SEGMENT_SCHEMA.field("headers").type
    expected = pa.Table.from_arrays(
        [
            pa.array(["t"] * len(rows), pa.string()), pa.array([3] * len(rows), pa.int32()),
            pa.array(offsets, pa.int64()), pa.array(timestamps, pa.int64()), pa.array(types, pa.int8()),
            pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.array([[{"key": k, "value": v} for k, v in h or ()] for h in headers], header_type),
            pa.array(epochs, pa.int32()),
        ],
        schema=SEGMENT_SCHEMA,
    )  # fmt: skip
    table = decode_segment(columns.encode("t", 3), "t+3")
    assert table.equals(expected)
    assert table.column("key").null_count == keys.count(None)
    sink = pa.BufferOutputStream()
    pq.write_table(expected, sink, **segments._WRITE_OPTIONS)
    assert columns.encode("t", 3) == sink.getvalue().to_pybytes()
    assert list(columns.offset_sequence()) == offsets
