"""A group that still has members: the refusal says what is true and by when it will be empty, and
``--wait-for-empty-group`` polls it until it is (issue #26, point 1).

The wait runs on a fake clock: ``sleep`` advances it, so the deadline is exact and nothing here waits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from streamproc.plan.cluster_snapshot import GroupMember, GroupState
from streamproc.plan.empty_group import (
    DEFAULT_EMPTY_GROUP_WAIT,
    KAFKA_STREAMS_SESSION_TIMEOUT_MS,
    PLAN_WAIT_HINT,
    wait_for_empty_group,
)
from streamproc.plan.preconditions import STREAMS_GROUP_WITH_MEMBERS, UNKNOWN_GROUP_STATE, check_group
from streamproc.plan.refusals import GroupActive

APP = "streams-wordcount"
CONSUMER = f"{APP}-5b0c7e1e-StreamThread-1-consumer"
#: 2026-11-24T17:20:00.000Z
DESCRIBED_AT_MS = 1_795_540_800_000


def member(session_timeout_ms: int | None, n: int = 1) -> GroupMember:
    return GroupMember(f"{APP}-5b0c7e1e-StreamThread-{n}-consumer", "/127.0.0.1", f"m-{n}", session_timeout_ms)


def stable(*members: GroupMember, described_at_ms: int | None = DESCRIBED_AT_MS) -> GroupState:
    return GroupState("classic", "Stable", members, described_at_ms)


def refusal(group: GroupState, *, waited_ms: int | None = None) -> str:
    with pytest.raises(GroupActive) as refused:
        check_group(group, APP, waited_ms=waited_ms)
    return str(refused.value)


def test_kafka_streams_default_session_timeout_is_consumer_configs() -> None:
    """ConsumerConfig's session.timeout.ms default (45000), which StreamsConfig's consumer overrides leave alone."""
    assert KAFKA_STREAMS_SESSION_TIMEOUT_MS == 45_000
    assert DEFAULT_EMPTY_GROUP_WAIT == "PT60S"


def test_members_of_a_closed_app_are_named_with_what_is_true_and_when_they_leave() -> None:
    text = refusal(stable(member(6_000)))
    assert text.startswith(
        f"group '{APP}' is Stable with 1 member(s) ({CONSUMER} on /127.0.0.1): either an instance of the application "
        "is running, or they are the members of one that was stopped with KafkaStreams#close() (which does not leave "
        "the group) or crashed: the broker removes those at most session.timeout.ms after their last heartbeat "
        "(theirs: 6 s, from the group's metadata record); with no instance running the group is empty by "
        "2026-11-24T17:20:06.000Z at the latest; stop every instance and plan again, "
    )
    assert f", {PLAN_WAIT_HINT} (kafka-consumer-groups.sh: Error: Assignments can only be reset if the group" in text
    assert "--wait-for-empty-group[=DURATION] (a bare flag waits PT60S" in text
    assert "\n" not in text


def test_unknown_session_timeouts_say_kafka_streams_default_and_that_it_is_assumed() -> None:
    """The broker's DescribeGroups does not carry a session timeout; without the metadata record, the default."""
    text = refusal(stable(member(None)))
    assert "(45 s by default in Kafka Streams; the broker did not give its)" in text
    assert "empty by 2026-11-24T17:20:45.000Z at the latest if the application kept the default;" in text


def test_the_longest_session_timeout_decides_and_an_unknown_one_counts_as_the_default() -> None:
    assert "(theirs: 10 s, from the group's metadata record)" in refusal(stable(member(6_000, 1), member(10_000, 2)))
    mixed = refusal(stable(member(6_000, 1), member(None, 2)))
    assert "(45 s by default in Kafka Streams; the broker did not give theirs)" in mixed
    assert "empty by 2026-11-24T17:20:45.000Z at the latest if the application kept the default" in mixed


def test_a_session_timeout_longer_than_the_bare_flag_waits_names_the_duration_that_covers_it() -> None:
    text = refusal(stable(member(300_000)))
    assert "empty by 2026-11-24T17:25:00.000Z at the latest" in text
    assert "(their session timeout needs --wait-for-empty-group=PT305S)" in text
    assert "needs --wait-for-empty-group=" not in refusal(stable(member(45_000)))


def test_without_the_time_it_was_described_no_instant_is_claimed() -> None:
    text = refusal(stable(member(6_000), described_at_ms=None))
    assert "(theirs: 6 s, from the group's metadata record); stop every instance" in text
    assert "empty by" not in text


