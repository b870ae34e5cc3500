"""Stateless DSL chains in the columnar path (``spark/columnar/chain.py``) against the per-record path.

Random chains of ``filter``/``filterNot``/``mapValues`` (pure functions picked by hypothesis, some returning null,
some dropping everything) before (a) ``groupByKey().count()`` and (b) a sink run through
:func:`~streamproc.spark.task_runner.run_task` twice, columnar and with ``STREAMPROC_PER_RECORD_COUNT`` set: the same
output and changelog files byte for byte, drops file, store and report, and each user function called as many times.
A function that raises and a value the sink's serializer rejects fail the task with the same error on both paths;
every other node type runs the task per record.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc import Stores
from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder
from streamproc.dsl.kstream import KStream
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError, StreamsError
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import RestoreRange, TaskWork, run_task
from streamproc.storage import LocalObjectStore
from tests.unit.spark.test_columnar_count import (
    _BYTES,
    _LONG,
    _ROWS,
    _STRING,
    CHANGELOG,
    COLUMNAR,
    ONE,
    PER_RECORD,
    SINK,
    SOURCE,
    Record,
    _comparable,
    _objects,
    _stage,
    _store_entries,
    _work,
)

_MODULE = "tests.unit.spark.test_columnar_chain"

#: How many times each user function ran (by its name), reset per run.
CALLS: Counter[str] = Counter()


def _counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        CALLS[name] += 1
        return function(*args)

    return call


def _head(v: Any) -> Any:
    return None if v is None else v[:2]


#: (operator, name, function): predicates of (key, value), mappers of (key, value) or of the value alone.
STEPS: list[tuple[str, str, Callable[..., Any]]] = [
    ("filter", "even length", lambda k, v: v is not None and len(v) % 2 == 0),
    ("filter", "keep all", lambda k, v: True),
    ("filter", "drop all", lambda k, v: False),
    ("filter", "key a", lambda k, v: k == b"a"),
    ("filter", "truthy length", lambda k, v: 0 if v is None else len(v)),
    ("filter_not", "starts with 0", lambda k, v: v is not None and v[:1] == b"0"),
    ("filter_not", "key b", lambda k, v: k == b"b"),
    ("map_values_with_key", "append key", lambda k, v: None if v is None else bytes(v) + k),
    ("map_values_with_key", "null every third", lambda k, v: None if v is None or len(v) % 3 == 0 else v),
    ("map_values_with_key", "all null", lambda k, v: None),
    ("map_values", "head", _head),
    ("map_values", "bytearray", lambda v: None if v is None else bytearray(v)),
    ("map_values", "reverse", lambda v: None if v is None else bytes(v[::-1])),
]

#: The same over ``String`` serdes: the functions see ``str`` keys and values (bytes that are not UTF-8 read as
#: Java's replacement characters), and what they return goes through the sink's ``String`` serializer: an unpaired
#: surrogate becomes ``?``, a ``bytes`` value fails the task there.
STRING_STEPS: list[tuple[str, str, Callable[..., Any]]] = [
    ("filter", "even length", lambda k, v: v is not None and len(v) % 2 == 0),
    ("filter", "key a", lambda k, v: k == "a"),
    ("filter_not", "replaced", lambda k, v: v is not None and "\ufffd" in v),
    ("map_values_with_key", "append key", lambda k, v: None if v is None else v + k),
    ("map_values", "head", _head),
    ("map_values", "upper", lambda v: None if v is None else v.upper()),
    ("map_values", "surrogate", lambda v: None if v is None else v + "\ud800"),
    ("map_values", "as bytes", lambda v: None if v is None or len(v) != 3 else v.encode()),
]

#: The chain the topology factories below build (set by each example before it runs), and the serde of its source's
#: keys and values and of the sink's.
CHAIN: list[tuple[str, str, Callable[..., Any]]] = []
SERDE = {"serde": _BYTES}


def _chained(b: StreamsBuilder) -> KStream[Any, Any]:
    stream: KStream[Any, Any] = b.stream(SOURCE, Consumed.with_(SERDE["serde"], SERDE["serde"]))
    for operator, name, function in CHAIN:
        counted = _counted(name, function)
        if operator == "select_key":
            stream = stream.select_key(counted)
        elif operator == "filter":
            stream = stream.filter(counted)
        elif operator == "filter_not":
            stream = stream.filter_not(counted)
        elif operator == "map_values_with_key":
            stream = stream.map_values(counted, with_key=True)
        else:
            stream = stream.map_values(counted)  # a one-argument ValueMapper
    return stream


def chain_count() -> Topology:
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    serde = SERDE["serde"]
    table = _chained(b).group_by_key().count(materialized=materialized.with_key_serde(serde).with_value_serde(_LONG))
    table.to_stream().to(SINK, Produced.with_(serde, _LONG))
    return b.build()


def chain_to_sink() -> Topology:
    b = StreamsBuilder()
    _chained(b).to(SINK, Produced.with_(SERDE["serde"], SERDE["serde"]))
    return b.build()


def chain_peek() -> Topology:
    b = StreamsBuilder()
    _chained(b).peek(lambda k, v: None).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def chain_flat_map_values() -> Topology:
    b = StreamsBuilder()
    _chained(b).flat_map_values(lambda v: [v]).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def chain_flat_map() -> Topology:
    b = StreamsBuilder()
    _chained(b).flat_map(lambda k, v: [(k, v)]).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def chain_select_key_peek() -> Topology:
    b = StreamsBuilder()
    _chained(b).select_key(lambda k, v: k).peek(lambda k, v: None).to(SINK, Produced.with_(_BYTES, _BYTES))
    return b.build()


def _chain_work(root: Path, plan: str, topology: str, inputs: tuple[int, int, int]) -> TaskWork:
    return dataclasses.replace(_work(root, plan, "count_logged", inputs, None), topology=f"{_MODULE}:{topology}")


def _run(root: Path, plan: str, topology: str, inputs: tuple[int, int, int], *, per_record: bool) -> Any:
    """One run: its report, or the error it failed with; and the calls of each user function."""
    CALLS.clear()
    if per_record:
        os.environ[PER_RECORD_ENV] = "1"
    try:
        outcome: Any = run_task(_chain_work(root, plan, topology, inputs))
    except StreamprocError as exc:
        outcome = exc
    finally:
        os.environ.pop(PER_RECORD_ENV, None)
    return outcome, dict(CALLS)


def _drops(root: Path, plan: str) -> bytes:
    return (root / TaskObjects(plan, TaskId.parse("0_0")).drops).read_bytes()


def _both(
    root: Path, scratch: Path, topology: str, inputs: tuple[int, int, int], caplog: pytest.LogCaptureFixture
) -> tuple[Any, Any]:
    """Run columnar (asserting it was) and per record; assert the same outcome; return both outcomes."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="streamproc.spark.task_runner"):
        columnar, columnar_calls = _run(root, COLUMNAR, topology, inputs, per_record=False)
    assert "(spark/columnar/count.py)" in caplog.text
    per_record, per_record_calls = _run(root, PER_RECORD, topology, inputs, per_record=True)
    if isinstance(per_record, Exception):
        # node by node: a node before the failing one may have run on the chunk's later records too (never twice)
        assert all(columnar_calls.get(name, 0) >= calls for name, calls in per_record_calls.items())
        assert all(calls <= inputs[1] - inputs[0] for calls in columnar_calls.values())
        assert type(columnar) is type(per_record)
        assert str(columnar) == str(per_record)
        assert type(columnar.__cause__) is type(per_record.__cause__)
        assert str(columnar.__cause__) == str(per_record.__cause__)
        return columnar, per_record
    assert isinstance(columnar, dict), columnar
    assert (columnar["execution"], per_record["execution"]) == ("columnar", "per record")
    assert columnar_calls == per_record_calls
    assert _comparable(columnar) == _comparable(per_record)
    assert _objects(root, COLUMNAR) == _objects(root, PER_RECORD)
    assert _drops(root, COLUMNAR) == _drops(root, PER_RECORD)
    if topology == "chain_count":
        assert _store_entries(root, COLUMNAR, scratch) == _store_entries(root, PER_RECORD, scratch)
    return columnar, per_record


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    chain=st.lists(st.sampled_from(STEPS), max_size=5),
    topology=st.sampled_from(["chain_count", "chain_to_sink"]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_a_stateless_chain_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Record],
    chain: list[tuple[str, str, Callable[..., Any]]],
    topology: str,
    chunk: int,
) -> None:
    scratch = tmp_path_factory.mktemp("chain")
    root = scratch / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, [(k, v, ts, tuple(h)) for k, v, ts, h in rows], 5)
    CHAIN[:] = chain
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        columnar, _ = _both(root, scratch, topology, (start, end, -1), caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
    assert isinstance(columnar, dict) and columnar["records_processed"] == len(rows)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=_ROWS,
    chain=st.lists(st.sampled_from(STRING_STEPS), max_size=4, unique_by=lambda step: step[1]),  # calls by name
    topology=st.sampled_from(["chain_count", "chain_to_sink", "rekeyed_to_sink"]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_a_stateless_chain_over_string_serdes_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    rows: list[Record],
    chain: list[tuple[str, str, Callable[..., Any]]],
    topology: str,
    chunk: int,
) -> None:
    """``String`` keys and values through the chain (``rekeyed_to_sink``: then a ``selectKey`` to the value's first
    character) to a count or a ``String`` sink."""
    scratch = tmp_path_factory.mktemp("chain")
    root = scratch / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, [(k, v, ts, tuple(h)) for k, v, ts, h in rows], 5)
    rekey = [("select_key", "first character", lambda k, v: None if v is None else v[:1])]
    CHAIN[:] = [*chain, *rekey] if topology == "rekeyed_to_sink" else chain
    SERDE["serde"] = _STRING
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        columnar, _ = _both(root, scratch, topology.replace("rekeyed_", "chain_"), (start, end, -1), caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
        SERDE["serde"] = _BYTES
    assert isinstance(columnar, Exception) or columnar["records_processed"] == len(rows)


def _boom(k: Any, v: Any) -> bytes:
    if v[:1] == b"x":
        raise ValueError(f"no x please: {v!r}")
    return bytes(v)


_FAILING_ROWS: list[Record] = [(b"a", b"v1", 1, ()), (b"b", b"x2", 2, ()), (b"a", b"x3", 3, ()), (b"c", b"v", 4, ())]


@pytest.mark.parametrize("topology", ["chain_count", "chain_to_sink"])
@pytest.mark.parametrize(
    "chain",
    [
        [("map_values_with_key", "boom", _boom)],
        [("filter", "keep all", lambda k, v: True), ("map_values_with_key", "boom", _boom)],
        # the later node fails at an earlier record than the first: the earlier record's failure wins
        [("map_values", "head", lambda v: v[:1]), ("map_values_with_key", "boom", _boom)],
        [("filter", "raises on a", lambda k, v: 1 / 0 if k == b"c" else True), ("map_values_with_key", "boom", _boom)],
    ],
    ids=["one", "after a filter", "in the second node", "the earlier record wins"],
)
def test_a_raising_function_fails_the_task_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, topology: str, chain: list[tuple[str, str, Any]]
) -> None:
    root = tmp_path / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, _FAILING_ROWS, 0)
    CHAIN[:] = chain
    columnar, _ = _both(root, tmp_path, topology, (start, end, -1), caplog)
    assert isinstance(columnar, StreamsError)
    assert "Exception caught in process. taskId=0_0, processor=KSTREAM-MAPVALUES-" in str(columnar)
    assert "offset=1" in str(columnar)


