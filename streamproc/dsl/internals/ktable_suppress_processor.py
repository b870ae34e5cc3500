"""``KTableSuppressProcessorSupplier``: ``suppress`` holds a table's updates in a buffer and emits each key's latest
update only later.

- ``until_window_closes`` (windowed tables): an entry's buffer time is its window's end; it is emitted once
  ``stream time - grace >= window end``, i.e. when no late record can change the window any more (the grace is the
  upstream windows' grace period). Tombstones are dropped (``safeToDropTombstones``).
- ``until_time_limit(wait)``: an entry's buffer time is the timestamp of the first update of its key still
  buffered; it is emitted once ``stream time - wait >= buffer time``. Tombstones are emitted.

Stream time is the largest timestamp of the updates this processor has seen. The buffer is the task's logged store
:class:`~streamproc.state.time_ordered_buffer.InMemoryTimeOrderedKeyValueChangeBuffer` (order, changelog and size
rules there): an update of a key already buffered replaces its value and keeps the entry's time and place; entries
leave in (buffer time, serialized key) order, each as the last update's key, ``Change(new, old)``, timestamp and
headers, forwarded under the record context of that update. Past ``max_records`` entries or ``max_bytes`` buffer
bytes the oldest entries are emitted early (``emitEarlyWhenFull``) or the task stops (``shutDownWhenFull``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, cast

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import ProcessorRecordContext, Record
from streamproc.engine.serdes import Deserializer, Serde, Serializer
from streamproc.errors import ProcessingError
from streamproc.state.stores import TimeWindow, Windowed
from streamproc.state.time_ordered_buffer import Eviction, InMemoryTimeOrderedKeyValueChangeBuffer

NO_TIMESTAMP = -1
#: ``BufferConfig`` without a bound (``Long.MAX_VALUE``).
UNBOUNDED = (1 << 63) - 1
_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")


class _TimeWindowedSerializer(Serializer[Windowed[Any]]):
    """``TimeWindowedSerializer``: the inner key's bytes, then the window start (8 bytes, big-endian)."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner.serializer

    def serialize(self, topic: str, data: Windowed[Any] | None) -> bytes | None:
        if data is None:
            return None
        return (self.inner.serialize(topic, data.key) or b"") + _LONG.pack(data.window.start)


class _TimeWindowedDeserializer(Deserializer[Windowed[Any]]):
    """``TimeWindowedDeserializer(inner, windowSize)``: the window is ``[start, start + size)``."""

    def __init__(self, inner: Serde[Any], window_size_ms: int) -> None:
        self.inner = inner.deserializer
        self.window_size_ms = window_size_ms

    def deserialize(self, topic: str, data: bytes | None) -> Windowed[Any] | None:
        if data is None:
            return None
        start: int = _LONG.unpack(data[-8:])[0]
        end = min(start + self.window_size_ms, UNBOUNDED)
        return Windowed(self.inner.deserialize(topic, data[:-8]), TimeWindow(start, end))


class _SessionWindowedSerializer(Serializer[Windowed[Any]]):
    """``SessionWindowedSerializer`` (``SessionKeySchema.toBinary``): key bytes, window end, window start."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner.serializer

    def serialize(self, topic: str, data: Windowed[Any] | None) -> bytes | None:
        if data is None:
            return None
        return (self.inner.serialize(topic, data.key) or b"") + _TWO_LONGS.pack(data.window.end, data.window.start)


class _SessionWindowedDeserializer(Deserializer[Windowed[Any]]):
    """``SessionWindowedDeserializer`` (``SessionKeySchema.from``)."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner.deserializer

    def deserialize(self, topic: str, data: bytes | None) -> Windowed[Any] | None:
        if data is None:
            return None
        end, start = _TWO_LONGS.unpack(data[-16:])
        return Windowed(self.inner.deserialize(topic, data[:-16]), TimeWindow(start, end))


_WINDOWED = (_TimeWindowedSerializer, _SessionWindowedSerializer)


@dataclass(frozen=True, slots=True)
class WindowedKeys:
    """A windowed table's key serde around its inner key serde: ``FullTimeWindowedSerde(inner, size)`` for time and
    sliding windows, ``SessionWindowedSerde`` for session windows (what the buffer serializes keys with)."""

    session: bool
    window_size_ms: int = 0

    def serde(self, inner: Serde[Any]) -> Serde[Windowed[Any]]:
        if self.session:
            return Serde(_SessionWindowedSerializer(inner), _SessionWindowedDeserializer(inner))
        return Serde(_TimeWindowedSerializer(inner), _TimeWindowedDeserializer(inner, self.window_size_ms))


