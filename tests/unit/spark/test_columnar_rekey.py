"""Key-changing steps (``selectKey``/``map``) in the columnar chain, and a task's upstream (appended) input.

(a) Random chains with ``select_key``/``map`` steps (keys that are bytes, null, a ``bytearray``, an ``int``, a
``str`` the sink's serializer rejects; a mapper returning null or a triple) to a sink and to a repartition topic's
sink run through :func:`~streamproc.spark.task_runner.run_task` columnar and per record: the same files byte for
byte, report, and calls of each user function; or the same error.

(b) A stage-2 task (a count, a chain to a sink) over staged records and the output objects of several upstream tasks
with interleaved, out-of-order, tied timestamps: the same files, store and report both ways. And the merge itself
(``task_input.task_batches``, and ``task_runner.upstream_records`` built from it) against the greedy merge
record by record (``task_runner.greedy_upstream_records``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc.dsl import Consumed, Grouped, Materialized, Produced, Repartitioned, StreamsBuilder
from streamproc.dsl.kstream import KStream
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.task_input import staged_range, task_batches
from streamproc.spark.task_output import _WRITE_OPTIONS, OUTPUT_SCHEMA
from streamproc.spark.task_runner import InputRange, TaskWork, greedy_upstream_records, run_task, upstream_records
from streamproc.storage import LocalObjectStore
from tests.unit.spark.test_columnar_count import (
    _BYTES,
    _HEADERS,
    _KEYS,
    _LONG,
    _ROWS,
    APP,
    COLUMNAR,
    ONE,
    PER_RECORD,
    SINK,
    SINK_PARTITIONS,
    SOURCE,
    Record,
    _comparable,
    _objects,
    _stage,
    _store_entries,
    _work,
)

_MODULE = "tests.unit.spark.test_columnar_rekey"
REPARTITION = f"{APP}-rekeyed-repartition"
GROUPED = f"{APP}-grouped-repartition"

CALLS: Counter[str] = Counter()


def _counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        CALLS[name] += 1
        return function(*args)

    return call


#: (operator, name, function): ``select_key`` mappers return the key, ``map`` mappers the pair.
STEPS: list[tuple[str, str, Callable[..., Any]]] = [
    ("select_key", "value head", lambda k, v: None if v is None else v[:2]),
    ("select_key", "same key", lambda k, v: k),
    ("select_key", "null key", lambda k, v: None),
    ("select_key", "null every other", lambda k, v: None if v is None or len(v) % 2 else k),
    ("select_key", "bytearray", lambda k, v: bytearray(k or b"")),
    ("select_key", "int", lambda k, v: 0 if v is None else len(v)),  # bytes(3) == b"\0\0\0", as the serializer does
    ("map", "swap", lambda k, v: (v, k)),
    ("map", "list pair", lambda k, v: [k, v]),
    ("map", "value to key", lambda k, v: (None if v is None else bytes(v[:1]), v)),
    ("filter", "keep even", lambda k, v: v is not None and len(v) % 2 == 0),
    ("map_values", "reverse", lambda k, v: None if v is None else bytes(v[::-1])),
]

#: Steps that fail some records per record too.
FAILING: list[tuple[str, str, Callable[..., Any]]] = [
    ("select_key", "text key", lambda k, v: "x" if v and v[:1] > b"\x80" else k),
    ("map", "null pair", lambda k, v: None if v and v[:1] == b"\x00" else (k, v)),
    ("map", "triple", lambda k, v: (k, v, v) if v and v[:1] == b"\x01" else (k, v)),
    ("select_key", "raises", lambda k, v: 1 // 0 if v and v[:1] == b"\x02" else k),
]

CHAIN: list[tuple[str, str, Callable[..., Any]]] = []


def _chained(b: StreamsBuilder) -> KStream[Any, Any]:
    stream: KStream[Any, Any] = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES))
    for operator, name, function in CHAIN:
        counted = _counted(name, function)
        if operator == "select_key":
            stream = stream.select_key(counted)
        elif operator == "map":
            stream = stream.map(counted)
        elif operator == "filter":
            stream = stream.filter(counted)
        else:
            stream = stream.map_values(counted, with_key=True)
    return stream


def rekey_to_sink() -> Topology:
    b = StreamsBuilder()
    _chained(b).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def rekey_to_repartition() -> Topology:
    """Stage 1 of the bench's window workload: re-keyed into a repartition topic (then counted in stage 2)."""
    b = StreamsBuilder()
    rekeyed = _chained(b).repartition(Repartitioned.with_(_BYTES, _BYTES).with_name("rekeyed"))
    rekeyed.to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def _rekey_work(root: Path, plan: str, topology: str, inputs: tuple[int, int, int]) -> TaskWork:
    work = _work(root, plan, "count_logged", inputs, None)
    return dataclasses.replace(
        work,
        topology=f"{_MODULE}:{topology}",
        partition_counts={SINK: SINK_PARTITIONS, REPARTITION: SINK_PARTITIONS, GROUPED: SINK_PARTITIONS},
    )


