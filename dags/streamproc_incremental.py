"""streamproc_incremental: every hour, process what arrived since the application's committed offsets.

plan (committed → latest; skipped when nothing is new) → fetch (mapped per range) → verify → process → handoff.
Never two runs of one application at once: max_active_runs=1 here, and the run ledger's lock per application
also refuses a run beside a manual backfill of the same application. Settings: the params, or the Airflow Variable
STREAMPROC_INCREMENTAL (JSON) for those left empty. The file does no work when parsed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Variable, chain, get_current_context, task

from streamproc.airflow import steps
from streamproc.airflow.operators import ProcessOperator
from streamproc.airflow.params import INCREMENTAL_VARIABLE, incremental_params, incremental_settings, incremental_values

with DAG(
    dag_id="streamproc_incremental",
    schedule="@hourly",
    max_active_runs=1,
    catchup=False,
    params=incremental_params(),
    default_args={"on_failure_callback": steps.record_failure, "retries": 0},
    tags=["streamproc"],
    doc_md=__doc__,
) as dag:

    @task(task_id="plan")
    def plan() -> list[dict[str, Any]]:
        """Plan committed → latest; skip the run when no input partition has a new record."""
        context = get_current_context()
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

    @task(task_id="fetch", map_index_template="{{ range_label }}", retries=2, retry_delay=timedelta(seconds=5))
    def fetch(rng: dict[str, Any]) -> dict[str, Any]:
        """Stage one planned range; a retry resumes it."""
        context = get_current_context()
        context["range_label"] = steps.range_label(rng)  # type: ignore[typeddict-unknown-key]
        return steps.fetch_step(steps.DagRunRef.from_context(context), rng)

    @task(task_id="verify", trigger_rule="none_failed_min_one_success")
    def verify() -> dict[str, Any]:
        """Every planned range staged by sound segments."""
        return steps.verify_step(steps.DagRunRef.from_context(get_current_context()))

    @task(task_id="handoff")
    def handoff() -> dict[str, Any]:
        """Publish, commit, write state, purge."""
        return steps.handoff_step(steps.DagRunRef.from_context(get_current_context()))

    planned = plan()
    fetched = fetch.expand(rng=planned)
    verified = verify()
    chain(planned, fetched, verified)
    planned >> verified
    chain(verified, ProcessOperator(task_id="process"), handoff())
