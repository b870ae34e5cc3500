"""The manual DAG end to end under ``dag.test()``: real broker, MinIO (through aws_default) and Spark local[2]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.ledger import Ledger
from tests.integration.airflow.conftest import (
    BACKFILL,
    AirflowSetup,
    backfill_conf,
    prepare_application,
    run_dag,
    task_states,
)

pytestmark = pytest.mark.integration


def test_a_dry_run_plans_records_and_stops(
    airflow_setup: AirflowSetup, dagbag: Any, admin: AdminClient, unique: Callable[[str], str], caplog: Any
) -> None:
    app_id = unique("dry")
    prepare_application(admin, airflow_setup.bootstrap, "checks", app_id)

    run = run_dag(dagbag, BACKFILL, backfill_conf(airflow_setup, "checks", app_id))

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
    assert f"Hand-off of plan {detail.summary.plan_id} for application '{app_id}'" in caplog.text
