"""The columnar count (``spark/columnar/count.py``) against the per-record path: same files, store and report.

Each example stages one input partition (and, for an initial store, the store's changelog) in a local object store
and runs :func:`~streamproc.spark.task_runner.run_task` twice over it: once as it chooses (the columnar count) and
once with ``STREAMPROC_PER_RECORD_COUNT`` set. The output and changelog objects must be equal byte for byte, the
final stores equal entry by entry, and the reports equal but for plan id and seconds. Every ineligible task must
run per record and say why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc import Stores
from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder
from streamproc.engine.records import ConsumerRecord, RawRecord
from streamproc.engine.serdes import Serde, StringDeserializer, serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError
from streamproc.intervals import to_intervals
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, RestoreRange, TaskWork, run_task
from streamproc.storage import LocalObjectStore
from streamproc.storage.manifest import SegmentProof
from streamproc.storage.staging import SegmentLimits, stage_range
from tests.integration.spark.test_process import bundle_counts

APP = "columnar-app"
SOURCE, SINK = "clicks", "click-counts"
CHANGELOG = f"{APP}-counts-changelog"
SINK_PARTITIONS = 3
_BYTES, _LONG, _STRING = serde_for("ByteArray"), serde_for("Long"), serde_for("String")
_MODULE = "tests.unit.spark.test_columnar_count"
#: Plan ids (16 hex digits) of the two runs of an example and of a single run.
COLUMNAR, PER_RECORD, ONE = "00000000000000c0", "00000000000000e0", "00000000000000a0"


def _count(*, logged: bool = True, key_serde: Any = _BYTES, value_serde: Any = _BYTES, sink_value: Any = _LONG) -> Any:
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    if not logged:
        materialized = materialized.with_logging_disabled()
    stream = b.stream(SOURCE, Consumed.with_(key_serde, value_serde))
    table = stream.group_by_key().count(materialized=materialized.with_key_serde(key_serde).with_value_serde(_LONG))
    table.to_stream().to(SINK, Produced.with_(key_serde, sink_value))
    return b


def count_logged() -> Topology:
    return _count().build()


def count_unlogged() -> Topology:
    return _count(logged=False).build()


def count_strings_logged() -> Topology:
    """String keys and values, as most applications read them: the key column is read as ``String`` reads it
    (bytes that are not UTF-8 become Java's replacement characters), the values are not read."""
    return _count(key_serde=_STRING, value_serde=_STRING).build()


def count_strings_unlogged() -> Topology:
    return _count(logged=False, key_serde=_STRING, value_serde=_STRING).build()


class _Shouting(StringDeserializer):
    """A deserializer of the user's own (here a ``String`` one that upper-cases): only its ``deserialize`` knows
    what it reads, so the task runs per record."""

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        text = super().deserialize(topic, data)
        return None if text is None else text.upper()


def count_own_deserializer() -> Topology:
    return _count(key_serde=Serde(_STRING.serializer, _Shouting()), value_serde=_STRING).build()


def count_then_filter() -> Topology:
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    table = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).group_by_key().count(materialized=materialized)
    table.to_stream().filter(lambda k, v: v > 1).to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


def count_with_a_handler() -> tuple[Topology, TaskConfig]:
    from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler

    return count_logged(), TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler())


def _proof(offsets: list[int], start: int, end: int) -> SegmentProof:
    gaps = sorted(set(range(start, end)) - set(offsets))
    return SegmentProof(to_intervals(offsets), {"control": to_intervals(gaps)} if gaps else {})


Record = tuple[bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]


def _stage(
    store: LocalObjectStore, topic: str, rows: list[Record], start: int, *, gap: int = 1, segment_records: int = 40
) -> tuple[int, int]:
    """Stage ``rows`` at offsets ``start, start + gap, ...`` in a few segments; returns the range."""
    offsets = [start + i * gap for i in range(len(rows))]
    end = offsets[-1] + 1 if offsets else start
    records: list[RawRecord] = [
        ConsumerRecord.raw(topic, 0, o, ts, k, v, headers=h) for o, (k, v, ts, h) in zip(offsets, rows, strict=True)
    ]
    stage_range(
        store,
        topic,
        0,
        start,
        end,
        records,
        _proof(offsets, start, end),
        SegmentLimits(max_segment_records=segment_records),
    )
    return start, end


def _work(
    root: Path, plan: str, topology: str, inputs: tuple[int, int, int], restore: tuple[int, int] | None
) -> TaskWork:
    start, end, partition_time = inputs
    restores = () if restore is None else (RestoreRange("counts", CHANGELOG, 0, restore[0], restore[1]),)
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
    )


