"""The columnar windowed aggregate (``spark/columnar/window.py``) against the per-record path: same files, store and
report.

As in ``test_columnar_count.py``: each example stages one input partition (and, for a restored store, the window
store's changelog) and runs :func:`~streamproc.spark.task_runner.run_task` twice over it, over columns and with
``STREAMPROC_PER_RECORD_COUNT`` set; the output and changelog objects must be equal byte for byte, the drops and
the reports equal, the final window stores equal entry by entry.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import struct
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows
from streamproc.engine.serdes import Serde, StringDeserializer, serde_for
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, RestoreRange, TaskWork, run_task
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_type import StoreType
from streamproc.storage import LocalObjectStore
from tests.unit.spark.test_columnar_count import _comparable, _objects, _stage
from tests.unit.spark.test_columnar_rekey import _stage_with_upstream

APP = "columnar-window-app"
SOURCE, SINK = "clicks", "click-sums"
STORE = "sums"
CHANGELOG = f"{APP}-{STORE}-changelog"
SINK_PARTITIONS = 3
_BYTES, _LONG, _STRING = serde_for("ByteArray"), serde_for("Long"), serde_for("String")
_MODULE = "tests.unit.spark.test_columnar_window"
COLUMNAR, PER_RECORD, ONE = "00000000000000c1", "00000000000000e1", "00000000000000a1"

#: (size, advance, grace) of the example being built (hypothesis sets it before each run; Spark is not involved)
WINDOWS = {"size": 10, "advance": 10, "grace": 0}


def _windows() -> TimeWindows:
    w = TimeWindows.of_size_and_grace(WINDOWS["size"], WINDOWS["grace"])
    return w if WINDOWS["advance"] == WINDOWS["size"] else w.advance_by(WINDOWS["advance"])


#: The key serde of the example being built: ``String`` where a test sets it (its keys then read as ``String`` reads
#: them, its values too, unless a topology says otherwise).
KEYS = {"serde": _BYTES}


def _aggregate(
    *, logged: bool = True, aggregator: Any = None, after: str = "select_key", value_serde: Any = None
) -> Topology:
    b = StreamsBuilder()
    sums = (
        b.stream(SOURCE, Consumed.with_(KEYS["serde"], value_serde or KEYS["serde"]))
        .group_by_key()
        .windowed_by(_windows())
        .aggregate(
            lambda: 0, aggregator or (lambda k, v, total: total + len(v) + 1), materialized=_materialized(logged)
        )
    )
    _to_sink(sums.to_stream(), after)
    return b.build()


def _materialized(logged: bool) -> Materialized[Any, Any]:
    materialized = Materialized.as_(STORE).with_key_serde(KEYS["serde"]).with_value_serde(_LONG)
    return materialized if logged else materialized.with_logging_disabled()


def _to_sink(stream: Any, after: str) -> None:
    """The chain after ``toStream``: ``select_key`` to the record key; or ``map`` to a Bytes key and value, then a
    filter; or nothing (a ``Windowed`` key to the sink)."""
    if after == "select_key":
        stream.select_key(lambda w, total: w.key).to(SINK, Produced.with_(KEYS["serde"], _LONG))
    elif after == "map":
        stream.map(lambda w, total: (w.key + b"@%d" % w.window.start, b"%d" % total)).filter(
            lambda k, v: not v.endswith(b"3")
        ).to(SINK, Produced.with_(_BYTES, _BYTES))
    else:
        stream.to(SINK, Produced.with_(_BYTES, _LONG))


def _count(*, logged: bool = True, before: bool = False, after: str = "select_key") -> Topology:
    """The DSL's windowed ``count()``, optionally after a ``filter``/``mapValues`` chain."""
    b = StreamsBuilder()
    stream = b.stream(SOURCE, Consumed.with_(KEYS["serde"], KEYS["serde"]))
    if before:
        stream = stream.filter(lambda k, v: v != b"n").map_values(lambda v: v + b"!")
    counts = stream.group_by_key().windowed_by(_windows()).count(materialized=_materialized(logged))
    _to_sink(counts.to_stream(), after)
    return b.build()