def _run(work: TaskWork, *, per_record: bool) -> tuple[Any, dict[str, int]]:
    CALLS.clear()
    if per_record:
        os.environ[PER_RECORD_ENV] = "1"
    try:
        outcome: Any = run_task(work)
    except StreamprocError as exc:
        outcome = exc
    finally:
        os.environ.pop(PER_RECORD_ENV, None)
    return outcome, dict(CALLS)


def _both(
    root: Path, make: Callable[[str], TaskWork], caplog: pytest.LogCaptureFixture, *, scratch: Path | None = None
) -> tuple[Any, Any]:
    """Run columnar (asserting it was) and per record: the same outcome (files, report, calls; or error)."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        columnar, columnar_calls = _run(make(COLUMNAR), per_record=False)
    assert "(spark/columnar/count.py)" in caplog.text, caplog.text
    per_record, per_record_calls = _run(make(PER_RECORD), per_record=True)
    if isinstance(per_record, Exception):
        assert all(columnar_calls.get(name, 0) >= calls for name, calls in per_record_calls.items())
        assert type(columnar) is type(per_record), columnar
        assert str(columnar) == str(per_record)
        assert type(columnar.__cause__) is type(per_record.__cause__)
        assert str(columnar.__cause__) == str(per_record.__cause__)
        return columnar, per_record
    assert isinstance(columnar, dict), columnar
    assert (columnar["execution"], per_record["execution"]) == ("columnar", "per record")
    assert columnar_calls == per_record_calls
    assert _comparable(columnar) == _comparable(per_record)
    assert _objects(root, COLUMNAR) == _objects(root, PER_RECORD)
    if scratch is not None:
        assert _store_entries(root, COLUMNAR, scratch) == _store_entries(root, PER_RECORD, scratch)
    return columnar, per_record


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    chain=st.lists(st.sampled_from(STEPS), max_size=3).flatmap(
        lambda head: st.tuples(st.just(head), st.sampled_from(STEPS[:9] + FAILING), st.lists(st.sampled_from(STEPS)))
    ),
    topology=st.sampled_from(["rekey_to_sink", "rekey_to_repartition"]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_a_key_changing_chain_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Record],
    chain: tuple[list[Any], Any, list[Any]],
    topology: str,
    chunk: int,
) -> None:
    scratch = tmp_path_factory.mktemp("rekey")
    root = scratch / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, [(k, v, ts, tuple(h)) for k, v, ts, h in rows], 3)
    head, rekey, tail = chain
    CHAIN[:] = [*head, rekey, *tail[:2]]
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        columnar, _ = _both(root, lambda plan: _rekey_work(root, plan, topology, (start, end, -1)), caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
    if isinstance(columnar, dict):
        assert columnar["records_processed"] == len(rows)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (FAILING[0], "string argument without an encoding"),  # bytes("x"): the serializer's TypeError
        (FAILING[1], "The provided KeyValueMapper returned null which is not allowed."),
        (FAILING[2], "too many values to unpack"),
        (FAILING[3], "by zero"),
    ],
    ids=["a key the serializer rejects", "a null pair", "not a pair", "raises"],
)
def test_a_failing_key_change_fails_the_task_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, step: Any, message: str
) -> None:
    root = tmp_path / "store"
    rows: list[Record] = [(b"a", b"v", 1, ()), (b"b", b"\xff\x00\x01\x02", 2, ()), (b"c", b"\x00\x01\x02", 3, ())]
    rows += [(b"d", b"\x01\x02", 4, ()), (b"e", b"\x02", 5, ())]
    start, end = _stage(LocalObjectStore(root), SOURCE, rows, 0)
    CHAIN[:] = [step]
    columnar, _ = _both(root, lambda plan: _rekey_work(root, plan, "rekey_to_repartition", (start, end, -1)), caplog)
    assert isinstance(columnar, StreamprocError)
    assert message in str(columnar.__cause__)
    # the repartition's null-key filter is the sink's parent: a serializer error is its
    expected = "rekeyed-repartition-filter" if step is FAILING[0] else "KSTREAM-"
    assert f"processor={expected}" in str(columnar) and "offset=" in str(columnar)


def group_by_count() -> Topology:
    """``groupBy(selector).count()``: its first sub-topology is the selector into the grouping's repartition sink."""
    b = StreamsBuilder()
    grouped = _chained(b).group_by(
        lambda k, v: None if v is None else v[:1], Grouped.with_(_BYTES, _BYTES).with_name("grouped")
    )
    grouped.count(materialized=Materialized.with_(_BYTES, _LONG)).to_stream().to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