def _store_entries(root: Path, plan: str, scratch: Path) -> list[tuple[bytes, bytes]]:
    return bundle_counts(
        (root / TaskObjects(plan, TaskId.parse("0_0")).stores).read_bytes(), scratch / f"bundle-{plan}"
    )


def _objects(root: Path, plan: str) -> dict[str, bytes]:
    prefix = root / TaskObjects(plan, TaskId.parse("0_0")).prefix
    return {
        str(p.relative_to(prefix)): p.read_bytes()
        for p in sorted(prefix.rglob("*.parquet"))
        if p.parent.name in ("outputs", "changelogs")
    }


def _drops(root: Path, plan: str) -> bytes | None:
    """The task's drops file (``null_key_or_value`` drops of mapped nulls), ``None`` when it wrote none."""
    path = root / TaskObjects(plan, TaskId.parse("0_0")).drops
    return path.read_bytes() if path.exists() else None


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what differs by run: plan id (also in the object names), seconds, which way the task ran,
    and the store bundle's size (RocksDB's files differ between any two runs: ids, its LOG; the stores are compared
    entry by entry)."""
    plan = report["plan_id"]
    objects = {name.replace(plan, "PLAN"): size for name, size in report["objects"].items()}
    bundle = objects.pop("process/PLAN/tasks/0_0/stores.tar", 0)  # a task without a persistent store has none
    differ = ("plan_id", "seconds", "objects", "bytes_written", "execution")
    fixed = {k: v for k, v in report.items() if k not in differ}
    return fixed | {"objects": objects, "bytes_written": report["bytes_written"] - bundle}


@pytest.fixture
def per_record(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(PER_RECORD_ENV, "1")
    yield


def _both(
    root: Path, topology: str, inputs: tuple[int, int, int], restore: tuple[int, int] | None, caplog: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the task columnar (asserting it was) and per record; returns both reports."""
    import os

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="streamproc.spark.task_runner"):
        columnar = run_task(_work(root, COLUMNAR, topology, inputs, restore))
    assert "(spark/columnar/count.py)" in caplog.text
    os.environ[PER_RECORD_ENV] = "1"
    try:
        per_record = run_task(_work(root, PER_RECORD, topology, inputs, restore))
    finally:
        del os.environ[PER_RECORD_ENV]
    assert (columnar["execution"], per_record["execution"]) == ("columnar", "per record")
    return columnar, per_record


def _assert_same(root: Path, scratch: Path, columnar: dict[str, Any], per_record: dict[str, Any]) -> None:
    assert _comparable(columnar) == _comparable(per_record)
    assert _objects(root, COLUMNAR) == _objects(root, PER_RECORD)
    assert _store_entries(root, COLUMNAR, scratch) == _store_entries(root, PER_RECORD, scratch)


