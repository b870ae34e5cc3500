"""The typed stores a processor uses, over in-memory bytes stores: API, bytes, changelog record per write."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from streamproc.engine.dropped_records import REASON_EXPIRED_SEGMENT
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import serde_for
from streamproc.errors import StateError
from streamproc.state import store_layout
from streamproc.state.changelog import ChangelogRecord
from streamproc.state.stores import (
    InMemoryKeyValueBytesStore,
    KeyValueStore,
    SegmentedBytesStore,
    SessionStore,
    StoreContext,
    TimestampedKeyValueStore,
    TimestampedWindowStore,
    TimeWindow,
    ValueAndTimestamp,
    Windowed,
    WindowStore,
)

TP = TopicPartition("app-s-changelog", 2)
CTX_TS = 1_700_000_001_234


class Sink:
    def __init__(self) -> None:
        self.sent: list[tuple[str, TopicPartition, ChangelogRecord]] = []

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None:
        self.sent.append((store_name, partition, record))

    @property
    def records(self) -> list[ChangelogRecord]:
        return [r for _, _, r in self.sent]


def context(sink: Sink, timestamp: int = CTX_TS) -> StoreContext:
    return StoreContext(TP, sink, lambda: timestamp)


def long_be(value: int) -> bytes:
    return struct.pack(">q", value)


def kv_store(sink: Sink) -> KeyValueStore[str, int]:
    return KeyValueStore("s", InMemoryKeyValueBytesStore(), serde_for("String"), serde_for("Long"), context(sink))


def in_memory_segments(
    name: str, retention_ms: int, segment_interval_ms: int, *, persistent: bool
) -> SegmentedBytesStore:
    """A segmented store whose segments live in memory (``persistent``: the expiry rule of a persistent store)."""
    return SegmentedBytesStore(
        name,
        retention_ms=retention_ms,
        segment_interval_ms=segment_interval_ms,
        segment_factory=lambda _s: InMemoryKeyValueBytesStore(),
        persistent=persistent,
    )


def test_key_value_round_trip_and_changelog() -> None:
    sink = Sink()
    store = kv_store(sink)
    store.put("b", 2)
    store.put("a", 1)
    assert store.get("a") == 1
    assert store.put_if_absent("a", 9) == 1
    assert store.put_if_absent("c", 3) is None
    assert store.delete("b") == 2
    assert store.get("b") is None
    assert list(store.all()) == [("a", 1), ("c", 3)]
    assert list(store.range("a", "b")) == [("a", 1)]
    assert list(store.range(None, "c")) == [("a", 1), ("c", 3)]
    assert list(store.range("c", "a")) == []
    assert store.approximate_num_entries() == 2
    assert sink.records == [
        ChangelogRecord(b"b", long_be(2), CTX_TS),
        ChangelogRecord(b"a", long_be(1), CTX_TS),
        ChangelogRecord(b"c", long_be(3), CTX_TS),
        ChangelogRecord(b"b", None, CTX_TS),
    ]
    assert {partition for _, partition, _ in sink.sent} == {TP}
    assert store.context.written


def test_put_none_is_a_delete_with_tombstone() -> None:
    sink = Sink()
    store = kv_store(sink)
    store.put("a", 1)
    store.put("a", None)
    assert store.get("a") is None
    assert sink.records[-1] == ChangelogRecord(b"a", None, CTX_TS)


def test_null_key_rejected() -> None:
    store = kv_store(Sink())
    with pytest.raises(StateError, match="key cannot be null"):
        store.put(None, 1)  # type: ignore[arg-type]


def test_write_outside_a_task_is_an_error() -> None:
    store: KeyValueStore[str, str] = KeyValueStore(
        "s", InMemoryKeyValueBytesStore(), serde_for("String"), serde_for("String"), StoreContext(TP, Sink())
    )
    with pytest.raises(StateError, match="outside a task"):
        store.put("a", "x")


def test_unlogged_store_sends_nothing() -> None:
    sink = Sink()
    store: KeyValueStore[str, str] = KeyValueStore(
        "s", InMemoryKeyValueBytesStore(), serde_for("String"), serde_for("String"), StoreContext(None, sink)
    )
    store.context.record_timestamp = lambda: 5
    store.put("a", "x")
    assert store.get("a") == "x"
    assert sink.sent == []


def test_timestamped_key_value_bytes_and_changelog() -> None:
    sink = Sink()
    raw = InMemoryKeyValueBytesStore()
    store: TimestampedKeyValueStore[str, str] = TimestampedKeyValueStore(
        "s", raw, serde_for("String"), serde_for("String"), context(sink)
    )
    store.put("k", ValueAndTimestamp("v", 1_700_000_000_000))
    assert raw.get(b"k") == bytes.fromhex("0000018bcfe56800") + b"v"
    assert store.get("k") == ValueAndTimestamp("v", 1_700_000_000_000)
    assert store.put_if_absent("k", ValueAndTimestamp("w", 1)) == ValueAndTimestamp("v", 1_700_000_000_000)
    assert store.delete("k") == ValueAndTimestamp("v", 1_700_000_000_000)
    assert sink.records == [
        ChangelogRecord(b"k", b"v", 1_700_000_000_000),
        ChangelogRecord(b"k", None, CTX_TS),
    ]
    assert ValueAndTimestamp.make(None, 5) is None


class _NullForEmpty:
    """A user serializer that serializes ``""`` to null (Kafka then logs and stores a tombstone)."""

    def serialize(self, topic: str, data: str | None) -> bytes | None:
        return None if not data else data.encode()


@pytest.mark.parametrize(
    "value",
    [
        ValueAndTimestamp("v", 1_700_000_000_000),
        ValueAndTimestamp("v", -5),
        ValueAndTimestamp("v", (1 << 63) - 1),
        ValueAndTimestamp("v", -(1 << 63)),
        ValueAndTimestamp("", 7),
        ValueAndTimestamp(None, 7),
        None,
    ],
)
def test_timestamped_store_hot_path_writes_what_the_changelog_rule_says(value: ValueAndTimestamp[str] | None) -> None:
    """``put``/``put_serialized``/``get``/``get_for_update`` inline the store encoding and the changelog record for
    the common case; every case must give the bytes and record of ``changelog.timestamped_key_value_put``."""
    from streamproc.engine.serdes import Serde
    from streamproc.state.changelog import timestamped_key_value_put

    serde: Serde[str] = Serde(_NullForEmpty(), serde_for("String").deserializer)  # type: ignore[arg-type]
    for write in ("put", "put_serialized"):
        sink = Sink()
        raw = InMemoryKeyValueBytesStore()
        store: TimestampedKeyValueStore[str, str] = TimestampedKeyValueStore(
            "s", raw, serde_for("String"), serde, context(sink)
        )
        if write == "put":
            store.put("k", value)
        else:
            raw_key, old = store.get_for_update("k")
            assert (raw_key, old) == (b"k", None)
            store.put_serialized(raw_key, value)
        inner = None if value is None or value.value is None else _NullForEmpty().serialize("", value.value)
        expected = timestamped_key_value_put(b"k", inner, None if value is None else value.timestamp, CTX_TS)
        assert expected.store_write is not None
        assert raw.get(b"k") == expected.store_write.value
        assert sink.records == [expected.changelog]
        stored = None if inner is None else value
        assert store.get("k") == stored
        assert store.get_for_update("k") == (b"k", stored)


def test_timestamped_store_refuses_what_kafka_refuses() -> None:
    raw = InMemoryKeyValueBytesStore()
    store: TimestampedKeyValueStore[str, str] = TimestampedKeyValueStore(
        "s", raw, serde_for("String"), serde_for("String"), context(Sink())
    )
    with pytest.raises(StateError, match="key cannot be null"):
        store.get(None)  # type: ignore[arg-type]
    with pytest.raises(StateError, match="key cannot be null"):
        store.get_for_update(None)  # type: ignore[arg-type]
    with pytest.raises(StateError, match="key cannot be null"):
        store.put(None, ValueAndTimestamp("v", 1))  # type: ignore[arg-type]
    with pytest.raises(StateError, match="does not fit in a Java long"):
        store.put("k", ValueAndTimestamp("v", 1 << 63))
    raw.put(b"short", b"1234567")
    with pytest.raises(StateError, match="has no 8-byte timestamp"):
        store.get("short")
    with pytest.raises(StateError, match="has no 8-byte timestamp"):
        store.get_for_update("short")


def test_timestamped_restore_prepends_record_timestamp() -> None:
    raw = InMemoryKeyValueBytesStore()
    store: TimestampedKeyValueStore[str, str] = TimestampedKeyValueStore(
        "s", raw, serde_for("String"), serde_for("String"), context(Sink())
    )
    store.restore_batch(
        [
            ConsumerRecord.raw(TP.topic, 2, 0, 42, b"a", b"x"),
            ConsumerRecord.raw(TP.topic, 2, 1, 43, b"b", b"y"),
            ConsumerRecord.raw(TP.topic, 2, 2, 44, b"a", None),
        ]
    )
    assert list(store.all()) == [("b", ValueAndTimestamp("y", 43))]


def window_store(sink: Sink, *, retain_duplicates: bool = False, retention: int = 10_000) -> WindowStore[str, str]:
    segments = in_memory_segments("w", retention, 1_000, persistent=False)
    return WindowStore(
        "w",
        segments,
        serde_for("String"),
        serde_for("String"),
        window_size_ms=500,
        retain_duplicates=retain_duplicates,
        context=context(sink),
    )


def window_key(key: bytes, start: int, seqnum: int) -> bytes:
    return key + struct.pack(">qi", start, seqnum)


def test_window_put_fetch_and_changelog() -> None:
    sink = Sink()
    store = window_store(sink)
    store.put("a", "1", 0)
    store.put("a", "2", 1_500)
    store.put("ab", "x", 1_000)
    store.put("b", "3", 1_000)
    assert list(store.fetch("a", 0, 2_000)) == [(0, "1"), (1_500, "2")]
    assert list(store.fetch("a", 1, 2_000)) == [(1_500, "2")]
    assert store.fetch_at("a", 1_500) == "2"
    assert store.fetch_at("a", 1_501) is None
    assert list(store.fetch_all(1_000, 1_000)) == [
        (Windowed("ab", TimeWindow(1_000, 1_500)), "x"),
        (Windowed("b", TimeWindow(1_000, 1_500)), "3"),
    ]
    assert len(list(store.all())) == 4
    assert store.segments.segment_ids() == [0, 1]
    assert sink.records[0] == ChangelogRecord(window_key(b"a", 0, 0), b"1", CTX_TS)
    store.put("a", None, 0)
    assert list(store.fetch("a", 0, 0)) == []
    assert sink.records[-1] == ChangelogRecord(window_key(b"a", 0, 0), None, CTX_TS)


def test_window_retain_duplicates_numbers_each_put() -> None:
    sink = Sink()
    store = window_store(sink, retain_duplicates=True)
    store.put("a", "1", 0)
    store.put("a", "2", 0)
    assert list(store.fetch("a", 0, 0)) == [(0, "1"), (0, "2")]
    assert [r.key for r in sink.records] == [window_key(b"a", 0, 1), window_key(b"a", 0, 2)]


def test_window_expired_segment_dropped_but_logged() -> None:
    sink = Sink()
    store = window_store(sink, retention=2_000)
    store.put("a", "new", 10_000)
    store.put("a", "old", 1_000)
    assert list(store.fetch("a", 0, 20_000)) == [(10_000, "new")]
    assert store.segments.expired_records_dropped == 1
    assert len(sink.records) == 2
    store.put("a", "newer", 20_000)
    assert store.segments.segment_ids() == [20]


def counted_window_store(
    *, window_expiry: bool, retain_duplicates: bool = False, retention_ms: int = 2_000
) -> tuple[WindowStore[str, str], list[str], Sink]:
    """A window store (1 s segments) whose task ``dropped-records`` sensor is a list of reasons."""
    sink, drops = Sink(), []
    segments = SegmentedBytesStore(
        "w",
        retention_ms=retention_ms,
        segment_interval_ms=1_000,
        segment_factory=lambda _s: InMemoryKeyValueBytesStore(),
        persistent=not window_expiry,
        window_expiry=window_expiry,
    )
    store_context = StoreContext(TP, sink, lambda: CTX_TS, drops.append)
    store: WindowStore[str, str] = WindowStore(
        "w",
        segments,
        serde_for("String"),
        serde_for("String"),
        window_size_ms=500,
        retain_duplicates=retain_duplicates,
        context=store_context,
    )
    return store, drops, sink


def test_a_put_into_an_expired_segment_is_counted_in_the_tasks_dropped_records() -> None:
    """``AbstractRocksDBSegmentedBytesStore#put``: a segment older than ``segmentId(observed - retention)`` refuses."""
    store, drops, sink = counted_window_store(window_expiry=False)
    store.put("a", "new", 10_500)
    store.put("a", "same segment as the limit", 8_000)  # segment 8 = segmentId(10_500 - 2_000): still live
    assert drops == []
    store.put("a", "expired", 7_999)
    assert drops == [REASON_EXPIRED_SEGMENT]
    assert list(store.fetch("a", 0, 20_000)) == [(10_500, "new")]  # 8_000 is past the fetch's clamp
    assert len(sink.records) == 3  # logged all the same


