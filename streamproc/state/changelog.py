"""What each built-in store writes to RocksDB and to its changelog on put/delete (``SI/ChangeLogging*``, 4.2.0).

A handed-off store and its changelog must be exactly what Kafka Streams would have produced, so that a restore
(changelog → store) and the local store agree byte for byte (state.md §6.2, §7):

======================  ==============================  ==================================  ========================
store                   store key / value               changelog key / value               changelog timestamp
======================  ==============================  ==================================  ========================
key-value               key / value (None = delete)     key / value or tombstone            record context
timestamped key-value   key / ts ‖ value                key / raw value or tombstone        value's ts (else context)
window                  key ‖ start ‖ seqnum / value    same key / value or null            record context
timestamped window      same / ts ‖ value               same key / raw value or null        value's ts (else context)
session                 key ‖ end ‖ start / aggregate   same key / aggregate or null        record context
======================  ==============================  ==================================  ========================

Window stores that retain duplicates (stream-stream joins) keep two seqnum counters: the RocksDB store's
(``RocksDBWindowStore``, advanced only by non-null puts, a null put being a no-op there) and the change-logging
layer's (``ChangeLoggingWindowBytesStore``, advanced by every put). Both start at 0 and the first put gets 1.

Headers: none, unless the internal config ``__iq.consistency.offset.vector.enabled__`` is true; then ``v`` = ``0x00``
and ``c`` = the store's position (``ProcessorContextImpl.logChange``, ``PositionSerde``).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from streamproc.engine.records import Headers
from streamproc.engine.slotted_init import fast_frozen_init
from streamproc.errors import StateError
from streamproc.state import store_encoding
from streamproc.state.store_type import StoreType

#: ``ChangelogRecordDeserializationHelper.CHANGELOG_VERSION_HEADER_KEY``.
CHANGELOG_VERSION_HEADER_KEY = "v"
#: ``ChangelogRecordDeserializationHelper.CHANGELOG_POSITION_HEADER_KEY``.
CHANGELOG_POSITION_HEADER_KEY = "c"
#: ``ChangelogRecordDeserializationHelper.V_0_CHANGELOG_VERSION_HEADER_VALUE``.
V_0_CHANGELOG_VERSION_HEADER_VALUE = b"\x00"
#: ``StreamsConfig.InternalConfig.IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED``.
IQ_CONSISTENCY_OFFSET_VECTOR_ENABLED = "__iq.consistency.offset.vector.enabled__"
#: ``PositionSerde``'s only version.
POSITION_SERDE_VERSION = 0
#: Largest seqnum before ``(seqnum + 1) & 0x7FFFFFFF`` wraps to 0.
SEQNUM_MASK = 0x7FFFFFFF

#: A store's ``Position``: topic → partition → offset, in the order ``Position.getTopics`` iterates.
Position = Mapping[str, Mapping[int, int]]


@dataclass(frozen=True, slots=True)
class StoreWrite:
    """One RocksDB write: ``value`` ``None`` deletes ``key``."""

    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class ChangelogRecord:
    """The record ``ProcessorContextImpl.logChange`` sends (partition = the task's partition)."""

    key: bytes
    value: bytes | None
    timestamp: int
    headers: Headers = ()


@dataclass(frozen=True, slots=True)
class LoggedChange:
    """A store update and the changelog record it produces; ``store_write`` ``None`` = the store is untouched."""

    store_write: StoreWrite | None
    changelog: ChangelogRecord


# Built on every logged store write.
fast_frozen_init(StoreWrite)
fast_frozen_init(ChangelogRecord)
fast_frozen_init(LoggedChange)


def position_serde_serialize(position: Position) -> bytes:
    """``PositionSerde.serialize``, the bytes between position 0 and the limit of the returned buffer.

    ``version 0 ‖ int32 topics ‖ (int32 len ‖ utf8 topic ‖ int32 pairs ‖ (int32 partition ‖ int64 offset)*)*``.
    """
    parts = [struct.pack(">bi", POSITION_SERDE_VERSION, len(position))]
    for topic, partitions in position.items():
        topic_bytes = topic.encode("utf-8")
        parts.append(struct.pack(">i", len(topic_bytes)) + topic_bytes + struct.pack(">i", len(partitions)))
        parts.extend(struct.pack(">iq", partition, offset) for partition, offset in partitions.items())
    return b"".join(parts)


def position_header_value(position: Position) -> bytes:
    """The ``c`` header value as 4.2 sends it: ``PositionSerde.serialize(position).array()``.

    ``serialize`` sizes its buffer with ``Byte.SIZE``/``Integer.SIZE``/``Long.SIZE`` (bit counts, not byte counts),
    and ``logChange`` sends the whole backing array, so the header carries the serialized position followed by zero
    bytes up to that (too large) size. ``PositionSerde.deserialize`` ignores the trailing zeros.
    """
    data = position_serde_serialize(position)
    size = 8 + 32
    for topic, partitions in position.items():
        size += 32 + len(topic.encode("utf-8")) + 32 + (32 + 64) * len(partitions)
    return data + bytes(size - len(data))


def changelog_headers(position: Position | None, *, consistency_enabled: bool) -> Headers:
    """The headers of every changelog record: none unless ``__iq.consistency.offset.vector.enabled__`` is set."""
    if not consistency_enabled:
        return ()
    return (
        (CHANGELOG_VERSION_HEADER_KEY, V_0_CHANGELOG_VERSION_HEADER_VALUE),
        (CHANGELOG_POSITION_HEADER_KEY, position_header_value(position or {})),
    )


def key_value_put(key: bytes, value: bytes | None, record_timestamp: int, headers: Headers = ()) -> LoggedChange:
    """``ChangeLoggingKeyValueBytesStore.put``/``delete``: ``value`` ``None`` deletes and logs a tombstone."""
    return LoggedChange(StoreWrite(key, value), ChangelogRecord(key, value, record_timestamp, headers))


def timestamped_key_value_write(
    key: bytes,
    value: bytes | None,
    value_timestamp: int | None,
    record_timestamp: int,
    headers: Headers = (),
) -> tuple[bytes | None, ChangelogRecord]:
    """``ChangeLoggingTimestampedKeyValueBytesStore.put``: the bytes the store keeps (``None`` deletes) and the
    changelog record, which gets the raw value stamped with the value's time (a tombstone the record's time).

    The rule, as a pair: a store's ``put`` writes and logs it without a :class:`LoggedChange` per write.
    """
    if value is None:
        return None, ChangelogRecord(key, None, record_timestamp, headers)
    if value_timestamp is None:
        raise StateError("a timestamped key-value put needs the value's timestamp")
    stored = store_encoding.value_and_timestamp(value, value_timestamp)
    return stored, ChangelogRecord(key, value, value_timestamp, headers)


def timestamped_key_value_put(
    key: bytes,
    value: bytes | None,
    value_timestamp: int | None,
    record_timestamp: int,
    headers: Headers = (),
) -> LoggedChange:
    """:func:`timestamped_key_value_write` as a :class:`LoggedChange`."""
    stored, record = timestamped_key_value_write(key, value, value_timestamp, record_timestamp, headers)
    return LoggedChange(StoreWrite(key, stored), record)


def session_put(
    key: bytes,
    session_start: int,
    session_end: int,
    aggregate: bytes | None,
    record_timestamp: int,
    headers: Headers = (),
) -> LoggedChange:
    """``ChangeLoggingSessionBytesStore.put``/``remove`` (``aggregate`` ``None``)."""
    store_key = store_encoding.session_store_key(key, session_start, session_end)
    return LoggedChange(
        StoreWrite(store_key, aggregate), ChangelogRecord(store_key, aggregate, record_timestamp, headers)
    )


class WindowStoreChangeLogger:
    """The seqnum state of one window store instance (``RocksDBWindowStore`` + ``ChangeLoggingWindowBytesStore``).

    Mutable on purpose: each store instance numbers its duplicates from 1 after every (re)start.
    """

    __slots__ = ("_changelog_seqnum", "_store_seqnum", "retain_duplicates", "timestamped")

    def __init__(
        self,
        *,
        retain_duplicates: bool,
        timestamped: bool,
        store_seqnum: int = 0,
        changelog_seqnum: int = 0,
    ) -> None:
        self.retain_duplicates = retain_duplicates
        self.timestamped = timestamped
        self._store_seqnum = store_seqnum
        self._changelog_seqnum = changelog_seqnum

    def number(self, null: bool) -> bool:
        """Advance the seqnums as one put does (with duplicates kept: the change-logging layer's at every put, the
        store's at a non-null one); whether the put writes the store (a null put with duplicates kept does not).

        Also a key shard's account of a put another shard makes (issue #29): both counters run over every key's
        puts, so each shard counts the others' to number its own as the unsplit task does."""
        if not self.retain_duplicates:
            return True
        self._changelog_seqnum = (self._changelog_seqnum + 1) & SEQNUM_MASK
        if null:
            return False
        self._store_seqnum = (self._store_seqnum + 1) & SEQNUM_MASK
        return True

    def put(
        self,
        key: bytes,
        value: bytes | None,
        window_start: int,
        record_timestamp: int,
        *,
        value_timestamp: int | None = None,
        headers: Headers = (),
    ) -> LoggedChange:
        """``WindowStore.put(key, value, windowStart)`` through the change-logging layer."""
        stored: bytes | None = value
        if value is not None and self.timestamped:
            if value_timestamp is None:
                raise StateError("a timestamped window put needs the value's timestamp")
            stored = store_encoding.value_and_timestamp(value, value_timestamp)
        writes = self.number(value is None)
        store_write: StoreWrite | None = None
        if writes:
            store_write = StoreWrite(store_encoding.window_store_key(key, window_start, self._store_seqnum), stored)
        changelog_key = store_encoding.window_store_key(key, window_start, self._changelog_seqnum)
        timestamp = value_timestamp if self.timestamped and value is not None and value_timestamp is not None else None
        return LoggedChange(
            store_write,
            ChangelogRecord(changelog_key, value, record_timestamp if timestamp is None else timestamp, headers),
        )


def logged_change(
    store_type: StoreType,
    key: bytes,
    value: bytes | None,
    record_timestamp: int,
    *,
    value_timestamp: int | None = None,
    window_start: int | None = None,
    session_start: int | None = None,
    session_end: int | None = None,
    window_logger: WindowStoreChangeLogger | None = None,
    headers: Headers = (),
) -> LoggedChange:
    """One put (``value`` given) or delete (``value`` ``None``) on a store of ``store_type``."""
    if store_type is StoreType.KEY_VALUE:
        return key_value_put(key, value, record_timestamp, headers)
    if store_type is StoreType.TIMESTAMPED_KEY_VALUE:
        return timestamped_key_value_put(key, value, value_timestamp, record_timestamp, headers)
    if store_type is StoreType.SESSION:
        if session_start is None or session_end is None:
            raise StateError("a session store write needs the session start and end")
        return session_put(key, session_start, session_end, value, record_timestamp, headers)
    if window_start is None:
        raise StateError("a window store write needs the window start")
    logger = window_logger or WindowStoreChangeLogger(
        retain_duplicates=False, timestamped=store_type is StoreType.TIMESTAMPED_WINDOW
    )
    return logger.put(key, value, window_start, record_timestamp, value_timestamp=value_timestamp, headers=headers)