@pytest.mark.parametrize(
    ("bad_key", "node", "offset"),
    [(b"a", "KSTREAM-AGGREGATE-", 0), (b"c", "KSTREAM-MAPVALUES-", 1)],
    ids=["the count's read first", "the function first"],
)
def test_a_stored_value_that_is_not_a_count_and_a_raising_function_fail_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bad_key: bytes, node: str, offset: int
) -> None:
    """Per record, the first record in offset order that fails ends the task: the count's read of a stored value
    that is not a count (``a`` at offset 0, after the chain let it through) or the function (at offset 1, before the
    count reads ``c`` at offset 3)."""
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, _FAILING_ROWS, 0)
    changelog = _stage(store, CHANGELOG, [(bad_key, b"\x01\x02", 1, ())], 0)
    CHAIN[:] = [("map_values_with_key", "boom", _boom)]
    restores = (RestoreRange("counts", CHANGELOG, 0, *changelog),)
    caplog.clear()
    outcomes = []
    for plan, per_record in ((COLUMNAR, False), (PER_RECORD, True)):
        work = dataclasses.replace(_chain_work(root, plan, "chain_count", (start, end, -1)), restores=restores)
        if per_record:
            os.environ[PER_RECORD_ENV] = "1"
        try:
            with caplog.at_level(logging.INFO, logger="streamproc.spark.task_runner"):
                with pytest.raises(StreamsError) as failed:
                    run_task(work)
        finally:
            os.environ.pop(PER_RECORD_ENV, None)
        outcomes.append(failed.value)
    assert "(spark/columnar/count.py)" in caplog.text
    columnar, by_record = outcomes
    assert str(columnar) == str(by_record)
    assert type(columnar.__cause__) is type(by_record.__cause__)
    assert str(columnar.__cause__) == str(by_record.__cause__)
    assert f"processor={node}" in str(columnar) and f"offset={offset}" in str(columnar)


