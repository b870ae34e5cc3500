"""The columnar ``aggregate``/``reduce`` (``spark/columnar/count.py``'s ``_LoopFold``) against the per-record path.

Each example stages one input partition (and maybe a restored store's changelog) and runs the task both ways, as
``test_columnar_count.py`` does: the same report, output, changelog and drops files byte for byte and store entries,
or the same error (type, message, cause) and nothing published. The user's functions cover sums, maxima, tombstones
(``None``), aggregates the ``Long`` serializer rejects (past its range, a ``bool``, ``bytes``) and raising
functions, after a stateless chain or not.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc import Stores
from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.task_runner import TaskWork
from streamproc.storage import LocalObjectStore
from tests.unit.spark import test_columnar_count as base
from tests.unit.spark.test_columnar_count import (
    _BYTES,
    _LONG,
    _STRING,
    CHANGELOG,
    SINK,
    SOURCE,
    Record,
    _stage,
)

_MODULE = "tests.unit.spark.test_columnar_aggregate"


def _materialized(logged: bool, key_serde: Any = _BYTES) -> Any:
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    if not logged:
        materialized = materialized.with_logging_disabled()
    return materialized.with_key_serde(key_serde).with_value_serde(_LONG)


def _build(fold: Any, *, chain: bool = False, logged: bool = True, serde: Any = _BYTES) -> Topology:
    """source → [filter → mapValues (null for 1-byte values, dropped at the aggregate)] → ``fold`` → toStream → sink;
    ``serde``: the source's key and value serde, the store's and the sink's key serde."""
    b = StreamsBuilder()
    stream = b.stream(SOURCE, Consumed.with_(serde, serde))
    if chain:
        stream = stream.filter(lambda k, v: v[:1] not in (b"\x02", "\x02")).map_values(
            lambda v: None if len(v) == 1 else v
        )
    table = fold(stream.group_by_key(), _materialized(logged, serde))
    table.to_stream().to(SINK, Produced.with_(serde, _LONG))
    return b.build()


def _sum_string_lengths(grouped: Any, m: Any) -> Any:
    """The aggregator of ``str`` keys and values (a value that is not UTF-8 read with Java's replacement
    characters): its length in characters, plus one per key character; a ``bytes`` value would fail."""
    return grouped.aggregate(lambda: 0, lambda k, v, agg: agg + len(v.encode("utf-16-le")) + len(k), materialized=m)


def _sum_lengths(grouped: Any, m: Any) -> Any:
    return grouped.aggregate(lambda: 0, lambda k, v, agg: agg + len(v), materialized=m)


def _max(grouped: Any, m: Any) -> Any:
    return grouped.aggregate(lambda: -7, lambda k, v, agg: max(agg, v[0] if v else len(k)), materialized=m)


def _tombstones(grouped: Any, m: Any) -> Any:
    """``None`` for a 3-byte value: the key's entry deleted, its next record starts from the initializer."""
    return grouped.aggregate(lambda: 5, lambda k, v, agg: None if len(v) == 3 else agg * 3 + len(v), materialized=m)


def _rejected(grouped: Any, m: Any) -> Any:
    """Past ``Long``'s range for a value starting ``ff``, a ``bool`` for one starting ``fe``: the store's serializer
    rejects both."""

    def aggregator(key: bytes, value: bytes, agg: int) -> Any:
        if value[:1] == b"\xff":
            return agg + (1 << 63)
        if value[:1] == b"\xfe":
            return True
        return agg - len(value)

    return grouped.aggregate(lambda: 0, aggregator, materialized=m)


def _raises(grouped: Any, m: Any) -> Any:
    def aggregator(key: bytes, value: bytes, agg: int) -> int:
        if value[:1] == b"\x01":
            raise ValueError(f"no \\x01 for {key!r}")
        return agg + len(value) + len(key)

    return grouped.aggregate(lambda: 0, aggregator, materialized=m)


def _reduce_lengths(grouped: Any, m: Any) -> Any:
    """``reduce`` needs ``Long`` values for a ``Long`` store: its stream's values mapped to lengths first."""
    return grouped.reduce(lambda agg, v: agg * 2 + v if agg < 1 << 40 else v, materialized=m)