def test_an_in_memory_store_expires_per_window() -> None:
    """``InMemoryWindowStore#put``: ``windowStart <= observed - retention`` is refused, whatever its segment."""
    store, drops, _ = counted_window_store(window_expiry=True)
    store.put("a", "new", 10_500)
    store.put("a", "live", 8_501)
    assert drops == []
    store.put("a", "expired", 8_500)
    assert drops == [REASON_EXPIRED_SEGMENT]
    assert list(store.fetch("a", 0, 20_000)) == [(8_501, "live"), (10_500, "new")]


@pytest.mark.parametrize(("window_expiry", "counted"), [(False, []), (True, [REASON_EXPIRED_SEGMENT])])
def test_a_null_with_duplicates_kept_is_counted_only_by_the_in_memory_store(
    window_expiry: bool, counted: list[str]
) -> None:
    """``RocksDBWindowStore`` never passes a null down when duplicates are kept; ``InMemoryWindowStore`` checks the
    expiry before it skips the null."""
    store, drops, _ = counted_window_store(window_expiry=window_expiry, retain_duplicates=True)
    store.put("a", "new", 10_500)
    store.put("a", None, 1_000)
    assert drops == counted


def test_a_session_remove_is_never_counted() -> None:
    drops: list[str] = []
    segments = in_memory_segments("sess", 1_000, 1_000, persistent=True)
    store: SessionStore[str, int] = SessionStore(
        "sess", segments, serde_for("String"), serde_for("Long"), StoreContext(TP, Sink(), lambda: CTX_TS, drops.append)
    )
    store.put(Windowed("a", TimeWindow(9_000, 10_000)), 1)
    store.remove(Windowed("a", TimeWindow(10, 20)))
    assert drops == []
    assert segments.segment_ids() == [10]  # a remove creates no segment
    store.put(Windowed("a", TimeWindow(10, 20)), 2)
    assert drops == [REASON_EXPIRED_SEGMENT]


