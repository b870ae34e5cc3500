"""RocksDB stores that Kafka Streams 4.2 opens as its own, written through ``rocksdict`` (state.md §6).

``SI/RocksDBStore.openDB`` (4.2.0) opens every store with its own options (it never reads the ``OPTIONS-*`` file):
no compression, universal compaction, 16 MiB write buffers (3 of them), a block-based table with 4 KiB blocks, a
50 MiB LRU block cache and a Bloom filter, ``optimize_filters_for_hits``, writes with the WAL disabled, the default
(bytewise) comparator and no merge operator. What matters for Kafka Streams to open a directory streamproc wrote:

- the **column families** are exactly those Kafka Streams opens for the store kind (``default``, plus
  ``keyValueWithTimestamp`` for timestamped stores and segments): RocksDB refuses to open a DB with a column family
  the caller does not name ("Column families not opened"), so a stray family would fail the task;
- the **comparator** is ``leveldb.BytewiseComparator`` (RocksDB refuses another name) and no CF has a merge operator;
- SST ``format_version`` ≤ 6 (rocksdict 0.3.29 bundles RocksDB 9.8.4, which writes 6; Kafka's RocksDB 10.1.3 reads it);
- the DB is flushed and closed (no ``LOCK`` held, memtables on disk), and rocksdict's own ``rocksdict-config.json``
  is removed so the directory holds only RocksDB's files.

:func:`inspect_rocksdb` reads those properties back from the ``OPTIONS-*`` file RocksDB writes, so tests and the
hand-off can check a directory before Kafka Streams sees it. An existing directory that does not fit its store kind
(another store kind, a 4.3 ``offsets`` family, a custom comparator, data in ``default`` of a timestamped store, which
Kafka Streams would open in "upgrade mode") raises :class:`IncompatibleStore` instead of being silently reused.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompactionStyle,
    DBCompressionType,
    Options,
    Rdict,
    WriteBatch,
    WriteOptions,
)

from streamproc.errors import StateError
from streamproc.state.store_layout import (
    DEFAULT_COLUMN_FAMILY,
    TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME,
    column_families,
    data_column_family,
    segment_name,
)
from streamproc.state.store_type import StoreType
from streamproc.state.stores import KeyValueBytesStore, SegmentedBytesStore

LOG = logging.getLogger(__name__)

#: ``RocksDBStore.WRITE_BUFFER_SIZE``.
WRITE_BUFFER_SIZE = 16 * 1024 * 1024
#: ``RocksDBStore.BLOCK_CACHE_SIZE``.
BLOCK_CACHE_SIZE = 50 * 1024 * 1024
#: ``RocksDBStore.BLOCK_SIZE``.
BLOCK_SIZE = 4096
#: ``RocksDBStore.MAX_WRITE_BUFFERS``.
MAX_WRITE_BUFFERS = 3
#: ``new BloomFilter()``: 10 bits per key, full (not block-based) filter.
BLOOM_FILTER_BITS_PER_KEY = 10
#: RocksDB's default comparator name, the only one Kafka Streams uses.
BYTEWISE_COMPARATOR = "leveldb.BytewiseComparator"
#: The ``merge_operator`` value RocksDB writes for a CF without one.
NO_MERGE_OPERATOR = "nullptr"
#: Highest SST ``format_version`` RocksDB JNI 10.1.3 (Kafka Streams 4.2) reads.
MAX_FORMAT_VERSION = 6
#: The file rocksdict writes into every DB directory (RocksDB ignores it; Kafka Streams never writes it).
ROCKSDICT_CONFIG_FILE = "rocksdict-config.json"
#: RocksDB's property for the estimated key count of a column family (``RocksDBStore.approximateNumEntries``).
ESTIMATE_NUM_KEYS = "rocksdb.estimate-num-keys"
#: Distinct keys a store holds in its pending-writes overlay before writing them to RocksDB in one ``WriteBatch``.
PENDING_WRITES_LIMIT = 20_000
#: The same, once the store has scanned a range: its scans then read through the overlay, whose keys it keeps in
#: order as they arrive (each new key an insertion into a list this long at most).
RANGE_PENDING_WRITES_LIMIT = 4_000

_ABSENT = object()

_OPTIONS_FILE = re.compile(r"^OPTIONS-(\d+)$")
_CF_SECTION = re.compile(r'^\[CFOptions "(.*)"\]$')
_TABLE_SECTION = re.compile(r'^\[TableOptions/BlockBasedTable "(.*)"\]$')


class IncompatibleStore(StateError):
    """An existing store directory is not what Kafka Streams would open for this store kind (state.md §17)."""

    def __init__(self, task: str, store_name: str, path: Path | str, reason: str, kafka_message: str) -> None:
        self.task = task
        self.store_name = store_name
        self.path = str(path)
        self.kafka_message = kafka_message
        super().__init__(
            f"task [{task}] store {store_name} at {self.path}: {reason}; Kafka Streams 4.2 would fail to open it "
            f"({kafka_message}). Delete the directory (the store then restores from its changelog) or point "
            "state.dir/application.id at this application's own state"
        )


def kafka_streams_options(parallelism: int | None = None) -> Options:
    """The options ``RocksDBStore.openDB`` sets (raw bytes keys/values for rocksdict)."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_error_if_exists(False)
    options.increase_parallelism(max(parallelism or os.cpu_count() or 2, 2))
    options.set_write_buffer_size(WRITE_BUFFER_SIZE)
    options.set_max_write_buffer_number(MAX_WRITE_BUFFERS)
    options.set_compression_type(DBCompressionType.none())
    options.set_compaction_style(DBCompactionStyle.universal())
    options.set_optimize_filters_for_hits(True)
    table = BlockBasedOptions()
    table.set_block_cache(Cache(BLOCK_CACHE_SIZE))
    table.set_block_size(BLOCK_SIZE)
    table.set_bloom_filter(BLOOM_FILTER_BITS_PER_KEY, False)
    options.set_block_based_table_factory(table)
    return options


