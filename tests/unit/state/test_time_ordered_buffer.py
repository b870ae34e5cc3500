"""The suppress buffer store: Kafka 4.2's changelog bytes, the older formats it restores, order and size accounting.

The V3 value below is one Kafka Streams 4.2.2 wrote (oracle ``suppress-run``, program ``time-limit``: key ``k1``,
count 1 of a record at 1000 ms, offset 0 of ``in``, header ``h=v1``); the V0-V2 values are built with the layouts
``TimeOrderedKeyValueBufferChangelogDeserializationHelper`` reads.
"""

from __future__ import annotations

import struct

import pytest

from streamproc.engine.records import ConsumerRecord, Headers, ProcessorRecordContext, TopicPartition
from streamproc.engine.serdes import SERDES
from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.changelog_collector import ChangelogCollector
from streamproc.state.java_hash_map import hash_map_order
from streamproc.state.stores import StoreContext
from streamproc.state.time_ordered_buffer import (
    EMPTY_MIN_TIMESTAMP,
    V3_CHANGELOG_HEADERS,
    BufferValue,
    Eviction,
    InMemoryTimeOrderedKeyValueChangeBuffer,
    bytes_hash_code,
    compute_record_size,
    serialize_record_context,
)

TOPIC = "app-hold-store-changelog"
KAFKA_V3 = bytes.fromhex(
    "00000000000003e8000000000000000000000002696e00000000000000010000000168000000027631"
    "000000080000000000000000fffffffe00000008000000000000000100000000000003e8"
)
LONG = struct.Struct(">q")
CONTEXT = ProcessorRecordContext(1000, 0, 0, "in", (("h", b"v1"),))


def _buffer() -> tuple[InMemoryTimeOrderedKeyValueChangeBuffer, ChangelogCollector]:
    collector = ChangelogCollector(TaskId(0, 0))
    context = StoreContext(TopicPartition(TOPIC, 0), collector)
    store = InMemoryTimeOrderedKeyValueChangeBuffer(
        "hold-store", SERDES["String"](), SERDES["Long"](), context, wall_clock_ms=lambda: 42
    )
    return store, collector


def _record(
    offset: int, key: bytes, value: bytes | None, headers: Headers = ()
) -> ConsumerRecord[bytes | None, bytes | None]:
    return ConsumerRecord.raw(TOPIC, 0, offset, 7, key, value, headers=headers)