def window_count() -> Topology:
    return _count()


def window_count_unlogged() -> Topology:
    return _count(logged=False)


def window_count_chained() -> Topology:
    """A chain before the count (``filter``, ``mapValues``) and after it (``map``, ``filter``)."""
    return _count(before=True, after="map")


def window_sum() -> Topology:
    return _aggregate()


def window_sum_unlogged() -> Topology:
    return _aggregate(logged=False)


def window_sum_mapped() -> Topology:
    """``map`` to a Bytes key and value after ``toStream``, then a filter: the chain after the aggregate."""
    return _aggregate(after="map")


def window_sum_windowed_key() -> Topology:
    return _aggregate(after="none")


class _Trimmed(StringDeserializer):
    """A deserializer of the user's own: only its ``deserialize`` knows what it reads, so the task runs per record."""

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        text = super().deserialize(topic, data)
        return None if text is None else text.strip()


def window_sum_own_values() -> Topology:
    return _aggregate(value_serde=Serde(_STRING.serializer, _Trimmed()))


def window_sum_failing() -> Topology:
    """The aggregator raises on a value starting with ``!``."""

    def aggregator(key: bytes, value: bytes, total: int) -> int:
        if value.startswith(b"!"):
            raise ValueError(f"bad value {value!r}")
        return total + len(value)

    return _aggregate(aggregator=aggregator)


def window_sum_not_a_long() -> Topology:
    """The aggregator returns a string for a value starting with ``s``: the store's Long serializer rejects it."""
    return _aggregate(aggregator=lambda k, v, total: "x" if v.startswith(b"s") else total + 1)


def window_sum_tombstones() -> Topology:
    """The aggregator returns ``None`` (a tombstone) for a value starting with ``n``: the window starts over."""
    return _aggregate(aggregator=lambda k, v, total: None if v.startswith(b"n") else total + len(v))


#: ``--record-cache`` of the example being run (the record cache's tests set it)
RECORD_CACHE = {"mode": "off"}


def _work(
    root: Path, plan: str, topology: str, inputs: tuple[int, int, int], restore: tuple[int, int] | None
) -> TaskWork:
    start, end, partition_time = inputs
    restores = () if restore is None else (RestoreRange(STORE, CHANGELOG, 0, restore[0], restore[1]),)
    return TaskWork(
        plan_id=plan,
        application_id=APP,
        task_id="0_0",
        subtopology=0,
        topology=f"{_MODULE}:{topology}",
        store_uri=str(root),
        inputs=(InputRange(SOURCE, 0, start, end, partition_time),),
        restores=restores,
        partition_counts={SINK: SINK_PARTITIONS},
        local_dir=str(root.parent),
        record_cache=RECORD_CACHE["mode"],
    )


