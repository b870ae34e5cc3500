"""The two operators of the DAGs: the process step on Spark and the approval gate before the hand-off.

**Process.** ``SparkSubmitOperator`` of the Spark provider, through ``spark_default``, running
``streamproc/cli/submit.py`` (``streamproc process``). Chosen over ``@task.pyspark`` because the driver then is a
process of its own, as on a cluster: the Airflow worker holds no JVM, the master and deploy settings are the
connection's, and the driver's Python is set explicitly (``spark.pyspark.python``/``driver.python``: the worker's
interpreter, where streamproc and the user's topology are installed). The S3 settings of ``aws_default`` reach the
driver as boto3's environment variables at execute time, never as a templated field (those are stored and shown),
and never on the command line (which the hook logs). Each task's report comes back through the store, where the
hand-off reads it too, and goes into the ledger.

**Approval.** The standard provider's ``ApprovalOperator``: the body is the exact hand-off preview the process task
left (``steps.handoff_preview``: every commit and purge with its offsets, every task directory, from the task
reports); a rejection skips the hand-off and ends the run in the ledger as ``rejected``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from streamproc.airflow import steps
from streamproc.airflow.hooks import SPARK_CONN_ID, require_connection


def _spark_submit_operator() -> type[Any]:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    base: type[Any] = SparkSubmitOperator
    return base


def _approval_operator() -> type[Any]:
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    base: type[Any] = ApprovalOperator
    return base


class ProcessOperator(_spark_submit_operator()):  # type: ignore[misc]
    """``streamproc process`` for the DAG run's plan through ``spark-submit`` on the run's Spark connection."""

    def __init__(self, *, plan_task_id: str = "plan", **kwargs: Any) -> None:
        """``plan_task_id``: the task whose result names the plan (its sink partition counts)."""
        import streamproc.cli.submit

        kwargs.setdefault("conn_id", SPARK_CONN_ID)
        kwargs.setdefault("name", "streamproc-process")
        super().__init__(application=str(Path(streamproc.cli.submit.__file__).resolve()), **kwargs)
        self.plan_task_id = plan_task_id

    def execute(self, context: Any) -> Any:
        with steps.no_futile_retry():
            return self._process(context)

    def _process(self, context: Any) -> Any:
        ref = steps.DagRunRef.from_context(context)
        settings = steps.read_settings(ref)
        self._conn_id = settings.spark_conn_id
        require_connection(self._conn_id, "the Spark master")
        steps.enter_stage(ref, "process")
        plan_info = context["ti"].xcom_pull(task_ids=self.plan_task_id, key=steps.PLAN_XCOM_KEY)
        args, environment = steps.process_arguments(ref, plan_info)
        self.application_args = args
        python_path = os.pathsep.join(dict.fromkeys(p for p in sys.path if p))
        self.env_vars = {
            **environment,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "PYTHONPATH": python_path,  # the driver imports the topology as this worker did
        }
        configured: dict[str, Any] = dict(getattr(self, "conf", None) or {})
        python = {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable}
        self.conf = {**python, **configured}
        self._hook = None
        super().execute(context)
        reports = steps.record_process(ref)
        context["ti"].xcom_push(key=steps.PREVIEW_XCOM_KEY, value=steps.handoff_preview(ref))
        return [
            {"task_id": r["task_id"], "records_processed": r["records_processed"], "skipped": r.get("skipped", False)}
            for r in reports
        ]


class HandoffApprovalOperator(_approval_operator()):  # type: ignore[misc]
    """Approve or reject the hand-off the body previews; a rejection is the run's end in the ledger."""

    def execute(self, context: Any) -> Any:
        steps.enter_stage(steps.DagRunRef.from_context(context), "approval")
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Record a rejection first: the provider then skips the hand-off by raising (Airflow 3's ``skip``)."""
        chosen = list(event.get("chosen_options") or [])
        if "error" not in event and chosen and chosen != [self.APPROVE]:
            user = event.get("responded_by_user") or {}
            name = user.get("name") if isinstance(user, dict) else getattr(user, "name", None)
            self.log.info("Hand-off rejected%s: nothing is handed off", f" by {name}" if name else "")
            steps.finish(steps.DagRunRef.from_context(context), "rejected", f"rejected by {name or 'a user'}")
        return super().execute_complete(context, event)
