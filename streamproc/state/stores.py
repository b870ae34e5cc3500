"""State stores as a processor sees them: key-value, timestamped key-value, window, timestamped window and session.

Kafka Streams layers a store as metered (serdes) → change-logging → bytes store (``SI/MeteredKeyValueStore``,
``SI/ChangeLoggingKeyValueBytesStore``, ``SI/RocksDBStore``/``SI/InMemoryKeyValueStore``); streamproc keeps the same
split with fewer classes:

- a **bytes store** (:class:`KeyValueBytesStore`): sorted ``bytes → bytes``, either :class:`InMemoryKeyValueBytesStore`
  (``InMemoryKeyValueStore``'s ``TreeMap``) or the RocksDB one in :mod:`streamproc.state.rocksdb_store`;
- a **segmented bytes store** (:class:`SegmentedBytesStore`) for window and session stores: one bytes store per time
  segment, with ``AbstractSegments``' liveness rule (records of expired segments are dropped, expired segments
  destroyed);
- the **typed stores** a processor uses (:class:`KeyValueStore`, :class:`TimestampedKeyValueStore`,
  :class:`WindowStore`, :class:`TimestampedWindowStore`, :class:`SessionStore`): serdes with the changelog topic as
  the serde topic (``StateSerdes``), the store/changelog bytes of :mod:`streamproc.state.changelog`, and one
  changelog record per write sent to a :class:`ChangelogSink` (``ProcessorContextImpl.logChange``).

Record caching (``CachingKeyValueStore``, on by default for DSL stores) is not modelled: every write is logged at
once, as Kafka Streams does with caching disabled (the Processor API default, or ``statestore.cache.max.bytes=0``).
In-memory window/session stores reuse the segmented layout with in-memory segments; Kafka's ``InMemoryWindowStore``
expires per window rather than per segment, so an expired window stays in memory here until its segment goes; every
read clamps to ``observedStreamTime - retention + 1`` (as both Kafka stores do), so what a processor sees agrees.
"""

from __future__ import annotations

import bisect
import logging
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from streamproc.engine.dropped_records import REASON_EXPIRED_SEGMENT
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import Serde
from streamproc.engine.slotted_init import fast_frozen_init
from streamproc.errors import StateError
from streamproc.state import store_encoding
from streamproc.state.changelog import ChangelogRecord, LoggedChange, WindowStoreChangeLogger, session_put
from streamproc.state.changelog import key_value_put as _kv_change
from streamproc.state.changelog import timestamped_key_value_write as _tkv_write
from streamproc.state.store_layout import segment_id, segment_ids_of
from streamproc.state.store_type import StoreType

LOG = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

#: ``ConsumerRecord.NO_TIMESTAMP``: ``observedStreamTime`` of a freshly opened segmented store.
NO_TIMESTAMP = -1
#: Largest Java int: the upper seqnum of a window key range (``WindowKeySchema.upperRangeFixedSize``).
_MAX_SEQNUM = 0x7FFFFFFF
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: ``ts ‖ value``'s 8-byte big-endian timestamp (``store_encoding``), bound once for the timestamped store's hot path.
_pack_long = struct.Struct(">q").pack
_unpack_long_from = struct.Struct(">q").unpack_from
#: A window store key's ``int64_be(window start) ‖ int32_be(seqnum)`` suffix (``store_encoding.window_store_key``).
_pack_start_seqnum = struct.Struct(">qi").pack

RawRecord = ConsumerRecord[bytes | None, bytes | None]


# -- values --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValueAndTimestamp(Generic[V]):
    """``state.ValueAndTimestamp``: a value and the timestamp of the record that last wrote it."""

    value: V
    timestamp: int

    @staticmethod
    def make(value: V | None, timestamp: int) -> ValueAndTimestamp[V] | None:
        """``ValueAndTimestamp.make``: ``None`` for a ``None`` value (Kafka's ``null``)."""
        return None if value is None else ValueAndTimestamp(value, timestamp)


fast_frozen_init(ValueAndTimestamp)  # built on every timestamped store read


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A window ``[start, end)`` (``kstream.internals.TimeWindow``; sessions use ``SessionWindow``, both ends in)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Windowed(Generic[K]):
    """``kstream.Windowed``: a key and its window."""

    key: K
    window: TimeWindow

    def __str__(self) -> str:
        """``Windowed#toString()``, ``[key@start/end]``: a port of ``toStream((w, v) -> w.toString())`` keeps keys."""
        return f"[{self.key}@{self.window.start}/{self.window.end}]"


fast_frozen_init(TimeWindow)  # built per windowed update (a windowed aggregation's every record)
fast_frozen_init(Windowed)


# -- changelog plumbing ----------------------------------------------------------------------------------------------


class ChangelogSink(Protocol):
    """Receives the changelog record of every store write (``ProcessorContextImpl.logChange``)."""

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None: ...


def _no_record_context() -> int:
    raise StateError(
        "a state store was written outside a task: no record context gives the changelog record its timestamp; "
        "attach the store's ProcessorStateManager to the task (ProcessorStateManager.attach) before processing"
    )


def _outside_a_task(_reason: str) -> None:
    """A store written outside a task has no task ``dropped-records`` sensor to count a refused put in."""


class StoreContext:
    """What a store needs from its task: the record timestamp, where its changelog records go, and the task's
    ``dropped-records`` sensor.

    ``ProcessorStateManager`` fills it in; ``record_timestamp`` reads the task's current ``ProcessorRecordContext``
    (``context.recordContext().timestamp()`` in ``ChangeLogging*BytesStore.log``); ``record_dropped(reason)`` counts a
    put the store refused in the task's sensor at the current record's position (Kafka's window and session stores
    hold ``TaskMetrics.droppedRecordsSensor`` as their ``expiredRecordSensor``).
    """

    __slots__ = ("changelog_partition", "record_dropped", "record_timestamp", "sink", "written")

    def __init__(
        self,
        changelog_partition: TopicPartition | None = None,
        sink: ChangelogSink | None = None,
        record_timestamp: Callable[[], int] = _no_record_context,
        record_dropped: Callable[[str], None] = _outside_a_task,
    ) -> None:
        self.changelog_partition = changelog_partition
        self.sink = sink
        self.record_timestamp = record_timestamp
        self.record_dropped = record_dropped
        self.written = False