def write_options() -> WriteOptions:
    """``RocksDBStore.wOptions``: ``setDisableWAL(true)``."""
    write = WriteOptions()
    write.disable_wal = True  # type: ignore[method-assign,assignment]  # a property at run time; the stub is wrong
    return write


@dataclass(frozen=True, slots=True)
class RocksDBInfo:
    """What RocksDB recorded about a closed DB directory (its latest ``OPTIONS-*`` file and column families)."""

    column_families: tuple[str, ...]
    comparators: dict[str, str]
    merge_operators: dict[str, str]
    compaction_styles: dict[str, str]
    compressions: dict[str, str]
    format_versions: dict[str, int]
    extra_files: tuple[str, ...]


def list_column_families(path: Path | str) -> list[str]:
    """``RocksDB.listColumnFamilies``: the column families recorded in the DB's MANIFEST."""
    return list(Rdict.list_cf(str(path), Options(raw_mode=True)))


def inspect_rocksdb(path: Path | str) -> RocksDBInfo:
    """Read the column families and per-CF options RocksDB wrote for the DB at ``path``."""
    db_path = Path(path)
    options_files = sorted(
        (int(m.group(1)), entry.name)
        for entry in db_path.iterdir()
        if (m := _OPTIONS_FILE.match(entry.name)) is not None
    )
    if not options_files:
        raise StateError(f"{db_path} holds no RocksDB OPTIONS file; is it a RocksDB directory?")
    comparators: dict[str, str] = {}
    merges: dict[str, str] = {}
    compactions: dict[str, str] = {}
    compressions: dict[str, str] = {}
    formats: dict[str, int] = {}
    section: tuple[str, str] | None = None
    for raw in (db_path / options_files[-1][1]).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("["):
            cf = _CF_SECTION.match(line)
            table = _TABLE_SECTION.match(line)
            section = ("cf", cf.group(1)) if cf else ("table", table.group(1)) if table else None
            continue
        if section is None or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        kind, name = section
        if kind == "cf" and key == "comparator":
            comparators[name] = value
        elif kind == "cf" and key == "merge_operator":
            merges[name] = value
        elif kind == "cf" and key == "compaction_style":
            compactions[name] = value
        elif kind == "cf" and key == "compression":
            compressions[name] = value
        elif kind == "table" and key == "format_version":
            formats[name] = int(value)
    extra = tuple(sorted(e.name for e in db_path.iterdir() if e.name == ROCKSDICT_CONFIG_FILE))
    return RocksDBInfo(
        tuple(list_column_families(db_path)), comparators, merges, compactions, compressions, formats, extra
    )