@pytest.mark.parametrize(
    "chain", [[], [STEPS[9]], [STEPS[10]], [STEPS[6]]], ids=["alone", "filter", "map_values", "map"]
)
def test_group_by_runs_its_first_stage_over_columns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, chain: list[Any]
) -> None:
    root = tmp_path / "store"
    rows: list[Record] = [(b"k%d" % (i % 5), bytes([i % 7]) * (i % 4), i % 9, ()) for i in range(60)]
    start, end = _stage(LocalObjectStore(root), SOURCE, rows, 0)
    CHAIN[:] = chain
    columnar, _ = _both(root, lambda plan: _rekey_work(root, plan, "group_by_count", (start, end, -1)), caplog)
    assert isinstance(columnar, dict) and columnar["records_processed"] == len(rows)
    assert any(GROUPED in name for name in columnar["outputs"])


def rekey_then_peek() -> Topology:
    b = StreamsBuilder()
    _chained(b).peek(lambda k, v: None).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def test_a_key_change_before_anything_but_a_sink_runs_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, [(b"a", b"v", 1, ())], 0)
    CHAIN[:] = [STEPS[0]]
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        report, _ = _run(_rekey_work(root, ONE, "rekey_then_peek", (start, end, -1)), per_record=False)
    assert report["execution"] == "per record"
    assert "KSTREAM-KEY-SELECT-0000000001 changes the key and KSTREAM-PEEK-0000000002 is not a sink" in caplog.text


# ------------------------------------------------------------------------------------------- upstream input


def _upstream_object(store: LocalObjectStore, name: str, rows: list[Record]) -> str:
    """An upstream task's output object for the input partition, as ``TaskOutputCollector`` writes one."""
    table = pa.table(
        {
            "sequence": pa.array(range(len(rows)), pa.int64()),
            "topic": pa.array([SOURCE] * len(rows), pa.string()),
            "partition": pa.array([0] * len(rows), pa.int32()),
            "timestamp": pa.array([r[2] for r in rows], pa.int64()),
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "headers": pa.array([[{"key": k, "value": v} for k, v in r[3]] for r in rows], OUTPUT_SCHEMA[6].type),
            "processor_node_id": pa.array(["KSTREAM-SINK-0000000003"] * len(rows), pa.string()),
        },
        schema=OUTPUT_SCHEMA,
    )
    path = store.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **_WRITE_OPTIONS)
    return name


_UPSTREAM_ROWS = st.lists(
    st.tuples(_KEYS, st.binary(max_size=4), st.integers(0, 12), _HEADERS.map(tuple)),
    max_size=40,
)


def _stage_with_upstream(
    root: Path, staged_rows: list[Record], upstream: list[list[Record]]
) -> tuple[int, int, tuple[str, ...]]:
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, staged_rows, 2)
    names = tuple(
        _upstream_object(store, f"process/upstream/tasks/0_{i}/outputs/{SOURCE}+0.parquet", rows)
        for i, rows in enumerate(upstream)
    )
    return start, end, names


def _stage2_work(root: Path, plan: str, topology: str, start: int, end: int, names: tuple[str, ...]) -> TaskWork:
    work = _work(root, plan, topology, (start, end, -1), None)
    return dataclasses.replace(work, inputs=(InputRange(SOURCE, 0, start, end, -1, appended=names),))