def _prefixed(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def _legacy(old: bytes | None, new: bytes | None) -> bytes:
    return _prefixed(old) + _prefixed(new)


def test_put_then_flush_logs_kafkas_v3_bytes() -> None:
    store, collector = _buffer()
    store.put(1000, "k1", 1, 0, CONTEXT)
    assert collector.records == []  # logged at the commit, not at the put
    store.flush()
    [record] = collector.records
    assert (record.key, record.value, record.headers, record.timestamp) == (b"k1", KAFKA_V3, V3_CHANGELOG_HEADERS, 42)
    store.flush()
    assert len(collector.records) == 1  # nothing dirty any more


def test_restoring_kafkas_v3_value_rebuilds_the_entry_and_its_size() -> None:
    store, _ = _buffer()
    store.restore_batch([_record(0, b"k1", KAFKA_V3, V3_CHANGELOG_HEADERS)])
    [(time, key, value)] = list(store.entries())
    assert (time, key) == (1000, b"k1")
    assert value == BufferValue(LONG.pack(0), LONG.pack(0), LONG.pack(1), CONTEXT)
    assert value.serialize(time) == KAFKA_V3
    # 8 (time) + 2 (key) + 8 (prior; old is the same array) + 8 (new) + 16 + 2 ("in") + 4 + 1 ("h") + 2 ("v1")
    assert store.buffer_size == compute_record_size(b"k1", value) == 51
    assert store.min_timestamp == 1000


def test_evicted_key_is_a_tombstone_and_restore_removes_it() -> None:
    store, collector = _buffer()
    store.put(5, "a", 1, None, CONTEXT)
    store.put(3, "b", 2, None, CONTEXT)
    evicted: list[Eviction] = []
    store.evict_while(lambda: store.min_timestamp <= 4, evicted.append)
    assert [(e.key, e.new_value) for e in evicted] == [("b", 2)]
    store.flush()
    logged = {r.key: r for r in collector.records}
    assert logged[b"b"].value is None and logged[b"b"].headers == ()
    restored, _ = _buffer()
    restored.restore_batch([_record(i, r.key, r.value, r.headers) for i, r in enumerate(collector.records)])
    assert [k for _, k, _ in restored.entries()] == [b"a"]
    assert restored.buffer_size == store.buffer_size


def test_a_buffered_key_keeps_its_time_and_prior_value() -> None:
    store, _ = _buffer()
    store.put(10, "a", 1, None, CONTEXT)
    store.put(99, "a", 2, 1, CONTEXT)
    [(time, _, value)] = list(store.entries())
    assert time == 10
    assert (value.prior_value, value.old_value, value.new_value) == (None, LONG.pack(1), LONG.pack(2))


def test_equal_times_leave_in_key_byte_order() -> None:
    store, _ = _buffer()
    for key in ("b", "a", "c"):
        store.put(1, key, 1, None, CONTEXT)
    store.put(0, "z", 1, None, CONTEXT)
    evicted: list[Eviction] = []
    store.evict_while(lambda: True, evicted.append)
    assert [e.key for e in evicted] == ["z", "a", "b", "c"]
    assert store.min_timestamp == EMPTY_MIN_TIMESTAMP and store.buffer_size == 0


def test_restored_entries_are_emitted_deserialized() -> None:
    store, _ = _buffer()
    store.restore_batch([_record(0, b"k1", KAFKA_V3, V3_CHANGELOG_HEADERS)])
    evicted: list[Eviction] = []
    store.evict_while(lambda: True, evicted.append)
    assert evicted == [Eviction("k1", 1, 0, CONTEXT)]


def test_flush_order_is_java_hash_set_order() -> None:
    store, collector = _buffer()
    keys = [f"key-{i}" for i in range(40)]
    for key in keys:
        store.put(1, key, 1, None, CONTEXT)
    store.flush()
    expected = hash_map_order([k.encode() for k in keys], bytes_hash_code)
    assert [r.key for r in collector.records] == expected
    assert bytes_hash_code(b"\x80\x01") == 31 * (31 - 128) + 1  # signed bytes, as Arrays.hashCode


def test_restores_v2_v1_and_v0_values() -> None:
    context = serialize_record_context(CONTEXT)
    old, new, prior = LONG.pack(4), LONG.pack(5), LONG.pack(3)
    v2 = context + _prefixed(_legacy(old, new)) + _prefixed(prior) + LONG.pack(77)
    v1 = LONG.pack(88) + context + _prefixed(_legacy(old, new))
    v0 = LONG.pack(99) + _legacy(None, new)
    store, _ = _buffer()
    store.restore_batch(
        [
            _record(0, b"v2", v2, (("v", b"\x02"),)),
            _record(1, b"v1", v1, (("v", b"\x01"),)),
            _record(2, b"v0", v0),
            _record(3, b"v0", LONG.pack(5) + _legacy(new, old)),  # a buffered key keeps its prior, time and place
        ]
    )
    entries = {key: (time, value) for time, key, value in store.entries()}
    assert entries[b"v2"] == (77, BufferValue(prior, old, new, CONTEXT))
    assert entries[b"v1"] == (88, BufferValue(old, old, new, CONTEXT))
    v0_context = ProcessorRecordContext(7, 3, 0, TOPIC, ())
    assert entries[b"v0"] == (99, BufferValue(new, new, old, v0_context))


def test_v2_flag_on_v3_bytes_is_duck_typed() -> None:
    """Kafka 2.4.0, 2.4.1 and 2.5.0 wrote V3 values under the V2 flag."""
    store, _ = _buffer()
    store.restore_batch([_record(0, b"k1", KAFKA_V3, (("v", b"\x02"),))])
    assert [(t, k) for t, k, _ in store.entries()] == [(1000, b"k1")]


def test_a_record_that_is_no_buffer_record_is_refused_with_its_position() -> None:
    store, _ = _buffer()
    with pytest.raises(StateError, match=rf"changelog record {TOPIC}-0@5 is not a suppress buffer record"):
        store.restore_batch([_record(5, b"k1", b"\x00\x01", V3_CHANGELOG_HEADERS)])
    with pytest.raises(StateError, match="wrong suppress partition"):
        store.restore_batch([ConsumerRecord.raw(TOPIC, 1, 0, 7, b"k", None)])