def check_kafka_streams_compatible(info: RocksDBInfo, store_type: StoreType) -> list[str]:
    """Every reason Kafka Streams 4.2 would refuse (or misread) a DB with ``info`` as a store of ``store_type``."""
    problems: list[str] = []
    expected = set(column_families(store_type))
    extra = [cf for cf in info.column_families if cf not in expected]
    if extra:
        problems.append(f"column families {extra} besides the expected {sorted(expected)}")
    for cf, comparator in info.comparators.items():
        if comparator != BYTEWISE_COMPARATOR:
            problems.append(f"column family {cf} uses comparator {comparator}, not {BYTEWISE_COMPARATOR}")
    for cf, merge in info.merge_operators.items():
        if merge != NO_MERGE_OPERATOR:
            problems.append(f"column family {cf} has merge operator {merge}")
    for cf, version in info.format_versions.items():
        if version > MAX_FORMAT_VERSION:
            problems.append(f"column family {cf} writes SST format_version {version} > {MAX_FORMAT_VERSION}")
    return problems


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class RocksDBKeyValueBytesStore:
    """``RocksDBStore``/``RocksDBTimestampedStore`` (or one segment of a window/session store) at ``path``.

    Data goes to ``default`` for plain stores and to ``keyValueWithTimestamp`` for timestamped ones; ``default`` of a
    timestamped store stays empty (a key there would put Kafka Streams into "upgrade mode").

    Puts and deletes go to an in-memory overlay of pending writes (the last write per key) that every ``get`` reads
    first, so a read sees every earlier write, as with Kafka's write-through store; the overlay goes to RocksDB in one
    ``WriteBatch`` when it holds :data:`PENDING_WRITES_LIMIT` keys, before an entry estimate or a ``write_all``, and
    at ``flush``/``close`` (commit). RocksDB then receives the last value of each key once instead of every
    intermediate one (a count writes a hot key many times per commit): what the store holds when it is flushed, and
    so the directory Kafka Streams opens, is the same, and the changelog, written by the typed store per put, is
    untouched. This is the write path's largest saving per record (one Python-to-RocksDB call per put becomes a dict
    assignment).

    A range scan reads RocksDB and the overlay merged (the overlay's keys in order, :data:`RANGE_PENDING_WRITES_LIMIT`
    of them at most), and a delete of a key RocksDB does not hold is not written. Together they keep a session
    store's merged sessions out of RocksDB: a hot key's session is put and deleted at every record that extends it,
    and each delete written was a tombstone that every later scan of that key stepped over inside RocksDB, so
    scans grew with the key's records in the session gap (a Zipf-hot key's made a session count 3x slower).
    """

    def __init__(self, name: str, path: Path | str, store_type: StoreType, *, task: str = "?") -> None:
        self.name = name
        self.path = Path(path)
        self.store_type = store_type
        self.task = task
        self._write = write_options()
        expected = column_families(store_type)
        if (self.path / "CURRENT").exists():
            self._check_existing(expected)
        self.path.mkdir(parents=True, exist_ok=True)
        options = kafka_streams_options()
        families = {cf: kafka_streams_options() for cf in expected if cf != DEFAULT_COLUMN_FAMILY}
        try:
            self._db: Rdict | None = Rdict(str(self.path), options, column_families=families)
        except Exception as exc:
            raise StateError(
                f"task [{task}] store {name}: cannot open RocksDB at {self.path}: {exc}; another process may hold "
                "it open (a running Kafka Streams instance?)"
            ) from exc
        family = data_column_family(store_type)
        self._data: Rdict = self._db if family == DEFAULT_COLUMN_FAMILY else self._db.get_column_family(family)
        self._handle = None if family == DEFAULT_COLUMN_FAMILY else self._db.get_column_family_handle(family)
        self._closed = False
        self._pending: dict[bytes, bytes | None] = {}
        #: The overlay's keys in order, once a range was scanned (``None`` before: a store that never scans does not
        #: pay for the order).
        self._ordered: list[bytes] | None = None
        self._pending_limit = PENDING_WRITES_LIMIT
        if store_type.timestamped and next(iter(self._db.keys()), None) is not None:
            self._release()
            raise IncompatibleStore(
                task,
                name,
                self.path,
                "the default column family of a timestamped store holds data (a plain store's contents)",
                "it would open in upgrade mode and read those values with timestamp -1",
            )

    def _check_existing(self, expected: tuple[str, ...]) -> None:
        found = list_column_families(self.path)
        extra = [cf for cf in found if cf not in expected]
        if extra:
            kafka = f"Invalid argument: Column families not opened: {', '.join(extra)}"
            raise IncompatibleStore(
                self.task, self.name, self.path, f"it has column families {found}, expected {list(expected)}", kafka
            )
        info = inspect_rocksdb(self.path)
        problems = [p for p in check_kafka_streams_compatible(info, self.store_type) if "column families" not in p]
        if problems:
            raise IncompatibleStore(self.task, self.name, self.path, "; ".join(problems), "RocksDB open fails")

    @property
    def persistent(self) -> bool:
        return True

    def _db_open(self) -> Rdict:
        if self._closed:
            raise StateError(f"task [{self.task}] store {self.name} is closed ({self.path})")
        return self._data

    def get(self, key: bytes) -> bytes | None:
        pending = self._pending.get(key, _ABSENT)
        if pending is not _ABSENT:
            return pending  # type: ignore[return-value]  # bytes, or None for a pending delete
        value: bytes | None = self._db_open().get(key)
        return value

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """One ``multiGet`` of the keys the pending writes do not answer; each key's value in order, as ``get``."""
        pending = self._pending
        if not pending:
            return self._multi_get(list(keys))
        stored = iter(self._multi_get([key for key in keys if key not in pending]))
        return [pending[key] if key in pending else next(stored) for key in keys]

    def _multi_get(self, keys: list[bytes]) -> list[bytes | None]:
        """rocksdict's ``get`` of a list: RocksDB's ``multiGet`` in the data column family."""
        data = self._db_open()
        if not keys:
            return []
        found: list[bytes | None] = data.get(keys)  # type: ignore[arg-type,assignment]  # stub: list invariant, Any | None
        return found

    def put(self, key: bytes, value: bytes | None) -> None:
        if self._closed:
            self._db_open()  # raises: the store is closed
        pending = self._pending
        ordered = self._ordered
        if ordered is not None and key not in pending:
            insort(ordered, key)
        pending[key] = value
        if len(pending) >= self._pending_limit:
            self._write_pending()

    def _write_pending(self) -> None:
        """The overlay's writes to RocksDB in one ``WriteBatch``, but for deletes of keys it does not hold; the
        overlay is then empty."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        if self._ordered is not None:
            self._ordered = []
        deleted = [key for key, value in pending.items() if value is None]
        if deleted:
            for key, stored in zip(deleted, self._multi_get(deleted), strict=True):
                if stored is None:
                    del pending[key]
        self._write_batch(pending.items())

    def write_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """One ``WriteBatch`` (``RocksDBStore.restoreBatch``/``putAll``), after the pending writes."""
        self._write_pending()
        self._write_batch(entries)

    def _write_batch(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        self._db_open()
        assert self._db is not None
        batch = WriteBatch(raw_mode=True)
        handle = self._handle
        if handle is not None:
            batch.set_default_column_family(handle)
        put = batch.put
        delete = batch.delete
        for key, value in entries:
            if value is None:
                delete(key)
            else:
                put(key, value)
        self._db.write(batch, self._write)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        if self._ordered is None:
            if len(self._pending) >= RANGE_PENDING_WRITES_LIMIT:
                self._write_pending()
            self._ordered = sorted(self._pending)
            self._pending_limit = RANGE_PENDING_WRITES_LIMIT
        pending = self._pending
        out: list[tuple[bytes, bytes]] = []
        items: Any = self._db_open().items(from_key=from_key) if from_key is not None else self._db_open().items()
        for key, value in items:
            if to_key is not None and key > to_key:
                break
            out.append((key, value))
        del items
        ordered = self._ordered
        start = 0 if from_key is None else bisect_left(ordered, from_key)
        end = len(ordered) if to_key is None else bisect_right(ordered, to_key)
        if start >= end:
            return iter(out)
        merged = [(key, value) for key, value in out if key not in pending]
        for key in ordered[start:end]:
            written = pending[key]
            if written is not None:
                merged.append((key, written))
        merged.sort(key=itemgetter(0))
        return iter(merged)

    def approximate_num_entries(self) -> int:
        """``rocksdb.estimate-num-keys`` of the data family (plus ``default`` for timestamped stores)."""
        self._write_pending()
        data = self._db_open()
        total = data.property_int_value(ESTIMATE_NUM_KEYS) or 0
        if self._db is not None and data is not self._db:
            total += self._db.property_int_value(ESTIMATE_NUM_KEYS) or 0
        return int(total)

    def flush(self) -> None:
        """Flush every column family's memtable (writes skip the WAL, so this is what makes them durable)."""
        if self._closed or self._db is None:
            return
        self._write_pending()
        self._db.flush()
        if self._data is not self._db:
            self._data.flush()

    def _release(self) -> None:
        if self._db is not None:
            if self._data is not self._db:
                self._data.close()
            self._db.close()
        self._db = None
        self._handle = None
        self._closed = True

    def close(self) -> None:
        """Flush, close, drop rocksdict's config file and fsync the directory: nothing but RocksDB's files remain."""
        if self._closed:
            return
        self.flush()
        self._release()
        (self.path / ROCKSDICT_CONFIG_FILE).unlink(missing_ok=True)
        if os.name != "nt":
            for entry in self.path.iterdir():
                if entry.is_file() and entry.name != "LOCK":
                    _fsync_path(entry)
            _fsync_path(self.path)
            _fsync_path(self.path.parent)
        LOG.debug("task [%s] store %s closed at %s", self.task, self.name, self.path)

    def destroy(self) -> None:
        self._pending = {}
        self._ordered = None
        if not self._closed:
            self._release()
        shutil.rmtree(self.path, ignore_errors=True)


