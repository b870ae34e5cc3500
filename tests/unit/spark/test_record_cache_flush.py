"""``--record-cache flush-at-end`` (``state/record_cache.py``, ``spark/columnar/cache.py``) on one task.

The claims: per record, the cached count sends one changelog record and one update per key, each the key's last
uncached write, in the order of those last writes; a processor after the count (a filter) sees only the flushed
values; the columnar count under the cache gives the per-record files, store and report byte for byte; a cached store
the emulation does not cover is refused in one line, and ``withCachingDisabled`` sends every update.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc import Stores
from streamproc.dsl import Consumed, Materialized, Produced, SessionWindows, SlidingWindows, StreamsBuilder
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import ConfigError, StreamprocError
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import run_task
from streamproc.state.record_cache import RECORD_CACHE_FLUSH_AT_END, check_cached_stores
from streamproc.storage import LocalObjectStore
from tests.unit.spark.test_columnar_count import (
    _BYTES,
    _LONG,
    CHANGELOG,
    SINK,
    SOURCE,
    Record,
    _comparable,
    _stage,
    _store_entries,
    _work,
)

_MODULE = "tests.unit.spark.test_record_cache_flush"
CACHED, UNCACHED, COLUMNAR = "00000000000000c1", "00000000000000e1", "00000000000000a1"


def _count(materialized: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    table = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).group_by_key().count(materialized=materialized)
    table.to_stream().to(SINK, Produced.with_(_BYTES, _LONG))
    return b


def count_cached() -> Topology:
    return _count(Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))).build()


def count_uncached() -> Topology:
    store = Stores.persistent_timestamped_key_value_store("counts")
    return _count(Materialized.as_(store).with_caching_disabled()).build()


def count_then_filter() -> Topology:
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    table = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).group_by_key().count(materialized=materialized)
    table.to_stream().filter(lambda k, v: v % 2 == 1).to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


def _windowed_count(windows: Any) -> Topology:
    b = StreamsBuilder()
    counts = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).group_by_key().windowed_by(windows).count()
    counts.to_stream().map(lambda k, v: (k.key, v)).to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


def sliding_count() -> Topology:
    """A timestamped window store, cached, written by a processor the emulation does not cover."""
    return _windowed_count(SlidingWindows.of_time_difference_with_no_grace(10))


def session_count() -> Topology:
    return _windowed_count(SessionWindows.of_inactivity_gap_with_no_grace(10))


def table_then_count() -> Topology:
    """A materialized source table (cached in Kafka Streams) feeding nothing the emulation covers."""
    b = StreamsBuilder()
    b.table(SOURCE, Consumed.with_(_BYTES, _BYTES), Materialized.as_("table")).to_stream().to(SINK)
    return b.build()


def _run(root: Path, plan: str, topology: str, inputs: tuple[int, int, int], restore: Any, cache: str) -> Any:
    work = _work(root, plan, topology, inputs, restore)
    return run_task(replace(work, topology=f"{_MODULE}:{topology}", record_cache=cache))


def _rows(root: Path, plan: str, kind: str) -> list[dict[str, Any]]:
    """Every output (``kind="outputs"``) or changelog record the task wrote, in the order it sent them."""
    prefix = root / TaskObjects(plan, TaskId.parse("0_0")).prefix / kind
    rows = [row for path in sorted(prefix.rglob("*.parquet")) for row in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda row: row["sequence"])


def _last_per_key(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model: each key's last row, in the order of those last rows, numbered again from 0."""
    last: dict[bytes, dict[str, Any]] = {}
    for row in rows:
        last.pop(row["key"], None)
        last[row["key"]] = row
    return [{**row, "sequence": i} for i, row in enumerate(last.values())]


_KEYS = st.sampled_from([b"a", b"b", b"user-000017", b"", b"\x00\xff", b"k" * 40])
_HEADERS = st.lists(st.tuples(st.sampled_from(["h", "trace"]), st.none() | st.binary(max_size=4)), max_size=2)
_ROWS = st.lists(st.tuples(_KEYS, st.binary(max_size=6), st.integers(0, 50), _HEADERS.map(tuple)), max_size=80)
_STORED = st.dictionaries(_KEYS, st.tuples(st.integers(0, 2**40), st.integers(0, 60)), max_size=3)


def _staged(root: Path, rows: list[Record], stored: dict[bytes, tuple[int, int]]) -> tuple[int, int, Any]:
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, rows, 5)
    restore = None
    if stored:
        changelog: list[Record] = [(k, c.to_bytes(8, "big", signed=True), ts, ()) for k, (ts, c) in stored.items()]
        restore = _stage(store, CHANGELOG, changelog, 0)
    return start, end, restore


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_ROWS, stored=_STORED, chunk=st.sampled_from([1, 7, 256]))
def test_the_flush_is_each_keys_last_update_in_the_order_of_last_updates_per_record_and_over_columns(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[Record],
    stored: dict[bytes, tuple[int, int]],
    chunk: int,
) -> None:
    root = tmp_path_factory.mktemp("cache") / "store"
    start, end, restore = _staged(root, rows, stored)
    inputs = (start, end, -1)
    os.environ[PER_RECORD_ENV] = "1"
    try:
        uncached = _run(root, UNCACHED, "count_cached", inputs, restore, "off")
        cached = _run(root, CACHED, "count_cached", inputs, restore, RECORD_CACHE_FLUSH_AT_END)
    finally:
        del os.environ[PER_RECORD_ENV]
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        columnar = _run(root, COLUMNAR, "count_cached", inputs, restore, RECORD_CACHE_FLUSH_AT_END)
    finally:
        columnar_count.CHUNK_ROWS = before
    assert (uncached["execution"], cached["execution"], columnar["execution"]) == (
        "per record",
        "per record",
        "columnar",
    )
    for kind in ("outputs", "changelogs"):
        assert _rows(root, CACHED, kind) == _last_per_key(_rows(root, UNCACHED, kind))
    assert _rows(root, COLUMNAR, "outputs") == _rows(root, CACHED, "outputs")
    assert _rows(root, COLUMNAR, "changelogs") == _rows(root, CACHED, "changelogs")
    scratch = root.parent
    assert _store_entries(root, CACHED, scratch) == _store_entries(root, UNCACHED, scratch)
    assert _store_entries(root, COLUMNAR, scratch) == _store_entries(root, CACHED, scratch)
    assert _comparable(columnar) == _comparable(cached)
    assert cached["records_processed"] == len(rows)
    assert sum(cached["outputs"].values()) == len({k for k, *_ in rows})


