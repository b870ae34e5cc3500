"""What the manual DAG refuses, each with a specific error in the task log and the run failed in the ledger:
contradictory params, a missing connection, a second active run of the application, a stale plan; and a rejected
approval hands off nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from tests.integration.airflow import topologies
from tests.integration.airflow.conftest import (
    BACKFILL,
    PARTITIONS,
    AirflowSetup,
    TaskLog,
    admin_client,
    backfill_conf,
    prepare_application,
    run_dag,
    task_states,
)
from tests.integration.handoff.test_handoff import log_ends
from tests.integration.plan.test_streams_protocol import broker_without_streams as broker_without_streams

pytestmark = pytest.mark.integration


def ledger_run(setup: AirflowSetup, run: Any) -> Any:
    with Ledger(setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, run.run_id)
    assert detail is not None, f"no ledger run for {run.run_id}"
    return detail.summary


@pytest.fixture
def app_id(airflow_setup: AirflowSetup, admin: AdminClient, unique: Callable[[str], str]) -> str:
    app = unique("refused")
    prepare_application(admin, airflow_setup.bootstrap, "checks", app)
    return app


def test_contradictory_params_are_refused_by_the_plan_naming_both(
    airflow_setup: AirflowSetup, dagbag: Any, app_id: str, task_log: TaskLog
) -> None:
    conf = backfill_conf(airflow_setup, "checks", app_id, start="committed", start_datetime="2026-01-01T00:00:00Z")

    run = run_dag(dagbag, BACKFILL, conf, log=task_log)

    assert task_states(run)["plan"] == "failed"
    message = "param 'start_datetime' is set but 'start' is 'committed'"
    assert message in task_log.text
    summary = ledger_run(airflow_setup, run)
    assert summary.status == "failed" and summary.error is not None and message in summary.error


def test_a_missing_connection_is_one_clear_error(
    airflow_setup: AirflowSetup, dagbag: Any, app_id: str, task_log: TaskLog
) -> None:
    conf = backfill_conf(airflow_setup, "checks", app_id, kafka_conn_id="kafka_elsewhere")
    run = run_dag(dagbag, BACKFILL, conf, log=task_log)

    assert task_states(run)["plan"] == "failed"
    message = "Airflow connection 'kafka_elsewhere' (the Kafka cluster) is not defined"
    assert message in task_log.text and "AIRFLOW_CONN_KAFKA_ELSEWHERE" in task_log.text
    summary = ledger_run(airflow_setup, run)
    assert summary.status == "failed" and summary.error is not None and message in summary.error


def test_a_streams_app_is_refused_on_a_cluster_without_the_streams_protocol(
    airflow_setup: AirflowSetup, dagbag: Any, app_id: str, task_log: TaskLog, broker_without_streams: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The param ``group_protocol=streams`` reaches the plan, which asks the cluster (a second real broker with
    ``group.coordinator.rebalance.protocols=classic,consumer``) and fails the run in one line, as the CLI's plan."""
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_NO_STREAMS", json.dumps(
        {"conn_type": "kafka", "extra": {"bootstrap.servers": broker_without_streams}}
    ))  # fmt: skip
    conf = backfill_conf(airflow_setup, "checks", app_id, group_protocol="streams", kafka_conn_id="kafka_no_streams")

    run = run_dag(dagbag, BACKFILL, conf, log=task_log)

    assert task_states(run)["plan"] == "failed"
    message = (
        f"application '{app_id}' has group.protocol=streams, but the cluster does not offer the streams group protocol "
        "(StreamsGroupDescribe answered UNSUPPORTED_VERSION)"
    )
    assert message in task_log.text
    summary = ledger_run(airflow_setup, run)
    assert summary.status == "failed" and summary.error is not None and message in summary.error


def test_a_run_beside_another_active_run_of_the_application_is_refused(
    airflow_setup: AirflowSetup, dagbag: Any, app_id: str, task_log: TaskLog
) -> None:
    with Ledger(airflow_setup.ledger_url) as ledger:
        other = ledger.begin_run(application_id=app_id, trigger="cli")  # `streamproc run` of the same application
    try:
        run = run_dag(dagbag, BACKFILL, backfill_conf(airflow_setup, "checks", app_id), log=task_log)

        assert task_states(run)["plan"] == "failed"
        assert f"ApplicationBusy: application '{app_id}' is busy: run {other}" in task_log.text
        with Ledger(airflow_setup.ledger_url) as ledger:
            runs = {r.run_id: r for r in ledger.runs(application_id=app_id)}
            refused = ledger.run_for_dag_run(BACKFILL, run.run_id)
        # the ledger shows why: this DAG run failed naming the other run, which still holds the application
        assert refused is not None and refused.summary.status == "failed"
        assert refused.summary.error is not None and f"is busy: run {other}" in refused.summary.error
        assert {run_id: r.status for run_id, r in runs.items()} == {other: "running", refused.summary.run_id: "failed"}
    finally:
        with Ledger(airflow_setup.ledger_url) as ledger:
            ledger.finish_run(other, "succeeded")


def test_a_rejected_approval_hands_off_nothing(
    airflow_setup: AirflowSetup, dagbag: Any, admin: AdminClient, unique: Callable[[str], str], task_log: TaskLog
) -> None:
    app_id = unique("rejected")
    prepare_application(admin, airflow_setup.bootstrap, "rejected", app_id)
    conf = backfill_conf(airflow_setup, "rejected", app_id, dry_run=False)

    # processing is not what this test is about: the process task is marked done without running Spark
    run = run_dag(dagbag, BACKFILL, conf, answer="Reject", mark_success_pattern="process", log=task_log)

    states = task_states(run)
    assert (states["approve_handoff"], states["handoff"]) == ("success", "skipped")
    summary = ledger_run(airflow_setup, run)
    assert (summary.status, summary.stage) == ("rejected", "approval")
    assert read_committed_offsets(admin_client(airflow_setup), app_id)[0] == {}
    assert log_ends(airflow_setup.bootstrap, topologies.output_topic("rejected"), PARTITIONS) == {0: 0, 1: 0}


def commit_offsets(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Another tool (or the application) moves the group's committed offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    finally:
        consumer.close()


def test_a_handoff_approved_for_a_stale_plan_is_refused(
    airflow_setup: AirflowSetup, dagbag: Any, admin: AdminClient, unique: Callable[[str], str], task_log: TaskLog
) -> None:
    app_id = unique("stale")
    prepare_application(admin, airflow_setup.bootstrap, "stale", app_id)
    conf = backfill_conf(airflow_setup, "stale", app_id, dry_run=False)
    moved = {(topologies.input_topic("stale"), 0): 7}

    def move_offsets(_detail: Any) -> None:
        commit_offsets(airflow_setup.bootstrap, app_id, moved)

    run = run_dag(dagbag, BACKFILL, conf, answer="Approve", before=move_offsets, log=task_log)

    states = task_states(run)
    assert (states["process"], states["approve_handoff"], states["handoff"]) == ("success", "success", "failed")
    message = f"group '{app_id}' committed offsets moved since the plan"
    assert "OffsetsMoved" in task_log.text and message in task_log.text
    summary = ledger_run(airflow_setup, run)
    assert (summary.status, summary.stage) == ("failed", "handoff")
    assert summary.error is not None and message in summary.error
    # nothing was published or committed by the run
    committed, _ = read_committed_offsets(admin_client(airflow_setup), app_id)
    assert {(tp.topic, tp.partition): c.offset for tp, c in committed.items()} == moved
    assert log_ends(airflow_setup.bootstrap, topologies.output_topic("stale"), PARTITIONS) == {0: 0, 1: 0}
