"""``--wait-for-empty-group[=DURATION]`` of ``streamproc plan`` and ``run``: wait for the members of an application
that no longer runs to leave its group (``plan/empty_group``), then plan."""

from __future__ import annotations

import click

from streamproc.plan.empty_group import DEFAULT_EMPTY_GROUP_WAIT, WAIT_FOR_EMPTY_GROUP_OPTION

wait_for_empty_group_option = click.option(
    WAIT_FOR_EMPTY_GROUP_OPTION,
    "wait_for_empty_group",
    is_flag=False,
    flag_value=DEFAULT_EMPTY_GROUP_WAIT,
    default=None,
    metavar="[DURATION]",
    help="While the application's group still has members (an instance stopped with KafkaStreams#close(), which does "
    "not leave the group, or crashed: they leave session.timeout.ms after their last heartbeat), wait up to DURATION "
    f"(ISO-8601, e.g. PT2M; default {DEFAULT_EMPTY_GROUP_WAIT}) for it to empty, then plan; still not empty: refused.",
)


def wait_for_empty_group_ms(duration: str | None) -> int | None:
    """``--wait-for-empty-group``'s DURATION in milliseconds (``None``: do not wait), read as the reset tools read
    ``--by-duration`` (Java's ``Duration.parse``); a bad one is one line naming the option."""
    if duration is None:
        return None
    from streamproc.plan.reset_formats import NANOS_PER_MILLI, parse_duration

    return parse_duration(duration, what=WAIT_FOR_EMPTY_GROUP_OPTION) // NANOS_PER_MILLI
