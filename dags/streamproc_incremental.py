"""streamproc_incremental: every hour, process what arrived since the application's committed offsets.

plan (committed → latest; skipped when nothing is new) → fetch (mapped per range) → verify → process → handoff.
Never two runs of one application at once: max_active_runs=1 here, and the run ledger's lock per application
also refuses a run beside a manual backfill of the same application. Settings: the params, or the Airflow Variable
STREAMPROC_INCREMENTAL (JSON) for those left empty. The file does no work when parsed.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Variable, chain, get_current_context, task

from streamproc.airflow import steps
from streamproc.airflow.params import INCREMENTAL_VARIABLE, incremental_params, incremental_settings, incremental_values
from streamproc.airflow.tasks import default_args, handoff, stage_and_process

with DAG(
    dag_id="streamproc_incremental",
    schedule="@hourly",
    max_active_runs=1,
    catchup=False,
    params=incremental_params(),
    default_args=default_args(),
    tags=["streamproc"],
    doc_md=__doc__,
) as dag:

    @task(task_id="plan")
    def plan() -> list[dict[str, Any]]:
        """Plan committed → latest; skip the run when no input partition has a new record."""
        context = get_current_context()
        with steps.no_futile_retry():
            values = incremental_values(
                context["params"], Variable.get(INCREMENTAL_VARIABLE, default=None, deserialize_json=True)
            )
            info = steps.plan_step(
                steps.DagRunRef.from_context(context),
                application_id=str(values["application_id"]),
                settings=lambda: incremental_settings(values),
                trigger="scheduled",
                skip_when_nothing_new=True,
            )
        return steps.plan_result(context, info)

    chain(stage_and_process(plan()), handoff())
