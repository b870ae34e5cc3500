"""Store directories, column families and segments (``StateDirectory``, ``RocksDBStore``, ``AbstractSegments``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.store_layout import (
    column_families,
    default_segment_interval,
    is_segment_live,
    segment_id,
    segment_name,
    store_layout,
    task_dir_is_empty,
    task_directory,
)
from streamproc.state.store_type import StoreType


def test_timestamped_key_value_layout() -> None:
    layout = store_layout("/s", "wordcount", TaskId(0, 2), "counts", StoreType.TIMESTAMPED_KEY_VALUE)
    assert layout.db_path == Path("/s/wordcount/0_2/rocksdb/counts")
    assert layout.column_families == ("default", "keyValueWithTimestamp")
    assert layout.data_column_family == "keyValueWithTimestamp"
    assert layout.checkpoint_path == Path("/s/wordcount/0_2/.checkpoint")
    assert layout.segment_id is None


def test_plain_stores_use_default_family() -> None:
    for store_type in (StoreType.KEY_VALUE, StoreType.WINDOW, StoreType.SESSION):
        assert column_families(store_type) == ("default",)
    assert column_families(StoreType.TIMESTAMPED_WINDOW) == ("default", "keyValueWithTimestamp")


def test_window_segment_default_interval_minimum() -> None:
    layout = store_layout(
        "/s", "clicks", TaskId(1, 0), "w", StoreType.WINDOW, retention_ms=100000, segment_timestamp=1700000012345
    )
    assert layout.segment_interval_ms == 60000
    assert layout.segment_id == 28333333
    assert layout.db_path == Path("/s/clicks/1_0/w/w.1699999980000")


def test_explicit_segment_interval_wins() -> None:
    layout = store_layout(
        "/s", "a", TaskId(0, 0), "s", StoreType.SESSION, segment_interval_ms=1000, segment_timestamp=2500
    )
    assert layout.db_path == Path("/s/a/0_0/s/s.2000")


def test_named_topology_task_directory() -> None:
    assert task_directory("/s", "app", TaskId(0, 1, "topo")) == Path("/s/app/__topo__/0_1")


def test_segment_arithmetic_is_java() -> None:
    assert default_segment_interval(300000) == 150000
    assert default_segment_interval(0) == 60000
    assert segment_id(-1, 60000) == 0  # Java truncates toward zero
    assert segment_id(-60001, 60000) == -1
    assert segment_name("w", 3, 60000) == "w.180000"
    assert is_segment_live(10, stream_time=700000, retention_ms=100000, segment_interval_ms=60000)
    assert not is_segment_live(9, stream_time=700000, retention_ms=100000, segment_interval_ms=60000)


def test_segmented_layout_errors() -> None:
    with pytest.raises(StateError, match="retention"):
        store_layout("/s", "a", TaskId(0, 0), "w", StoreType.WINDOW, segment_timestamp=1)
    with pytest.raises(StateError, match="segment timestamp"):
        store_layout("/s", "a", TaskId(0, 0), "w", StoreType.WINDOW, retention_ms=1)
    with pytest.raises(StateError):
        segment_id(5, 0)
    with pytest.raises(StateError):
        default_segment_interval(-1)


def test_task_dir_is_empty(tmp_path: Path) -> None:
    task_dir = tmp_path / "0_0"
    assert task_dir_is_empty(task_dir)
    task_dir.mkdir()
    (task_dir / ".checkpoint").write_bytes(b"0\n0\n")
    (task_dir / "old.lock").write_bytes(b"")
    assert task_dir_is_empty(task_dir)
    (task_dir / ".checkpoint.tmp").write_bytes(b"")
    assert not task_dir_is_empty(task_dir)
    assert task_dir_is_empty(task_dir, "4.3")
    (task_dir / "rocksdb").mkdir()
    assert not task_dir_is_empty(task_dir, "4.3")