def test_a_wait_that_ended_with_members_says_so_in_the_same_refusal() -> None:
    text = refusal(stable(member(6_000)), waited_ms=30_000)
    assert text.startswith(f"group '{APP}' is still Stable after waiting 30 s for it to empty with 1 member(s)")
    assert "but the current state is Stable.)" in text


def test_a_rebalancing_group_without_members_is_refused_without_claims_about_members() -> None:
    text = refusal(GroupState("classic", "PreparingRebalance", (), DESCRIBED_AT_MS))
    assert "with 0 member(s) (none listed): stop every instance and plan again (kafka-consumer-groups.sh" in text


class FakeClock:
    """Monotonic milliseconds that only ``sleep`` moves; counts the describes."""

    def __init__(self, groups: list[GroupState | None]) -> None:
        self.now_ms = 1_000
        self.slept_ms: list[int] = []
        self._groups: Iterator[GroupState | None] = iter(groups)
        self.reads = 0
        self._last: GroupState | None = None

    def monotonic_ms(self) -> int:
        return self.now_ms

    def sleep(self, seconds: float) -> None:
        self.slept_ms.append(round(seconds * 1000))
        self.now_ms += round(seconds * 1000)

    def read(self) -> GroupState | None:
        self.reads += 1
        self._last = next(self._groups, self._last)
        return self._last


def wait(clock: FakeClock, wait_ms: int) -> GroupState | None:
    return wait_for_empty_group(clock.read, APP, wait_ms, monotonic_ms=clock.monotonic_ms, sleep=clock.sleep)


def test_the_wait_describes_the_group_until_its_members_are_gone(caplog: pytest.LogCaptureFixture) -> None:
    empty = GroupState("classic", "Empty", (), DESCRIBED_AT_MS + 6_000)
    clock = FakeClock([stable(member(6_000))] * 12 + [empty])
    with caplog.at_level(logging.WARNING, logger="streamproc.plan.empty_group"):
        assert wait(clock, 30_000) == empty
    assert clock.reads == 13 and clock.slept_ms == [500] * 12
    first, last = caplog.messages
    assert first.startswith(f"group '{APP}' is Stable with 1 member(s) ({CONSUMER}): waiting up to 30 s ")
    assert "(--wait-for-empty-group) until it has none; either an instance of the application is running" in first
    assert "empty by 2026-11-24T17:20:06.000Z at the latest" in first
    assert last == f"group '{APP}' is Empty after 6.0 s of waiting: the plan reads its committed offsets now"
    check_group(empty, APP, waited_ms=30_000)  # passes: the plan goes on to read the group and its offsets


def test_the_wait_ends_at_its_deadline_with_the_members_still_there() -> None:
    clock = FakeClock([stable(member(45_000))])
    last = wait(clock, 2_200)
    assert last is not None and last.members
    assert clock.slept_ms == [500, 500, 500, 500, 200] and clock.now_ms == 1_000 + 2_200
    assert clock.reads == 6
    assert "is still Stable after waiting 2200 ms for it to empty" in refusal(last, waited_ms=2_200)


@pytest.mark.parametrize(
    "group",
    [
        None,
        GroupState("classic", "Empty", ()),
        GroupState("classic", "Dead", ()),
        GroupState("streams", UNKNOWN_GROUP_STATE, ()),  # refused by the check at once: its members could not be read
        GroupState("streams", "Empty", (), epoch=4),
    ],
    ids=["no-group", "empty", "dead", "streams-group-unknown", "streams-group-empty"],
)
def test_the_wait_returns_at_once_when_there_is_nothing_to_wait_for(
    group: GroupState | None, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock([group])
    with caplog.at_level(logging.WARNING, logger="streamproc.plan.empty_group"):
        assert wait(clock, 60_000) == group
    assert clock.reads == 1 and clock.slept_ms == [] and not caplog.messages


def test_a_group_that_goes_away_while_waited_for_ends_the_wait() -> None:
    clock = FakeClock([stable(member(6_000)), None])
    assert wait(clock, 10_000) is None
    assert clock.reads == 2


def test_a_streams_group_with_members_is_waited_for_until_they_leave() -> None:
    """Its members come from its records in ``__consumer_offsets`` (kafka/streams_group_records): waited for as a
    classic group's are."""
    with_members = GroupState("streams", STREAMS_GROUP_WITH_MEMBERS, (member(None),), DESCRIBED_AT_MS, epoch=5)
    empty = GroupState("streams", "Empty", (), DESCRIBED_AT_MS + 1_000, epoch=6)
    clock = FakeClock([with_members, with_members, empty])
    assert wait(clock, 10_000) == empty
    assert clock.reads == 3
    check_group(empty, APP, waited_ms=1_000)
