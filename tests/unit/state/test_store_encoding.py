"""Store key/value byte layouts (``ValueAndTimestampSerializer``, ``WindowKeySchema``, ``SessionKeySchema``)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamproc.errors import StateError
from streamproc.state.store_encoding import (
    SESSION_KEY_SUFFIX,
    WINDOW_KEY_SUFFIX,
    SessionKey,
    WindowedKey,
    latest_segment_time,
    parse_session_store_key,
    parse_window_store_key,
    raw_value,
    record_keys,
    session_store_key,
    timestamp_of,
    value_and_timestamp,
    window_store_key,
)

_longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def test_value_and_timestamp_bytes() -> None:
    assert value_and_timestamp(b"v1", 1700000000000).hex() == "0000018bcfe568007631"
    assert value_and_timestamp(b"", -1) == b"\xff" * 8


def test_window_key_bytes() -> None:
    assert window_store_key(b"k1", 1699999980000, 0).hex() == "6b310000018bcfe519e000000000"
    assert window_store_key(b"k1", 1700000001234, 1).hex() == "6b310000018bcfe56cd200000001"


def test_session_key_is_end_then_start() -> None:
    assert session_store_key(b"k1", 1000, 5000).hex() == "6b31000000000000138800000000000003e8"


def test_rejects_out_of_range() -> None:
    with pytest.raises(StateError):
        window_store_key(b"k", 0, 2**31)
    with pytest.raises(StateError):
        value_and_timestamp(b"v", 2**63)
    with pytest.raises(StateError):
        raw_value(b"short")
    with pytest.raises(StateError):
        parse_window_store_key(b"short")
    with pytest.raises(StateError):
        parse_session_store_key(b"short")


@given(st.binary(max_size=20), _longs)
def test_timestamped_value_round_trip(value: bytes, ts: int) -> None:
    data = value_and_timestamp(value, ts)
    assert raw_value(data) == value
    assert timestamp_of(data) == ts


@given(st.binary(max_size=20), _longs, st.integers(min_value=0, max_value=2**31 - 1))
def test_window_key_round_trip(key: bytes, start: int, seqnum: int) -> None:
    parsed = parse_window_store_key(window_store_key(key, start, seqnum))
    assert (parsed.key, parsed.window_start, parsed.seqnum) == (key, start, seqnum)


@given(st.binary(max_size=20), _longs, _longs)
def test_session_key_round_trip(key: bytes, start: int, end: int) -> None:
    parsed = parse_session_store_key(session_store_key(key, start, end))
    assert (parsed.key, parsed.session_start, parsed.session_end) == (key, start, end)


@given(
    st.lists(st.one_of(st.none(), st.tuples(st.binary(max_size=6), _longs, _longs)), max_size=8),
    st.booleans(),
    st.integers(min_value=0, max_value=3),
)
def test_the_column_forms_read_a_store_key_as_parse_does(
    keys: list[tuple[bytes, int, int] | None], session: bool, cut: int
) -> None:
    """Over a column of window or session store keys (sliced, so that its offset is not 0), the record keys and the
    latest segment time (a window's start, a session's end) are what the parse functions read row by row."""
    encode: Callable[[bytes, int, int], bytes] = session_store_key if session else window_store_key
    parse: Callable[[bytes], SessionKey | WindowedKey] = parse_session_store_key if session else parse_window_store_key
    suffix = SESSION_KEY_SUFFIX if session else WINDOW_KEY_SUFFIX
    raw = [None if k is None else encode(k[0], k[1], k[2] if session else k[2] % 2**31) for k in keys]
    column = pa.array([None] * cut + raw, pa.binary())[cut:]
    parsed = [None if data is None else parse(data) for data in column.to_pylist()]
    assert record_keys(column, suffix).to_pylist() == [None if p is None else p.key for p in parsed]
    times = [p.session_end if isinstance(p, SessionKey) else p.window_start for p in parsed if p is not None]
    assert latest_segment_time(column, suffix) == (max(times) if times else None)
