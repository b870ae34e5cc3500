"""A streams group's member records as Kafka 4.2.2's coordinator wrote them (bytes copied from ``__consumer_offsets``
of the test broker with a real ``group.protocol=streams`` app, docs/streams-groups.md §4)."""

from __future__ import annotations

import struct

import pytest

from streamproc.kafka.group_metadata import GroupMetadataUnavailable
from streamproc.kafka.streams_group_records import (
    STREAMS_GROUP_METADATA_RECORD_TYPE,
    StreamsGroupMember,
    group_key,
    parse_member_key,
    parse_member_value,
)

GROUP = "sg-app1"
MEMBER = "9MSB9ZQ9RIi0U2IIG-Rc8g"
#: The record key after its type: GroupId, MemberId (``StreamsGroupMemberMetadataKey`` v0).
KEY = (
    struct.pack(">hh", 19, len(GROUP))
    + GROUP.encode()
    + bytes.fromhex("0016394d5342395a51395249693055324949472d52633867")
)
VALUE = bytes.fromhex(
    "000000004573672d617070312d61363737643438382d653834302d343661612d396461352d3563323333613065353138372d53747265"
    "616d5468726561642d312d636f6e73756d65720b2f3132372e302e302e31000493e0000000002561363737643438382d653834302d3433"
    "61612d396461352d356332333361306535313837ff0100"
)


def test_a_member_record_names_the_group_member_client_and_host() -> None:
    assert parse_member_key(KEY) == (GROUP, MEMBER)
    assert parse_member_value(MEMBER, VALUE) == StreamsGroupMember(
        member_id=MEMBER,
        instance_id=None,
        rack_id=None,
        client_id="sg-app1-a677d488-e840-46aa-9da5-5c233a0e5187-StreamThread-1-consumer",
        client_host="/127.0.0.1",
    )


def test_other_record_types_are_not_members() -> None:
    assert parse_member_key(group_key(STREAMS_GROUP_METADATA_RECORD_TYPE, GROUP)) is None
    assert parse_member_key(b"") is None


def test_a_value_version_it_does_not_know_is_unavailable_not_guessed() -> None:
    with pytest.raises(GroupMetadataUnavailable, match="version 1 is not 0"):
        parse_member_value(MEMBER, b"\x00\x01" + VALUE[2:])


def test_an_unknown_member_record_version_refuses_the_plan_in_one_line() -> None:
    """``kafka/cluster`` keeps the reason as the group's ``members_unknown``; the plan's refusal names it."""
    from streamproc.plan.cluster_snapshot import GroupState
    from streamproc.plan.preconditions import UNKNOWN_GROUP_STATE, check_group
    from streamproc.plan.refusals import StreamsGroupRefused

    with pytest.raises(GroupMetadataUnavailable) as unreadable:
        parse_member_value(MEMBER, b"\x00\x01" + VALUE[2:])
    group = GroupState("streams", UNKNOWN_GROUP_STATE, members_unknown=str(unreadable.value))
    with pytest.raises(StreamsGroupRefused) as refused:
        check_group(group, GROUP)
    text = str(refused.value)
    assert "\n" not in text
    assert text.startswith(
        f"group '{GROUP}' is a KIP-1071 streams group (group.protocol=streams) whose members streamproc could not "
        "read from __consumer_offsets (StreamsGroupMemberMetadataValue version 1 is not 0)"
    )