def chain_to_sink() -> Topology:
    b = StreamsBuilder()
    b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).filter(lambda k, v: len(v) != 1).to(
        SINK, Produced.with_(_BYTES, _BYTES)
    )
    return b.build()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    staged_rows=_UPSTREAM_ROWS,
    upstream=st.lists(_UPSTREAM_ROWS, min_size=1, max_size=4),
    topology=st.sampled_from(["count_logged", "chain_to_sink"]),
    chunk=st.sampled_from([1, 5, 256]),
)
def test_a_stage_two_task_over_upstream_input_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    staged_rows: list[Record],
    upstream: list[list[Record]],
    topology: str,
    chunk: int,
) -> None:
    scratch = tmp_path_factory.mktemp("upstream")
    root = scratch / "store"
    start, end, names = _stage_with_upstream(root, staged_rows, upstream)
    module = "tests.unit.spark.test_columnar_count" if topology == "count_logged" else _MODULE

    def make(plan: str) -> TaskWork:
        work = _stage2_work(root, plan, topology, start, end, names)
        return dataclasses.replace(work, topology=f"{module}:{topology}")

    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        columnar, _ = _both(root, make, caplog, scratch=scratch if topology == "count_logged" else None)
    finally:
        columnar_count.CHUNK_ROWS = before
    appended = sum(len(rows) for rows in upstream)
    assert columnar["records_processed"] == len(staged_rows) + appended
    assert columnar["appended"] == ({f"{SOURCE}-0": appended} if appended else {})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    upstream=st.lists(_UPSTREAM_ROWS, min_size=1, max_size=5),
    batch_size=st.sampled_from([1, 2, 3, 1000]),
)
def test_task_batches_merge_upstream_objects_as_upstream_records_does(
    tmp_path_factory: pytest.TempPathFactory, upstream: list[list[Record]], batch_size: int
) -> None:
    root = tmp_path_factory.mktemp("merge") / "store"
    start, end, names = _stage_with_upstream(root, [(b"s", b"v", 1, ())], upstream)
    store = LocalObjectStore(root)
    expected_counts: dict[str, int] = {}
    expected = [
        (r.offset, r.timestamp, r.key, r.value, list(r.headers))
        for r in greedy_upstream_records(store, InputRange(SOURCE, 0, start, end, -1, appended=names), expected_counts)
    ]
    counts: dict[str, int] = {}
    got = []
    staged = staged_range(store, SOURCE, 0, start, end, task="0_0")
    for batch in task_batches(store, staged, names, task="0_0", batch_size=batch_size, counts=counts):
        assert batch.num_rows <= batch_size
        for row in batch.to_pylist():
            got.append((row["offset"], row["timestamp"], row["key"], row["value"], row["headers"]))
    assert got[0][0] == start and len(got) == 1 + len(expected)
    assert [(o, ts, k, v, [(h["key"], h["value"]) for h in hs]) for o, ts, k, v, hs in got[1:]] == expected
    assert counts == expected_counts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upstream=st.lists(_UPSTREAM_ROWS, min_size=0, max_size=5))
def test_upstream_records_are_the_greedy_merges_records(
    tmp_path_factory: pytest.TempPathFactory, upstream: list[list[Record]]
) -> None:
    """The per-record path's upstream records, built a batch at a time over ``merged_upstream``, are the greedy
    merge's: the same ``ConsumerRecord`` (offsets, timestamps, bytes, headers, sizes) in the same order, the same
    counts."""
    root = tmp_path_factory.mktemp("records") / "store"
    start, end, names = _stage_with_upstream(root, [(b"s", b"v", 1, ())], upstream)
    store = LocalObjectStore(root)
    r = InputRange(SOURCE, 0, start, end, -1, appended=names)
    expected_counts: dict[str, int] = {}
    expected = list(greedy_upstream_records(store, r, expected_counts))
    counts: dict[str, int] = {}
    assert list(upstream_records(store, r, counts)) == expected
    assert counts == expected_counts


def test_upstream_input_with_a_null_key_runs_per_record(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "store"
    start, end, names = _stage_with_upstream(
        root, [(b"a", b"v", 1, ())], [[(b"b", b"w", 2, ())], [(None, b"x", 3, ())]]
    )
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        report = run_task(_stage2_work(root, ONE, "count_logged", start, end, names))
    assert report["execution"] == "per record" and report["records_processed"] == 3
    assert f"upstream object {names[1]} may hold a null key" in caplog.text
