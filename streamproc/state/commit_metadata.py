"""Kafka Streams' commit metadata: ``TopicPartitionMetadata`` and ``ProcessorMetadata`` (``PI/``, 4.2.0).

Every offset Kafka Streams commits carries ``base64(0x02 ‖ int64_be(partition time) ‖ processor metadata)``; a
resumed application reads it back to restore each partition's time (hence stream time) and the last emitted window
close times of emit-final aggregations (state.md §8.2). A tool that commits offsets must write the same string, and
read the live application's string exactly as ``TopicPartitionMetadata.decode`` does, including its leniency: an
empty string, bad base64, an unknown version or a truncated body never fail, they only lose information.
"""

from __future__ import annotations

import base64
import logging
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streamproc.engine.record_queue import UNKNOWN as RECORD_QUEUE_UNKNOWN

LOG = logging.getLogger(__name__)

#: ``TopicPartitionMetadata.LATEST_MAGIC_BYTE``.
LATEST_MAGIC_BYTE = 2
#: The version-1 magic byte (``0x01 ‖ partition time``), still decoded.
MAGIC_BYTE_V1 = 1
#: ``RecordQueue.UNKNOWN``: partition time not known (the engine's constant).
UNKNOWN = RECORD_QUEUE_UNKNOWN

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_VALUES = {ch: i for i, ch in enumerate(_BASE64_ALPHABET)}


#: What streamproc's hand-off writes after Kafka Streams' fields in the metadata of every offset it commits, then
#: its plan and task: the proof, read back after a crash, that a commit was that hand-off's own transaction and not
#: the application's. ``ProcessorMetadata.deserialize`` reads its entry count and entries and ignores what follows
#: (4.2.0), so the application decodes exactly the partition time and processor metadata it would without it; its
#: own next commit of the partition replaces the whole string.
HANDOFF_MARK = b"streamproc-handoff:"


class _BufferUnderflow(Exception):
    """``java.nio.BufferUnderflowException``."""


class _Base64Error(Exception):
    """``IllegalArgumentException`` from ``Base64.Decoder.decode``."""


def _check_long(value: int, what: str) -> None:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{what} {value} does not fit in a Java long")


def java_base64_encode(data: bytes) -> str:
    """``Base64.getEncoder().encodeToString``: standard alphabet, with padding."""
    return base64.b64encode(data).decode("ascii")


def java_base64_decode(text: str) -> bytes:
    """``Base64.getDecoder().decode(String)`` (JDK 11-25 ``Decoder.decode0``, basic, not MIME).

    Padding is optional, but when present it must complete the 4-character unit and end the input; any character
    outside the standard alphabet (whitespace, ``-``, ``_``) is an error; a dangling single character is an error.
    """
    out = bytearray()
    bits = 0
    shift = 18
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        i += 1
        if ch == "=":
            if (shift == 6 and (i == n or text[i] != "=")) or shift == 18:
                raise _Base64Error("Input byte array has wrong 4-byte ending unit")
            if shift == 6:
                i += 1
            break
        value = _BASE64_VALUES.get(ch)
        if value is None:
            raise _Base64Error(f"Illegal base64 character {ord(ch):x}")
        bits |= value << shift
        shift -= 6
        if shift < 0:
            out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF, bits & 0xFF))
            shift = 18
            bits = 0
    if shift == 6:
        out.append((bits >> 16) & 0xFF)
    elif shift == 0:
        out += bytes(((bits >> 16) & 0xFF, (bits >> 8) & 0xFF))
    elif shift == 12:
        raise _Base64Error("Last unit does not have enough valid bits")
    if i < n:
        raise _Base64Error(f"Input byte array has incorrect ending byte at {i}")
    return bytes(out)


