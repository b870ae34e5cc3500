"""Kafka Streams 4.3 ``offsets`` column family entries (``AbstractColumnFamilyAccessor``)."""

from __future__ import annotations

from streamproc.engine.records import TopicPartition
from streamproc.state.offsets_column_family import changelog_offset_entry, status_entry


def test_status_entries() -> None:
    assert status_entry(open_=False).value == bytes(8)
    assert status_entry(open_=True).value == (1).to_bytes(8, "big")
    assert status_entry(open_=True).key == b"status"
    assert status_entry(open_=True).column_family == "offsets"


def test_changelog_offset_entry() -> None:
    entry = changelog_offset_entry(TopicPartition("app-s-changelog", 1), -4)
    assert entry.key == b"app-s-changelog-1"
    assert entry.value.hex() == "fffffffffffffffc"
