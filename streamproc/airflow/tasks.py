"""The tasks both DAGs share after their plan: fetch (mapped over the plan's ranges), verify, process, hand-off.

One definition, so that the scheduled and the manual run stage, check, process and hand off the same way; each DAG
adds only its own plan task (a form or the committed offsets) and, for a backfill, the approval gate. Every task is
retried (``default_args``): a retry carries the same ledger run on from the step that failed (``steps.enter_stage``),
which is how a task whose process was killed finishes its run; what a retry cannot mend fails at once
(``steps.no_futile_retry``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import XComArg, chain, get_current_context, task

from streamproc.airflow import steps
from streamproc.airflow.operators import ProcessOperator

#: Attempts after the first, of every task but fetch (which has its own, shorter delay: a fetch resumes its range).
RETRIES = 2
RETRY_DELAY = timedelta(seconds=15)


def default_args() -> dict[str, Any]:
    """Both DAGs' task defaults: the retries, and the ledger's failure record once a task has failed for good."""
    return {"on_failure_callback": steps.record_failure, "retries": RETRIES, "retry_delay": RETRY_DELAY}


@task(task_id="fetch", map_index_template="{{ range_label }}", retries=2, retry_delay=timedelta(seconds=5))
def fetch(rng: dict[str, Any]) -> dict[str, Any]:
    """Stage one planned range; a retry resumes it (the staged segments are kept)."""
    context = get_current_context()
    context["range_label"] = steps.range_label(rng)  # type: ignore[typeddict-unknown-key]
    with steps.no_futile_retry():
        return steps.fetch_step(steps.DagRunRef.from_context(context), rng)


@task(task_id="verify", trigger_rule="none_failed_min_one_success")
def verify() -> dict[str, Any]:
    """Every planned range staged by sound segments (also when the plan had nothing to fetch)."""
    with steps.no_futile_retry():
        return steps.verify_step(steps.DagRunRef.from_context(get_current_context()))


@task(task_id="handoff")
def handoff() -> dict[str, Any]:
    """Publish, commit, write state, purge: the hand-off of the processed plan (a retry skips the steps done)."""
    with steps.no_futile_retry():
        return steps.handoff_step(steps.DagRunRef.from_context(get_current_context()))


def stage_and_process(planned: XComArg) -> ProcessOperator:
    """fetch (one task per planned range) → verify → process, after ``planned``; the process task, to chain on.

    verify also follows the plan directly: a plan with no range maps no fetch task, and verify still runs.
    """
    verified = verify()
    chain(planned, fetch.expand(rng=planned), verified)
    planned >> verified
    process = ProcessOperator(task_id="process")
    verified >> process
    return process
