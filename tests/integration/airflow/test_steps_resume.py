"""A DAG run's plan task run again (the whole run cleared) after its hand-off began keeps the run's plan (issue 27).

Planning anew then would plan from offsets that some tasks' commits moved and others' did not; the plan task keeps
the plan the ledger shows a hand-off step of, and refuses a work directory that holds another plan.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from streamproc.airflow.steps import PLAN_FILE, DagRunRef, handed_off_in_part
from streamproc.errors import ConfigError
from streamproc.ledger import Ledger
from streamproc.plan.run_plan import plan_id
from tests.integration.airflow.conftest import BACKFILL, AirflowSetup
from tests.integration.ledger.sample_run import sample_plan

pytestmark = pytest.mark.integration


def test_a_plan_task_run_again_after_the_handoff_began_keeps_the_runs_plan(airflow_setup: AirflowSetup) -> None:
    suffix = os.urandom(3).hex()
    ref = DagRunRef(BACKFILL, f"manual__resumed-{suffix}")
    sample = sample_plan(f"resumed-app-{suffix}")
    plan = dataclasses.replace(sample, ranges=tuple(dataclasses.replace(r, topic_id="MkU3OEVBNTcwNTJENDM2Qk")
                                                    for r in sample.ranges))  # fmt: skip
    kept = plan_id(plan)
    ref.work_dir().mkdir(parents=True)
    plan.write(ref.work_dir() / PLAN_FILE)
    assert handed_off_in_part(ref) is None  # no run yet: the plan task plans

    with Ledger(airflow_setup.ledger_url) as ledger:
        ledger.begin_run(application_id=plan.application_id, trigger="manual", dag_id=ref.dag_id,
                         dag_run_id=ref.dag_run_id, run_id=ref.run_id)  # fmt: skip
        ledger.record_plan(ref.run_id, plan, kept)
    assert handed_off_in_part(ref) is None  # planned, nothing handed off: planning anew moves nothing

    with Ledger(airflow_setup.ledger_url) as ledger:
        ledger.record(kept, "publish", "0_0", {"offsets": {"orders-0": 5000}})
    again = handed_off_in_part(ref)
    assert again is not None and plan_id(again) == kept

    dataclasses.replace(plan, now_ms=(plan.now_ms or 0) + 1).write(ref.work_dir() / PLAN_FILE)
    with pytest.raises(ConfigError, match=f"the hand-off of plan {kept} of DAG run '{ref.dag_run_id}' has begun, but"):
        handed_off_in_part(ref)
    with Ledger(airflow_setup.ledger_url) as ledger:
        ledger.finish_run(ref.run_id, "failed", "abandoned by the test")
