"""The group's metadata record in ``__consumer_offsets`` as a Kafka 4.2.2 broker writes it: key, partition and the
``GroupMetadataValue`` versions, the one place a member's ``session.timeout.ms`` is visible to a client."""

from __future__ import annotations

import struct

import pytest

from streamproc.kafka.group_metadata import (
    GroupMetadataUnavailable,
    group_metadata_key,
    java_string_hash,
    parse_group_metadata_value,
    partition_for,
)

#: The record a Kafka 4.2.2 broker wrote (value version 3, ``GroupCoordinatorRecordHelpers.newGroupMetadataRecord``)
#: when a real Kafka Streams 4.2.2 app (``StateResumeApp``, main consumer ``session.timeout.ms`` 6000) joined the
#: group ``proto-app-1795912117``: read from ``__consumer_offsets`` byte for byte.
MEMBER = "proto-app-1795912117-52f3e480-eae6-40bf-9b12-30cf57320a8c-StreamThread-1-consumer"
MEMBER_ID = f"{MEMBER}-79b9c38a-2a01-48c6-ba78-02d817bd9733"
REAL_V3 = bytes.fromhex(
    "00030008636f6e73756d657200000001000673747265616d007670726f746f2d6170702d313739353931323131372d3532663365"
    "3438302d656165362d343062662d396231322d3330636635373332306138632d53747265616d5468726561642d312d636f6e7375"
    "6d65722d37396239633338612d326130312d343863362d626137382d303264383137626439373333000001a224b4405200000001"
    "007670726f746f2d6170702d313739353931323131372d35326633653438302d656165362d343062662d396231322d3330636635"
    "373332306138632d53747265616d5468726561642d312d636f6e73756d65722d37396239633338612d326130312d343863362d62"
    "6137382d303264383137626439373333ffff005170726f746f2d6170702d313739353931323131372d35326633653438302d6561"
    "65362d343062662d396231322d3330636635373332306138632d53747265616d5468726561642d312d636f6e73756d6572000a2f"
    "3132372e302e302e31000493e00000177000000052000300000001001370726f746f2d696e2d3137393539313231313700000029"
    "0000000b0000000b52f3e480eae640bf9b1230cf57320a8c000000000000000002000000000000000000000000ffffffffffff00"
    "00005b000300000001001370726f746f2d696e2d313739353931323131370000000100000000000000340000000b0000000b0000"
    "000100000000000000000000000000000000000000000000000000000000000000007fffffffffffffff"
)


def test_java_string_hash_code() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\U0001f600") == 1772899  # two UTF-16 code units, 31 * 0xD83D + 0xDE00


def test_partition_is_the_coordinators() -> None:
    """``Utils.abs(groupId.hashCode()) % numPartitions``; ``Utils.abs(Integer.MIN_VALUE)`` is 0."""
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 7) == 0
    assert java_string_hash("orders") == -1008770331  # jshell: "orders".hashCode()
    assert partition_for("orders", 50) == 1008770331 % 50


def test_key_is_record_type_2_then_the_group() -> None:
    assert group_metadata_key("app") == b"\x00\x02\x00\x03app"


def test_a_real_brokers_record_gives_the_members_session_timeout() -> None:
    metadata = parse_group_metadata_value(REAL_V3)
    assert (metadata.protocol_type, metadata.generation, metadata.protocol) == ("consumer", 1, "stream")
    assert metadata.leader == MEMBER_ID and metadata.current_state_timestamp == 1795912122450
    [member] = metadata.members
    assert (member.member_id, member.client_id, member.client_host) == (MEMBER_ID, MEMBER, "/127.0.0.1")
    assert (member.group_instance_id, member.rebalance_timeout_ms, member.session_timeout_ms) == (None, 300_000, 6_000)
    assert metadata.session_timeouts() == {MEMBER_ID: 6_000}


def test_an_empty_groups_record() -> None:
    """What the coordinator writes when the last member's session expired (generation 2, no protocol, no members)."""
    metadata = parse_group_metadata_value(
        bytes.fromhex("00030008636f6e73756d657200000002ffffffff000001a224b45ce100000000")
    )
    assert (metadata.generation, metadata.protocol, metadata.leader, metadata.members) == (2, None, None, ())


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _compact(text: str | None) -> bytes:
    return b"\x00" if text is None else _uvarint(len(text.encode()) + 1) + text.encode()


def test_the_flexible_version_4() -> None:
    """Compact strings, arrays and bytes, and tagged fields after each struct (``flexibleVersions: 4+``)."""
    tagged = _uvarint(1) + _uvarint(7) + _uvarint(2) + b"\xff\xff"  # an unknown tagged field is skipped
    member = (
        _compact("m-1") + _compact("static-1") + _compact("client-1") + _compact("/10.0.0.7")
        + struct.pack(">ii", 60_000, 120_000) + _uvarint(3) + b"ab" + _uvarint(1) + tagged
    )  # fmt: skip
    value = (
        struct.pack(">h", 4) + _compact("consumer") + struct.pack(">i", 9) + _compact("stream") + _compact(None)
        + struct.pack(">q", 42) + _uvarint(2) + member + _uvarint(0)
    )  # fmt: skip
    metadata = parse_group_metadata_value(value)
    assert (metadata.generation, metadata.protocol, metadata.leader, metadata.current_state_timestamp) == (
        9, "stream", None, 42
    )  # fmt: skip
    [m] = metadata.members
    assert (m.member_id, m.group_instance_id, m.client_id, m.client_host) == (
        "m-1",
        "static-1",
        "client-1",
        "/10.0.0.7",
    )
    assert (m.rebalance_timeout_ms, m.session_timeout_ms) == (60_000, 120_000)


def test_version_0_has_no_rebalance_timeout_nor_state_timestamp() -> None:
    def string(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    member = string("m") + string("c") + string("/h") + struct.pack(">i", 10_000) + struct.pack(">ii", 0, 0)
    value = struct.pack(">h", 0) + string("consumer") + struct.pack(">i", 1) + string("range") + string("m")
    metadata = parse_group_metadata_value(value + struct.pack(">i", 1) + member)
    assert metadata.current_state_timestamp == -1
    assert [(m.rebalance_timeout_ms, m.session_timeout_ms) for m in metadata.members] == [(-1, 10_000)]


@pytest.mark.parametrize(
    ("value", "why"),
    [(b"\x00\x05", "version 5 is not one of 0-4"), (REAL_V3[:60], "cannot be read: record ends")],
)
def test_what_cannot_be_read_is_named(value: bytes, why: str) -> None:
    with pytest.raises(GroupMetadataUnavailable, match=why):
        parse_group_metadata_value(value)
