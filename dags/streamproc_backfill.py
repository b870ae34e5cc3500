"""streamproc_backfill: reprocess a window of a Kafka Streams application, by hand, from a form.

plan → fetch (one mapped task per planned range) → verify → process (Spark) → approve_handoff → handoff.
A dry run (the default) stops after the plan: its log shows the plan and the hand-off preview. The approval's
body is that preview; a rejection ends the run without a hand-off. Every step writes the run ledger.
The file does no work when parsed: every step runs in its task.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, chain, get_current_context, task

from streamproc.airflow import steps
from streamproc.airflow.operators import HandoffApprovalOperator, ProcessOperator
from streamproc.airflow.params import backfill_params, run_settings

with DAG(
    dag_id="streamproc_backfill",
    schedule=None,
    params=backfill_params(),
    default_args={"on_failure_callback": steps.record_failure, "retries": 0},
    tags=["streamproc"],
    doc_md=__doc__,
    render_template_as_native_obj=False,
) as dag:

    @task(task_id="plan")
    def plan() -> list[dict[str, Any]]:
        """Plan the window the form asks for (dry run: stop here)."""
        context = get_current_context()
        params = context["params"]
        info = steps.plan_step(
            steps.DagRunRef.from_context(context),
            application_id=str(params.get("application_id") or ""),
            settings=lambda: run_settings(params),
            trigger="manual",
            skip_when_nothing_new=False,
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
        """Every planned range staged by sound segments (also when the plan had nothing to fetch)."""
        return steps.verify_step(steps.DagRunRef.from_context(get_current_context()))

    @task(task_id="handoff")
    def handoff() -> dict[str, Any]:
        """Publish, commit, write state, purge: the approved hand-off."""
        return steps.handoff_step(steps.DagRunRef.from_context(get_current_context()))

    planned = plan()
    fetched = fetch.expand(rng=planned)
    verified = verify()
    process = ProcessOperator(task_id="process")
    approve = HandoffApprovalOperator(
        task_id="approve_handoff",
        subject="Hand off plan {{ ti.xcom_pull(task_ids='plan', key='plan')['plan_id'] }} "
        "of {{ params.application_id }}?",
        body="{{ ti.xcom_pull(task_ids='plan', key='plan')['preview_markdown'] }}",
    )
    chain(planned, fetched, verified)
    planned >> verified
    chain(verified, process, approve, handoff())
