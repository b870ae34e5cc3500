"""The suppress buffer: ``InMemoryTimeOrderedKeyValueChangeBuffer`` with its changelog format (4.2).

``KTable.suppress`` holds each key's latest ``Change`` in this store until it is evicted. Kafka Streams keeps it in
memory and logs it, so a task that moves (or a streamproc run that hands off) resumes with the same buffer:

- **order**: entries are sorted by (buffer time, serialized key bytes) (``BufferKey.compareTo``); a put of a key
  already buffered replaces its value in place and keeps its time (``cleanPut``: "non-resetting semantics");
- **prior value**: the old value of the key's first buffered update, kept while the key stays buffered;
- **logging**: a put or an eviction only marks the key dirty; the store's ``flush`` (the task's commit) sends, per
  dirty key in ``HashSet<Bytes>`` iteration order, the entry's current value or a tombstone when it has left the
  buffer. The value is the V3 format with header ``v`` = ``0x03``: ``ProcessorRecordContext.serialize()`` ‖ prior ‖
  old ‖ new (each int32 length or -1 for null; old = -2 when it equals prior) ‖ buffer time (int64). Tombstones carry
  no headers; the changelog record's timestamp is unset in Kafka (the producer stamps it with its clock), here the
  wall clock at flush;
- **restore** reads the V3 format and the older ones Kafka still reads (no header: V0; ``v`` = 1, 2 — the latter
  duck-typed as V3, which 2.4.0-2.5.0 wrote under the V2 flag);
- **size** (``maxBytes``): per entry 8 + key bytes + prior + old (when it differs from prior) + new +
  ``ProcessorRecordContext.residentMemorySizeEstimate`` (16 + topic chars + 4 + per header key chars + value bytes).
"""

from __future__ import annotations

import bisect
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from streamproc.engine.records import ConsumerRecord, Headers, ProcessorRecordContext
from streamproc.engine.serdes import Serde
from streamproc.errors import StateError
from streamproc.state.changelog import ChangelogRecord
from streamproc.state.java_hash_map import hash_map_order, to_int32
from streamproc.state.store_type import StoreType
from streamproc.state.stores import StateStore, StoreContext

RawRecord = ConsumerRecord[bytes | None, bytes | None]

#: The header key of the buffer's changelog format version.
VERSION_HEADER_KEY = "v"
#: ``CHANGELOG_HEADERS`` of every value record Kafka 4.2 writes: version 3.
V3_CHANGELOG_HEADERS: Headers = ((VERSION_HEADER_KEY, b"\x03"),)
NULL_VALUE_SENTINEL = -1
OLD_PREV_DUPLICATE_VALUE_SENTINEL = -2
#: ``minTimestamp`` of an empty buffer (``Long.MAX_VALUE``).
EMPTY_MIN_TIMESTAMP = (1 << 63) - 1

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_CONTEXT_HEAD = struct.Struct(">qq")


def _utf16_units(text: str) -> int:
    """``String.toCharArray().length``."""
    return len(text) if text.isascii() else len(text.encode("utf-16-be")) // 2


