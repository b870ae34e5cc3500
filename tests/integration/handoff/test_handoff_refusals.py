"""Bad input at hand-off time, on the real broker: each a specific error and nothing committed; and the warning
about changelog records older than the changelog's retention."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from streamproc.handoff.procedure import handoff
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from streamproc.spark.job import plan_id
from streamproc.storage import load_store
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import processed, run

pytestmark = pytest.mark.integration


def test_a_group_that_became_active_is_refused_naming_its_member(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("handoff-active")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    member = Consumer({"bootstrap.servers": kafka_broker, "group.id": app_id, "client.id": "resumed-too-early",
                       "enable.auto.commit": False})  # fmt: skip
    try:
        member.subscribe([topologies.INPUT])
        deadline = time.monotonic() + 60
        while not member.assignment():
            assert time.monotonic() < deadline, "the member never joined"
            member.poll(0.2)
        refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                      str(run_["store"]), "--yes", ok=False)  # fmt: skip
    finally:
        member.close()
    assert refused.exit_code == 1
    assert f"group '{app_id}' is Stable with 1 member(s) (resumed-too-early on /127.0.0.1)" in refused.output
    assert read_committed_offsets(admin, app_id) == ({}, False)


def test_a_missing_changelog_topic_is_refused_before_anything_is_published(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("handoff-missing")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    for future in admin.delete_topics([run_["changelog"]]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while run_["changelog"] in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                  str(run_["store"]), "--yes", ok=False)  # fmt: skip
    assert refused.exit_code == 1
    assert f"topic(s) {run_['changelog']} that the tasks' results go to do not exist" in refused.output
    assert "make the plan again with --create-internal-topics" in refused.output
    assert read_committed_offsets(admin, app_id) == ({}, False)
    # the plan says so up front
    replanned = run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                    str(tmp_path / "topology.txt"), "--dry-run")  # fmt: skip
    assert f"warning: changelog topic(s) {run_['changelog']} do not exist: the hand-off will refuse" in replanned.output


def test_changelog_records_older_than_retention_are_warned_about_before_publishing(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    app_id = unique("handoff-retention")
    config = {"cleanup.policy": "compact,delete", "retention.ms": str(7 * 86_400_000)}
    run_ = processed(kafka_broker, admin, app_id, tmp_path, changelog_config=config)
    caplog.set_level(logging.WARNING, logger="streamproc.handoff")
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        summary = handoff(run_["plan"], plan_id(run_["plan"]), client_config={"bootstrap.servers": kafka_broker},
                          store=load_store(str(run_["store"])), ledger=ledger, state_dir=None)  # fmt: skip
    assert summary.published == ("0_0", "0_1")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "are older than the topic's retention.ms=604800000 (7.0 days): the broker deletes them" in warnings[0]