def test_a_segmented_restore_advances_stream_time_to_the_batchs_latest_first() -> None:
    """``getWriteBatches``: an entry whose segment the batch itself expires is not written."""
    store, drops, _ = counted_window_store(window_expiry=False, retention_ms=1_500)
    store.put("a", "first", 10_000)  # segments from segmentId(8_500) = 8 on are live
    store.restore_batch(
        [
            ConsumerRecord.raw(TP.topic, 2, 0, 1, window_key(b"a", 8_600, 0), b"old"),  # segment 8 ...
            ConsumerRecord.raw(TP.topic, 2, 1, 1, window_key(b"a", 10_600, 0), b"new"),  # ... not live from here on
        ]
    )
    assert store.segments.segment_ids() == [10]
    assert drops == []  # a restore counts nothing


def test_timestamped_window_store() -> None:
    sink = Sink()
    segments = in_memory_segments("w", 60_000, 60_000, persistent=False)
    store: TimestampedWindowStore[str, int] = TimestampedWindowStore(
        "w", segments, serde_for("String"), serde_for("Long"), window_size_ms=1_000, context=context(sink)
    )
    store.put("k", ValueAndTimestamp(7, 1_234), 1_000)
    assert store.fetch_at("k", 1_000) == ValueAndTimestamp(7, 1_234)
    stored = segments.get(window_key(b"k", 1_000, 0), 1_000)
    assert stored == long_be(1_234) + long_be(7)
    assert sink.records == [ChangelogRecord(window_key(b"k", 1_000, 0), long_be(7), 1_234)]
    with pytest.raises(StateError, match="ValueAndTimestamp"):
        store.put("k", 7, 1_000)