def _reduce_bytes(grouped: Any, m: Any) -> Any:
    """A key's first value (``bytes``) is its aggregate: the serializer rejects it unless the store holds the key."""
    return grouped.reduce(lambda agg, v: agg + len(v), materialized=m)


def sum_lengths() -> Topology:
    return _build(_sum_lengths)


def sum_lengths_unlogged() -> Topology:
    return _build(_sum_lengths, logged=False)


def sum_lengths_after_a_chain() -> Topology:
    return _build(_sum_lengths, chain=True)


def sum_string_lengths() -> Topology:
    return _build(_sum_string_lengths, serde=_STRING)


def sum_string_lengths_after_a_chain() -> Topology:
    return _build(_sum_string_lengths, chain=True, serde=_STRING)


def maximum() -> Topology:
    return _build(_max)


def tombstones() -> Topology:
    return _build(_tombstones)


def tombstones_after_a_chain() -> Topology:
    return _build(_tombstones, chain=True)


def rejected() -> Topology:
    return _build(_rejected)


def raises() -> Topology:
    return _build(_raises)


def raises_after_a_chain() -> Topology:
    return _build(_raises, chain=True)


def reduce_bytes() -> Topology:
    return _build(_reduce_bytes)


def reduce_lengths() -> Topology:
    """source → mapValues(len; null for a 2-byte value) → reduce → toStream → sink."""
    b = StreamsBuilder()
    stream = b.stream(SOURCE, Consumed.with_(_BYTES, _BYTES)).map_values(lambda v: None if len(v) == 2 else len(v))
    table = _reduce_lengths(stream.group_by_key(), _materialized(True))
    table.to_stream().to(SINK, Produced.with_(_BYTES, _LONG))
    return b.build()


TOPOLOGIES = [
    "sum_lengths",
    "sum_lengths_unlogged",
    "sum_lengths_after_a_chain",
    "sum_string_lengths",
    "sum_string_lengths_after_a_chain",
    "maximum",
    "tombstones",
    "tombstones_after_a_chain",
    "rejected",
    "raises",
    "raises_after_a_chain",
    "reduce_bytes",
    "reduce_lengths",
]


def _work(root: Path, plan: str, topology: str, inputs: tuple[int, int, int], restore: Any) -> TaskWork:
    return dataclasses.replace(base._work(root, plan, topology, inputs, restore), topology=f"{_MODULE}:{topology}")


def _assert_same_outcome(
    root: Path, scratch: Path, topology: str, inputs: tuple[int, int, int], restore: Any, caplog: Any
) -> Any:
    """``test_columnar_count``'s comparison of both runs for one of this module's topologies, which must run the
    loop fold."""
    return base._assert_same_outcome(
        root, scratch, inputs, restore, caplog, topology=topology, work=_work,
        ran="with a Python loop fold (spark/columnar/count.py)",
    )  # fmt: skip


_KEYS = st.sampled_from([b"a", b"b", b"user-000017", b"", b"\x00\xff", b"k" * 40])
_VALUES = st.binary(max_size=5) | st.sampled_from([b"\x01", b"\x01zz", b"\x02ab", b"\xff", b"\xfe12", b"abc"])
_ROWS = st.lists(st.tuples(_KEYS, _VALUES, st.integers(0, 50), st.just(())), max_size=60)
_STORED = st.dictionaries(_KEYS, st.tuples(st.integers(0, 60), st.integers(-(2**40), 2**40)), max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    topology=st.sampled_from(TOPOLOGIES),
    rows=_ROWS,
    stored=_STORED,
    partition_time=st.sampled_from([-1, 25]),
    chunk=st.sampled_from([1, 7, 256]),
)
def test_the_columnar_aggregate_equals_the_per_record_path(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    topology: str,
    rows: list[Record],
    stored: dict[bytes, tuple[int, int]],
    partition_time: int,
    chunk: int,
) -> None:
    scratch = tmp_path_factory.mktemp("aggregate")
    root = scratch / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, rows, 5)
    restore = None
    if stored and not topology.endswith("unlogged"):  # an unlogged store starts empty
        changelog_rows: list[Record] = [
            (k, value.to_bytes(8, "big", signed=True), ts, ()) for k, (ts, value) in stored.items()
        ]
        restore = _stage(store, CHANGELOG, changelog_rows, 0)
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        _assert_same_outcome(root, scratch, topology, (start, end, partition_time), restore, caplog)
    finally:
        columnar_count.CHUNK_ROWS = before


