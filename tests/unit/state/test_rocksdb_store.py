"""RocksDB stores in Kafka Streams' layout: paths, column families, options RocksDB recorded, bytes, reopening."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rocksdict import Options, Rdict

from streamproc.engine.records import ConsumerRecord
from streamproc.engine.serdes import serde_for
from streamproc.state import rocksdb_store
from streamproc.state.rocksdb_store import (
    BYTEWISE_COMPARATOR,
    ROCKSDICT_CONFIG_FILE,
    IncompatibleStore,
    RocksDBKeyValueBytesStore,
    check_kafka_streams_compatible,
    existing_segment_ids,
    inspect_rocksdb,
    list_column_families,
    rocksdb_segmented_store,
)
from streamproc.state.store_type import StoreType
from streamproc.state.stores import (
    InMemoryKeyValueBytesStore,
    KeyValueBytesStore,
    StoreContext,
    TimestampedKeyValueStore,
    ValueAndTimestamp,
    WindowStore,
)


def raw_contents(path: Path, column_family: str | None = None) -> list[tuple[bytes, bytes]]:
    """Read a closed DB the way any RocksDB client would (rocksdict opens every CF it finds)."""
    db = Rdict(str(path), Options(raw_mode=True))
    try:
        view = db if column_family is None else db.get_column_family(column_family)
        items: list[tuple[bytes, bytes]] = [(bytes(k), bytes(v)) for k, v in view.items()]  # type: ignore[arg-type]
        if view is not db:
            view.close()
    finally:
        db.close()
    return items


def test_plain_store_layout_and_options(tmp_path: Path) -> None:
    path = tmp_path / "0_1" / "rocksdb" / "counts"
    store = RocksDBKeyValueBytesStore("counts", path, StoreType.KEY_VALUE)
    store.put(b"b", b"2")
    store.write_all([(b"a", b"1"), (b"c", b"3"), (b"c", None)])
    assert store.get(b"a") == b"1"
    assert list(store.range(b"a", b"b")) == [(b"a", b"1"), (b"b", b"2")]
    store.close()
    assert list_column_families(path) == ["default"]
    assert not (path / ROCKSDICT_CONFIG_FILE).exists()
    info = inspect_rocksdb(path)
    assert info.comparators == {"default": BYTEWISE_COMPARATOR}
    assert info.merge_operators == {"default": "nullptr"}
    assert info.compaction_styles == {"default": "kCompactionStyleUniversal"}
    assert info.compressions == {"default": "kNoCompression"}
    assert info.format_versions == {"default": 6}
    assert check_kafka_streams_compatible(info, StoreType.KEY_VALUE) == []
    assert raw_contents(path) == [(b"a", b"1"), (b"b", b"2")]


def test_timestamped_store_writes_only_its_column_family(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb" / "agg"
    bytes_store = RocksDBKeyValueBytesStore("agg", path, StoreType.TIMESTAMPED_KEY_VALUE)
    store: TimestampedKeyValueStore[str, int] = TimestampedKeyValueStore(
        "agg", bytes_store, serde_for("String"), serde_for("Long"), StoreContext(None, None, lambda: 0)
    )
    store.put("k", ValueAndTimestamp(5, 1_700_000_000_000))
    assert store.approximate_num_entries() >= 0
    store.close()
    assert list_column_families(path) == ["default", "keyValueWithTimestamp"]
    assert raw_contents(path) == []
    assert raw_contents(path, "keyValueWithTimestamp") == [
        (b"k", bytes.fromhex("0000018bcfe56800") + struct.pack(">q", 5))
    ]
    info = inspect_rocksdb(path)
    assert set(info.comparators.values()) == {BYTEWISE_COMPARATOR}
    assert check_kafka_streams_compatible(info, StoreType.TIMESTAMPED_KEY_VALUE) == []
    assert check_kafka_streams_compatible(info, StoreType.KEY_VALUE) != []
    reopened = RocksDBKeyValueBytesStore("agg", path, StoreType.TIMESTAMPED_KEY_VALUE)
    assert reopened.get(b"k") is not None
    reopened.close()


def test_timestamped_store_opened_as_plain_is_incompatible(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb" / "agg"
    RocksDBKeyValueBytesStore("agg", path, StoreType.TIMESTAMPED_KEY_VALUE).close()
    with pytest.raises(IncompatibleStore, match="Column families not opened: keyValueWithTimestamp") as info:
        RocksDBKeyValueBytesStore("agg", path, StoreType.KEY_VALUE, task="0_0")
    assert "task [0_0] store agg" in str(info.value)


def test_plain_store_data_opened_as_timestamped_is_incompatible(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb" / "s"
    plain = RocksDBKeyValueBytesStore("s", path, StoreType.KEY_VALUE)
    plain.put(b"k", b"v")
    plain.close()
    with pytest.raises(IncompatibleStore, match="upgrade mode"):
        RocksDBKeyValueBytesStore("s", path, StoreType.TIMESTAMPED_KEY_VALUE)


def test_kafka_streams_4_3_offsets_family_is_incompatible(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb" / "s"
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    db = Rdict(str(path), options, column_families={"offsets": Options(raw_mode=True)})
    db.close()
    with pytest.raises(IncompatibleStore, match="offsets"):
        RocksDBKeyValueBytesStore("s", path, StoreType.KEY_VALUE)


def test_window_store_segments_on_disk(tmp_path: Path) -> None:
    task_dir = tmp_path / "1_0"
    segments = rocksdb_segmented_store(
        task_dir, "win", StoreType.WINDOW, retention_ms=180_000, segment_interval_ms=90_000
    )
    store: WindowStore[str, str] = WindowStore(
        "win",
        segments,
        serde_for("String"),
        serde_for("String"),
        window_size_ms=60_000,
        context=StoreContext(None, None, lambda: 0),
    )
    store.put("k", "a", 0)
    store.put("k", "b", 120_000)
    assert list(store.fetch("k", 0, 200_000)) == [(0, "a"), (120_000, "b")]
    store.close()
    assert sorted(p.name for p in (task_dir / "win").iterdir()) == ["win.0", "win.90000"]
    for segment in ("win.0", "win.90000"):
        assert list_column_families(task_dir / "win" / segment) == ["default"]
    assert raw_contents(task_dir / "win" / "win.90000") == [(b"k" + struct.pack(">qi", 120_000, 0), b"b")]
    assert existing_segment_ids(task_dir / "win", "win", 90_000) == [0, 1]
    reopened = rocksdb_segmented_store(
        task_dir, "win", StoreType.WINDOW, retention_ms=180_000, segment_interval_ms=90_000
    )
    assert reopened.segment_ids() == [0, 1]
    assert reopened.get(b"k" + struct.pack(">qi", 0, 0), 0) == b"a"
    reopened.close()


def test_timestamped_window_segments_have_both_families(tmp_path: Path) -> None:
    segments = rocksdb_segmented_store(
        tmp_path, "tw", StoreType.TIMESTAMPED_WINDOW, retention_ms=120_000, segment_interval_ms=60_000
    )
    segments.write_all([(b"k" + struct.pack(">qi", 60_000, 0), struct.pack(">q", 1) + b"v", 60_000)])
    segments.close()
    assert list_column_families(tmp_path / "tw" / "tw.60000") == ["default", "keyValueWithTimestamp"]


def test_expired_segment_directory_deleted(tmp_path: Path) -> None:
    segments = rocksdb_segmented_store(tmp_path, "w", StoreType.WINDOW, retention_ms=60_000, segment_interval_ms=60_000)
    segments.put(b"a", b"1", 0)
    segments.put(b"b", b"2", 600_000)
    segments.close()
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["w.600000"]


def test_restore_batch_into_rocksdb(tmp_path: Path) -> None:
    path = tmp_path / "rocksdb" / "s"
    bytes_store = RocksDBKeyValueBytesStore("s", path, StoreType.TIMESTAMPED_KEY_VALUE)
    store: TimestampedKeyValueStore[str, str] = TimestampedKeyValueStore(
        "s", bytes_store, serde_for("String"), serde_for("String"), StoreContext(None, None, lambda: 0)
    )
    store.restore_batch(
        [ConsumerRecord.raw("t", 0, i, 100 + i, f"k{i % 3}".encode(), f"v{i}".encode()) for i in range(10)]
    )
    assert list(store.all()) == [
        ("k0", ValueAndTimestamp("v9", 109)),
        ("k1", ValueAndTimestamp("v7", 107)),
        ("k2", ValueAndTimestamp("v8", 108)),
    ]
    store.close()


@pytest.mark.parametrize("kind", ["rocksdb", "in-memory"])
def test_get_many_answers_as_get_does_key_by_key(tmp_path: Path, kind: str) -> None:
    """``get_many``: each key's ``get`` in order (duplicates, absent keys, the RocksDB store's pending writes and
    deletes over what RocksDB holds), in one call."""
    store: KeyValueBytesStore
    if kind == "rocksdb":
        store = RocksDBKeyValueBytesStore("s", tmp_path / "s", StoreType.TIMESTAMPED_KEY_VALUE)
    else:
        store = InMemoryKeyValueBytesStore()
    store.write_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])  # RocksDB: written through, nothing pending
    keys = [b"c", b"x", b"a", b"c", b""]
    assert store.get_many(keys) == [store.get(k) for k in keys] == [b"3", None, b"1", b"3", None]
    store.put(b"a", b"1'")
    store.put(b"b", None)
    store.put(b"d", b"4")
    keys = [b"a", b"b", b"c", b"d", b"x"]
    assert store.get_many(keys) == [store.get(k) for k in keys] == [b"1'", None, b"3", b"4", None]
    assert store.get_many([]) == []
    store.close()


_KEYS = st.binary(min_size=0, max_size=3).map(lambda b: bytes(c % 4 for c in b))  # few keys, so ops meet
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _KEYS, st.one_of(st.none(), st.binary(min_size=1, max_size=2))),
        st.tuples(st.just("range"), st.one_of(st.none(), _KEYS), st.one_of(st.none(), _KEYS)),
        st.tuples(st.just("write_all"), _KEYS, st.one_of(st.none(), st.binary(min_size=1, max_size=2))),
        st.tuples(st.just("estimate"), st.none(), st.none()),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations=_OPERATIONS, limits=st.sampled_from([(2, 1), (5, 3), (20_000, 4_000)]))
def test_range_scans_read_through_pending_writes_as_the_in_memory_store(
    operations: list[tuple[str, bytes | None, bytes | None]], limits: tuple[int, int]
) -> None:
    """Whatever the order of puts, deletes, batches and scans, and wherever the pending writes go to RocksDB, every
    ``range`` and ``get`` answers as the in-memory store (the model: a sorted map), and so does the reopened DB."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(rocksdb_store, "PENDING_WRITES_LIMIT", limits[0])
        patch.setattr(rocksdb_store, "RANGE_PENDING_WRITES_LIMIT", limits[1])
        store = RocksDBKeyValueBytesStore("s", Path(tmp) / "s", StoreType.KEY_VALUE)
        model = InMemoryKeyValueBytesStore()
        for operation, a, b in operations:
            if operation == "put":
                assert a is not None
                store.put(a, b)
                model.put(a, b)
            elif operation == "write_all":
                assert a is not None
                store.write_all([(a, b)])
                model.write_all([(a, b)])
            elif operation == "estimate":
                store.approximate_num_entries()
            else:
                assert list(store.range(a, b)) == list(model.range(a, b))
        assert list(store.range(None, None)) == list(model.range(None, None))
        store.close()
        assert raw_contents(Path(tmp) / "s") == list(model.range(None, None))


def test_a_scanning_store_writes_no_delete_of_a_key_rocksdb_does_not_hold(tmp_path: Path) -> None:
    """A session store's merged session is put and deleted while still pending: its delete never reaches RocksDB
    (where each was a tombstone every later scan of its key stepped over); a delete of a stored key still does."""
    store = RocksDBKeyValueBytesStore("s", tmp_path / "s", StoreType.KEY_VALUE)
    store.write_all([(b"stored", b"1")])
    assert list(store.range(b"a", b"z")) == [(b"stored", b"1")]  # the store scans: its scans read pending writes
    for n in range(50):
        session = b"hot-%02d" % n
        store.put(session, b"v")
        assert list(store.range(b"hot", b"hot-~")) == [(session, b"v")]
        store.put(session, None)

    def deletes() -> int:
        store.approximate_num_entries()  # the pending writes go to RocksDB
        return int(store._data.property_int_value("rocksdb.num-deletes-active-mem-table") or 0)

    assert deletes() == 0
    store.put(b"stored", None)
    assert deletes() == 1
    assert list(store.range(None, None)) == []
    store.close()