def test_window_restore_routes_by_window_start() -> None:
    store = window_store(Sink())
    store.restore_batch(
        [
            ConsumerRecord.raw(TP.topic, 2, 0, 1, window_key(b"a", 0, 0), b"x"),
            ConsumerRecord.raw(TP.topic, 2, 1, 1, window_key(b"a", 2_000, 0), b"y"),
        ]
    )
    assert store.segments.segment_ids() == [0, 2]
    assert list(store.fetch("a", 0, 5_000)) == [(0, "x"), (2_000, "y")]


def test_session_store() -> None:
    sink = Sink()
    segments = in_memory_segments("sess", 100_000, 60_000, persistent=False)
    store: SessionStore[str, int] = SessionStore(
        "sess", segments, serde_for("String"), serde_for("Long"), context(sink)
    )
    store.put(Windowed("a", TimeWindow(10, 70_000)), 3)
    store.put(Windowed("a", TimeWindow(80_000, 90_000)), 1)
    store.put(Windowed("ab", TimeWindow(10, 20)), 5)
    assert segments.segment_ids() == [0, 1]
    assert store.fetch_session("a", 10, 70_000) == 3
    assert list(store.find_sessions("a", 75_000, 100_000)) == [(Windowed("a", TimeWindow(80_000, 90_000)), 1)]
    assert [w.window for w, _ in store.fetch("a")] == [TimeWindow(10, 70_000), TimeWindow(80_000, 90_000)]
    store.remove(Windowed("a", TimeWindow(10, 70_000)))
    assert store.fetch_session("a", 10, 70_000) is None
    assert sink.records[0] == ChangelogRecord(b"a" + struct.pack(">qq", 70_000, 10), long_be(3), CTX_TS)
    assert sink.records[-1] == ChangelogRecord(b"a" + struct.pack(">qq", 70_000, 10), None, CTX_TS)