def _store_entries(root: Path, plan: str, scratch: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every segment's raw entries of the window store in the task's store bundle, by segment directory."""
    target = scratch / f"bundle-{plan}"
    bundle = root / TaskObjects(plan, TaskId.parse("0_0")).stores
    if not bundle.exists():
        return {}
    with tarfile.open(fileobj=io.BytesIO(bundle.read_bytes())) as tar:
        tar.extractall(target, filter="data")
    out = {}
    for current in sorted(target.rglob("CURRENT")):  # each segment is a RocksDB directory
        db = RocksDBKeyValueBytesStore(STORE, current.parent, StoreType.TIMESTAMPED_WINDOW)
        try:
            out[str(current.parent.relative_to(target))] = list(db.range(None, None))
        finally:
            db.close()
    return out


#: the columnar window's line when the windowed count() is folded in numpy, not by the per-update loop
COUNT_FOLD = "folds the windowed count() over columns"


def _both(
    root: Path,
    topology: str,
    inputs: tuple[int, int, int],
    restore: tuple[int, int] | None,
    caplog: Any,
    drop_lines: list[list[str]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs' reports; ``drop_lines`` (if given) gets the columnar run's expired-window warnings, then the
    per-record run's."""
    caplog.clear()
    with (
        caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"),
        caplog.at_level(logging.DEBUG, logger="streamproc.spark.columnar.window"),
    ):
        columnar = run_task(_work(root, COLUMNAR, topology, inputs, restore))
    assert "runs the columnar windowed aggregate" in caplog.text, caplog.text
    assert (COUNT_FOLD in caplog.text) == topology.startswith("window_count"), caplog.text
    split = len(caplog.records)
    os.environ[PER_RECORD_ENV] = "1"
    try:
        per_record = run_task(_work(root, PER_RECORD, topology, inputs, restore))
    finally:
        del os.environ[PER_RECORD_ENV]
    assert (columnar["execution"], per_record["execution"]) == ("columnar", "per record")
    if drop_lines is not None:
        lines = [r.getMessage() for r in caplog.records]
        expired = [i for i, line in enumerate(lines) if "Skipping record for expired window" in line]
        drop_lines.append([lines[i] for i in expired if i < split])
        drop_lines.append([lines[i] for i in expired if i >= split])
    return columnar, per_record


def _drops(root: Path, plan: str) -> bytes:
    path = root / TaskObjects(plan, TaskId.parse("0_0")).prefix / "drops.parquet"
    return path.read_bytes() if path.exists() else b""


def _assert_same(root: Path, scratch: Path, columnar: dict[str, Any], per_record: dict[str, Any]) -> None:
    assert _comparable(columnar) == _comparable(per_record)
    assert _objects(root, COLUMNAR) == _objects(root, PER_RECORD)
    assert _drops(root, COLUMNAR) == _drops(root, PER_RECORD)
    assert _store_entries(root, COLUMNAR, scratch) == _store_entries(root, PER_RECORD, scratch)


_KEYS = st.sampled_from([b"a", b"b", b"user-000017", b"", b"\x00\xff"])
_VALUES = st.sampled_from([b"", b"v", b"vvvv", b"abc3", b"n", b"nope", b"\xe2\x82"])  # the last: one U+FFFD
_ROWS = st.lists(
    st.tuples(_KEYS, _VALUES, st.integers(0, 120), st.sampled_from([(), (("h", b"1"),)])),
    max_size=80,
)
_SHAPES = st.sampled_from([(10, 10, 0), (10, 10, 15), (20, 5, 0), (20, 5, 30), (30, 7, 4), (1, 1, 1000)])


def _window_key(key: bytes, start: int) -> bytes:
    return key + struct.pack(">qi", start, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    shape=_SHAPES,
    stored=st.lists(st.tuples(_KEYS, st.integers(0, 3), st.integers(0, 50), st.integers(-5, 5)), max_size=4),
    topology=st.sampled_from(["window_sum", "window_sum_unlogged", "window_sum_mapped", "window_sum_tombstones"]),
    partition_time=st.sampled_from([-1, 0, 500]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_the_columnar_window_aggregate_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Any],
    shape: tuple[int, int, int],
    stored: list[tuple[bytes, int, int, int]],
    topology: str,
    partition_time: int,
    chunk: int,
) -> None:
    _run_both_and_compare(tmp_path_factory, caplog, rows, shape, stored, topology, partition_time, chunk)


def _run_both_and_compare(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Any],
    shape: tuple[int, int, int],
    stored: list[tuple[bytes, int, int, int]],
    topology: str,
    partition_time: int,
    chunk: int,
) -> list[list[str]]:
    """Stage ``rows`` (and ``stored`` windows starting at or before the input's earliest timestamp as a changelog to
    restore, unless the store is unlogged), run the task both ways in chunks of ``chunk`` records and require the same
    files, drops, store and report; returns both runs' expired-window warnings (columnar, then per record)."""
    from streamproc.spark.columnar import count as columnar_count

    WINDOWS.update(size=shape[0], advance=shape[1], grace=shape[2])
    scratch = tmp_path_factory.mktemp("window")
    root = scratch / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, rows, 5)
    restore = None
    earliest = min((ts for _, _, ts, _ in rows), default=0)
    windows = [(k, n * shape[1], ts, total) for k, n, ts, total in stored if n * shape[1] <= earliest]
    if windows and not topology.endswith("_unlogged"):  # an unlogged store starts empty
        changelog_rows = [
            (_window_key(k, s), total.to_bytes(8, "big", signed=True), ts, ()) for k, s, ts, total in windows
        ]
        restore = _stage(store, CHANGELOG, changelog_rows, 0)
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    drop_lines: list[list[str]] = []
    try:
        columnar, per_record = _both(root, topology, (start, end, partition_time), restore, caplog, drop_lines)
    finally:
        columnar_count.CHUNK_ROWS = before
    _assert_same(root, scratch, columnar, per_record)
    assert columnar["records_processed"] == len(rows)
    return drop_lines


