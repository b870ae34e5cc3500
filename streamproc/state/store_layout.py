"""Where Kafka Streams 4.2 keeps a task's stores on disk, and which RocksDB column families it opens (state.md §1, §6).

- task directory: ``<state.dir>/<application.id>/<subtopology>_<partition>`` (named topologies:
  ``<state.dir>/<application.id>/__<topology>__/<subtopology>_<partition>``), ``PI/StateDirectory.java``;
- ``.checkpoint`` in the task directory (``StateManagerUtil.CHECKPOINT_FILE_NAME``);
- key-value stores: ``<task dir>/rocksdb/<store>`` (``RocksDBStore.DB_FILE_DIR``);
- window and session stores: one RocksDB per segment, ``<task dir>/<store>/<store>.<segment id × interval>``
  (``AbstractSegments.segmentName``); segment id = timestamp / interval with Java's truncating ``long`` division;
  the timestamp is the window start (window stores) or the session END (session stores);
- default segment interval ``max(retention / 2, 60 000)`` (``Stores.persistentWindowStore``,
  ``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``);
- column families: ``default`` for plain stores, ``default`` (kept empty) + ``keyValueWithTimestamp`` for
  timestamped ones (``RocksDBTimestampedStore``; 4.2 segments of timestamped windows are ``TimestampedSegment``s).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamproc.engine.store_names import CHECKPOINT_FILE_NAME as CHECKPOINT_FILE_NAME
from streamproc.engine.store_names import KS_VERSION_4_3
from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.store_type import StoreType

#: ``RocksDBStore.DB_FILE_DIR``.
DB_FILE_DIR = "rocksdb"
#: RocksDB's default column family (``RocksDB.DEFAULT_COLUMN_FAMILY``).
DEFAULT_COLUMN_FAMILY = "default"
#: ``RocksDBTimestampedStore.TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME``.
TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME = "keyValueWithTimestamp"
#: The lower bound of the default segment interval (``Math.max(retention / 2, 60_000L)``).
MIN_DEFAULT_SEGMENT_INTERVAL_MS = 60_000
#: ``StateDirectory.LOCK_FILE_NAME``: names ending with it are ignored (pre-3.0 per-task lock files).
LOCK_FILE_NAME = ".lock"
#: ``StateDirectory.GLOBAL_STATE_DIR`` (global stores live under ``<app dir>/global``).
GLOBAL_STATE_DIR = "global"


def _java_div(a: int, b: int) -> int:
    """Java ``long`` division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def application_directory(state_dir: Path | str, application_id: str) -> Path:
    """``StateDirectory``'s app dir: ``<state.dir>/<application.id>``."""
    return Path(state_dir) / application_id


def task_directory(state_dir: Path | str, application_id: str, task_id: TaskId) -> Path:
    """``StateDirectory.getOrCreateDirectoryForTask``'s path (``__<topology>__/`` for a named topology)."""
    app_dir = application_directory(state_dir, application_id)
    if task_id.topology_name is not None:
        app_dir = app_dir / f"__{task_id.topology_name}__"
    return app_dir / str(task_id)


def task_dir_is_empty(task_dir: Path | str, ks_version: str = "4.2") -> bool:
    """``StateDirectory.taskDirIsEmpty``: nothing but ``.checkpoint`` (4.3: ``.checkpoint*``) and ``*.lock`` entries.

    A missing directory is empty. Unlike Kafka Streams this never deletes the old lock files it skips. This is the
    predicate of the EOS corruption rule (state.md §1 rule 7, §4.4), evaluated before the stores are opened.
    """
    path = Path(task_dir)
    if not path.is_dir():
        return True
    for entry in path.iterdir():
        name = entry.name
        is_checkpoint = (
            name.startswith(CHECKPOINT_FILE_NAME) if ks_version == KS_VERSION_4_3 else name == CHECKPOINT_FILE_NAME
        )
        if not is_checkpoint and not name.endswith(LOCK_FILE_NAME):
            return False
    return True


def checkpoint_path(task_dir: Path | str) -> Path:
    """The task's ``.checkpoint`` file."""
    return Path(task_dir) / CHECKPOINT_FILE_NAME