@pytest.mark.parametrize("window_expiry", [False, True], ids=["rocksdb", "in-memory"])
def test_fetch_session_returns_nothing_for_a_session_the_stream_time_expired(window_expiry: bool) -> None:
    """``AbstractRocksDBSegmentedBytesStore.get`` and ``InMemorySessionStore.fetchSession``: a session that ended
    before ``observedStreamTime - retention + 1`` is not returned, though its segment (a minute long) still holds it;
    one ending at that time still is (Kafka Streams' answer: ``test_reference_dsl_ops.py``, the session program)."""
    segments = SegmentedBytesStore(
        "sess",
        retention_ms=1_000,
        segment_interval_ms=60_000,
        segment_factory=lambda _s: InMemoryKeyValueBytesStore(),
        persistent=not window_expiry,
        window_expiry=window_expiry,
    )
    store: SessionStore[str, int] = SessionStore(
        "sess", segments, serde_for("String"), serde_for("Long"), context(Sink())
    )
    store.put(Windowed("a", TimeWindow(100, 500)), 1)
    store.put(Windowed("b", TimeWindow(600, 1_000)), 2)
    store.put(Windowed("c", TimeWindow(1_999, 1_999)), 3)
    assert segments.segment_ids() == [0]
    assert store.fetch_session("a", 100, 500) is None
    assert store.fetch_session("b", 600, 1_000) == 2  # 1 000 = 1 999 - 1 000 + 1
    assert store.fetch_session("c", 1_999, 1_999) == 3