@dataclass(frozen=True, slots=True)
class Suppressed:
    """``SuppressedInternal``: when to emit (window close or time limit) and the buffer's bounds and full strategy."""

    until_window_closes: bool
    time_to_wait_ms: int
    max_records: int | None = None
    shut_down_when_full: bool = False
    max_bytes: int | None = None

    @staticmethod
    def until_window_closes_unbounded(grace_ms: int) -> Suppressed:
        """``untilWindowCloses(unbounded())``; ``grace_ms`` is the upstream windows' grace period."""
        return Suppressed(True, grace_ms, shut_down_when_full=True)

    @staticmethod
    def until_time_limit(
        time_to_wait_ms: int,
        max_records: int | None = None,
        shut_down_when_full: bool = False,
        max_bytes: int | None = None,
    ) -> Suppressed:
        """``untilTimeLimit(wait, unbounded() | maxRecords(n) | maxBytes(n)[.shutDownWhenFull()])``."""
        return Suppressed(False, time_to_wait_ms, max_records, shut_down_when_full, max_bytes)


class KTableSuppressProcessor(ContextualProcessor):
    def __init__(self, suppressed: Suppressed, store_name: str, windowed: WindowedKeys | None, name: str) -> None:
        self.suppressed = suppressed
        self.store_name = store_name
        self.windowed = windowed
        self.name = name
        self.max_records = UNBOUNDED if suppressed.max_records is None else suppressed.max_records
        self.max_bytes = UNBOUNDED if suppressed.max_bytes is None else suppressed.max_bytes
        self.observed_stream_time = NO_TIMESTAMP
        self._buffer: InMemoryTimeOrderedKeyValueChangeBuffer | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        if not isinstance(store, InMemoryTimeOrderedKeyValueChangeBuffer):
            raise ProcessingError(
                f"{self.name}: store {self.store_name} is a {type(store).__name__}, not the suppress buffer; "
                "connect the buffer store built by KTable.suppress"
            )
        key_serde = store.key_serde
        if self.windowed is not None and key_serde is not None and not isinstance(key_serde.serializer, _WINDOWED):
            store.key_serde = self.windowed.serde(key_serde)
        self._buffer = store

    def key_locality(self) -> KeyLocality:
        """Not key-local: a record of one key evicts (emits) buffered records of other keys, when it advances this
        processor's stream time past their buffer time or fills the buffer. A split would have to carry each
        eviction's position (issue #29)."""
        return KeyLocality.not_key_local(
            f"suppress: its buffer {self.store_name} emits a key's record when a record of another key advances "
            "stream time (or fills the buffer), so the evictions depend on every key's records"
        )

    @property
    def buffer(self) -> InMemoryTimeOrderedKeyValueChangeBuffer:
        assert self._buffer is not None, "process() before init()"
        return self._buffer

    def process(self, record: Record[Any, Change[Any]]) -> None:
        self.observed_stream_time = max(self.observed_stream_time, record.timestamp)
        context = cast(Any, self.context()).record_context
        if self.suppressed.until_window_closes:
            buffer_time = record.key.window.end
        else:
            buffer_time = context.timestamp
        change = record.value
        # The buffered context (what the changelog carries): the update's own timestamp and headers, as forwarded.
        buffered = ProcessorRecordContext(
            record.timestamp, context.offset, context.partition, context.topic, record.headers
        )
        self.buffer.put(buffer_time, record.key, change.new_value, change.old_value, buffered)
        self._enforce_constraints()

    def _over_capacity(self) -> bool:
        buffer = self.buffer
        return buffer.num_records() > self.max_records or buffer.buffer_size > self.max_bytes

    def _enforce_constraints(self) -> None:
        buffer = self.buffer
        expiry = self.observed_stream_time - self.suppressed.time_to_wait_ms
        buffer.evict_while(lambda: buffer.min_timestamp <= expiry, self._emit)
        if self._over_capacity():
            if self.suppressed.shut_down_when_full:
                raise ProcessingError(
                    f"{self.name} buffer exceeded its max capacity. Currently [{buffer.num_records()}/"
                    f"{self.max_records}] records and [{buffer.buffer_size}/{self.max_bytes}] bytes. Give suppress a "
                    "larger buffer or emitEarlyWhenFull"
                )
            buffer.evict_while(self._over_capacity, self._emit)

    def _emit(self, eviction: Eviction) -> None:
        if eviction.new_value is None and self.suppressed.until_window_closes:
            return  # safeToDropTombstones
        context = cast(Any, self.context())
        installed = context.record_context
        buffered = eviction.context
        context.record_context = buffered
        try:
            change = Change(eviction.new_value, eviction.old_value)
            context.forward(Record(eviction.key, change, buffered.timestamp, buffered.headers))
        finally:
            context.record_context = installed


class KTableSuppressProcessorSupplier:
    """``KTableSuppressProcessorSupplier(suppress, storeName, parent)``; ``windowed`` wraps the buffer's key serde
    for a windowed table (its keys are ``Windowed``)."""

    def __init__(
        self,
        suppressed: Suppressed,
        store_name: str,
        windowed: WindowedKeys | None = None,
        name: str = "KTABLE-SUPPRESS",
    ) -> None:
        self.suppressed = suppressed
        self.store_name = store_name
        self.windowed = windowed
        self.name = name

    def __call__(self) -> KTableSuppressProcessor:
        return KTableSuppressProcessor(self.suppressed, self.store_name, self.windowed, self.name)