def test_a_processor_after_the_count_sees_only_the_flushed_values(tmp_path: Path) -> None:
    """The filter keeps odd counts: of the flushed values (the final counts), not of every update."""
    rows: list[Record] = [(k, b"v", ts, ()) for ts, k in enumerate([b"a", b"b", b"a", b"c", b"b", b"a", b"b", b"b"])]
    root = tmp_path / "store"
    start, end, restore = _staged(root, rows, {})
    _run(root, CACHED, "count_then_filter", (start, end, -1), restore, RECORD_CACHE_FLUSH_AT_END)
    sent = [(r["key"], int.from_bytes(r["value"], "big"), r["timestamp"]) for r in _rows(root, CACHED, "outputs")]
    # last updates: c (count 1, ts 3), a (3, ts 5), b (4, ts 7): b's even count is filtered out
    assert sent == [(b"c", 1, 3), (b"a", 3, 5)]


def test_with_caching_disabled_every_update_is_sent(tmp_path: Path) -> None:
    rows: list[Record] = [(b"a", b"v", ts, ()) for ts in range(5)]
    root = tmp_path / "store"
    start, end, restore = _staged(root, rows, {})
    report = _run(root, CACHED, "count_uncached", (start, end, -1), restore, RECORD_CACHE_FLUSH_AT_END)
    assert sum(report["outputs"].values()) == 5


@pytest.mark.parametrize(
    ("topology", "store"),
    [
        (sliding_count, "KSTREAM-AGGREGATE-STATE-STORE-0000000001"),
        (session_count, "KSTREAM-AGGREGATE-STATE-STORE-0000000001"),
        (table_then_count, "table"),
    ],
)
def test_a_cached_store_the_emulation_does_not_cover_is_refused_in_one_line(
    tmp_path: Path, topology: Any, store: str
) -> None:
    with pytest.raises(ConfigError, match=f"store {store} .*--record-cache off") as refused:
        check_cached_stores(topology(), RECORD_CACHE_FLUSH_AT_END)
    assert "\n" not in str(refused.value)
    check_cached_stores(topology(), "off")  # the default sends every update: nothing to refuse
    root = tmp_path / "store"
    start, end, restore = _staged(root, [(b"a", b"v", 1, ())], {})
    with pytest.raises(StreamprocError, match="--record-cache off"):  # the executor refuses too, before a record
        _run(root, CACHED, topology.__name__, (start, end, -1), restore, RECORD_CACHE_FLUSH_AT_END)


def reduce_with_tombstones() -> Topology:
    """A reduce whose reducer deletes the key on a 0 (``ValueAndTimestamp.make(null, ts)``: a tombstone)."""
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    table = (
        b.stream(SOURCE, Consumed.with_(_BYTES, _LONG))
        .group_by_key()
        .reduce(lambda total, v: None if v == 0 else total + v, materialized=materialized.with_value_serde(_LONG))
    )
    table.to_stream().to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


def test_a_tombstone_is_flushed_only_for_a_key_the_store_held_before_stamped_with_its_records_timestamp(
    tmp_path: Path,
) -> None:
    """``CachingKeyValueStore.putAndMaybeForward``: a key deleted in the window is written and sent only if the store
    underneath held it; the flushed tombstone carries the deleting record's timestamp (``TimestampedCacheFlushListener``
    stamps a null new value with the entry's), not the reduce's ``max`` (which the uncached update carries)."""
    long_of = _LONG.serializer.serialize
    rows: list[Record] = [
        (b"new", long_of("t", 5), 10, ()),  # a key the store did not hold: created, then deleted
        (b"old", long_of("t", 7), 11, ()),
        (b"new", long_of("t", 3), 12, ()),
        (b"new", long_of("t", 0), 13, ()),
        (b"old", long_of("t", 0), 14, ()),  # the restored key (stamped 100): deleted
        (b"kept", long_of("t", 1), 15, ()),
    ]
    root = tmp_path / "store"
    start, end, restore = _staged(root, rows, {b"old": (100, 40)})
    _run(root, CACHED, "reduce_with_tombstones", (start, end, -1), restore, RECORD_CACHE_FLUSH_AT_END)
    sent = [(r["key"], r["value"], r["timestamp"]) for r in _rows(root, CACHED, "outputs")]
    assert sent == [(b"old", None, 14), (b"kept", long_of("t", 1), 15)]
    logged = [(r["key"], r["value"], r["timestamp"]) for r in _rows(root, CACHED, "changelogs")]
    assert logged == [(b"old", None, 14), (b"kept", long_of("t", 1), 15)]
