"""A group that still has members: what is true of them, when they will be gone, and the wait for it.

Kafka Streams' plain ``KafkaStreams#close()`` does not leave the consumer group (only ``close(CloseOptions
.groupMembershipOperation(LEAVE_GROUP))`` does), and a crashed instance cannot: the group coordinator removes such a
member when its session times out, ``session.timeout.ms`` after its last heartbeat (``GroupMetadataManager``'s
heartbeat timer; 45 s by default in Kafka Streams 4.2). Until then the plan and the hand-off refuse the group
(:func:`streamproc.plan.preconditions.check_group`): nothing is committed while members exist. The broker exposes
neither the last heartbeat nor a deadline; ``kafka/group_metadata`` reads each member's session timeout from the
group's metadata record, and :func:`members_leave` says what follows from it. ``--wait-for-empty-group`` polls the
group until it is empty (:func:`wait_for_empty_group`).

This module imports nothing heavy: the command line reads its constants when it is loaded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from streamproc.plan.cluster_snapshot import GroupState

log = logging.getLogger(__name__)

_INACTIVE_GROUP_STATES: Final = frozenset({"Empty", "Dead"})
#: Kafka Streams' ``session.timeout.ms`` unless the application sets one: ``ConsumerConfig``'s default, which
#: ``StreamsConfig``'s consumer overrides leave alone (4.2).
KAFKA_STREAMS_SESSION_TIMEOUT_MS: Final = 45_000
#: The option that waits for the group to empty before the plan reads it (``streamproc plan``/``run``).
WAIT_FOR_EMPTY_GROUP_OPTION: Final = "--wait-for-empty-group"
#: How long that option waits without a DURATION: Kafka Streams' default session timeout, with margin.
DEFAULT_EMPTY_GROUP_WAIT_MS: Final = 60_000
DEFAULT_EMPTY_GROUP_WAIT: Final = f"PT{DEFAULT_EMPTY_GROUP_WAIT_MS // 1000}S"
#: How often the group is described while waiting.
_POLL_MS: Final = 500
#: The plan's hint at the wait (the hand-off has none: it must not wait with a plan in hand that may be stale).
PLAN_WAIT_HINT: Final = (
    f"or let the plan wait until it is empty with {WAIT_FOR_EMPTY_GROUP_OPTION}[=DURATION] (a bare flag waits "
    f"{DEFAULT_EMPTY_GROUP_WAIT}; the DAGs' param wait_for_empty_group)"
)


def group_is_inactive(group: GroupState | None) -> bool:
    """No group, or one without members in state ``Empty``/``Dead``: what the plan and the hand-off require."""
    return group is None or (not group.members and group.state in _INACTIVE_GROUP_STATES)


def _utc(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds(ms: int) -> str:
    """``45 s``, or ``6500 ms`` where whole seconds would round."""
    return f"{ms // 1000} s" if ms % 1000 == 0 else f"{ms} ms"


def session_timeout_ms(group: GroupState) -> tuple[int, bool]:
    """The longest ``session.timeout.ms`` of the group's members, and whether every member's is known (else Kafka
    Streams' default stands in for the unknown ones)."""
    known = [m.session_timeout_ms for m in group.members if m.session_timeout_ms is not None]
    complete = len(known) == len(group.members)
    return max(known + ([] if complete else [KAFKA_STREAMS_SESSION_TIMEOUT_MS])), complete


def members_leave(group: GroupState) -> str:
    """What is true of a group's members when no instance of the application runs, and when they are gone.

    Kafka Streams' plain ``close()`` does not leave the group (only ``CloseOptions.groupMembershipOperation(
    LEAVE_GROUP)`` does), and a crashed instance cannot: the coordinator removes such a member when its session
    times out, ``session.timeout.ms`` after its last heartbeat (``GroupMetadataManager``'s heartbeat timer). The broker
    exposes neither that heartbeat nor a deadline; the timeout comes from the group's metadata record when it could be
    read, and the latest time counts from when the group was described.
    """
    timeout, complete = session_timeout_ms(group)
    if complete:
        source = f"theirs: {seconds(timeout)}, from the group's metadata record"
    else:
        source = (
            f"{seconds(KAFKA_STREAMS_SESSION_TIMEOUT_MS)} by default in Kafka Streams; the broker did not give "
            f"{'theirs' if len(group.members) > 1 else 'its'}"
        )
    when = ""
    if group.described_at_ms is not None:
        assumed = "" if complete else " if the application kept the default"
        empty_by = _utc(group.described_at_ms + timeout)
        when = f"; with no instance running the group is empty by {empty_by} at the latest{assumed}"
    return (
        "either an instance of the application is running, or they are the members of one that was stopped with "
        "KafkaStreams#close() (which does not leave the group) or crashed: the broker removes those at most "
        f"session.timeout.ms after their last heartbeat ({source}){when}"
    )


def wait_duration_hint(group: GroupState) -> str:
    """``--wait-for-empty-group=PT…S`` when the members' session timeout is longer than the bare flag waits."""
    timeout, _complete = session_timeout_ms(group)
    if timeout + 5_000 <= DEFAULT_EMPTY_GROUP_WAIT_MS:
        return ""
    return f" (their session timeout needs {WAIT_FOR_EMPTY_GROUP_OPTION}=PT{-(-timeout // 1000) + 5}S)"


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def wait_for_empty_group(
    read_group: Callable[[], GroupState | None],
    application_id: str,
    wait_ms: int,
    *,
    monotonic_ms: Callable[[], int] = _monotonic_ms,
    sleep: Callable[[float], None] = time.sleep,
    poll_ms: int = _POLL_MS,
) -> GroupState | None:
    """Describe the group (``read_group``) every ``poll_ms`` until it is inactive or ``wait_ms`` have passed; the
    last group read.

    The caller then asks ``preconditions.check_group`` of it (the same refusal, naming the wait, if members remain)
    and reads everything else afterwards, the committed offsets included, so that a plan sees the group as it is once
    empty.
    A streams group whose members could not be read is returned at once (the check refuses it).
    """
    started = monotonic_ms()
    group = read_group()
    if group is None or group_is_inactive(group) or (group.protocol == "streams" and not group.members):
        return group
    members = ", ".join(m.client_id for m in group.members) or "none listed"
    log.warning(
        "group '%s' is %s with %d member(s) (%s): waiting up to %s (%s) until it has none; %s",
        application_id, group.state, len(group.members), members, seconds(wait_ms), WAIT_FOR_EMPTY_GROUP_OPTION,
        members_leave(group) if group.members else "a group without members becomes Empty once its rebalance ends",
    )  # fmt: skip
    while True:
        left = started + wait_ms - monotonic_ms()
        if left <= 0:
            return group
        sleep(min(poll_ms, left) / 1000)
        group = read_group()
        if group_is_inactive(group):
            state = "gone" if group is None else group.state
            log.warning(
                "group '%s' is %s after %.1f s of waiting: the plan reads its committed offsets now",
                application_id, state, (monotonic_ms() - started) / 1000,
            )  # fmt: skip
            return group
