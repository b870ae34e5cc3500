"""Kafka Streams 4.3 ``offsets`` column family entries (``AbstractColumnFamilyAccessor``)."""

from __future__ import annotations

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError
from streamproc.state.offsets_column_family import (
    POSITION_KEY,
    StoreOffsets,
    changelog_offset_entry,
    decode_offsets_column_family,
    status_entry,
)


def test_status_entries() -> None:
    assert status_entry(open_=False).value == bytes(8)
    assert status_entry(open_=True).value == (1).to_bytes(8, "big")
    assert status_entry(open_=True).key == b"status"
    assert status_entry(open_=True).column_family == "offsets"


def test_changelog_offset_entry() -> None:
    entry = changelog_offset_entry(TopicPartition("app-s-changelog", 1), -4)
    assert entry.key == b"app-s-changelog-1"
    assert entry.value.hex() == "fffffffffffffffc"


def test_decode_round_trips_the_entries_4_3_commits() -> None:
    written = [
        changelog_offset_entry(TopicPartition("my-app-counts-changelog", 12), 25),
        changelog_offset_entry(TopicPartition("other-changelog", 0), -4),
        status_entry(open_=False),
    ]
    decoded = decode_offsets_column_family([(e.key, e.value) for e in written] + [(POSITION_KEY, b"\x00\x01")])
    assert decoded.offsets == {
        TopicPartition("my-app-counts-changelog", 12): 25,
        TopicPartition("other-changelog", 0): -4,
    }
    assert decoded.status == 0
    assert decoded.position == b"\x00\x01"
    assert decoded.closed_cleanly


def test_status_open_is_not_closed_cleanly_and_absent_status_is() -> None:
    open_ = status_entry(open_=True)
    assert not decode_offsets_column_family([(open_.key, open_.value)]).closed_cleanly
    assert decode_offsets_column_family([]) == StoreOffsets()
    assert StoreOffsets().closed_cleanly


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (b"app-counts-changelog-0", b"\x00", "1 bytes"),
        (b"status", b"", "0 bytes"),
        (b"nopartition", bytes(8), "not <topic>-<partition>"),
        (b"topic-x", bytes(8), "not <topic>-<partition>"),
        (b"-0", bytes(8), "not <topic>-<partition>"),
    ],
)
def test_decode_rejects_what_4_3_never_writes(key: bytes, value: bytes, message: str) -> None:
    with pytest.raises(StateError, match=message):
        decode_offsets_column_family([(key, value)], where="task [0_0] store counts")
