"""Kafka Streams 4.3's ``offsets`` column family (KIP-1035; ``SI/AbstractColumnFamilyAccessor.java``, 4.3.0).

4.3 keeps each store's committed changelog offset inside the store instead of the task ``.checkpoint``: key = UTF-8
of ``TopicPartition.toString()`` (``<topic>-<partition>``), value = int64 big-endian L (``OFFSET_UNKNOWN`` -4
included); key ``status`` = 1 while open, 0 after a clean close; key ``position`` = the store's ``PositionSerde``
bytes (state.md §15). Only needed to read 4.3 stores or to write 4.3-native ones; streamproc writes the 4.2 layout.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from streamproc.engine.records import TopicPartition

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