def existing_segment_ids(store_dir: Path, store_name: str, segment_interval_ms: int) -> list[int]:
    """``AbstractSegments.openExisting``: segments named ``<store>.<start>`` under ``<task dir>/<store>``."""
    if not store_dir.is_dir():
        return []
    prefix = store_name + "."
    ids: list[int] = []
    for entry in store_dir.iterdir():
        suffix = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
        if entry.is_dir() and suffix.isdigit():
            start = int(suffix)
            if start % segment_interval_ms == 0:
                ids.append(start // segment_interval_ms)
            else:
                LOG.warning(
                    "Ignoring segment %s: not a multiple of the segment interval %s", entry, segment_interval_ms
                )
    return sorted(ids)


def rocksdb_segmented_store(
    task_dir: Path | str,
    store_name: str,
    store_type: StoreType,
    *,
    retention_ms: int,
    segment_interval_ms: int,
    task: str = "?",
) -> SegmentedBytesStore:
    """A window or session store's segments: ``<task dir>/<store>/<store>.<segment start>``, each a RocksDB."""
    store_dir = Path(task_dir) / store_name

    def open_segment(segment: int) -> KeyValueBytesStore:
        path = store_dir / segment_name(store_name, segment, segment_interval_ms)
        return RocksDBKeyValueBytesStore(store_name, path, store_type, task=task)

    return SegmentedBytesStore(
        store_name,
        retention_ms=retention_ms,
        segment_interval_ms=segment_interval_ms,
        segment_factory=open_segment,
        existing_segments=existing_segment_ids(store_dir, store_name, segment_interval_ms),
        persistent=True,
    )


__all__ = [
    "BYTEWISE_COMPARATOR",
    "DEFAULT_COLUMN_FAMILY",
    "TIMESTAMPED_VALUES_COLUMN_FAMILY_NAME",
    "IncompatibleStore",
    "RocksDBInfo",
    "RocksDBKeyValueBytesStore",
    "check_kafka_streams_compatible",
    "existing_segment_ids",
    "inspect_rocksdb",
    "kafka_streams_options",
    "list_column_families",
    "rocksdb_segmented_store",
]