@pytest.mark.parametrize(
    ("topology", "rows", "stored", "error"),
    [
        ("sum_lengths", [(b"a", b"xy", 3, ()), (b"b", b"z", 1, ()), (b"a", b"", 2, ())], {b"a": 10}, None),
        ("tombstones", [(b"a", b"xyz", 0, ()), (b"a", b"q", 1, ()), (b"b", b"xyz", 2, ())], {b"a": 1}, None),
        ("rejected", [(b"a", b"xy", 3, ()), (b"b", b"\xff", 4, ())], {}, "does not fit in a Java long"),
        ("rejected", [(b"a", b"xy", 3, ()), (b"a", b"\xfe", 4, ())], {}, "expects an int, got bool"),
        ("raises", [(b"a", b"xy", 3, ()), (b"c", b"\x01", 4, ()), (b"d", b"\xff", 5, ())], {}, "no \\x01 for b'c'"),
        ("reduce_bytes", [(b"a", b"xy", 3, ()), (b"b", b"\xff", 4, ())], {b"a": 2}, "expects an int, got bytes"),
        ("reduce_lengths", [(b"a", b"xyz", 3, ()), (b"a", b"zz", 1, ()), (b"a", b"", 2, ())], {}, None),
        ("sum_lengths_after_a_chain", [(b"a", b"x", 3, ()), (b"a", b"\x02b", 1, ()), (b"a", b"yz", 2, ())], {}, None),
    ],
)
@pytest.mark.parametrize("chunk", [1, 2, 256])
def test_examples_end_both_paths_the_same_way(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    topology: str,
    rows: list[Record],
    stored: dict[bytes, int],
    error: str | None,
    chunk: int,
) -> None:
    """Each rule once, by hand: a restored aggregate, tombstones, the serializer's rejections (at the second record,
    not the first), a raising aggregator (at the first failing record in offset order), reduce's first value."""
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    start, end = _stage(store, SOURCE, rows, 0)
    restore = (
        _stage(store, CHANGELOG, [(k, v.to_bytes(8, "big", signed=True), 1, ()) for k, v in stored.items()], 0)
        if stored
        else None
    )
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        outcome = _assert_same_outcome(root, tmp_path, topology, (start, end, -1), restore, caplog)
    finally:
        columnar_count.CHUNK_ROWS = before
    if error is None:
        assert outcome["records_processed"] == len(rows)
        if topology in ("reduce_lengths", "sum_lengths_after_a_chain"):  # a mapped null, dropped at the aggregate
            assert outcome["dropped"] == {"null_key_or_value": 1}, outcome
    else:
        assert isinstance(outcome, StreamprocError)
        assert error in str(outcome.__cause__)


def test_a_stored_value_that_is_not_a_long_fails_the_aggregate_as_per_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``z``'s stored value (2 bytes) fails at its first record, unless the aggregator fails before it (``\\x01``)."""
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    rows: list[Record] = [(b"a", b"v", 1, ()), (b"z", b"v", 3, ()), (b"b", b"\x01", 4, ())]
    start, end = _stage(store, SOURCE, rows, 0)
    restore = _stage(store, CHANGELOG, [(b"z", b"\x01\x02", 1, ())], 0)
    failure = _assert_same_outcome(root, tmp_path, "raises", (start, end, -1), restore, caplog)
    assert "offset=1" in str(failure)
    start, end = _stage(store, SOURCE, [rows[0], rows[2], rows[1]], 10)
    failure = _assert_same_outcome(root, tmp_path, "raises", (start, end, -1), restore, caplog)
    assert "offset=11" in str(failure)
