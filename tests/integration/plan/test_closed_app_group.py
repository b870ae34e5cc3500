"""A real Kafka Streams 4.2.2 app stopped with the plain ``KafkaStreams#close()`` stays in its group (issue #26, 1).

``close()`` does not leave the group (only ``CloseOptions.groupMembershipOperation(LEAVE_GROUP)`` does): its member
stays until ``session.timeout.ms`` after its last heartbeat. ``StateResumeApp`` (the oracle's run protocol) closes
that way with ``STREAMPROC_ORACLE_GROUP_MEMBERSHIP_ON_CLOSE=REMAIN_IN_GROUP``, its main consumer's session timeout
set to 10 s (the broker's ``group.min.session.timeout.ms`` is 6 s) so that the member is still there when the plan
runs right after, even on a loaded machine, and the wait stays short. A plan at once is refused with what is true
(a running app, or one closed without leaving or crashed), the member by name and the instant by which the group
is empty, its session timeout read from the group's metadata record; ``--wait-for-empty-group`` waits until the
member expired and plans from the offsets the app committed.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka import clients
from streamproc.kafka.cluster import read_committed_offsets, read_group
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.plan.run_plan import RunPlan
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import run
from tests.integration.handoff.topologies import _state_resume
from tests.integration.state.test_kafka_streams_opens_state import (
    CASES,
    KEYS,
    app_classpath,
    expected_counts,
    produce,
    run_java_app,
)

pytestmark = pytest.mark.integration
__all__ = ["app_classpath"]

SESSION_TIMEOUT_MS = 10_000
CLOSE_WITHOUT_LEAVING = {
    "STREAMPROC_ORACLE_GROUP_MEMBERSHIP_ON_CLOSE": "REMAIN_IN_GROUP",
    "STREAMPROC_ORACLE_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
}
_EMPTY_BY = re.compile(r"the group is empty by (\S+Z) at the latest;")


def test_an_app_closed_without_leaving_is_refused_until_its_member_expires_and_waited_for(
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    app_classpath: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic, app_id = create_topic(admin, unique("closed-app-in")), unique("closed-app")
    base = int(time.time() * 1000) - 3_600_000
    processed = [(KEYS[i % 4], base + i) for i in range(20)]
    backlog = [(KEYS[i % 3], base + 100 + i) for i in range(7)]
    produce(kafka_broker, topic, processed)
    case = CASES[0]  # key-value counts, at_least_once
    app = run_java_app(
        app_classpath, case.java_args(kafka_broker, app_id, tmp_path / "state", topic, len(processed)),
        CLOSE_WITHOUT_LEAVING,
    )  # fmt: skip
    assert app["group_membership_on_close"] == "REMAIN_IN_GROUP" and app["state"] == "NOT_RUNNING"
    assert app["store"] == expected_counts(processed)
    produce(kafka_broker, topic, backlog)
    topology = tmp_path / "topology.txt"
    topology.write_text(str(_state_resume(topic).describe()), encoding="utf-8")
    plan = ("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(topology))

    before_ms = int(time.time() * 1000)
    refused = run(*plan, "--dry-run", ok=False)
    after_ms = int(time.time() * 1000)
    assert refused.exit_code == 1, refused.output
    [line] = refused.stderr.splitlines()
    consumer = re.escape(app_id) + r"-[0-9a-f-]{36}-StreamThread-1-consumer"
    expected = (
        rf"error: group '{re.escape(app_id)}' is Stable with 1 member\(s\) \({consumer} on /127\.0\.0\.1\): either an "
        r"instance of the application is running, or they are the members of one that was stopped with "
        r"KafkaStreams#close\(\) \(which does not leave the group\) or crashed: the broker removes those at most "
        r"session\.timeout\.ms after their last heartbeat \(theirs: 10 s, from the group's metadata record\); with no "
        r"instance running the group is empty by \S+Z at the latest; stop every instance and plan again, or let the "
        r"plan wait until it is empty with --wait-for-empty-group\[=DURATION\] "
    )
    assert re.match(expected, line), line
    empty_by = _EMPTY_BY.search(line)
    assert empty_by is not None, line
    described_ms = int(datetime.fromisoformat(empty_by[1]).timestamp() * 1000) - SESSION_TIMEOUT_MS
    assert before_ms <= described_ms <= after_ms  # the session timeout, counted from when the group was described

    with caplog.at_level(logging.WARNING, logger="streamproc.plan.empty_group"):
        waited = run(*plan, "--wait-for-empty-group=PT30S", "--out", str(tmp_path / "plan.json"))
    assert waited.exit_code == 0, waited.output
    started, emptied = caplog.messages
    assert started.startswith(f"group '{app_id}' is Stable with 1 member(s) ({app_id}-")
    assert "waiting up to 30 s (--wait-for-empty-group) until it has none; either an instance" in started
    assert re.fullmatch(rf"group '{re.escape(app_id)}' is Empty after [0-9.]+ s of waiting: the plan reads its "
                        r"committed offsets now", emptied), emptied  # fmt: skip

    admin_client = clients.admin({"bootstrap.servers": kafka_broker})
    group = read_group(admin_client, app_id)
    assert group is not None and group.state == "Empty" and not group.members
    committed, _ = read_committed_offsets(admin_client, app_id)
    assert committed[TopicPartition(topic, 0)].offset == len(processed)
    planned = RunPlan.read(tmp_path / "plan.json")
    [commit] = planned.commits
    assert (commit.before, commit.after) == (len(processed), len(processed) + len(backlog))
    [planned_range] = planned.ranges
    assert (planned_range.start, planned_range.end) == (len(processed), len(processed) + len(backlog))