#: Keys a ``String`` source reads as they are, and some it does not: ``\xff`` and ``\xfe`` both read as one U+FFFD
#: (one key, as ``\xef\xbf\xbd`` is), ``\xed\xa0\x80`` (an encoded surrogate) as one too, as Java reads it.
_KEYS = st.sampled_from(
    [
        b"a",
        b"b",
        b"user-000017",
        b"",
        b"\x00\xff",
        b"k" * 40,
        b"\xff",
        b"\xfe",
        b"\xef\xbf\xbd",
        b"\xed\xa0\x80",
        "é".encode(),
    ]
)
_HEADERS = st.lists(st.tuples(st.sampled_from(["h", "trace", "\u00e9"]), st.none() | st.binary(max_size=4)), max_size=2)
_ROWS = st.lists(
    st.tuples(_KEYS, st.binary(max_size=6), st.integers(0, 50), _HEADERS.map(tuple)),
    max_size=120,
)
_STORED = st.dictionaries(_KEYS, st.tuples(st.integers(0, 2**40), st.integers(-(2**62), 60)), max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    stored=_STORED,
    partition_time=st.sampled_from([-1, 0, 25, 10_000]),
    chunk=st.sampled_from([1, 7, 256]),
    gap=st.sampled_from([1, 3]),
    logged=st.booleans(),
    strings=st.booleans(),
)
def test_the_columnar_count_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Record],
    stored: dict[bytes, tuple[int, int]],
    partition_time: int,
    chunk: int,
    gap: int,
    logged: bool,
    strings: bool,
) -> None:
    scratch = tmp_path_factory.mktemp("columnar")
    root = scratch / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, [(k, v, ts, tuple(h)) for k, v, ts, h in rows], 5, gap=gap)
    restore = None
    if stored and logged:  # an unlogged store starts empty
        changelog_rows: list[Record] = [
            (k, count.to_bytes(8, "big", signed=True), ts, ()) for k, (ts, count) in stored.items()
        ]
        restore = _stage(store, CHANGELOG, changelog_rows, 0)
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        topology = f"count_{'strings_' if strings else ''}{'logged' if logged else 'unlogged'}"
        columnar, per_record = _both(root, topology, (start, end, partition_time), restore, caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
    _assert_same(root, scratch, columnar, per_record)
    assert columnar["records_processed"] == len(rows)


def test_row_groups_and_many_keys_give_the_same_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """More records than a row group (16 Ki) per output file, several chunks, many distinct keys."""
    store = LocalObjectStore(tmp_path / "store")
    rows: list[Record] = [(b"user-%05d" % (i * 7919 % 3001), b"v", (i * 37) % 1000, ()) for i in range(60_000)]
    start, end = _stage(store, SOURCE, rows, 0, segment_records=25_000)
    columnar, per_record = _both(tmp_path / "store", "count_logged", (start, end, -1), None, caplog)
    _assert_same(tmp_path / "store", tmp_path, columnar, per_record)
    groups = pq.ParquetFile(tmp_path / "store" / TaskObjects(COLUMNAR, TaskId.parse("0_0")).changelog(CHANGELOG, 0))
    assert groups.metadata.num_row_groups == 4


@pytest.mark.parametrize(
    ("topology", "rows", "reason"),
    [
        ("count_logged", [(b"a", None, 1, ())], "may hold a null value"),
        ("count_logged", [(None, b"v", 1, ())], "may hold a null key"),
        ("count_logged", [(b"a", b"v", -1, ())], "may hold a negative timestamp"),
        ("count_own_deserializer", [(b"a", b"v", 1, ())], "the source's serdes are not Bytes/ByteArray or String"),
        ("count_then_filter", [(b"a", b"v", 1, ())], "processor nodes, not the 4"),
        ("count_with_a_handler", [(b"a", b"v", 1, ())], "a processing exception handler is configured"),
    ],
)
def test_an_ineligible_task_runs_per_record_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, topology: str, rows: list[Record], reason: str
) -> None:
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [*rows, (b"b", b"w", 2, ())], 0)
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        try:
            run_task(_work(tmp_path / "store", ONE, topology, (start, end, -1), None))
        except StreamprocError as exc:  # a negative timestamp fails the task (FailOnInvalidTimestamp), per record
            assert "timestamp" in str(exc)
    assert "(spark/columnar/count.py)" not in caplog.text
    assert "runs per record, not the columnar count: " in caplog.text and reason in caplog.text


#: A task's work from its plan label, topology name, input range and changelog range to restore (``_work``'s shape).
MakeWork = Callable[[Path, str, str, tuple[int, int, int], Any], TaskWork]


def _outcome(
    root: Path,
    plan: str,
    inputs: tuple[int, int, int],
    restore: tuple[int, int] | None,
    *,
    per_record: bool,
    topology: str = "count_logged",
    work: MakeWork | None = None,
) -> Any:
    """One run of ``topology``: its report, or the error it failed with."""
    import os

    if per_record:
        os.environ[PER_RECORD_ENV] = "1"
    try:
        outcome: Any = run_task((work or _work)(root, plan, topology, inputs, restore))
    except StreamprocError as exc:
        outcome = exc
    finally:
        os.environ.pop(PER_RECORD_ENV, None)
    return outcome