class _Reader:
    """A big-endian ``ByteBuffer`` reader that raises :class:`_BufferUnderflow` like ``get``/``getInt``/``getLong``."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def take(self, size: int) -> bytes:
        if size < 0:
            raise _BufferUnderflow(f"negative size {size}")  # NegativeArraySizeException in Java
        if self.remaining() < size:
            raise _BufferUnderflow(f"{size} bytes wanted, {self.remaining()} left")
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def get_byte(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def get_int(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def get_long(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])


@dataclass(frozen=True, slots=True)
class ProcessorMetadata:
    """``ProcessorMetadata``: string keys to long values, kept in the order they are serialized.

    Kafka Streams serializes its ``HashMap`` in iteration order; callers that need byte-identical metadata pass the
    entries in that order (see :func:`streamproc.state.java_hash_map.string_map_order`).
    """

    entries: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, entries: Mapping[str, int] | Iterable[tuple[str, int]]) -> ProcessorMetadata:
        items = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        merged: dict[str, int] = {}
        for key, value in items:
            _check_long(value, f"processor metadata value for {key!r}")
            merged[key] = value
        return cls(tuple(merged.items()))

    def as_dict(self) -> dict[str, int]:
        return dict(self.entries)

    def get(self, key: str) -> int | None:
        return self.as_dict().get(key)

    def update(self, other: ProcessorMetadata) -> ProcessorMetadata:
        """``ProcessorMetadata.update``: add missing keys, keep the maximum for existing ones."""
        merged = self.as_dict()
        for key, value in other.entries:
            current = merged.get(key)
            if current is None or current < value:
                merged[key] = value
        return ProcessorMetadata(tuple(merged.items()))

    def serialize(self) -> bytes:
        """``ProcessorMetadata.serialize``: empty, or ``int32 count`` then ``int32 len ‖ utf8 key ‖ int64 value``."""
        if not self.entries:
            return b""
        parts = [struct.pack(">i", len(self.entries))]
        for key, value in self.entries:
            key_bytes = key.encode("utf-8")
            parts.append(struct.pack(">i", len(key_bytes)) + key_bytes + struct.pack(">q", value))
        return b"".join(parts)

    @classmethod
    def deserialize(cls, data: bytes) -> ProcessorMetadata:
        """``ProcessorMetadata.deserialize``; raises on truncated input (the caller, like Kafka, swallows it)."""
        if not data:
            return cls()
        reader = _Reader(data)
        count = reader.get_int()
        if count < 0:
            raise _BufferUnderflow(f"negative entry count {count}")  # new HashMap<>(negative) throws in Java
        merged: dict[str, int] = {}
        for _ in range(count):
            key_size = reader.get_int()
            key = reader.take(key_size).decode("utf-8", errors="replace")
            merged[key] = reader.get_long()
        return cls(tuple(merged.items()))


@dataclass(frozen=True, slots=True)
class TopicPartitionMetadata:
    """``TopicPartitionMetadata``: the partition time and processor metadata committed with an offset."""

    partition_time: int = UNKNOWN
    processor_metadata: ProcessorMetadata = field(default_factory=ProcessorMetadata)

    def __post_init__(self) -> None:
        _check_long(self.partition_time, "partition time")

    def encode(self, *, handoff_mark: str | None = None) -> str:
        """``TopicPartitionMetadata.encode``: ``base64(0x02 ‖ int64_be(partition time) ‖ processor metadata)``.

        ``handoff_mark`` (streamproc's hand-off: its plan and task) follows the processor metadata, see
        :data:`HANDOFF_MARK`: Kafka Streams decodes the same partition time and processor metadata as without it.
        """
        payload = struct.pack(">bq", LATEST_MAGIC_BYTE, self.partition_time) + self.processor_metadata.serialize()
        if handoff_mark is not None:
            if not self.processor_metadata.entries:
                payload += struct.pack(">i", 0)  # an explicit empty map: the mark is never read as one
            payload += HANDOFF_MARK + handoff_mark.encode("utf-8")
        return java_base64_encode(payload)

    @classmethod
    def decode(cls, metadata: str) -> TopicPartitionMetadata:
        """``TopicPartitionMetadata.decode``: never fails; what could not be decoded stays unknown/empty."""
        timestamp = UNKNOWN
        processor_metadata = ProcessorMetadata()
        if not metadata:
            return cls(timestamp, processor_metadata)
        try:
            reader = _Reader(java_base64_decode(metadata))
            version = reader.get_byte()
            if version == MAGIC_BYTE_V1:
                timestamp = reader.get_long()
            elif version == LATEST_MAGIC_BYTE:
                timestamp = reader.get_long()
                if reader.remaining() > 0:
                    processor_metadata = ProcessorMetadata.deserialize(reader.take(reader.remaining()))
            else:
                LOG.warning(
                    "Unsupported offset metadata version found. Supported version <= %s. Found version %s.",
                    LATEST_MAGIC_BYTE,
                    version,
                )
        except (_BufferUnderflow, _Base64Error):
            LOG.warning("Unsupported offset metadata found: %r", metadata)
        return cls(timestamp, processor_metadata)


def handoff_mark(metadata: str) -> str | None:
    """The mark :meth:`TopicPartitionMetadata.encode` appended (streamproc's hand-off), ``None`` for any other
    metadata (Kafka Streams' own, another tool's, none)."""
    try:
        reader = _Reader(java_base64_decode(metadata))
        if reader.get_byte() != LATEST_MAGIC_BYTE:
            return None
        reader.get_long()
        if reader.remaining() < 4:
            return None
        for _ in range(reader.get_int()):  # the processor metadata's entries
            reader.take(reader.get_int())
            reader.get_long()
        rest = reader.take(reader.remaining())
    except (_BufferUnderflow, _Base64Error):
        return None
    if not rest.startswith(HANDOFF_MARK):
        return None
    return rest[len(HANDOFF_MARK) :].decode("utf-8", errors="replace")