def test_many_records_and_windows_give_the_same_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """More updates than a row group, several chunks, windows expiring and segments destroyed along the way."""
    WINDOWS.update(size=60_000, advance=60_000, grace=0)
    store = LocalObjectStore(tmp_path / "store")
    rows = [(b"%05d" % (i * 7919 % 301), b"v" * (i % 5), i * 1_000 + (i * 37) % 90_000, ()) for i in range(40_000)]
    start, end = _stage(store, SOURCE, rows, 0, segment_records=15_000)
    columnar, per_record = _both(tmp_path / "store", "window_sum", (start, end, -1), None, caplog)
    _assert_same(tmp_path / "store", tmp_path, columnar, per_record)
    assert columnar["dropped"]


@pytest.mark.parametrize(
    ("topology", "value"),
    [("window_sum_failing", b"!boom"), ("window_sum_not_a_long", b"s")],
)
def test_a_failing_aggregate_fails_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, topology: str, value: bytes
) -> None:
    WINDOWS.update(size=10, advance=5, grace=0)
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 1, ()), (b"b", b"vv", 12, ()), (b"a", value, 13, ())], 0)
    errors = []
    for plan, env in ((COLUMNAR, None), (PER_RECORD, "1")):
        if env:
            os.environ[PER_RECORD_ENV] = env
        caplog.clear()
        try:
            with pytest.raises(StreamprocError) as caught, caplog.at_level(logging.ERROR):
                run_task(_work(tmp_path / "store", plan, topology, (start, end, -1), None))
        finally:
            os.environ.pop(PER_RECORD_ENV, None)
        logged = "Failed to process stream task 0_0 due to the following error:" in caplog.text
        error = caught.value
        errors.append((type(error), str(error), type(error.__cause__), str(error.__cause__), logged))
    assert errors[0] == errors[1]
    assert errors[0][-1]  # TaskExecutor's line, over columns too


@pytest.mark.parametrize(
    ("topology", "reason"),
    [
        ("window_sum_windowed_key", "toStream feeds the sink directly"),
        ("window_sum_own_values", "the source's serdes are not Bytes/ByteArray or String"),
    ],
)
def test_an_ineligible_window_task_runs_per_record_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, topology: str, reason: str
) -> None:
    WINDOWS.update(size=10, advance=10, grace=0)
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 1, ())], 0)
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        try:
            run_task(_work(tmp_path / "store", ONE, topology, (start, end, -1), None))
        except StreamprocError:
            pass  # a Windowed key to a Bytes sink fails per record
    assert "runs the columnar windowed aggregate" not in caplog.text
    assert reason in caplog.text