def column_families(store_type: StoreType) -> tuple[str, ...]:
    """Exactly the column families Kafka Streams 4.2 opens for a store (or segment) of this type."""
    if store_type.timestamped:
        return (DEFAULT_COLUMN_FAMILY, TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME)
    return (DEFAULT_COLUMN_FAMILY,)


def data_column_family(store_type: StoreType) -> str:
    """The column family that holds the data (``default`` of a timestamped store must stay empty)."""
    return TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME if store_type.timestamped else DEFAULT_COLUMN_FAMILY


def default_segment_interval(retention_ms: int) -> int:
    """``Math.max(retentionMs / 2, 60_000L)``."""
    if retention_ms < 0:
        raise StateError(f"retention {retention_ms} ms is negative; Kafka Streams rejects it")
    return max(_java_div(retention_ms, 2), MIN_DEFAULT_SEGMENT_INTERVAL_MS)


def segment_id(timestamp: int, segment_interval_ms: int) -> int:
    """``AbstractSegments.segmentId``: ``timestamp / segmentInterval`` (Java division)."""
    if segment_interval_ms < 1:
        raise StateError(f"segment interval {segment_interval_ms} ms must be positive")
    if timestamp >= 0:
        return timestamp // segment_interval_ms  # Java's division of two non-negatives is the floor
    return _java_div(timestamp, segment_interval_ms)


def segment_ids_of(timestamps: Any, segment_interval_ms: int) -> Any:
    """:func:`segment_id` of each of ``timestamps`` (a numpy int64 array): Java's division, which truncates a
    negative quotient towards zero where numpy's floors it."""
    import numpy as np

    quotient = np.floor_divide(timestamps, segment_interval_ms)
    return quotient + ((timestamps < 0) & (timestamps % segment_interval_ms != 0))


def segment_name(store_name: str, segment: int, segment_interval_ms: int) -> str:
    """``AbstractSegments.segmentName``: ``<store>.<segment id × interval>``."""
    return f"{store_name}.{segment * segment_interval_ms}"


def is_segment_live(segment: int, stream_time: int, retention_ms: int, segment_interval_ms: int) -> bool:
    """``AbstractSegments.getOrCreateSegmentIfLive``: live while ``segment >= segmentId(streamTime - retention)``."""
    return segment >= segment_id(stream_time - retention_ms, segment_interval_ms)


@dataclass(frozen=True, slots=True)
class StoreLayout:
    """Where one store (or, for segmented stores, the segment holding ``segment_timestamp``) lives."""

    store_name: str
    store_type: StoreType
    task_dir: Path
    db_path: Path
    column_families: tuple[str, ...]
    data_column_family: str
    checkpoint_path: Path
    segment_interval_ms: int | None = None
    segment_id: int | None = None


def store_layout(
    state_dir: Path | str,
    application_id: str,
    task_id: TaskId,
    store_name: str,
    store_type: StoreType,
    *,
    retention_ms: int | None = None,
    segment_interval_ms: int | None = None,
    segment_timestamp: int | None = None,
) -> StoreLayout:
    """The layout of a key-value store, or of the segment of a window/session store that holds ``segment_timestamp``."""
    task_dir = task_directory(state_dir, application_id, task_id)
    families = column_families(store_type)
    data_family = data_column_family(store_type)
    checkpoint = checkpoint_path(task_dir)
    if not store_type.segmented:
        db_path = task_dir / DB_FILE_DIR / store_name
        return StoreLayout(store_name, store_type, task_dir, db_path, families, data_family, checkpoint)
    if segment_interval_ms is None:
        if retention_ms is None:
            raise StateError(f"store {store_name}: a segmented store needs its retention or its segment interval")
        segment_interval_ms = default_segment_interval(retention_ms)
    if segment_timestamp is None:
        raise StateError(f"store {store_name}: a segmented store's path depends on the segment timestamp")
    segment = segment_id(segment_timestamp, segment_interval_ms)
    db_path = task_dir / store_name / segment_name(store_name, segment, segment_interval_ms)
    return StoreLayout(
        store_name, store_type, task_dir, db_path, families, data_family, checkpoint, segment_interval_ms, segment
    )