def test_in_memory_bytes_store_range_is_a_snapshot() -> None:
    store = InMemoryKeyValueBytesStore()
    store.write_all([(b"b", b"2"), (b"a", b"1"), (b"c", b"3"), (b"c", None)])
    entries = store.range(b"a", None)
    store.put(b"z", b"9")
    assert list(entries) == [(b"a", b"1"), (b"b", b"2")]
    assert list(store.range(b"a0", b"z")) == [(b"b", b"2"), (b"z", b"9")]


# -- the window store's hot path against the change logger's rule --------------------------------------------------

_WINDOW_OPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "ab"]),
        st.one_of(st.none(), st.sampled_from(["", "v", "w"])),
        st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
        st.one_of(
            st.integers(min_value=-3_000, max_value=30_000),
            st.sampled_from([-(1 << 63), (1 << 63) - 1, (1 << 63) - 1_000]),
        ),
    ),
    max_size=40,
)


def _reference_live_segment(segments: SegmentedBytesStore, timestamp: int) -> object | None:
    """``getOrCreateSegmentIfLive`` as written before the inlining: ``_observe`` and ``segment_id`` per call."""
    if not segments._observe(timestamp):
        return None
    seg = store_layout.segment_id(timestamp, segments.segment_interval_ms)
    min_live = store_layout.segment_id(
        segments.observed_stream_time - segments.retention_ms, segments.segment_interval_ms
    )
    if seg < min_live:
        return None
    store = segments._segments.get(seg)
    if store is None:
        store = segments._factory(seg)
        segments._segments[seg] = store
        for expired in [s for s in segments._segments if s < min_live]:
            segments._segments.pop(expired).destroy()
    return store


def _reference_put(store: WindowStore[str, object], key: str, value: object, window_start: int) -> None:
    """``WindowStore.put`` through :class:`WindowStoreChangeLogger` and a :class:`LoggedChange`, the rule."""
    raw, value_timestamp = store._encode_value(value)
    change = store.change_logger.put(
        store._key(key), raw, window_start, store.context.record_timestamp(), value_timestamp=value_timestamp
    )
    if change.store_write is not None:
        segment = _reference_live_segment(store.segments, window_start)
        if segment is None:
            store.context.record_dropped(REASON_EXPIRED_SEGMENT)
        else:
            segment.put(change.store_write.key, change.store_write.value)  # type: ignore[attr-defined]
    elif store.segments.refuses_skipped_write(window_start):
        store.context.record_dropped(REASON_EXPIRED_SEGMENT)
    store._log(change)


def _reference_fetch_at(store: WindowStore[str, object], key: str, window_start: int) -> object:
    if window_start < store.segments.min_live_time():
        return None
    stored = store.segments.get(window_key(store._key(key), window_start, 0), window_start)
    return None if stored is None else store._decode_value(stored)