def test_a_restored_store_ahead_of_the_input_runs_per_record(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    WINDOWS.update(size=10, advance=10, grace=0)
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 5, ())], 0)
    restore = _stage(store, CHANGELOG, [(_window_key(b"a", 40), (3).to_bytes(8, "big"), 41, ())], 0)
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        report = run_task(_work(tmp_path / "store", ONE, "window_sum", (start, end, -1), restore))
    assert "stream time 40 is after the input's earliest timestamp 5" in caplog.text
    assert report["execution"] == "per record"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    staged_rows=_ROWS,
    upstream=st.lists(_ROWS, min_size=1, max_size=4),
    shape=_SHAPES,
    chunk=st.sampled_from([1, 5, 256]),
)
def test_a_window_task_over_upstream_input_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    staged_rows: list[Any],
    upstream: list[list[Any]],
    shape: tuple[int, int, int],
    chunk: int,
) -> None:
    """Stage 2 of a re-key: the staged repartition records, then the upstream tasks' output objects, merged."""
    from streamproc.spark.columnar import count as columnar_count

    WINDOWS.update(size=shape[0], advance=shape[1], grace=shape[2])
    scratch = tmp_path_factory.mktemp("window-upstream")
    root = scratch / "store"
    start, end, names = _stage_with_upstream(root, staged_rows, upstream)

    def work(plan: str) -> TaskWork:
        base = _work(root, plan, "window_sum", (start, end, -1), None)
        return dataclasses.replace(base, inputs=(InputRange(SOURCE, 0, start, end, -1, appended=names),))

    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
            columnar = run_task(work(COLUMNAR))
        assert "runs the columnar windowed aggregate" in caplog.text, caplog.text
        os.environ[PER_RECORD_ENV] = "1"
        try:
            per_record = run_task(work(PER_RECORD))
        finally:
            del os.environ[PER_RECORD_ENV]
    finally:
        columnar_count.CHUNK_ROWS = before
    _assert_same(root, scratch, columnar, per_record)
    appended = sum(len(rows) for rows in upstream)
    assert columnar["records_processed"] == len(staged_rows) + appended
    assert columnar["appended"] == ({f"{SOURCE}-0": appended} if appended else {})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    shape=_SHAPES,
    stored=st.lists(st.tuples(_KEYS, st.integers(0, 3), st.integers(0, 50), st.integers(-5, 5)), max_size=4),
    topology=st.sampled_from(["window_count", "window_count_unlogged", "window_count_chained"]),
    partition_time=st.sampled_from([-1, 0, 500]),
    chunk=st.sampled_from([1, 7, 256]),
)
# each rule at least once whatever hypothesis draws: a window's timestamp carried to the next chunk and not lowered
# by a late record, then an expired drop
@example(
    rows=[(b"a", b"v", 5, ()), (b"a", b"v", 3, ()), (b"b", b"v", 40, ()), (b"a", b"v", 2, ()), (b"a", b"v", 41, ())],
    shape=(10, 10, 0), stored=[], topology="window_count", partition_time=-1, chunk=1,
)  # fmt: skip
# a restored window's count and later timestamp, in hopping windows, some records filtered before the count
@example(
    rows=[(b"a", b"n", 12, ()), (b"a", b"v", 12, ()), (b"b", b"v", 11, ()), (b"a", b"v", 14, ())],
    shape=(20, 5, 0), stored=[(b"a", 2, 30, 4), (b"b", 1, 3, -5)], topology="window_count_chained",
    partition_time=0, chunk=7,
)  # fmt: skip
def test_the_columnar_window_count_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Any],
    shape: tuple[int, int, int],
    stored: list[tuple[bytes, int, int, int]],
    topology: str,
    partition_time: int,
    chunk: int,
) -> None:
    """The windowed ``count()`` folded in numpy (``_both`` checks that fold ran): tumbling and hopping windows,
    out-of-order and expired records, a restored store, chains before and after, one to many chunks."""
    columnar_lines, per_record_lines = _run_both_and_compare(
        tmp_path_factory, caplog, rows, shape, stored, topology, partition_time, chunk
    )
    assert columnar_lines == per_record_lines  # the expired-window warnings, word for word and in order


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    shape=_SHAPES,
    stored=st.lists(st.tuples(_KEYS, st.integers(0, 3), st.integers(0, 50), st.integers(-5, 5)), max_size=4),
    topology=st.sampled_from(["window_count", "window_count_unlogged", "window_sum", "window_sum_unlogged"]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_string_keys_and_values_over_columns_equal_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Any],
    shape: tuple[int, int, int],
    stored: list[tuple[bytes, int, int, int]],
    topology: str,
    chunk: int,
) -> None:
    """``String`` serdes, as most applications' windowed counts and sums have them: the keys as ``String`` reads
    them (``\\x00\\xff`` is not UTF-8, a restored window under it is not the input's key's), the sum's aggregator
    given ``str`` keys and values, the windows' keys to a ``String`` sink."""
    KEYS["serde"] = _STRING
    try:
        columnar_lines, per_record_lines = _run_both_and_compare(
            tmp_path_factory, caplog, rows, shape, stored, topology, -1, chunk
        )
    finally:
        KEYS["serde"] = _BYTES
    assert columnar_lines == per_record_lines