def _assert_same_outcome(
    root: Path,
    scratch: Path,
    inputs: tuple[int, int, int],
    restore: tuple[int, int] | None,
    caplog: Any,
    *,
    topology: str = "count_logged",
    work: MakeWork | None = None,
    ran: str = "(spark/columnar/count.py)",
) -> Any:
    """Run columnar (asserting it was: ``ran`` in the task's log line) and per record: the same error (type,
    message, cause) and nothing published, or the same report, objects and store. Returns the columnar outcome."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="streamproc.spark.task_runner"):
        columnar = _outcome(root, COLUMNAR, inputs, restore, per_record=False, topology=topology, work=work)
    assert ran in caplog.text, caplog.text
    per_record = _outcome(root, PER_RECORD, inputs, restore, per_record=True, topology=topology, work=work)
    if isinstance(per_record, Exception):
        assert type(columnar) is type(per_record), columnar
        assert str(columnar) == str(per_record)
        assert type(columnar.__cause__) is type(per_record.__cause__)
        assert str(columnar.__cause__) == str(per_record.__cause__)
        for plan in (COLUMNAR, PER_RECORD):  # a failed task publishes nothing: no report, no outputs
            assert not (root / TaskObjects(plan, TaskId.parse("0_0")).report).exists()
            assert _objects(root, plan) == {}
        return columnar
    assert isinstance(columnar, dict), columnar
    assert (columnar["execution"], per_record["execution"]) == ("columnar", "per record")
    _assert_same(root, scratch, columnar, per_record)
    assert _drops(root, COLUMNAR) == _drops(root, PER_RECORD)
    return columnar


#: Changelog values that restore as stored values of 8, 10 and 17 bytes: not ``ts ‖ Long``.
_NOT_A_LONG = [b"", b"\x01\x02", b"\x00" * 9]


@pytest.mark.parametrize("chunk", [1, 2, 256])
@pytest.mark.parametrize("bad", _NOT_A_LONG, ids=["8 bytes", "10 bytes", "17 bytes"])
def test_a_stored_value_that_is_not_a_count_fails_the_task_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, chunk: int, bad: bytes
) -> None:
    """The per-record count reads the key's stored value when a record brings it (``get_for_update``): the Long
    deserializer's size error, through the ``LogAndFail`` handler, ends the task at the first such record; the columnar
    count looks the key up when it first sees it and ends the same way. ``y``'s bad value is first in the store, but
    ``z``'s first record comes first."""
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    rows: list[Record] = [(b"a", b"v", 1, ()), (b"b", b"v", 2, ()), (b"z", b"v", 3, ()), (b"y", b"v", 4, ())]
    start, end = _stage(store, SOURCE, [*rows, (b"z", b"v", 5, ())], 0)
    restore = _stage(
        store, CHANGELOG, [(b"a", (3).to_bytes(8, "big"), 1, ()), (b"y", bad, 1, ()), (b"z", bad, 1, ())], 0
    )
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        failure = _assert_same_outcome(root, tmp_path, (start, end, -1), restore, caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
    assert "Exception caught in process. taskId=0_0, processor=KSTREAM-AGGREGATE-" in str(failure)
    assert "offset=2" in str(failure)
    assert "Size of data received by LongDeserializer is not 8" in str(failure.__cause__)


def test_a_stored_value_that_is_not_a_count_is_not_read_unless_the_input_brings_its_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither path reads a key the input does not bring: both runs succeed, with the same files and store (the bad
    value kept as it was)."""
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 1, ()), (b"b", b"v", 2, ())], 0)
    restore = _stage(store, CHANGELOG, [(b"a", (3).to_bytes(8, "big"), 1, ()), (b"z", b"\x01\x02", 1, ())], 0)
    columnar, per_record = _both(tmp_path / "store", "count_logged", (start, end, -1), restore, caplog)
    _assert_same(tmp_path / "store", tmp_path, columnar, per_record)
    assert columnar["records_processed"] == 2
    assert (b"z", (1).to_bytes(8, "big") + b"\x01\x02") in _store_entries(tmp_path / "store", COLUMNAR, tmp_path)


_STORED_OR_NOT_A_LONG = st.dictionaries(
    _KEYS, st.binary(min_size=8, max_size=8) | st.sampled_from(_NOT_A_LONG), max_size=4
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_ROWS, stored=_STORED_OR_NOT_A_LONG, chunk=st.sampled_from([1, 7, 256]), strings=st.booleans())
def test_stored_values_that_may_not_be_counts_end_both_paths_the_same_way(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Record],
    stored: dict[bytes, bytes],
    chunk: int,
    strings: bool,
) -> None:
    """Whatever the store holds for the keys the input brings or not: the same error and nothing published, or the
    same files, store and report; with ``String`` keys too (the store then read at the key as ``String`` reads it)."""
    scratch = tmp_path_factory.mktemp("stored")
    root = scratch / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, [(k, v, ts, tuple(h)) for k, v, ts, h in rows], 5)
    restore = _stage(store, CHANGELOG, [(k, v, 1, ()) for k, v in stored.items()], 0) if stored else None
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        topology = "count_strings_logged" if strings else "count_logged"
        _assert_same_outcome(root, scratch, (start, end, -1), restore, caplog, topology=topology)
    finally:
        columnar_count.CHUNK_ROWS = before


def test_the_environment_variable_forces_the_per_record_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, per_record: None
) -> None:
    store = LocalObjectStore(tmp_path / "store")
    start, end = _stage(store, SOURCE, [(b"a", b"v", 1, ())], 0)
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        run_task(_work(tmp_path / "store", ONE, "count_logged", (start, end, -1), None))
    assert f"{PER_RECORD_ENV} is set" in caplog.text