def _window_pair(timestamped: bool, window_expiry: bool) -> list[tuple[WindowStore[str, object], Sink, list[str]]]:
    from streamproc.engine.serdes import Serde

    serde: Serde[str] = Serde(_NullForEmpty(), serde_for("String").deserializer)  # type: ignore[arg-type]
    out: list[tuple[WindowStore[str, object], Sink, list[str]]] = []
    for _ in range(2):
        sink, drops = Sink(), []  # type: ignore[var-annotated]
        segments = SegmentedBytesStore(
            "w",
            retention_ms=5_000,
            segment_interval_ms=1_000,
            segment_factory=lambda _s: InMemoryKeyValueBytesStore(),
            persistent=False,
            window_expiry=window_expiry,
        )
        kind = TimestampedWindowStore if timestamped else WindowStore
        store = kind(
            "w",
            segments,
            serde_for("String"),
            serde,
            window_size_ms=500,
            context=StoreContext(TP, sink, lambda: CTX_TS, drops.append),
        )
        out.append((store, sink, drops))
    return out


@settings(max_examples=300, deadline=None)
@given(ops=_WINDOW_OPS, timestamped=st.booleans(), window_expiry=st.booleans())
def test_window_store_hot_path_writes_what_the_change_logger_says(
    ops: list[tuple[str, str | None, int, int]], timestamped: bool, window_expiry: bool
) -> None:
    """``put`` and ``fetch_at`` inline the window key, the ``ts ‖ value`` bytes, the changelog record and the
    segment's liveness for the common case; any sequence of puts (tombstones, values serialized to null, negative and
    extreme window starts and value timestamps, expired segments) must leave the same segments, changelog records,
    drops and stream time, and read the same, as the change logger's rule."""
    (fast, fast_sink, fast_drops), (ref, ref_sink, ref_drops) = _window_pair(timestamped, window_expiry)
    for key, inner, value_ts, start in ops:
        value: object = inner
        if timestamped:
            value = None if inner is None else ValueAndTimestamp(inner, value_ts)
        for store, put in ((fast, WindowStore.put), (ref, _reference_put)):
            assert store.fetch_at(key, start) == _reference_fetch_at(store, key, start)
            put(store, key, value, start)  # type: ignore[operator]
    assert fast_sink.records == ref_sink.records
    assert fast_drops == ref_drops
    assert fast.segments.observed_stream_time == ref.segments.observed_stream_time
    assert fast.segments.segment_ids() == ref.segments.segment_ids()
    for seg in fast.segments.segment_ids():
        assert list(fast.segments.segment(seg).range(None, None)) == list(ref.segments.segment(seg).range(None, None))  # type: ignore[union-attr]
    for key, _inner, _ts, start in ops:
        assert fast.fetch_at(key, start) == ref.fetch_at(key, start) == _reference_fetch_at(fast, key, start)


def test_window_store_put_refuses_what_the_change_logger_refuses() -> None:
    store = window_store(Sink())
    with pytest.raises(StateError, match="does not fit in a Java long"):
        store.put("a", "v", 1 << 63)
    with pytest.raises(StateError, match="key cannot be null"):
        store.put(None, "v", 0)  # type: ignore[arg-type]
    segments = in_memory_segments("w", 5_000, 1_000, persistent=False)
    timestamped: TimestampedWindowStore[str, str] = TimestampedWindowStore(
        "w", segments, serde_for("String"), serde_for("String"), window_size_ms=500, context=context(Sink())
    )
    with pytest.raises(StateError, match="needs the value's timestamp"):
        timestamped.put("a", ValueAndTimestamp("v", None), 0)  # type: ignore[arg-type]
    with pytest.raises(StateError, match="does not fit in a Java long"):
        timestamped.put("a", ValueAndTimestamp("v", 1 << 63), 0)
    timestamped.put("a", ValueAndTimestamp("v", 1), 0)
    segments.segment(0).put(window_key(b"a", 0, 0), b"1234567")  # type: ignore[union-attr]
    with pytest.raises(StateError, match="has no 8-byte timestamp"):
        timestamped.fetch_at("a", 0)


def _window_key(key: int, start: int) -> bytes:
    """A window store's key: the record key, the window start, a sequence number (``WindowKeySchema``)."""
    return bytes([key]) + struct.pack(">qi", start, 0)


