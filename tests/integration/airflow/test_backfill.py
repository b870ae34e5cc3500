"""The manual DAG end to end under ``dag.test()``: real broker, MinIO (through aws_default) and Spark local[2]."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from tests.integration.airflow import topologies
from tests.integration.airflow.conftest import (
    BACKFILL,
    PARTITIONS,
    RECORDS,
    AirflowSetup,
    TaskLog,
    admin_client,
    airflow_db_dump,
    assert_no_secret,
    backfill_conf,
    ledger_dump,
    map_index_labels,
    plan_of,
    prepare_application,
    run_dag,
    task_states,
)
from tests.integration.handoff.test_handoff import read_all

pytestmark = pytest.mark.integration


def test_a_dry_run_plans_records_and_stops(
    airflow_setup: AirflowSetup, dagbag: Any, admin: AdminClient, unique: Callable[[str], str], task_log: TaskLog
) -> None:
    app_id = unique("dry")
    prepare_application(admin, airflow_setup.bootstrap, "checks", app_id)

    run = run_dag(dagbag, BACKFILL, backfill_conf(airflow_setup, "checks", app_id), log=task_log)

    states = task_states(run)
    assert states["plan"] == "skipped" and states["handoff"] == "skipped"
    assert all(state == "skipped" for name, state in states.items())
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, run.run_id)
    assert detail is not None
    assert (detail.summary.status, detail.summary.stage, detail.summary.trigger) == ("dry_run", "plan", "manual")
    assert detail.summary.records_planned == 400
    assert sorted(r.partition for r in detail.ranges if r.topic.endswith("-words")) == [0, 1]
    assert all(r.records_staged is None for r in detail.ranges)  # nothing fetched
    assert f"Hand-off of plan {detail.summary.plan_id} for application '{app_id}'" in task_log.text


def test_an_approved_run_processes_hands_off_and_the_ledger_holds_its_figures(
    airflow_setup: AirflowSetup, dagbag: Any, admin: AdminClient, unique: Callable[[str], str], task_log: TaskLog
) -> None:
    app_id = unique("approved")
    prepare_application(admin, airflow_setup.bootstrap, "approved", app_id)
    conf = backfill_conf(airflow_setup, "approved", app_id, dry_run=False)

    bodies: list[str] = []
    run = run_dag(dagbag, BACKFILL, conf, answer="Approve", before=lambda detail: bodies.append(detail.body),
                  log=task_log)  # fmt: skip

    states = task_states(run)
    assert states == dict.fromkeys(states, "success"), states
    assert {"plan", "fetch[0]", "fetch[1]", "verify", "process", "approve_handoff", "handoff"} <= set(states)
    plan = plan_of(run)
    # the broker: offsets committed as planned, one count per input record published
    committed, _ = read_committed_offsets(admin_client(airflow_setup), app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    outputs = read_all(airflow_setup.bootstrap, topologies.output_topic("approved"), PARTITIONS)
    assert len(outputs) == RECORDS  # this test's own output topic: one count per input record
    # the ledger: the same figures
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, run.run_id)
    assert detail is not None
    summary = detail.summary
    assert (summary.status, summary.stage, summary.error) == ("succeeded", "handoff", None)
    assert summary.records_planned == summary.records_processed == RECORDS
    inputs = {f"{r.topic}-{r.partition}": r for r in detail.ranges if r.topic == topologies.input_topic("approved")}
    assert {name: (r.start, r.end) for name, r in inputs.items()} == {r.name: (r.start, r.end) for r in plan.ranges}
    assert all(r.records_staged == r.records_planned for r in inputs.values())
    assert sorted(t.task_id for t in detail.tasks) == ["0_0", "0_1"]
    assert sum(t.records_processed for t in detail.tasks) == RECORDS
    assert {row.partition: (row.lag_before, row.lag_after) for row in detail.lag} == {
        r.name: (r.end - r.start, 0) for r in plan.ranges
    }
    assert {(s.kind, s.subject) for s in detail.steps} >= {("publish", "0_0"), ("publish", "0_1")}
    # the approval showed the exact preview the process task made: every commit the ledger holds, with its offset
    [body] = bodies
    recorded = {
        name: offset for s in detail.steps if s.kind == "publish" for name, offset in s.detail["offsets"].items()
    }
    shown = dict(re.findall(r"- `commit (\S+): \S+ -> (\d+)", body))
    assert {name: int(offset) for name, offset in shown.items()} == recorded, body
    assert body.count("- `publish task ") == 2, body
    # no connection's secret in any ledger row (every task log line is searched by run_dag)
    dump = ledger_dump(airflow_setup.ledger_url)
    assert app_id in dump
    assert_no_secret(dump, "the ledger")
    stored = airflow_db_dump()
    assert summary.plan_id in stored  # the plan task's XCom is there
    assert_no_secret(stored, "Airflow's metadata (XCom, rendered fields, approval, run conf)")
    log = task_log.text
    assert "Spark-Submit cmd: spark-submit --master local[2]" in log and "2 task(s), 400 records" in log
    # the fetch tasks are named after their ranges in the UI
    assert any(f"{topologies.input_topic('approved')}-0 [0→" in line for line in map_index_labels(run))