# -- bytes stores ----------------------------------------------------------------------------------------------------


class KeyValueBytesStore(Protocol):
    """A sorted ``bytes → bytes`` store (bytewise order, as RocksDB's default comparator and ``Bytes.compareTo``)."""

    @property
    def persistent(self) -> bool: ...

    def get(self, key: bytes) -> bytes | None: ...

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """``get`` of each key, in order, in one call (RocksDB's ``multiGet``): a columnar task looks up the keys a
        chunk brings without a call per key or a scan of the whole store."""
        ...

    def put(self, key: bytes, value: bytes | None) -> None:
        """``value`` ``None`` deletes ``key``."""
        ...

    def write_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Apply puts and deletes in order, as one batch where the store supports it (restore path)."""
        ...

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with ``from_key <= key <= to_key`` (``None`` = unbounded), ascending."""
        ...

    def approximate_num_entries(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def destroy(self) -> None:
        """Close and delete the store's data (an expired segment, a wiped task)."""
        ...


class InMemoryKeyValueBytesStore:
    """``InMemoryKeyValueStore``: a map kept sorted lazily; ranges iterate a snapshot of the matching entries."""

    __slots__ = ("_data", "_sorted")

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._sorted: list[bytes] | None = None

    @property
    def persistent(self) -> bool:
        return False

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        return list(map(self._data.get, keys))

    def put(self, key: bytes, value: bytes | None) -> None:
        data = self._data
        if value is None:
            if data.pop(key, None) is not None:
                self._sorted = None
        else:
            if key not in data:
                self._sorted = None
            data[key] = value

    def write_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def _keys(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self._data)
        return self._sorted

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        keys = self._keys()
        lo = 0 if from_key is None else bisect.bisect_left(keys, from_key)
        hi = len(keys) if to_key is None else bisect.bisect_right(keys, to_key)
        data = self._data
        return iter([(key, data[key]) for key in keys[lo:hi]])

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        """Nothing to flush."""

    def close(self) -> None:
        """In-memory state is kept until the store object goes away (a closed in-memory store is gone in Kafka)."""

    def destroy(self) -> None:
        self._data.clear()
        self._sorted = None


class SegmentedBytesStore:
    """``AbstractRocksDBSegmentedBytesStore`` + ``AbstractSegments``: one bytes store per time segment.

    A write at ``timestamp`` raises ``observedStreamTime``; it lands in segment ``timestamp / interval`` only while
    that segment is live (``segment >= segmentId(observedStreamTime - retention)``), otherwise it is dropped with
    Kafka's "Skipping record for expired segment." warning. Creating a segment destroys the expired ones. On open,
    every existing segment is opened and none is deleted (``observedStreamTime`` starts unknown).

    ``window_expiry`` is the rule of Kafka's in-memory window and session stores (``InMemoryWindowStore#put``,
    ``InMemorySessionStore#put``), which expire per window, not per segment: a write is dropped when ``timestamp <=
    observedStreamTime - retention``, however young its segment.
    """

    def __init__(
        self,
        name: str,
        *,
        retention_ms: int,
        segment_interval_ms: int,
        segment_factory: Callable[[int], KeyValueBytesStore],
        existing_segments: Iterable[int] = (),
        persistent: bool,
        window_expiry: bool = False,
    ) -> None:
        if segment_interval_ms < 1:
            raise StateError(f"store {name}: segment interval {segment_interval_ms} ms must be positive")
        self.name = name
        self.retention_ms = retention_ms
        self.segment_interval_ms = segment_interval_ms
        self._factory = segment_factory
        self._persistent = persistent
        self._window_expiry = window_expiry
        self.observed_stream_time = NO_TIMESTAMP
        self.expired_records_dropped = 0
        #: A key shard of a split task (issue #29) keeps every segment it creates: it sees only its keys' puts, so
        #: its stream time at a segment's creation is not the task's; the merge destroys what the task would have
        #: (:meth:`settle`).
        self.keeps_expired_segments = False
        self._segments: dict[int, KeyValueBytesStore] = {}
        for segment in sorted(existing_segments):
            self._segments[segment] = segment_factory(segment)

    @property
    def persistent(self) -> bool:
        return self._persistent

    def segment_ids(self) -> list[int]:
        return sorted(self._segments)

    def segment(self, segment: int) -> KeyValueBytesStore | None:
        return self._segments.get(segment)

    def _observe(self, timestamp: int) -> bool:
        """Advance ``observedStreamTime`` to ``timestamp``; ``False`` if the per-window rule expires a write there."""
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp
        return not (self._window_expiry and timestamp <= self.observed_stream_time - self.retention_ms)

    def advance_stream_time(self, timestamp: int) -> None:
        """Raise ``observedStreamTime`` to ``timestamp``: a key shard restoring only its own keys of a changelog
        whose other records reach that time (``spark/shard_restore.py``)."""
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp

    def refuses_skipped_write(self, timestamp: int) -> bool:
        """A write that writes nothing (a null with duplicates kept): only the in-memory store still advances its
        stream time and refuses an expired one (``InMemoryWindowStore#put`` checks before it skips the null);
        ``RocksDBWindowStore`` never passes it down."""
        return self._window_expiry and not self._observe(timestamp)

    def _live_segment(self, timestamp: int) -> KeyValueBytesStore | None:
        """``getOrCreateSegmentIfLive`` with the stream time advanced to ``timestamp`` (the per-window rule first).

        Called on every window store write: :meth:`_observe` and :func:`segment_id` are inlined for non-negative
        times (Java's division is then Python's floor division); a negative one goes through them."""
        observed = self.observed_stream_time
        if timestamp > observed:
            self.observed_stream_time = observed = timestamp
        oldest = observed - self.retention_ms
        if self._window_expiry and timestamp <= oldest:
            return None
        interval = self.segment_interval_ms
        if timestamp >= 0 and oldest >= 0:
            seg, min_live = timestamp // interval, oldest // interval
        else:
            seg, min_live = segment_id(timestamp, interval), segment_id(oldest, interval)
        if seg < min_live:
            return None
        store = self._segments.get(seg)
        if store is None:
            store = self._factory(seg)
            self._segments[seg] = store
            if not self.keeps_expired_segments:
                for expired in [s for s in self._segments if s < min_live]:
                    self._segments.pop(expired).destroy()
        return store

    def put(self, store_key: bytes, value: bytes | None, timestamp: int) -> bool:
        """Write into the segment of ``timestamp``; ``False`` if the segment has expired (record dropped)."""
        store = self._live_segment(timestamp)
        if store is None:
            self.expired_records_dropped += 1
            LOG.warning("Skipping record for expired segment. store=%s timestamp=%s", self.name, timestamp)
            return False
        store.put(store_key, value)
        return True

    def write_all(self, entries: Sequence[tuple[bytes, bytes | None, int]]) -> None:
        """``restoreAllInternal``: group the entries per live segment, one batch per segment.

        A segmented store first advances ``observedStreamTime`` to the batch's latest timestamp
        (``getWriteBatches``), so no entry is written into a segment the batch itself expires; the in-memory stores
        restore record by record."""
        if not self._window_expiry and entries:
            self.observed_stream_time = max(self.observed_stream_time, max(ts for _, _, ts in entries))
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        stores: dict[int, KeyValueBytesStore] = {}
        for key, value, timestamp in entries:
            store = self._live_segment(timestamp)
            if store is None:
                self.expired_records_dropped += 1
                continue
            seg = segment_id(timestamp, self.segment_interval_ms)
            stores[seg] = store
            batches.setdefault(seg, []).append((key, value))
        for seg, batch in batches.items():
            if seg in self._segments:
                stores[seg].write_all(batch)

    def write_final(
        self, put_timestamps: Sequence[int] | Any, entries: Sequence[tuple[bytes, bytes | None, int]]
    ) -> None:
        """The store after puts at ``put_timestamps`` (in order) whose last values are ``entries`` (store key, value
        or ``None``, timestamp), without writing each put: the same ``observedStreamTime``, the same segments
        created and destroyed in the same order (a segment is created at its first put, with the stream time of
        that put), each entry written into its segment if that still lives (a columnar task's store,
        ``spark/columnar/window.py``). The caller guarantees that no put falls in an expired segment (it would be
        dropped one by one); one that would raises :class:`StateError`."""
        import numpy as np

        stamps = np.asarray(put_timestamps, dtype=np.int64)
        if len(stamps):
            times, refused = self.refused_puts(stamps, self.observed_stream_time)
            if refused.any():
                at = int(stamps[int(np.argmax(refused))])
                raise StateError(f"store {self.name}: a put at {at} falls in an expired segment")
            _, first = np.unique(segment_ids_of(stamps, self.segment_interval_ms), return_index=True)
            for index in np.sort(first).tolist():
                self.observed_stream_time = int(times[index])
                self._live_segment(int(stamps[index]))
            self.observed_stream_time = int(times[-1])
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for key, value, timestamp in entries:
            batches.setdefault(segment_id(timestamp, self.segment_interval_ms), []).append((key, value))
        for seg, batch in batches.items():
            store = self._segments.get(seg)
            if store is not None:
                store.write_all(batch)

    def write_unchecked(self, entries: Sequence[tuple[bytes, bytes | None, int]]) -> None:
        """Write ``entries`` (store key, value or ``None``, timestamp) into their segments, creating any missing one,
        with no stream time and nothing expired: a split task's merge puts the other shards' last writes into shard
        0's store, then :meth:`settle` expires what the unsplit task would have."""
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for key, value, timestamp in entries:
            batches.setdefault(segment_id(timestamp, self.segment_interval_ms), []).append((key, value))
        for seg, batch in sorted(batches.items()):
            store = self._segments.get(seg)
            if store is None:
                store = self._segments[seg] = self._factory(seg)
            store.write_all(batch)

    def refused_puts(self, put_timestamps: Any, stream_time: int) -> tuple[Any, Any]:
        """Per put at ``put_timestamps`` (numpy, in order) into this store at ``stream_time``: the stream time with
        it, and whether the store refuses it as expired (:meth:`_live_segment`'s rule: below the live segment, or
        for the per-window rule at or below ``stream time - retention``). A refused put never moves the stream time
        (it is below it)."""
        import numpy as np

        stamps = np.asarray(put_timestamps, dtype=np.int64)
        if not len(stamps):
            return stamps, np.zeros(0, dtype=bool)
        times = np.maximum.accumulate(np.maximum(stamps, stream_time))
        oldest = times - self.retention_ms
        refused = segment_ids_of(stamps, self.segment_interval_ms) < segment_ids_of(oldest, self.segment_interval_ms)
        if self._window_expiry:
            refused |= stamps <= oldest
        return times, refused

    def settle(self, restored_segments: Iterable[int], restored_stream_time: int, put_timestamps: Any) -> None:
        """Destroy the segments the unsplit task would have destroyed, in a store holding every segment its restore
        left (``restored_segments``, at ``restored_stream_time``) and every segment its puts (at ``put_timestamps``,
        in the task's order) created, none destroyed since (a split task's merged store, issue #29).

        A segment is created at its first put when it does not exist, and that creation destroys every segment below
        the live one of the stream time then (:meth:`_live_segment`). The cut-off only rises, so what is left is
        every segment at or above the last creation's cut-off; with no creation, nothing was destroyed. A put the
        store refused as expired creates nothing: a stream-stream join's late record, or a windowed or session
        aggregate's record older than the stream time its store was restored to (within a run, an aggregate's open
        windows start within the retention)."""
        import numpy as np

        stamps = np.asarray(put_timestamps, dtype=np.int64)
        restored = set(restored_segments)
        times, refused = self.refused_puts(stamps, restored_stream_time)
        segments = segment_ids_of(stamps, self.segment_interval_ms)
        _, first = np.unique(np.where(refused, _LONG_MIN, segments), return_index=True)
        created = [int(i) for i in first if not refused[i] and int(segments[i]) not in restored]
        if created:
            last = max(created)
            cutoff = segment_id(int(times[last]) - self.retention_ms, self.segment_interval_ms)
            for expired in [s for s in self._segments if s < cutoff]:
                self._segments.pop(expired).destroy()
        if len(times):
            self.observed_stream_time = max(self.observed_stream_time, int(times[-1]))

    def remove(self, store_key: bytes, timestamp: int) -> None:
        """``AbstractRocksDBSegmentedBytesStore#remove``: advance the stream time, delete from the key's segment if
        it exists; no segment is created and nothing is counted as dropped (``InMemorySessionStore#remove`` does not
        advance the stream time)."""
        if not self._window_expiry:
            self._observe(timestamp)
        store = self._segments.get(segment_id(timestamp, self.segment_interval_ms))
        if store is not None:
            store.put(store_key, None)

    def get(self, store_key: bytes, timestamp: int) -> bytes | None:
        """``AbstractRocksDBSegmentedBytesStore.get`` (and ``InMemorySessionStore.fetchSession``): nothing for a
        ``timestamp`` (the key's segment time: window start, session end) before :meth:`min_live_time`, though its
        segment may still exist (a session's ``fetchSession``, checked in ``test_reference_dsl_ops.py``)."""
        if timestamp < self.min_live_time():
            return None
        store = self._segments.get(segment_id(timestamp, self.segment_interval_ms))
        return None if store is None else store.get(store_key)

    def min_live_time(self) -> int:
        """``observedStreamTime - retention + 1``: earlier windows are no longer returned by fetches."""
        if self.observed_stream_time == NO_TIMESTAMP:
            return -(1 << 63)
        return self.observed_stream_time - self.retention_ms + 1

    def segments_between(self, time_from: int, time_to: int) -> list[KeyValueBytesStore]:
        """``AbstractSegments.segments(from, to)``: existing segments overlapping ``[from, to]``, oldest first."""
        lo = segment_id(time_from, self.segment_interval_ms)
        hi = segment_id(time_to, self.segment_interval_ms)
        return [self._segments[s] for s in sorted(self._segments) if lo <= s <= hi]

    def all_segments(self) -> list[KeyValueBytesStore]:
        return [self._segments[s] for s in sorted(self._segments)]

    def approximate_num_entries(self) -> int:
        return sum(store.approximate_num_entries() for store in self._segments.values())

    def flush(self) -> None:
        for store in self._segments.values():
            store.flush()

    def close(self) -> None:
        for store in self._segments.values():
            store.close()

    def destroy(self) -> None:
        for store in self._segments.values():
            store.destroy()
        self._segments.clear()


# -- typed stores ----------------------------------------------------------------------------------------------------


class StateStore:
    """``processor.StateStore``: name, persistence, flush/close, and the restore entry point used by the manager."""

    store_type: StoreType

    def __init__(self, name: str, context: StoreContext | None) -> None:
        self.name = name
        self.context = context if context is not None else StoreContext()
        partition = self.context.changelog_partition
        #: The serde topic (``StateSerdes.topic``): the changelog topic, or ``<store>`` when not logged.
        self.serde_topic = partition.topic if partition is not None else name

    @property
    def persistent(self) -> bool:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def destroy(self) -> None:
        raise NotImplementedError

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        """Apply changelog records (non-null keys, in offset order) as ``RecordConverters`` + ``restoreAll`` do."""
        raise NotImplementedError

    def approximate_num_entries(self) -> int:
        raise NotImplementedError

    def _log(self, change: LoggedChange) -> None:
        self._log_record(change.changelog)

    def _log_record(self, record: ChangelogRecord) -> None:
        ctx = self.context
        ctx.written = True
        if ctx.sink is not None and ctx.changelog_partition is not None:
            ctx.sink.send(self.name, ctx.changelog_partition, record)


class _Storage(Protocol):
    """What a store delegates its life cycle to: its bytes store, or its segments."""

    def approximate_num_entries(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def destroy(self) -> None: ...


class _SerdeStore(StateStore, Generic[K, V]):
    def __init__(self, name: str, key_serde: Serde[K], value_serde: Serde[V], context: StoreContext | None) -> None:
        super().__init__(name, context)
        self.key_serde = key_serde
        self.value_serde = value_serde

    def _storage(self) -> _Storage:
        raise NotImplementedError

    def approximate_num_entries(self) -> int:
        return self._storage().approximate_num_entries()

    def flush(self) -> None:
        self._storage().flush()

    def close(self) -> None:
        self._storage().close()

    def destroy(self) -> None:
        self._storage().destroy()

    def _key(self, key: K) -> bytes:
        if key is None:
            raise StateError(f"store {self.name}: key cannot be null (Kafka Streams throws NullPointerException)")
        data = self.key_serde.serializer.serialize(self.serde_topic, key)
        if data is None:
            raise StateError(f"store {self.name}: key {key!r} serialized to null")
        return data

    def _value(self, value: V | None) -> bytes | None:
        return None if value is None else self.value_serde.serializer.serialize(self.serde_topic, value)

    def _from_key(self, data: bytes) -> K:
        return self.key_serde.deserializer.deserialize(self.serde_topic, data)  # type: ignore[return-value]

    def _from_value(self, data: bytes | None) -> V | None:
        return None if data is None else self.value_serde.deserializer.deserialize(self.serde_topic, data)


class _KeyValueBytesBacked(_SerdeStore[K, V]):
    """A typed key-value store over one :class:`KeyValueBytesStore` (plain or timestamped values)."""

    def __init__(
        self,
        name: str,
        bytes_store: KeyValueBytesStore,
        key_serde: Serde[K],
        value_serde: Serde[V],
        context: StoreContext | None = None,
    ) -> None:
        super().__init__(name, key_serde, value_serde, context)
        self.bytes_store = bytes_store

    @property
    def persistent(self) -> bool:
        return self.bytes_store.persistent

    def _storage(self) -> _Storage:
        return self.bytes_store


class KeyValueStore(_KeyValueBytesBacked[K, V]):
    """``state.KeyValueStore`` over a bytes store: ``get``/``put``/``put_if_absent``/``delete``/``range``/``all``."""

    store_type = StoreType.KEY_VALUE

    def _write(self, key: bytes, value: bytes | None) -> None:
        change = _kv_change(key, value, self.context.record_timestamp())
        self.bytes_store.put(key, value)
        self._log(change)

    def get(self, key: K) -> V | None:
        return self._from_value(self.bytes_store.get(self._key(key)))

    def put(self, key: K, value: V | None) -> None:
        """``put``; a ``None`` value deletes (and logs a tombstone)."""
        self._write(self._key(key), self._value(value))

    def put_if_absent(self, key: K, value: V | None) -> V | None:
        raw_key = self._key(key)
        old = self.bytes_store.get(raw_key)
        if old is None:
            self._write(raw_key, self._value(value))
            return None
        return self._from_value(old)

    def put_all(self, entries: Iterable[tuple[K, V | None]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: K) -> V | None:
        raw_key = self._key(key)
        old = self.bytes_store.get(raw_key)
        self._write(raw_key, None)
        return self._from_value(old)

    def range(self, key_from: K | None, key_to: K | None) -> Iterator[tuple[K, V]]:
        """Entries with ``key_from <= key <= key_to`` in serialized-key order (``None`` = open end)."""
        lo = None if key_from is None else self._key(key_from)
        hi = None if key_to is None else self._key(key_to)
        if lo is not None and hi is not None and lo > hi:
            LOG.warning(
                "Returning empty iterator for fetch with invalid key range: from > to. This may be due to range "
                "arguments set in the wrong order, or serdes that don't preserve ordering when lexicographically "
                "comparing the serialized bytes. store=%s",
                self.name,
            )
            return iter(())
        return self._decoded(self.bytes_store.range(lo, hi))

    def all(self) -> Iterator[tuple[K, V]]:
        return self._decoded(self.bytes_store.range(None, None))

    def _decoded(self, entries: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[K, V]]:
        for key, value in entries:
            yield self._from_key(key), self._from_value(value)  # type: ignore[misc]

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        self.bytes_store.write_all((r.key, r.value) for r in records)  # type: ignore[misc]


class TimestampedKeyValueStore(_KeyValueBytesBacked[K, V]):
    """``state.TimestampedKeyValueStore``: values are :class:`ValueAndTimestamp`; stored as ``ts ‖ value``.

    ``get``/``get_for_update`` and ``put``/``put_serialized`` run once or twice per record of every count and
    aggregation, so they are written out in one frame each: the key serde, the bytes store, the ``ts ‖ value``
    encoding of :mod:`streamproc.state.store_encoding` and the changelog record of
    :func:`~streamproc.state.changelog.timestamped_key_value_write`, inlined for the common case (a non-null value
    with a timestamp in Java's long range). Everything else (a tombstone, a value that serializes to null, an
    out-of-range timestamp, a value too short to hold a timestamp) goes through those definitions, which stay the
    rules; ``tests/unit/state/test_stores.py`` checks both paths give the same store bytes and changelog records.
    """

    store_type = StoreType.TIMESTAMPED_KEY_VALUE

    def _decode(self, stored: bytes | None) -> ValueAndTimestamp[V] | None:
        if stored is None:
            return None
        timestamp, raw = store_encoding.split_value_and_timestamp(stored)
        value = self.value_serde.deserializer.deserialize(self.serde_topic, raw)
        return None if value is None else ValueAndTimestamp(value, timestamp)  # ValueAndTimestamp.make

    def _write(self, key: bytes, value: ValueAndTimestamp[V] | None) -> None:
        inner = None if value is None else value.value
        raw = None if inner is None else self.value_serde.serializer.serialize(self.serde_topic, inner)
        if raw is not None:
            timestamp = value.timestamp  # type: ignore[union-attr]  # raw is None when value is
            if type(timestamp) is int and _LONG_MIN <= timestamp <= _LONG_MAX:
                # store_encoding.value_and_timestamp and timestamped_key_value_write, inlined (see the class)
                self.bytes_store.put(key, _pack_long(timestamp) + raw)
                context = self.context
                context.written = True
                sink = context.sink
                if sink is not None and (partition := context.changelog_partition) is not None:
                    sink.send(self.name, partition, ChangelogRecord(key, raw, timestamp))
                return
            stored, record = _tkv_write(key, raw, timestamp, timestamp)
        else:
            # The record timestamp stamps only a tombstone's changelog record: read (a call per write) only then.
            stored, record = _tkv_write(key, None, None, self.context.record_timestamp())
        self.bytes_store.put(key, stored)
        self._log_record(record)

    #: ``put`` of a key serialized by :meth:`get_for_update` (the same bytes store write and changelog record).
    put_serialized = _write

    def get(self, key: K) -> ValueAndTimestamp[V] | None:
        # _key and _decode inlined (see the class)
        raw_key = None if key is None else self.key_serde.serializer.serialize(self.serde_topic, key)
        if raw_key is None:
            raw_key = self._key(key)  # raises StateError: null key, or a key that serialized to null
        stored = self.bytes_store.get(raw_key)
        if stored is None:
            return None
        if len(stored) < store_encoding.TIMESTAMP_SIZE:
            return self._decode(stored)  # raises StateError
        value = self.value_serde.deserializer.deserialize(self.serde_topic, stored[8:])
        return None if value is None else ValueAndTimestamp(value, _unpack_long_from(stored)[0])

    def put(self, key: K, value: ValueAndTimestamp[V] | None) -> None:
        raw_key = None if key is None else self.key_serde.serializer.serialize(self.serde_topic, key)
        if raw_key is None:
            raw_key = self._key(key)  # raises StateError
        self._write(raw_key, value)

    def get_for_update(self, key: K) -> tuple[bytes, ValueAndTimestamp[V] | None]:
        """``get``, and the serialized key for the :meth:`put_serialized` that follows (a read-modify-write such as
        ``KStreamAggregate``'s, once per record): the key is serialized once instead of twice, which for Kafka's
        deterministic serdes gives the same bytes ``MeteredKeyValueStore`` serializes for its ``get`` and ``put``."""
        raw_key = None if key is None else self.key_serde.serializer.serialize(self.serde_topic, key)
        if raw_key is None:
            raw_key = self._key(key)  # raises StateError
        stored = self.bytes_store.get(raw_key)
        if stored is None:
            return raw_key, None
        if len(stored) < store_encoding.TIMESTAMP_SIZE:
            return raw_key, self._decode(stored)  # raises StateError
        value = self.value_serde.deserializer.deserialize(self.serde_topic, stored[8:])
        return raw_key, None if value is None else ValueAndTimestamp(value, _unpack_long_from(stored)[0])

    def put_if_absent(self, key: K, value: ValueAndTimestamp[V] | None) -> ValueAndTimestamp[V] | None:
        raw_key = self._key(key)
        old = self.bytes_store.get(raw_key)
        if old is None:
            self._write(raw_key, value)
            return None
        return self._decode(old)

    def delete(self, key: K) -> ValueAndTimestamp[V] | None:
        raw_key = self._key(key)
        old = self.bytes_store.get(raw_key)
        self._write(raw_key, None)
        return self._decode(old)

    def range(self, key_from: K | None, key_to: K | None) -> Iterator[tuple[K, ValueAndTimestamp[V]]]:
        lo = None if key_from is None else self._key(key_from)
        hi = None if key_to is None else self._key(key_to)
        if lo is not None and hi is not None and lo > hi:
            return iter(())
        return self._decoded(self.bytes_store.range(lo, hi))

    def all(self) -> Iterator[tuple[K, ValueAndTimestamp[V]]]:
        return self._decoded(self.bytes_store.range(None, None))

    def _decoded(self, entries: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[K, ValueAndTimestamp[V]]]:
        for key, stored in entries:
            yield self._from_key(key), self._decode(stored)  # type: ignore[misc]

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        """``RecordConverters.rawValueToTimestampedValue``: prepend the changelog record's timestamp."""
        pack = struct.Struct(">q").pack
        entries = ((r.key, None if r.value is None else pack(r.timestamp) + r.value) for r in records)
        self.bytes_store.write_all(entries)  # type: ignore[arg-type]  # the manager passes non-null keys only


class WindowStore(_SerdeStore[K, V]):
    """``state.WindowStore``: ``put(key, value, window_start)``, ``fetch(key, from, to)``, ``fetch_all``, ``all``.

    Keys are ``WindowKeySchema`` store keys in the segment of the window start; ``retain_duplicates`` (stream-stream
    joins) numbers every put instead of overwriting. Fetches skip windows older than ``observedStreamTime -
    retention + 1`` as ``RocksDBWindowStore`` does.
    """

    store_type = StoreType.WINDOW

    def __init__(
        self,
        name: str,
        segments: SegmentedBytesStore,
        key_serde: Serde[K],
        value_serde: Serde[V],
        *,
        window_size_ms: int,
        retain_duplicates: bool = False,
        context: StoreContext | None = None,
    ) -> None:
        super().__init__(name, key_serde, value_serde, context)
        self.segments = segments
        self.window_size_ms = window_size_ms
        self.retain_duplicates = retain_duplicates
        self.change_logger = WindowStoreChangeLogger(
            retain_duplicates=retain_duplicates, timestamped=self.store_type.timestamped
        )

    @property
    def persistent(self) -> bool:
        return self.segments.persistent

    def _encode_value(self, value: Any) -> tuple[bytes | None, int | None]:
        return self._value(value), None

    def _decode_value(self, stored: bytes) -> Any:
        return self._from_value(stored)

    def put(self, key: K, value: Any, window_start: int) -> None:
        """``put(key, value, windowStart)``; ``None`` deletes the window (and logs a null).

        The common case (no duplicates kept, a non-null value, times in Java's long range) writes the store and its
        changelog record in this frame: :meth:`WindowStoreChangeLogger.put`'s store key, ``ts ‖ value`` bytes and
        changelog record, without a :class:`LoggedChange` per write (a windowed aggregation's every record). The rest
        goes through the change logger, which stays the rule; ``tests/unit/state/test_stores.py`` checks both paths
        give the same store bytes and changelog records. As in :class:`TimestampedKeyValueStore`, the record
        context's timestamp is read only where the changelog record takes it (not for a timestamped value), so a
        timestamped put outside a task no longer fails for want of a record context."""
        raw, value_timestamp = self._encode_value(value)
        raw_key = None if key is None else self.key_serde.serializer.serialize(self.serde_topic, key)  # _key
        if raw_key is None:
            raw_key = self._key(key)  # raises StateError
        timestamped = value_timestamp is not None
        if (
            raw is not None
            and not self.retain_duplicates
            and type(window_start) is int
            and _LONG_MIN <= window_start <= _LONG_MAX
            and (not timestamped or (type(value_timestamp) is int and _LONG_MIN <= value_timestamp <= _LONG_MAX))
            and timestamped is self.change_logger.timestamped
        ):
            context = self.context
            store_key = raw_key + _pack_start_seqnum(window_start, 0)  # store_encoding.window_store_key
            if timestamped:
                stored, timestamp = _pack_long(value_timestamp) + raw, value_timestamp
            else:
                stored, timestamp = raw, context.record_timestamp()
            if not self.segments.put(store_key, stored, window_start):
                context.record_dropped(REASON_EXPIRED_SEGMENT)
            context.written = True
            sink = context.sink
            if sink is not None and (partition := context.changelog_partition) is not None:
                sink.send(self.name, partition, ChangelogRecord(store_key, raw, timestamp))  # type: ignore[arg-type]
            return
        change = self.change_logger.put(
            raw_key, raw, window_start, self.context.record_timestamp(), value_timestamp=value_timestamp
        )
        if change.store_write is not None:
            kept = self.segments.put(change.store_write.key, change.store_write.value, window_start)
        else:
            kept = not self.segments.refuses_skipped_write(window_start)
        if not kept:
            self.context.record_dropped(REASON_EXPIRED_SEGMENT)
        self._log(change)

    def observe_put(self, key: K, value: Any, window_start: int) -> None:
        """A put another key shard of the task makes (issue #29): what of :meth:`put` every key's puts share, and
        nothing of the key's own. The store's stream time (which bounds every fetch and expires puts) and, with
        duplicates kept, its two seqnums (written into the store and changelog keys) advance as that put advances
        them; nothing is written, logged or dropped. A put that would raise (a value or key its serializers refuse)
        advances nothing, as in the task, where it raises before its store is reached."""
        try:
            raw, _ = self._encode_value(value)
            if key is None or self.key_serde.serializer.serialize(self.serde_topic, key) is None:
                return
        except Exception:  # noqa: BLE001 - the owner's put raises it, and the owner's handler decides
            return
        if self.change_logger.number(raw is None):
            self.segments.advance_stream_time(window_start)  # _live_segment's first step, refused or not
        else:
            self.segments.refuses_skipped_write(window_start)  # an in-memory store observes a skipped null

    def fetch_at(self, key: K, window_start: int) -> Any:
        """``fetch(key, time)``: the value of one window (seqnum 0), ``None`` if absent or expired.

        Once per record of a windowed aggregation: :meth:`SegmentedBytesStore.min_live_time`,
        :func:`~streamproc.state.store_encoding.window_store_key` and the segment lookup inlined for a window start
        in ``[0, Long.MAX_VALUE]``; any other goes through them."""
        segments = self.segments
        observed = segments.observed_stream_time
        if window_start < (_LONG_MIN if observed == NO_TIMESTAMP else observed - segments.retention_ms + 1):
            return None  # min_live_time()
        raw_key = None if key is None else self.key_serde.serializer.serialize(self.serde_topic, key)  # _key
        if raw_key is None:
            raw_key = self._key(key)  # raises StateError
        if type(window_start) is int and 0 <= window_start <= _LONG_MAX:
            segment = segments.segment(window_start // segments.segment_interval_ms)
            stored = None if segment is None else segment.get(raw_key + _pack_start_seqnum(window_start, 0))
        else:
            stored = segments.get(store_encoding.window_store_key(raw_key, window_start, 0), window_start)
        return None if stored is None else self._decode_value(stored)

    def fetch(self, key: K, time_from: int, time_to: int) -> Iterator[tuple[int, Any]]:
        """``fetch(key, timeFrom, timeTo)``: (window start, value) for windows starting in ``[from, to]``."""
        raw_key = self._key(key)
        time_from = max(time_from, self.segments.min_live_time())
        if time_from > time_to:
            return iter(())
        lo = store_encoding.window_store_key(raw_key, time_from, 0)
        hi = store_encoding.window_store_key(raw_key, time_to, _MAX_SEQNUM)
        out: list[tuple[int, Any]] = []
        for segment in self.segments.segments_between(time_from, time_to):
            for store_key, stored in segment.range(lo, hi):
                parsed = store_encoding.parse_window_store_key(store_key)
                if parsed.key == raw_key and time_from <= parsed.window_start <= time_to:
                    out.append((parsed.window_start, self._decode_value(stored)))
        return iter(out)

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed[K], Any]]:
        """``fetchAll(timeFrom, timeTo)``: every window starting in ``[from, to]``."""
        time_from = max(time_from, self.segments.min_live_time())
        if time_from > time_to:
            return iter(())
        return self._windowed(self.segments.segments_between(time_from, time_to), time_from, time_to)

    def all(self) -> Iterator[tuple[Windowed[K], Any]]:
        return self._windowed(self.segments.all_segments(), self.segments.min_live_time(), _LONG_MAX)

    def _windowed(
        self, segments: list[KeyValueBytesStore], time_from: int, time_to: int
    ) -> Iterator[tuple[Windowed[K], Any]]:
        out: list[tuple[Windowed[K], Any]] = []
        for segment in segments:
            for store_key, stored in segment.range(None, None):
                parsed = store_encoding.parse_window_store_key(store_key)
                if time_from <= parsed.window_start <= time_to:
                    window = TimeWindow(parsed.window_start, parsed.window_start + self.window_size_ms)
                    out.append((Windowed(self._from_key(parsed.key), window), self._decode_value(stored)))
        return iter(out)

    def _storage(self) -> _Storage:
        return self.segments

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        timestamped = self.store_type.timestamped
        pack = struct.Struct(">q").pack
        entries: list[tuple[bytes, bytes | None, int]] = []
        for record in records:
            key: bytes = record.key  # type: ignore[assignment]
            value = record.value
            if timestamped and value is not None:
                value = pack(record.timestamp) + value
            entries.append((key, value, store_encoding.parse_window_store_key(key).window_start))
        self.segments.write_all(entries)


class TimestampedWindowStore(WindowStore[K, V]):
    """``state.TimestampedWindowStore``: values are :class:`ValueAndTimestamp`, stored as ``ts ‖ value``."""

    store_type = StoreType.TIMESTAMPED_WINDOW

    def _encode_value(self, value: Any) -> tuple[bytes | None, int | None]:
        if value is None:
            return None, None
        if not isinstance(value, ValueAndTimestamp):
            raise StateError(f"store {self.name}: a timestamped window store takes ValueAndTimestamp values")
        inner = value.value  # _value, inlined: once per windowed aggregation's record
        raw = None if inner is None else self.value_serde.serializer.serialize(self.serde_topic, inner)
        return raw, value.timestamp

    def _decode_value(self, stored: bytes) -> Any:
        if len(stored) < store_encoding.TIMESTAMP_SIZE:
            store_encoding.raw_value(stored)  # raises StateError
        value = self.value_serde.deserializer.deserialize(self.serde_topic, stored[8:])  # raw_value, inlined
        return None if value is None else ValueAndTimestamp(value, _unpack_long_from(stored)[0])  # make()


class SessionStore(_SerdeStore[K, V]):
    """``state.SessionStore``: sessions ``[start, end]`` keyed ``key ‖ end ‖ start``, segmented by the session END."""

    store_type = StoreType.SESSION

    def __init__(
        self,
        name: str,
        segments: SegmentedBytesStore,
        key_serde: Serde[K],
        value_serde: Serde[V],
        context: StoreContext | None = None,
    ) -> None:
        super().__init__(name, key_serde, value_serde, context)
        self.segments = segments

    @property
    def persistent(self) -> bool:
        return self.segments.persistent

    def put(self, session: Windowed[K], aggregate: V | None) -> None:
        """``put(Windowed<K>, AGG)``; ``None`` removes the session. A put into an expired segment is dropped and
        counted in the task's ``dropped-records`` (the changelog record is written all the same, as Kafka does)."""
        change = self._change(session, aggregate)
        assert change.store_write is not None
        if not self.segments.put(change.store_write.key, change.store_write.value, session.window.end):
            self.context.record_dropped(REASON_EXPIRED_SEGMENT)
        self._log(change)

    def remove(self, session: Windowed[K]) -> None:
        """``remove(Windowed<K>)``: a tombstone, through the segments' ``remove`` (never counted as dropped)."""
        change = self._change(session, None)
        assert change.store_write is not None
        self.segments.remove(change.store_write.key, session.window.end)
        self._log(change)

    def _change(self, session: Windowed[K], aggregate: V | None) -> LoggedChange:
        start, end = session.window.start, session.window.end
        return session_put(self._key(session.key), start, end, self._value(aggregate), self.context.record_timestamp())

    def fetch_session(self, key: K, session_start: int, session_end: int) -> V | None:
        """``fetchSession``: the session ``[session_start, session_end]`` of ``key``; ``None`` when there is none, or
        it ended before ``observedStreamTime - retention + 1`` (:meth:`SegmentedBytesStore.get`)."""
        stored = self.segments.get(
            store_encoding.session_store_key(self._key(key), session_start, session_end), session_end
        )
        return self._from_value(stored)

    def find_sessions(
        self, key: K, earliest_session_end: int, latest_session_start: int
    ) -> Iterator[tuple[Windowed[K], V]]:
        """``findSessions``: sessions of ``key`` with end >= ``earliest_session_end`` and start <= ``latest...``.

        Sessions that ended before ``observedStreamTime - retention + 1`` are not returned, even while their segment
        is still open (``AbstractRocksDBSegmentedBytesStore.fetch`` clamps the lower bound the same way).
        """
        raw_key = self._key(key)
        earliest_session_end = max(earliest_session_end, self.segments.min_live_time())
        lo = store_encoding.session_store_key(raw_key, 0, max(earliest_session_end, 0))
        hi = store_encoding.session_store_key(raw_key, _LONG_MAX, _LONG_MAX)
        out: list[tuple[Windowed[K], V]] = []
        for segment in self.segments.segments_between(max(earliest_session_end, 0), _LONG_MAX):
            for store_key, stored in segment.range(lo, hi):
                parsed = store_encoding.parse_session_store_key(store_key)
                if (
                    parsed.key == raw_key
                    and parsed.session_end >= earliest_session_end
                    and parsed.session_start <= latest_session_start
                ):
                    window = TimeWindow(parsed.session_start, parsed.session_end)
                    out.append((Windowed(key, window), self._from_value(stored)))  # type: ignore[arg-type]
        return iter(out)

    def fetch(self, key: K) -> Iterator[tuple[Windowed[K], V]]:
        """``fetch(key)``: every session of ``key``."""
        return self.find_sessions(key, 0, _LONG_MAX)

    def _storage(self) -> _Storage:
        return self.segments

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        entries: list[tuple[bytes, bytes | None, int]] = []
        for record in records:
            key: bytes = record.key  # type: ignore[assignment]
            entries.append((key, record.value, store_encoding.parse_session_store_key(key).session_end))
        self.segments.write_all(entries)