def _segment_entries(segments: SegmentedBytesStore) -> dict[int, list[tuple[bytes, bytes]]]:
    return {s: list(segments.segment(s).range(None, None)) for s in segments.segment_ids()}  # type: ignore[union-attr]


def _rising(moves: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(key, move, value) as (key, timestamp, value): timestamps that mostly rise, some late (never below 0: a
    window starts at 0 or after)."""
    now, puts = 0, []
    for key, move, value in moves:
        now += max(move, 0)
        puts.append((key, max(now + min(move, 0), 0), value))
    return puts


#: Puts of keys 0-5 whose timestamps mostly rise by up to a segment interval, some late by up to one and a half.
_SETTLE_PUTS = st.lists(
    st.tuples(
        st.integers(0, 5), st.sampled_from([0, 7_000, 14_000, 21_000, -7_000, -28_000, -42_000]), st.integers(0, 3)
    ),
    max_size=40,
).map(_rising)


@given(
    restored=_SETTLE_PUTS,
    puts=_SETTLE_PUTS,
    count=st.integers(1, 3),
    retention=st.sampled_from([20_000, 45_000, 60_000, 150_000]),
)
@example(restored=[], puts=[(1, 35_000, 0), (1, 28_000, 0), (1, 56_000, 0)], count=1, retention=20_000)
@example(
    restored=[(2, 0, 1), (3, 35_000, 1)],
    puts=[(1, 58_000, 0), (1, 72_000, 0), (1, 37_000, 0)],
    count=2,
    retention=45_000,
)
@example(  # the last creation leaves segment 1; the time then passes 60 s, and a refused put at 0 s follows
    restored=[],
    puts=[(1, 35_000, 0), (1, 61_000, 0), (1, 84_000, 0), (1, 0, 0)],
    count=2,
    retention=20_000,
)
@settings(max_examples=300, deadline=None)
def test_settling_the_shards_segments_leaves_what_puts_in_order_leave(
    restored: list[tuple[int, int, int]], puts: list[tuple[int, int, int]], count: int, retention: int
) -> None:
    """A split task's merged window store (issue #29): each key shard keeps every segment it creates, the merge
    writes the others' last writes into shard 0's store and settles it with the task's puts in order; the segments
    and entries must be those of the unsplit store, which destroyed expired segments at each creation. Some puts
    fall in a segment already expired, as a join window's late records do (and an aggregate's records older than
    its store's restored stream time): the store refuses them, creating nothing, and settling must not count them as
    creations."""

    def restore(segments: SegmentedBytesStore) -> None:
        segments.write_all([(_window_key(k, t), bytes([v]), t) for k, t, v in restored])

    # a segment interval the retention is not a multiple of: the stream time can pass a cut-off with no creation
    task = in_memory_segments("w", retention, 30_000, persistent=True)
    restore(task)
    live, times = [], []
    later = max(max((t for _, t, _ in restored), default=0) - 30_000, 0)  # the run goes on from the restored window
    for key, timestamp, value in ((k, t + later, v) for k, t, v in puts):
        times.append(timestamp)
        if task.put(_window_key(key, timestamp), bytes([value]), timestamp):
            live.append((key, timestamp, value))
    shards = [in_memory_segments("w", retention, 30_000, persistent=True) for _ in range(count)]
    for shard in shards:
        restore(shard)
    before = shards[0].segment_ids(), shards[0].observed_stream_time
    for shard in shards:
        shard.keeps_expired_segments = True
    for key, timestamp, value in live:
        assert shards[key % count].put(_window_key(key, timestamp), bytes([value]), timestamp)
    merged = shards[0]
    last = {(key, timestamp): (key, timestamp, value) for key, timestamp, value in live if key % count != 0}
    merged.write_unchecked([(_window_key(k, t), bytes([v]), t) for k, t, v in last.values()])
    merged.settle(*before, times)
    assert merged.segment_ids() == task.segment_ids()
    assert _segment_entries(merged) == _segment_entries(task)