def test_many_records_counted_in_hopping_windows_give_the_same_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """More updates than a row group, many chunks, three windows a record, windows expiring and segments destroyed
    along the way, a restored store read once per window."""
    from streamproc.spark.columnar import count as columnar_count

    WINDOWS.update(size=60_000, advance=20_000, grace=5_000)
    store = LocalObjectStore(tmp_path / "store")
    rows = [(b"%05d" % (i * 7919 % 301), b"v", 40_000 + i * 1_000 + (i * 37) % 90_000, ()) for i in range(12_000)]
    start, end = _stage(store, SOURCE, rows, 0, segment_records=5_000)
    # restored windows, some with a timestamp after their first records'
    stored = [
        (_window_key(b"%05d" % k, 40_000), (k * 3).to_bytes(8, "big"), 45_000 + k * 100, ()) for k in range(0, 301, 7)
    ]
    restore = _stage(store, CHANGELOG, stored, 0)
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = 2_500
    drop_lines: list[list[str]] = []
    try:
        columnar, per_record = _both(tmp_path / "store", "window_count", (start, end, -1), restore, caplog, drop_lines)
    finally:
        columnar_count.CHUNK_ROWS = before
    _assert_same(tmp_path / "store", tmp_path, columnar, per_record)
    assert columnar["dropped"]
    assert drop_lines[0] == drop_lines[1]


@pytest.mark.parametrize(
    "stored",
    [((1 << 63) - 1).to_bytes(8, "big"), b"\x00\x01"],
    ids=["a count past Long's range", "a stored value not a Long"],
)
def test_a_failing_window_count_fails_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stored: bytes
) -> None:
    """The store's serializer rejecting a count, or a restored window not holding a ``Long``: the per-record
    error, at the same record."""
    WINDOWS.update(size=10, advance=5, grace=0)
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 11, ()), (b"b", b"vv", 12, ()), (b"a", b"v", 13, ())], 0)
    restore = _stage(store, CHANGELOG, [(_window_key(b"a", 10), stored, 10, ())], 0)
    errors = []
    for plan, env in ((COLUMNAR, None), (PER_RECORD, "1")):
        if env:
            os.environ[PER_RECORD_ENV] = env
        caplog.clear()
        try:
            with pytest.raises(StreamprocError) as caught, caplog.at_level(logging.DEBUG):
                run_task(_work(tmp_path / "store", plan, "window_count", (start, end, -1), restore))
        finally:
            os.environ.pop(PER_RECORD_ENV, None)
        assert (COUNT_FOLD in caplog.text) == (env is None)
        error = caught.value
        errors.append((type(error), str(error), type(error.__cause__), str(error.__cause__)))
    assert errors[0] == errors[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    shape=st.sampled_from([(10, 10, 200_000), (20, 5, 200_000), (30, 7, 250_000)]),
    stored=st.lists(st.tuples(_KEYS, st.integers(0, 3), st.integers(0, 50), st.integers(0, 5)), max_size=4),
    topology=st.sampled_from(["window_count", "window_count_chained", "window_count_unlogged"]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_the_columnar_window_count_under_the_record_cache_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Any],
    shape: tuple[int, int, int],
    stored: list[tuple[bytes, int, int, int]],
    topology: str,
    chunk: int,
) -> None:
    """``--record-cache flush-at-end``: the windowed count() over columns keeps each window's last update and sends it
    at the end through the chain after ``toStream``, as the per-record ``CachingWindowStore`` flushes it (tumbling
    and hopping windows, a restored store, chains before and after, one to many chunks; the grace keeps every
    flushed window live, which the columnar path requires)."""
    RECORD_CACHE["mode"] = "flush-at-end"
    try:
        _run_both_and_compare(tmp_path_factory, caplog, rows, shape, stored, topology, -1, chunk)
    finally:
        RECORD_CACHE["mode"] = "off"
    assert "windowed aggregate, its record cache flushed once at the end" in caplog.text
