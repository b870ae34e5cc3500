"""Store writes and changelog records per store type (``ChangeLogging*BytesStore``, ``RocksDBWindowStore``)."""

from __future__ import annotations

import struct

import pytest

from streamproc.errors import StateError
from streamproc.state.changelog import (
    ChangelogRecord,
    StoreWrite,
    WindowStoreChangeLogger,
    changelog_headers,
    key_value_put,
    logged_change,
    position_header_value,
    position_serde_serialize,
    session_put,
    timestamped_key_value_put,
)
from streamproc.state.store_type import StoreType

TS = 1700000000000
CTX = 1700000001234


def test_plain_key_value_put_and_delete() -> None:
    put = key_value_put(b"k", b"v", CTX)
    assert put.store_write == StoreWrite(b"k", b"v")
    assert put.changelog == ChangelogRecord(b"k", b"v", CTX)
    delete = key_value_put(b"k", None, CTX)
    assert delete.store_write == StoreWrite(b"k", None)
    assert delete.changelog == ChangelogRecord(b"k", None, CTX)


def test_timestamped_key_value_put_logs_raw_value_with_value_timestamp() -> None:
    change = timestamped_key_value_put(b"k1", b"v1", TS, CTX)
    assert change.store_write == StoreWrite(b"k1", bytes.fromhex("0000018bcfe56800") + b"v1")
    assert change.changelog == ChangelogRecord(b"k1", b"v1", TS)


def test_timestamped_key_value_delete_uses_record_context_time() -> None:
    change = timestamped_key_value_put(b"k1", None, None, CTX)
    assert change.store_write == StoreWrite(b"k1", None)
    assert change.changelog == ChangelogRecord(b"k1", None, CTX)


def test_timestamped_put_needs_value_timestamp() -> None:
    with pytest.raises(StateError):
        timestamped_key_value_put(b"k", b"v", None, CTX)


def test_session_put_and_remove() -> None:
    key = bytes.fromhex("6b31000000000000138800000000000003e8")
    assert session_put(b"k1", 1000, 5000, b"agg", CTX).changelog == ChangelogRecord(key, b"agg", CTX)
    removed = session_put(b"k1", 1000, 5000, None, CTX)
    assert removed.store_write == StoreWrite(key, None)
    assert removed.changelog == ChangelogRecord(key, None, CTX)


def test_window_without_duplicates_uses_seqnum_zero() -> None:
    logger = WindowStoreChangeLogger(retain_duplicates=False, timestamped=True)
    first = logger.put(b"k1", b"v1", 1699999980000, CTX, value_timestamp=TS)
    second = logger.put(b"k1", b"v2", 1699999980000, CTX, value_timestamp=TS)
    assert first.changelog.key == second.changelog.key == bytes.fromhex("6b310000018bcfe519e000000000")
    assert first.changelog.value == b"v1" and first.changelog.timestamp == TS
    assert first.store_write is not None and first.store_write.value == bytes.fromhex("0000018bcfe56800") + b"v1"


def test_window_retaining_duplicates_counts_from_one() -> None:
    logger = WindowStoreChangeLogger(retain_duplicates=True, timestamped=False)
    seqnums = [logger.put(b"k", b"v", 0, CTX).changelog.key[-4:] for _ in range(3)]
    assert [struct.unpack(">i", s)[0] for s in seqnums] == [1, 2, 3]


def test_window_retaining_duplicates_null_put_skips_store_but_advances_changelog_seqnum() -> None:
    logger = WindowStoreChangeLogger(retain_duplicates=True, timestamped=False)
    logger.put(b"k", b"v", 0, CTX)
    null_put = logger.put(b"k", None, 0, CTX)
    assert null_put.store_write is None
    assert struct.unpack(">i", null_put.changelog.key[-4:])[0] == 2
    after = logger.put(b"k", b"w", 0, CTX)
    assert after.store_write is not None
    assert struct.unpack(">i", after.store_write.key[-4:])[0] == 2
    assert struct.unpack(">i", after.changelog.key[-4:])[0] == 3


def test_window_seqnum_wraps_like_java() -> None:
    logger = WindowStoreChangeLogger(
        retain_duplicates=True, timestamped=False, store_seqnum=2**31 - 1, changelog_seqnum=2**31 - 1
    )
    change = logger.put(b"k", b"v", 0, CTX)
    assert change.changelog.key[-4:] == b"\x00\x00\x00\x00"


def test_logged_change_dispatch_requires_times() -> None:
    with pytest.raises(StateError):
        logged_change(StoreType.SESSION, b"k", b"v", CTX)
    with pytest.raises(StateError):
        logged_change(StoreType.WINDOW, b"k", b"v", CTX)
    assert logged_change(StoreType.KEY_VALUE, b"k", b"v", CTX).changelog.timestamp == CTX


def test_no_headers_unless_consistency_enabled() -> None:
    assert changelog_headers({"in": {0: 5}}, consistency_enabled=False) == ()


def test_position_serde_bytes() -> None:
    data = position_serde_serialize({"in": {0: 5}})
    assert data == b"\x00" + (1).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"in" + (1).to_bytes(4, "big") + (
        0
    ).to_bytes(4, "big") + (5).to_bytes(8, "big")


def test_position_header_is_padded_like_kafka_4_2() -> None:
    position = {"in": {0: 5}}
    value = position_header_value(position)
    # Byte.SIZE + Integer.SIZE + Integer.SIZE + len("in") + Integer.SIZE + (Integer.SIZE + Long.SIZE) = 202
    assert len(value) == 8 + 32 + 32 + 2 + 32 + 96
    assert value.startswith(position_serde_serialize(position))
    assert set(value[len(position_serde_serialize(position)) :]) == {0}
    headers = changelog_headers(position, consistency_enabled=True)
    assert headers == (("v", b"\x00"), ("c", value))


def test_the_timestamped_write_pair_is_the_logged_change() -> None:
    """What a store's put uses (no ``LoggedChange`` per write) is the same rule as ``timestamped_key_value_put``."""
    from streamproc.state.changelog import timestamped_key_value_write

    for value, value_timestamp in ((b"v1", TS), (b"", 0), (None, None)):
        stored, record = timestamped_key_value_write(b"k1", value, value_timestamp, CTX)
        change = timestamped_key_value_put(b"k1", value, value_timestamp, CTX)
        assert change.store_write is not None
        assert (stored, record) == (change.store_write.value, change.changelog)
