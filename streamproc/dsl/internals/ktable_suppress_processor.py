"""``KTableSuppressProcessorSupplier``: ``suppress`` holds a table's updates in a buffer and emits each key's latest
update only later.

- ``until_window_closes`` (windowed tables): an entry's buffer time is its window's end; it is emitted once
  ``stream time - grace >= window end``, i.e. when no late record can change the window any more (the grace is the
  upstream windows' grace period). Tombstones are dropped (``safeToDropTombstones``).
- ``until_time_limit(wait)``: an entry's buffer time is the timestamp of the first update of its key still
  buffered; it is emitted once ``stream time - wait >= buffer time``. Tombstones are emitted.

Stream time is the largest timestamp of the updates this processor has seen. An update of a key already buffered
replaces its value and keeps the entry's original time and place (``InMemoryTimeOrderedKeyValueChangeBuffer``);
entries leave in (buffer time, serialized key) order, each as the last update's key, ``Change(new, old)``,
timestamp and headers. The buffer is in memory and unbounded unless ``max_records`` is given: then, past it, the
oldest entries are emitted early (``emitEarlyWhenFull``) or the task stops (``shutDownWhenFull``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.engine.records import Record
from streamproc.engine.serdes import Serde
from streamproc.errors import ProcessingError
from streamproc.state.stores import Windowed

#: Serializes a key to the bytes the buffer orders equal times by.
KeyBytes = Callable[[Any], bytes]
NO_TIMESTAMP = -1
_LONG = struct.Struct(">q")


def windowed_key_bytes(inner: Serde[Any], topic: str = "") -> KeyBytes:
    """``TimeWindowedSerializer``: the inner key's bytes, then the window start (8 bytes, big-endian)."""

    def serialize(key: Windowed[Any]) -> bytes:
        return (inner.serializer.serialize(topic, key.key) or b"") + _LONG.pack(key.window.start)

    return serialize


def plain_key_bytes(serde: Serde[Any], topic: str = "") -> KeyBytes:
    def serialize(key: Any) -> bytes:
        return serde.serializer.serialize(topic, key) or b""

    return serialize


@dataclass(frozen=True, slots=True)
class Suppressed:
    """``Suppressed``: when to emit (window close or time limit) and what to do when a bounded buffer is full."""

    until_window_closes: bool
    time_to_wait_ms: int
    max_records: int | None = None
    shut_down_when_full: bool = False

    @staticmethod
    def until_window_closes_unbounded(grace_ms: int) -> Suppressed:
        """``untilWindowCloses(unbounded())``; ``grace_ms`` is the upstream windows' grace period."""
        return Suppressed(True, grace_ms)

    @staticmethod
    def until_time_limit(
        time_to_wait_ms: int, max_records: int | None = None, shut_down_when_full: bool = False
    ) -> Suppressed:
        """``untilTimeLimit(wait, unbounded() | maxRecords(n)[.shutDownWhenFull()])``."""
        return Suppressed(False, time_to_wait_ms, max_records, shut_down_when_full)


@dataclass(slots=True)
class _Entry:
    time: int
    key_bytes: bytes
    record: Record[Any, Change[Any]]


class KTableSuppressProcessor(ContextualProcessor):
    def __init__(self, suppressed: Suppressed, key_bytes: KeyBytes, name: str) -> None:
        self.suppressed = suppressed
        self.key_bytes = key_bytes
        self.name = name
        self.observed_stream_time = NO_TIMESTAMP
        self._order: list[tuple[int, bytes]] = []
        self._entries: dict[bytes, _Entry] = {}

    def process(self, record: Record[Any, Change[Any]]) -> None:
        self.observed_stream_time = max(self.observed_stream_time, record.timestamp)
        self._buffer(record)
        self._enforce_constraints()

    def _buffer(self, record: Record[Any, Change[Any]]) -> None:
        raw = self.key_bytes(record.key)
        entry = self._entries.get(raw)
        if entry is not None:
            entry.record = record
            return
        if self.suppressed.until_window_closes:
            time = record.key.window.end
        else:
            time = record.timestamp
        self._entries[raw] = _Entry(time, raw, record)
        bisect.insort(self._order, (time, raw))

    def _evict_oldest(self) -> None:
        _, raw = self._order.pop(0)
        entry = self._entries.pop(raw)
        change = entry.record.value
        if change.new_value is not None or not self.suppressed.until_window_closes:
            self.context().forward(entry.record)

    def _enforce_constraints(self) -> None:
        expiry = self.observed_stream_time - self.suppressed.time_to_wait_ms
        while self._order and self._order[0][0] <= expiry:
            self._evict_oldest()
        limit = self.suppressed.max_records
        if limit is not None and len(self._entries) > limit:
            if self.suppressed.shut_down_when_full:
                raise ProcessingError(
                    f"{self.name} buffer exceeded its max capacity. Currently [{len(self._entries)}/{limit}] records; "
                    "give suppress a larger buffer or emitEarlyWhenFull"
                )
            while len(self._entries) > limit:
                self._evict_oldest()


class KTableSuppressProcessorSupplier:
    """``KTableSuppressProcessorSupplier(suppress, storeName, parent)``; ``key_bytes`` serializes keys as the
    buffer's key serde does (:func:`windowed_key_bytes` for windowed tables)."""

    def __init__(self, suppressed: Suppressed, key_bytes: KeyBytes, name: str = "KTABLE-SUPPRESS") -> None:
        self.suppressed = suppressed
        self.key_bytes = key_bytes
        self.name = name

    def __call__(self) -> KTableSuppressProcessor:
        return KTableSuppressProcessor(self.suppressed, self.key_bytes, self.name)