def test_a_value_the_sink_rejects_fails_the_task_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, _FAILING_ROWS, 0)
    CHAIN[:] = [("map_values", "text", lambda v: v.decode() if v[:1] == b"x" else v)]
    columnar, _ = _both(root, tmp_path, "chain_to_sink", (start, end, -1), caplog)
    assert isinstance(columnar, StreamsError)
    # the sink lets its serializer's error through to its parent's handler: the parent is named, as per record
    assert "processor=KSTREAM-MAPVALUES-0000000001" in str(columnar) and "offset=1" in str(columnar)


@pytest.mark.parametrize(
    ("topology", "reason"),
    [
        ("chain_peek", "KSTREAM-PEEK-0000000002 is not a DSL filter/filterNot/mapValues"),
        ("chain_flat_map_values", "KSTREAM-FLATMAPVALUES-0000000002 is not a DSL filter/filterNot/mapValues"),
        ("chain_flat_map", "KSTREAM-FLATMAP-0000000002 is not a DSL filter/filterNot/mapValues"),
        ("chain_select_key_peek", "KSTREAM-KEY-SELECT-0000000002 changes the key and KSTREAM-PEEK-0000000003 is not"),
    ],
)
def test_another_node_runs_per_record_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, topology: str, reason: str
) -> None:
    root = tmp_path / "store"
    start, end = _stage(LocalObjectStore(root), SOURCE, [(b"a", b"v", 1, ()), (b"b", b"w", 2, ())], 0)
    CHAIN[:] = [("filter", "keep all", lambda k, v: True)]
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.task_runner"):
        report, calls = _run(root, ONE, topology, (start, end, -1), per_record=False)
    assert "(spark/columnar/count.py)" not in caplog.text
    assert f"runs per record, not the columnar count: {reason}" in caplog.text
    assert report["records_processed"] == 2 and calls == {"keep all": 2}
