"""Kafka Streams 4.3's ``offsets`` column family (KIP-1035; ``SI/AbstractColumnFamilyAccessor.java``, 4.3.0).

4.3 keeps each store's committed changelog offset inside the store instead of the task ``.checkpoint``: key = UTF-8
of ``TopicPartition.toString()`` (``<topic>-<partition>``), value = int64 big-endian L (``OFFSET_UNKNOWN`` -4
included); key ``status`` = 1 while open, 0 after a clean close; key ``position`` = the store's ``PositionSerde``
bytes (state.md §15). Only needed to read 4.3 stores or to write 4.3-native ones; streamproc writes the 4.2 layout,
which 4.3 migrates on its first start (``LegacyCheckpointingStateStore.migrateLegacyOffsets``: each ``.checkpoint``
entry is committed into its store's ``offsets`` family, then the file is deleted; proven against a real 4.3.1 app by
``tests/integration/state/test_kafka_streams_opens_state.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError

#: ``RocksDBStore.OFFSETS_COLUMN_FAMILY_NAME`` (4.3).
OFFSETS_COLUMN_FAMILY_NAME = "offsets"
#: The status key (``AbstractColumnFamilyAccessor.statusKey``).
STATUS_KEY = b"status"
#: The position key (``AbstractColumnFamilyAccessor.positionKey``).
POSITION_KEY = b"position"
#: ``status`` while the store is open (an EOS open that finds it means an unclean shutdown → task corrupted).
STATUS_OPEN = 1
#: ``status`` after a clean close.
STATUS_CLOSED = 0
#: Offsets and the status are ``LongSerializer`` bytes.
_LONG = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class ColumnFamilyEntry:
    """One key/value of a RocksDB column family."""

    column_family: str
    key: bytes
    value: bytes


def changelog_offset_entry(partition: TopicPartition, offset: int) -> ColumnFamilyEntry:
    """The entry 4.3 commits for a changelog partition (``AbstractColumnFamilyAccessor.commit``)."""
    return ColumnFamilyEntry(OFFSETS_COLUMN_FAMILY_NAME, str(partition).encode("utf-8"), struct.pack(">q", offset))


def status_entry(*, open_: bool) -> ColumnFamilyEntry:
    """The ``status`` entry: 1 while open, 0 after a clean close."""
    return ColumnFamilyEntry(
        OFFSETS_COLUMN_FAMILY_NAME, STATUS_KEY, struct.pack(">q", STATUS_OPEN if open_ else STATUS_CLOSED)
    )


@dataclass(frozen=True, slots=True)
class StoreOffsets:
    """One 4.3 store's (or segment's) ``offsets`` column family, decoded.

    ``offsets`` maps each changelog partition to the committed offset L (what ``RocksDBStore.committedOffset``
    returns; absent = unknown); ``status`` is ``None`` when the key is absent (a store never opened by 4.3, or
    written by a tool), ``position`` the raw ``PositionSerde`` bytes.
    """

    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    status: int | None = None
    position: bytes | None = None

    @property
    def closed_cleanly(self) -> bool:
        """What 4.3 accepts under EOS (``AbstractColumnFamilyAccessor.open``): status absent or closed."""
        return self.status is None or self.status == STATUS_CLOSED


def decode_offsets_column_family(entries: Iterable[tuple[bytes, bytes]], *, where: str = "store") -> StoreOffsets:
    """Decode the raw key/values of an ``offsets`` column family (``AbstractColumnFamilyAccessor`` layout).

    Changelog keys are ``TopicPartition.toString()``: the partition is after the last ``-`` (topic names may contain
    ``-``). ``where`` names the store in errors.
    """
    offsets: dict[TopicPartition, int] = {}
    status: int | None = None
    position: bytes | None = None
    for key, value in entries:
        if key == POSITION_KEY:
            position = value
            continue
        if len(value) != _LONG.size:
            raise StateError(
                f"{where}: offsets column family entry {key!r} has {len(value)} bytes, expected a {_LONG.size}-byte "
                "long; the store was not written by Kafka Streams 4.3 (delete it to restore from the changelog)"
            )
        (number,) = _LONG.unpack(value)
        if key == STATUS_KEY:
            status = number
            continue
        try:
            partition = TopicPartition.parse(key.decode("utf-8"))
        except ValueError:
            raise StateError(
                f"{where}: offsets column family key {key!r} is not <topic>-<partition>; "
                "the store was not written by Kafka Streams 4.3 (delete it to restore from the changelog)"
            ) from None
        offsets[partition] = number
    return StoreOffsets(offsets, status, position)
