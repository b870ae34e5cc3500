"""streamproc_backfill: reprocess a window of a Kafka Streams application, by hand, from a form.

plan → fetch (one mapped task per planned range) → verify → process (Spark) → approve_handoff → handoff.
A dry run (the default) stops after the plan: its log shows the plan and the hand-off preview. The approval's
body is the exact preview the process task made from the task reports (every commit and purge with its offsets,
every task directory); a rejection ends the run without a hand-off. Every step writes the run ledger.
The file does no work when parsed: every step runs in its task.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, chain, get_current_context, task

from streamproc.airflow import steps
from streamproc.airflow.operators import HandoffApprovalOperator
from streamproc.airflow.params import backfill_params, run_settings
from streamproc.airflow.tasks import default_args, handoff, stage_and_process

with DAG(
    dag_id="streamproc_backfill",
    schedule=None,
    params=backfill_params(),
    default_args=default_args(),
    tags=["streamproc"],
    doc_md=__doc__,
    render_template_as_native_obj=False,
) as dag:

    @task(task_id="plan")
    def plan() -> list[dict[str, Any]]:
        """Plan the window the form asks for (dry run: stop here)."""
        context = get_current_context()
        params = context["params"]
        with steps.no_futile_retry():
            info = steps.plan_step(
                steps.DagRunRef.from_context(context),
                application_id=str(params.get("application_id") or ""),
                settings=lambda: run_settings(params),
                trigger="manual",
                skip_when_nothing_new=False,
            )
        return steps.plan_result(context, info)

    process = stage_and_process(plan())
    approve = HandoffApprovalOperator(
        task_id="approve_handoff",
        subject="Hand off plan {{ ti.xcom_pull(task_ids='plan', key='plan')['plan_id'] }} "
        "of {{ params.application_id }}?",
        # the exact preview the process task left; the plan's when it left none (a process task marked success by hand)
        body="{{ (ti.xcom_pull(task_ids='process', key='handoff_preview') "
        "or ti.xcom_pull(task_ids='plan', key='plan'))['preview_markdown'] }}",
    )
    chain(process, approve, handoff())