def bytes_hash_code(data: bytes) -> int:
    """``Bytes.hashCode`` = ``Arrays.hashCode(byte[])`` over signed bytes, as a Java ``int``."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return to_int32(h)


# -- ProcessorRecordContext -------------------------------------------------------------------------------------------


def serialize_record_context(context: ProcessorRecordContext) -> bytes:
    """``ProcessorRecordContext.serialize``: ts, offset, topic (int32-prefixed UTF-8), partition, headers."""
    if context.topic is None:
        raise StateError(
            "the suppress buffer cannot log a record buffered outside a record (no topic in its record context); "
            "suppress only processes records"
        )
    topic = context.topic.encode("utf-8")
    parts = [_CONTEXT_HEAD.pack(context.timestamp, context.offset), _INT.pack(len(topic)), topic]
    parts.append(struct.pack(">ii", context.partition, len(context.headers)))
    for key, value in context.headers:
        raw_key = key.encode("utf-8")
        parts.append(_INT.pack(len(raw_key)) + raw_key)
        parts.append(_INT.pack(NULL_VALUE_SENTINEL) if value is None else _INT.pack(len(value)) + value)
    return b"".join(parts)


class _Reader:
    """A ``ByteBuffer`` read position over a changelog value; reading past the end is a corrupt record."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ValueError(f"needs {size} bytes at position {self.pos} of a {len(self.data)}-byte value")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def int32(self) -> int:
        value: int = _INT.unpack(self.take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _LONG.unpack(self.take(8))[0]
        return value

    def nullable(self, size: int) -> bytes | None:
        """``getNullableArray``: ``size`` < 0 is null."""
        return None if size < 0 else self.take(size)

    def nullable_prefixed(self) -> bytes | None:
        """``getNullableSizePrefixedArray``."""
        return self.nullable(self.int32())


def deserialize_record_context(reader: _Reader) -> ProcessorRecordContext:
    """``ProcessorRecordContext.deserialize``."""
    timestamp, offset = reader.int64(), reader.int64()
    topic = reader.nullable_prefixed()
    if topic is None:
        raise ValueError("record context without a topic")
    partition, count = reader.int32(), reader.int32()
    headers: list[tuple[str, bytes | None]] = []
    if count != -1:
        if count < 0 or count > (len(reader.data) - reader.pos) // 8:
            raise ValueError(f"record context with {count} headers")
        for _ in range(count):
            key = reader.nullable_prefixed()
            if key is None:
                raise ValueError("record context header without a key")
            headers.append((key.decode("utf-8"), reader.nullable_prefixed()))
    return ProcessorRecordContext(timestamp, offset, partition, topic.decode("utf-8"), tuple(headers))


def record_context_size_estimate(context: ProcessorRecordContext) -> int:
    """``ProcessorRecordContext.residentMemorySizeEstimate``."""
    size = 8 + 8 + 4 + (0 if context.topic is None else _utf16_units(context.topic))
    for key, value in context.headers:
        size += _utf16_units(key) + (0 if value is None else len(value))
    return size


# -- BufferValue ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BufferValue:
    """``BufferValue``: the serialized prior, old and new value of a buffered key and the context of its last put.

    ``old_is_prior``: Kafka collapses prior and old onto one array when their bytes are equal (both null included);
    then the old value is neither counted nor written again.
    """

    prior_value: bytes | None
    old_value: bytes | None
    new_value: bytes | None
    context: ProcessorRecordContext

    @property
    def old_is_prior(self) -> bool:
        return self.prior_value == self.old_value

    def serialize(self, buffer_time: int) -> bytes:
        """``serialize(Long.BYTES)`` followed by ``putLong(bufferTime)``: the V3 changelog value."""
        parts = [serialize_record_context(self.context), _nullable(self.prior_value)]
        if self.old_value is None:
            parts.append(_INT.pack(NULL_VALUE_SENTINEL))
        elif self.old_is_prior:
            parts.append(_INT.pack(OLD_PREV_DUPLICATE_VALUE_SENTINEL))
        else:
            parts.append(_INT.pack(len(self.old_value)) + self.old_value)
        parts.append(_nullable(self.new_value))
        parts.append(_LONG.pack(buffer_time))
        return b"".join(parts)

    def resident_memory_size_estimate(self) -> int:
        size = 0 if self.prior_value is None else len(self.prior_value)
        if self.old_value is not None and not self.old_is_prior:
            size += len(self.old_value)
        size += 0 if self.new_value is None else len(self.new_value)
        return size + record_context_size_estimate(self.context)


def _nullable(value: bytes | None) -> bytes:
    return _INT.pack(NULL_VALUE_SENTINEL) if value is None else _INT.pack(len(value)) + value


def compute_record_size(key: bytes, value: BufferValue) -> int:
    """``computeRecordSize``: what an entry adds to ``bufferSize`` (the ``maxBytes`` bound)."""
    return 8 + len(key) + value.resident_memory_size_estimate()


def _deserialize_buffer_value(reader: _Reader) -> BufferValue:
    """``BufferValue.deserialize``."""
    context = deserialize_record_context(reader)
    prior = reader.nullable_prefixed()
    old_length = reader.int32()
    old = prior if old_length == OLD_PREV_DUPLICATE_VALUE_SENTINEL else reader.nullable(old_length)
    return BufferValue(prior, old, reader.nullable_prefixed(), context)


def _legacy_change(data: bytes | None) -> tuple[bytes | None, bytes | None]:
    """``FullChangeSerde.decomposeLegacyFormattedArrayIntoChangeArrays``: (old, new)."""
    if data is None:
        raise ValueError("a legacy change value is null")
    reader = _Reader(data)
    old = reader.nullable_prefixed()
    return old, reader.nullable_prefixed()


def decode_changelog_value(record: RawRecord, previous_prior: Callable[[], bytes | None]) -> tuple[int, BufferValue]:
    """(buffer time, value) of a non-tombstone changelog record in any format Kafka 4.2 restores.

    ``previous_prior`` gives the prior value of the key when it is already buffered (``None`` otherwise): V0 and
    V1 records do not carry one.
    """
    value = record.value
    assert value is not None
    version = None
    for key, header_value in record.headers:
        if key == VERSION_HEADER_KEY:
            version = header_value  # lastHeader("v")
    if version == b"\x03":
        return _deserialize_v3(value)
    if version == b"\x02":
        try:
            return _deserialize_v2(value)
        except (ValueError, struct.error, UnicodeDecodeError):
            return _deserialize_v3(value)  # 2.4.0, 2.4.1 and 2.5.0 wrote V3 under the V2 flag
    if version is None or version == b"\x01":
        reader = _Reader(value)
        buffer_time = reader.int64()
        rest = _Reader(reader.take(len(value) - 8))
        if version is None:
            old, new = _legacy_change(rest.data)
            context = ProcessorRecordContext(
                record.timestamp, record.offset, record.partition, record.topic, record.headers
            )
        else:
            context = deserialize_record_context(rest)
            old, new = _legacy_change(rest.nullable_prefixed())
        prior = previous_prior()
        return buffer_time, BufferValue(old if prior is None else prior, old, new, context)
    raise ValueError(f"unknown changelog version header {version!r}")


def _deserialize_v3(value: bytes) -> tuple[int, BufferValue]:
    reader = _Reader(value)
    buffered = _deserialize_buffer_value(reader)
    return reader.int64(), buffered


def _deserialize_v2(value: bytes) -> tuple[int, BufferValue]:
    reader = _Reader(value)
    context = deserialize_record_context(reader)
    old, new = _legacy_change(reader.nullable_prefixed())
    prior = reader.nullable_prefixed()
    buffer_time = reader.int64()
    if reader.pos != len(value):
        raise ValueError("trailing bytes after a V2 value")
    return buffer_time, BufferValue(prior, old, new, context)


# -- the store --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Eviction:
    """``TimeOrderedKeyValueBuffer.Eviction``: the key, its ``Change`` (new, old) and the context of its last put."""

    key: Any
    new_value: Any
    old_value: Any
    context: ProcessorRecordContext


class InMemoryTimeOrderedKeyValueChangeBuffer(StateStore):
    """The suppress buffer store (see the module docstring). Not persistent: it is rebuilt from its changelog."""

    store_type = StoreType.TIME_ORDERED_KEY_VALUE_BUFFER

    def __init__(
        self,
        name: str,
        key_serde: Serde[Any] | None,
        value_serde: Serde[Any] | None,
        context: StoreContext | None = None,
        *,
        logged: bool = True,
        wall_clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        super().__init__(name, context)
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.logged = logged
        self._wall_clock_ms = wall_clock_ms
        self._times: dict[bytes, int] = {}
        self._values: dict[bytes, BufferValue] = {}
        #: What this run put, by key: (key, new value, old value) objects, emitted without deserializing.
        self._objects: dict[bytes, tuple[Any, Any, Any]] = {}
        self._order: list[tuple[int, bytes]] = []
        self._dirty: dict[bytes, None] = {}
        self.buffer_size = 0
        self.min_timestamp = EMPTY_MIN_TIMESTAMP

    # -- StateStore -------------------------------------------------------------------------------------------------

    @property
    def persistent(self) -> bool:
        return False

    def num_records(self) -> int:
        return len(self._times)

    def approximate_num_entries(self) -> int:
        return len(self._times)

    def set_serdes_if_null(self, key_serde: Serde[Any], value_serde: Serde[Any]) -> None:
        """``setSerdesIfNull``: the processor's serdes when the builder had none."""
        if self.key_serde is None:
            self.key_serde = key_serde
        if self.value_serde is None:
            self.value_serde = value_serde

    def flush(self) -> None:
        """Log every dirty key: its entry (V3) while buffered, a tombstone once evicted (``flush``, the commit)."""
        if not self._dirty:
            return
        if self.logged:
            now = self._wall_clock_ms()
            for key in hash_map_order(self._dirty, bytes_hash_code):
                value = self._values.get(key)
                if value is None:
                    self._log_record(ChangelogRecord(key, None, now))
                else:
                    self._log_record(ChangelogRecord(key, value.serialize(self._times[key]), now, V3_CHANGELOG_HEADERS))
        self._dirty.clear()

    def close(self) -> None:
        """An in-memory store is gone when closed (its changelog restores it)."""

    def destroy(self) -> None:
        self._times.clear()
        self._values.clear()
        self._objects.clear()
        self._order.clear()
        self._dirty.clear()
        self.buffer_size = 0
        self.min_timestamp = EMPTY_MIN_TIMESTAMP

    def restore_batch(self, records: Sequence[RawRecord]) -> None:
        """``restoreBatch``: a tombstone removes its key, any other record (V0-V3) puts it, keeping a buffered key's
        time and place."""
        partition = self.context.changelog_partition
        for record in records:
            if partition is not None and record.partition != partition.partition:
                raise StateError(
                    f"store {self.name}: record partition [{record.partition}] is being restored by the wrong "
                    f"suppress partition [{partition.partition}]"
                )
            key: bytes = record.key  # type: ignore[assignment]  # the manager skips null keys
            if record.value is None:
                self._remove(key)
                continue
            try:
                buffer_time, value = decode_changelog_value(record, lambda k=key: self._prior(k))  # type: ignore[misc]
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise StateError(
                    f"store {self.name}: changelog record {record.topic}-{record.partition}@{record.offset} is not a "
                    f"suppress buffer record Kafka Streams 4.2 can read ({exc}); the topic is not this store's "
                    "changelog or it is corrupt: delete the changelog topic (and reset the application) to start "
                    "with an empty buffer"
                ) from exc
            self._objects.pop(key, None)
            self._clean_put(buffer_time, key, value)

    # -- the buffer -------------------------------------------------------------------------------------------------

    def _prior(self, key: bytes) -> bytes | None:
        value = self._values.get(key)
        return None if value is None else value.prior_value

    def _clean_put(self, buffer_time: int, key: bytes, value: BufferValue) -> None:
        previous = self._values.get(key)
        if previous is None:
            self._times[key] = buffer_time
            bisect.insort(self._order, (buffer_time, key))
            self.min_timestamp = min(self.min_timestamp, buffer_time)
        else:
            self.buffer_size -= compute_record_size(key, previous)
        self._values[key] = value
        self.buffer_size += compute_record_size(key, value)

    def _remove(self, key: bytes) -> None:
        buffer_time = self._times.pop(key, None)
        if buffer_time is None:
            return
        value = self._values.pop(key)
        self._objects.pop(key, None)
        self.buffer_size -= compute_record_size(key, value)
        index = bisect.bisect_left(self._order, (buffer_time, key))
        del self._order[index]
        if buffer_time == self.min_timestamp:
            self.min_timestamp = self._order[0][0] if self._order else EMPTY_MIN_TIMESTAMP

    def _serdes(self) -> tuple[Serde[Any], Serde[Any]]:
        if self.key_serde is None or self.value_serde is None:
            raise StateError(
                f"store {self.name}: the suppress buffer has no key or value serde; give the table serdes or set "
                "default.key.serde/default.value.serde"
            )
        return self.key_serde, self.value_serde

    def put(self, buffer_time: int, key: Any, new_value: Any, old_value: Any, context: ProcessorRecordContext) -> None:
        """``put(time, record, recordContext)``: buffer ``key``'s change; a buffered key keeps its time and prior."""
        key_serde, value_serde = self._serdes()
        topic = self.serde_topic
        raw_key = key_serde.serializer.serialize(topic, key)
        if raw_key is None:
            raise StateError(f"store {self.name}: key {key!r} serialized to null")
        serialize = value_serde.serializer.serialize
        new_bytes = None if new_value is None else serialize(topic, new_value)
        old_bytes = None if old_value is None else serialize(topic, old_value)
        buffered = self._values.get(raw_key)
        prior = old_bytes if buffered is None else buffered.prior_value
        self._clean_put(buffer_time, raw_key, BufferValue(prior, old_bytes, new_bytes, context))
        self._objects[raw_key] = (key, new_value, old_value)
        self._dirty[raw_key] = None

    def evict_while(self, predicate: Callable[[], bool], callback: Callable[[Eviction], None]) -> None:
        """``evictWhile``: while ``predicate`` holds, hand the oldest entry to ``callback``, then remove it."""
        order = self._order
        while order and predicate():
            buffer_time, key = order[0]
            if buffer_time != self.min_timestamp:
                raise StateError(
                    f"store {self.name}: minTimestamp [{self.min_timestamp}] did not match the actual min timestamp "
                    f"[{buffer_time}]"
                )
            value = self._values[key]
            callback(self._eviction(key, value))
            del order[0]
            del self._times[key]
            del self._values[key]
            self._objects.pop(key, None)
            self._dirty[key] = None
            self.buffer_size -= compute_record_size(key, value)
            self.min_timestamp = order[0][0] if order else EMPTY_MIN_TIMESTAMP

    def _eviction(self, key: bytes, value: BufferValue) -> Eviction:
        objects = self._objects.get(key)
        if objects is not None:
            return Eviction(objects[0], objects[1], objects[2], value.context)
        key_serde, value_serde = self._serdes()
        topic = self.serde_topic
        deserialize = value_serde.deserializer.deserialize
        return Eviction(
            key_serde.deserializer.deserialize(topic, key),
            None if value.new_value is None else deserialize(topic, value.new_value),
            None if value.old_value is None else deserialize(topic, value.old_value),
            value.context,
        )

    def entries(self) -> Iterator[tuple[int, bytes, BufferValue]]:
        """(buffer time, key bytes, value) in eviction order (what a restore must rebuild)."""
        for buffer_time, key in list(self._order):
            yield buffer_time, key, self._values[key]
