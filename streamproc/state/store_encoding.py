"""Key and value bytes of Kafka Streams' built-in stores (``SI/``, 4.2.0), as RocksDB holds them (state.md §6.2).

- ``ValueAndTimestampSerializer``: timestamped values are ``int64_be(timestamp) ‖ raw value``;
- ``WindowKeySchema.toStoreKeyBinary``: window keys are ``key ‖ int64_be(window start) ‖ int32_be(seqnum)``;
- ``SessionKeySchema.toBinary``: session keys are ``key ‖ int64_be(session end) ‖ int64_be(session start)``.

All integers are big-endian two's complement (``ByteBuffer`` defaults, ``LongSerializer``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamproc.errors import StateError

if TYPE_CHECKING:
    import pyarrow as pa

#: ``WindowKeySchema.TIMESTAMP_SIZE`` / ``SessionKeySchema.TIMESTAMP_SIZE``.
TIMESTAMP_SIZE = 8
#: ``WindowKeySchema.SEQNUM_SIZE``.
SEQNUM_SIZE = 4
#: What a window store key holds after the record key: the window start and the sequence number.
WINDOW_KEY_SUFFIX = TIMESTAMP_SIZE + SEQNUM_SIZE
#: What a session store key holds after the record key: the session end and start.
SESSION_KEY_SUFFIX = 2 * TIMESTAMP_SIZE
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


_LONG = struct.Struct(">q")


def _long(value: int, what: str) -> bytes:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise StateError(f"{what} {value} does not fit in a Java long")
    return _LONG.pack(value)


def value_and_timestamp(raw_value: bytes, timestamp: int) -> bytes:
    """``ValueAndTimestampSerializer.serialize``: the 8-byte timestamp, then the serialized value."""
    if _LONG_MIN <= timestamp <= _LONG_MAX:  # every store write: without the checking call
        return _LONG.pack(timestamp) + raw_value
    return _long(timestamp, "timestamp") + raw_value


def raw_value(value_and_timestamp_bytes: bytes) -> bytes:
    """``ValueAndTimestampDeserializer.rawValue``: the bytes after the timestamp."""
    if len(value_and_timestamp_bytes) < TIMESTAMP_SIZE:
        raise StateError(f"timestamped value of {len(value_and_timestamp_bytes)} bytes has no 8-byte timestamp")
    return value_and_timestamp_bytes[TIMESTAMP_SIZE:]


def split_value_and_timestamp(value_and_timestamp_bytes: bytes) -> tuple[int, bytes]:
    """:func:`timestamp_of` and :func:`raw_value` in one call (a timestamped store's every read)."""
    if len(value_and_timestamp_bytes) < TIMESTAMP_SIZE:
        raise StateError(f"timestamped value of {len(value_and_timestamp_bytes)} bytes has no 8-byte timestamp")
    timestamp: int = _LONG.unpack_from(value_and_timestamp_bytes)[0]
    return timestamp, value_and_timestamp_bytes[TIMESTAMP_SIZE:]


def timestamp_of(value_and_timestamp_bytes: bytes) -> int:
    """``ValueAndTimestampDeserializer.timestamp``: the leading 8-byte big-endian timestamp."""
    if len(value_and_timestamp_bytes) < TIMESTAMP_SIZE:
        raise StateError(f"timestamped value of {len(value_and_timestamp_bytes)} bytes has no 8-byte timestamp")
    timestamp: int = _LONG.unpack_from(value_and_timestamp_bytes)[0]
    return timestamp


def window_store_key(key: bytes, window_start: int, seqnum: int) -> bytes:
    """``WindowKeySchema.toStoreKeyBinary(key, timestamp, seqnum)``."""
    if not _INT_MIN <= seqnum <= _INT_MAX:
        raise StateError(f"seqnum {seqnum} does not fit in a Java int")
    return key + _long(window_start, "window start") + struct.pack(">i", seqnum)


def session_store_key(key: bytes, session_start: int, session_end: int) -> bytes:
    """``SessionKeySchema.toBinary``: key, then the session END, then the session START."""
    return key + _long(session_end, "session end") + _long(session_start, "session start")


@dataclass(frozen=True, slots=True)
class WindowedKey:
    """A window store key split into its parts (``WindowKeySchema.extractStore*``)."""

    key: bytes
    window_start: int
    seqnum: int


@dataclass(frozen=True, slots=True)
class SessionKey:
    """A session store key split into its parts (``SessionKeySchema.extract*``)."""

    key: bytes
    session_start: int
    session_end: int


def parse_window_store_key(store_key: bytes) -> WindowedKey:
    """Inverse of :func:`window_store_key`."""
    suffix = WINDOW_KEY_SUFFIX
    if len(store_key) < suffix:
        raise StateError(f"window store key of {len(store_key)} bytes is shorter than {suffix}")
    start, seqnum = struct.unpack(">qi", store_key[-suffix:])
    return WindowedKey(store_key[:-suffix], int(start), int(seqnum))


def parse_session_store_key(store_key: bytes) -> SessionKey:
    """Inverse of :func:`session_store_key`."""
    suffix = SESSION_KEY_SUFFIX
    if len(store_key) < suffix:
        raise StateError(f"session store key of {len(store_key)} bytes is shorter than {suffix}")
    end, start = struct.unpack(">qq", store_key[-suffix:])
    return SessionKey(store_key[:-suffix], int(start), int(end))


def record_keys(store_keys: pa.Array, suffix: int) -> pa.Array:
    """The record keys of a column of window or session store keys (``suffix``: :data:`WINDOW_KEY_SUFFIX` or
    :data:`SESSION_KEY_SUFFIX`, each key at least that long), without parsing a key per row. (Arrow and numpy are
    imported here, not with the module: the engine's stores import it, and a base install has no numpy.)"""
    import pyarrow.compute as pc

    return pc.binary_slice(store_keys, 0, -suffix)


def latest_segment_time(store_keys: pa.Array, suffix: int) -> int | None:
    """The largest segment time (``KeySchema.segmentTimestamp``: a window's start, a session's end, the eight bytes
    both suffixes begin with) over a column of window or session store keys as in :func:`record_keys`; ``None``
    when every key is null."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    times = pc.binary_slice(store_keys.drop_null(), -suffix, -suffix + TIMESTAMP_SIZE).cast(pa.binary(TIMESTAMP_SIZE))
    if not len(times):
        return None
    data = np.frombuffer(times.buffers()[1], dtype=">i8", count=len(times), offset=times.offset * TIMESTAMP_SIZE)
    return int(data.max())
