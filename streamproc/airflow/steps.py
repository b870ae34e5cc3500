"""The bodies of the DAGs' tasks: plan, fetch one range, verify, hand off, and the failure record.

Each body is the library's own step (the same functions ``streamproc plan|fetch|verify|handoff`` call) plus what
Airflow adds: the settings come from the DAG run's params and the providers' connections, and every step writes
the run ledger (:mod:`streamproc.ledger`), whose run id is derived from the DAG run, so a retried task finds its run
again. The plan and the run's settings are kept in a work directory per DAG run
(``$STREAMPROC_WORK_DIR/<dag id>/<dag run id>``, by default under ``$AIRFLOW_HOME``), which every worker of the
deployment must see (one host, or a shared volume); connections' secrets are never written there.

A task that fails for good (after its retries) marks the run failed in the ledger with its error
(:func:`record_failure`, the DAGs' ``on_failure_callback``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamproc.airflow.hooks import KafkaClusterHook, store_options
from streamproc.airflow.ledger_location import airflow_home
from streamproc.airflow.ledger_location import ledger_location as shared_ledger_location
from streamproc.airflow.params import RunSettings
from streamproc.errors import ConfigError, PlanError, RunEnded, StorageError, TopologyError
from streamproc.ledger import Ledger

log = logging.getLogger(__name__)

WORK_DIR_ENV = "STREAMPROC_WORK_DIR"
PLAN_FILE = "plan.json"
SETTINGS_FILE = "settings.json"


def _task_variable(key: str) -> str | None:
    from airflow.sdk import Variable

    value = Variable.get(key, default=None)
    return None if value is None else str(value)


def ledger_location() -> str:
    """The ledger (``streamproc.airflow.ledger_location``), the Variable read through the Task SDK."""
    return shared_ledger_location(_task_variable)


def preview_markdown(preview: str) -> str:
    """The hand-off preview as the approval form shows it: its heading, then one list item per action (a fenced
    block is rendered as one run-on paragraph there); each action in backticks so topic names stay literal."""
    head, *actions = preview.splitlines() or [""]
    return "\n".join([head, "", *(f"- `{action.strip()}`" for action in actions if action.strip())])


def open_ledger() -> Ledger:
    return Ledger(ledger_location())


@dataclass(frozen=True, slots=True)
class DagRunRef:
    """The DAG run a task belongs to: its ledger run id and its work directory."""

    dag_id: str
    dag_run_id: str

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> DagRunRef:
        return cls(dag_id=str(context["dag"].dag_id), dag_run_id=str(context["dag_run"].run_id))

    @property
    def run_id(self) -> str:
        """The ledger's run id: one per DAG run, the same for every task and every retry of it."""
        return f"{self.dag_id}:{self.dag_run_id}"

    def work_dir(self) -> Path:
        base = Path(os.environ.get(WORK_DIR_ENV) or airflow_home() / "streamproc-runs")
        return base / _safe(self.dag_id) / _safe(self.dag_run_id)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)


# ---------------------------------------------------------------------------------------------------- retries
@contextmanager
def no_futile_retry() -> Iterator[None]:
    """A task's body, retried by Airflow only where a retry can mend it.

    The DAGs retry every task (``tasks.default_args``): a process killed or a machine lost, a broker, store or
    registry that did not answer, are mended by running the step again, which carries the same run on. A bad
    setting, a refused plan, a busy application, a group whose offsets moved, a refused state directory or a run
    that already ended are not: those fail the task at once (``AirflowFailException``), with the error's name and
    message, so the form's user reads why within seconds rather than after every retry.
    """
    from airflow.sdk.exceptions import AirflowFailException

    from streamproc.handoff.guard import OffsetsMoved, StateDirRefused
    from streamproc.ledger import ApplicationBusy

    try:
        yield
    except (ConfigError, TopologyError, PlanError, ApplicationBusy, RunEnded, OffsetsMoved, StateDirRefused) as exc:
        raise AirflowFailException(f"{type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------------------------------- settings
def _write_settings(ref: DagRunRef, settings: RunSettings) -> None:
    """The settings the later steps read (no request, no secret: connection ids only)."""
    values = {k: v for k, v in asdict(settings).items() if k != "request"}
    (ref.work_dir() / SETTINGS_FILE).write_text(json.dumps(values, indent=2, sort_keys=True), encoding="utf-8")


def read_settings(ref: DagRunRef) -> RunSettings:
    from streamproc.plan.cluster_snapshot import PlanRequest

    path = ref.work_dir() / SETTINGS_FILE
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path} is missing: the plan task of DAG run '{ref.dag_run_id}' did not finish on a volume this worker "
            f"sees; run the plan task again, or point {WORK_DIR_ENV} at a directory every worker shares"
        ) from None
    return RunSettings(request=PlanRequest(), **values)


def read_plan(ref: DagRunRef) -> tuple[Any, str]:
    from streamproc.plan.run_plan import RunPlan
    from streamproc.spark.job import plan_id

    plan = RunPlan.read(ref.work_dir() / PLAN_FILE)
    return plan, plan_id(plan)


def _store(settings: RunSettings) -> tuple[Any, dict[str, Any]]:
    from streamproc.storage import load_store

    options = store_options(settings.store, settings.aws_conn_id)
    return load_store(settings.store, **options), options


def range_label(rng: Mapping[str, Any]) -> str:
    """``orders-3 [1200→5000)``: the mapped fetch task's name in the UI."""
    return f"{rng['topic']}-{rng['partition']} [{rng['start']}→{rng['end']})"


# ------------------------------------------------------------------------------------------------------- plan
def plan_step(
    ref: DagRunRef,
    *,
    application_id: str,
    settings: Callable[[], RunSettings],
    trigger: str,
    skip_when_nothing_new: bool,
) -> dict[str, Any]:
    """Take the application's lock (a run of the ledger), resolve the settings, plan, keep the plan, record it.

    ``settings`` is called after the run began, so that a refused combination of params fails a run the ledger
    shows. A dry run ends here (ledger status ``dry_run``) after logging the hand-off preview; with
    ``skip_when_nothing_new`` a plan without a record to read ends as ``skipped``. Both raise
    ``AirflowSkipException``, which skips every later task.
    """
    from airflow.sdk.exceptions import AirflowSkipException

    from streamproc.airflow.hooks import schema_registry_settings
    from streamproc.cli.topology import checked_application
    from streamproc.fetch import planned_ranges
    from streamproc.handoff.preview import preview
    from streamproc.kafka.planner import plan_run
    from streamproc.ledger import ApplicationBusy
    from streamproc.plan.streams_group_topology import declared_topology
    from streamproc.spark.job import plan_id as plan_hash

    with open_ledger() as ledger:
        try:
            if ledger.run(ref.run_id) is None:
                ledger.begin_run(
                    application_id=application_id,
                    trigger=trigger,
                    dag_id=ref.dag_id,
                    dag_run_id=ref.dag_run_id,
                    run_id=ref.run_id,
                )
            else:  # the plan task retried, or cleared with the run
                ledger.resume_run(ref.run_id)
        except ApplicationBusy as exc:  # the ledger shows this DAG run too, failed, and why
            ledger.record_refused_run(
                application_id=application_id,
                trigger=trigger,
                error=f"plan: {type(exc).__name__}: {exc}",
                dag_id=ref.dag_id,
                dag_run_id=ref.dag_run_id,
                run_id=ref.run_id,
            )
            raise
    run = settings()
    client_config = KafkaClusterHook(run.kafka_conn_id).client_config()
    store_options(run.store, run.aws_conn_id)  # a missing S3 connection fails the plan, not the fetch
    # everything the topology can be checked for, before any data moves (a registry that is down among it)
    app_settings = schema_registry_settings(run.schema_registry_conn_id)
    topology, app_config = checked_application(run.topology, app_settings, application_id=run.application_id)
    state_dir = Path(run.state_dir) if run.state_dir else None
    if state_dir is not None and not state_dir.is_dir():  # the process and hand-off tasks would refuse it later
        raise ConfigError(f"param 'state_dir': {state_dir} is not a directory on this worker")
    work = ref.work_dir()
    plan = handed_off_in_part(ref)
    if plan is None:
        plan = plan_run(
            client_config,
            run.application_id,
            run.request,
            topology=str(topology.describe()),
            processing_guarantee=run.processing_guarantee,
            state_dir=state_dir,
            source_topic_changelogs=topology.source_topic_changelogs,
            wait_for_empty_group_ms=run.wait_for_empty_group_ms(),
            group_protocol=run.group_protocol,
            declared=declared_topology(topology, run.application_id),
        )
        work.mkdir(parents=True, exist_ok=True)
        plan.write(work / PLAN_FILE)
    plan_id = plan_hash(plan)
    _write_settings(ref, run)
    shown = preview(plan, plan_id, state_dir)
    log.info("Plan %s of application '%s':\n%s", plan_id, run.application_id, plan.report())
    from streamproc.spark.task_split import parallelism_lines, parse_split

    log.info("%s", "\n".join(parallelism_lines(topology, plan, parse_split(run.split), app_config)))
    log.info("%s", shown)
    ranges = [
        {"topic": r.topic, "partition": r.partition, "start": r.start, "end": r.end, "compacted": r.compacted,
         "topic_id": r.topic_id}
        for r in planned_ranges(plan)
    ]  # fmt: skip
    records = sum(r.end - r.start for r in plan.ranges)
    with open_ledger() as ledger:
        ledger.record_plan(ref.run_id, plan, plan_id)
        if run.dry_run:
            ledger.finish_run(ref.run_id, "dry_run")
            raise AirflowSkipException(f"dry run: plan {plan_id} made, nothing fetched or handed off")
        if skip_when_nothing_new and plan.nothing_new:
            ledger.finish_run(ref.run_id, "skipped")
            raise AirflowSkipException(
                f"nothing new for application '{run.application_id}' since its committed offsets"
            )
    return {
        "plan_id": plan_id,
        "plan_file": str(work / PLAN_FILE),
        "ranges": ranges,
        "preview": shown,
        "preview_markdown": preview_markdown(shown),
        "records": records,
    }


def handed_off_in_part(ref: DagRunRef) -> Any:
    """The DAG run's own plan when its hand-off has begun (the ledger holds a step of it), else ``None``.

    A plan task run again after the hand-off began (the whole run cleared) must not plan anew: the new plan would
    start from offsets that some tasks' commits moved and others' did not. It keeps the plan the hand-off is
    carrying out, and the later tasks finish that one.
    """
    with open_ledger() as ledger:
        detail = ledger.run(ref.run_id)
        plan_id = None if detail is None else detail.summary.plan_id
        if plan_id is None or not ledger.steps(plan_id):
            return None
    plan, kept_id = read_plan(ref)
    if kept_id != plan_id:
        raise ConfigError(
            f"the hand-off of plan {plan_id} of DAG run '{ref.dag_run_id}' has begun, but "
            f"{ref.work_dir() / PLAN_FILE} holds plan {kept_id}: restore that plan file to finish the hand-off, or "
            f"abandon the run with `streamproc ledger finish {ref.run_id} --status failed`"
        )
    log.info("the hand-off of plan %s has begun: this run keeps its plan and finishes it", plan_id)
    return plan


PLAN_XCOM_KEY = "plan"


def plan_result(context: Mapping[str, Any], info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The plan task's result: the ranges (what the fetch task is mapped over) as its return value, the rest
    (plan id, preview, sink partition counts) under the XCom key ``plan`` for the process and approval tasks."""
    context["ti"].xcom_push(key=PLAN_XCOM_KEY, value={k: v for k, v in info.items() if k != "ranges"})
    ranges: list[dict[str, Any]] = list(info["ranges"])
    return ranges


# ------------------------------------------------------------------------------------------------------ fetch
def fetch_step(ref: DagRunRef, rng: Mapping[str, Any]) -> dict[str, Any]:
    """Stage one planned range (resuming what an earlier attempt staged) and record it.

    The range is fetched in a worker process that dies with the task (``fetch_ranges``' process pool): killing
    either ends the attempt, and Airflow's retry fetches only the segments still missing. The ledger's staged
    records are the range's, not only the last attempt's (``RangeFetchResult.records_staged``).
    """
    from streamproc.fetch import FetchRange, fetch_ranges
    from streamproc.kafka.transactions import fence_open_transactions
    from streamproc.plan.cluster_snapshot import IsolationLevel

    settings = read_settings(ref)
    plan, _plan_id = read_plan(ref)
    enter_stage(ref, "fetch")
    client_config = KafkaClusterHook(settings.kafka_conn_id).client_config()
    store, options = _store(settings)
    planned = FetchRange(**rng)
    # a killed hand-off's open transaction holding this range back is aborted now, not at its timeout
    fence_open_transactions(client_config, plan, only=[(planned.topic, planned.partition)])
    results = fetch_ranges(
        client_config,
        store,
        [planned],
        isolation=IsolationLevel(plan.isolation_level),
        parallelism=4,  # a large range's pieces (400 000 offsets each) two at a time in the worker
        processes=2,  # its one range in a spawned worker process, which the fetch-retry test kills mid-range
        store_options=options,
    )
    [result] = results
    with open_ledger() as ledger:
        ledger.record_fetch(ref.run_id, [result])
    return {
        "range": range_label(rng),
        "records": result.records_staged,
        "bytes": result.bytes,
        "segments_written": result.segments_written,
        "segments_already_staged": result.segments_already_complete,
    }


# ----------------------------------------------------------------------------------------------------- verify
def verify_step(ref: DagRunRef) -> dict[str, Any]:
    """Prove every planned range is staged by sound segments (streamproc verify --plan)."""
    from streamproc.fetch import planned_ranges
    from streamproc.storage.verify import verify

    settings = read_settings(ref)
    plan, _plan_id = read_plan(ref)
    enter_stage(ref, "verify")
    store, _options = _store(settings)
    report = verify(store, planned=planned_ranges(plan))
    for problem in report.problems:
        log.error("%s", problem)
    if report.problems:
        raise StorageError(
            f"verify of {store.uri}: {len(report.problems)} problem(s), the first: {report.problems[0]}; "
            "clear the fetch tasks to stage the ranges again"
        )
    log.info(
        "%d of %d segment(s) verified; %d of %d planned range(s) staged",
        report.segments_ok, report.segments_checked, report.ranges_covered, report.ranges_checked,
    )  # fmt: skip
    return {"segments": report.segments_ok, "ranges": report.ranges_covered}


# ---------------------------------------------------------------------------------------------------- process
def process_arguments(ref: DagRunRef, plan_info: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """``spark-submit`` application arguments of the process step; the S3 settings and the application's settings
    (a Schema Registry's credentials among them) as its environment, which Airflow does not log."""
    from streamproc.airflow.hooks import s3_environment, schema_registry_settings
    from streamproc.cli.options import STREAMS_SETTINGS_ENV

    settings = read_settings(ref)
    args = ["--plan", str(ref.work_dir() / PLAN_FILE), "--store", settings.store, "--topology", settings.topology]
    if settings.spark_master:
        args += ["--master", settings.spark_master]
    if settings.split != "auto":
        args += ["--split", settings.split]
    if settings.record_cache != "off":
        args += ["--record-cache", settings.record_cache]
    if settings.state_dir:
        args += ["--state-dir", settings.state_dir]
    environment = s3_environment(store_options(settings.store, settings.aws_conn_id))
    streams_settings = schema_registry_settings(settings.schema_registry_conn_id)
    if streams_settings:
        environment[STREAMS_SETTINGS_ENV] = json.dumps(streams_settings)
    return args, environment


def record_process(ref: DagRunRef) -> list[dict[str, Any]]:
    """The process step's task reports, read back from the store, into the ledger."""
    from streamproc.handoff.task_results import load_results

    settings = read_settings(ref)
    plan, plan_id = read_plan(ref)
    store, _options = _store(settings)
    reports = [result.report for result in load_results(plan, plan_id, store)]
    with open_ledger() as ledger:
        ledger.record_tasks(ref.run_id, reports)
    return reports


#: The XCom key under which the process task leaves the exact hand-off preview (the approval form's body).
PREVIEW_XCOM_KEY = "handoff_preview"


def handoff_preview(ref: DagRunRef) -> dict[str, Any]:
    """The exact hand-off preview once the process step's reports are in the store: what ``handoff_step`` will do,
    by the same definition as ``streamproc handoff``'s prompt (``handoff.preview.processed_preview``), with the
    settings the hand-off task uses (the run's state dir; no bundle; Kafka Streams 4.2; reduced changelogs)."""
    from streamproc.handoff.preview import processed_preview

    settings = read_settings(ref)
    plan, plan_id = read_plan(ref)
    store, _options = _store(settings)
    with open_ledger() as ledger:
        shown = processed_preview(
            plan,
            plan_id,
            client_config=KafkaClusterHook(settings.kafka_conn_id).client_config(),
            store=store,
            ledger=ledger,
            state_dir=Path(settings.state_dir) if settings.state_dir else None,
        )
    log.info("%s", shown)
    return {"preview": shown, "preview_markdown": preview_markdown(shown)}


def enter_stage(ref: DagRunRef, stage: str) -> None:
    """The run's next step begins: a retried or cleared task carries the same run on (``Ledger.resume_run``: running
    again, its lock retaken, or one clear refusal when it ended otherwise), then the ledger shows the step."""
    with open_ledger() as ledger:
        ledger.resume_run(ref.run_id)
        ledger.set_stage(ref.run_id, stage)


def finish(ref: DagRunRef, status: str, error: str | None = None) -> None:
    with open_ledger() as ledger:
        ledger.finish_run(ref.run_id, status, error)


# ---------------------------------------------------------------------------------------------------- hand-off
def handoff_step(ref: DagRunRef) -> dict[str, Any]:
    """Hand the processed plan off (the library's procedure, steps in the same ledger), record lag after, finish."""
    from streamproc.handoff.procedure import handoff
    from streamproc.plan.cluster_snapshot import TopicPartition

    settings = read_settings(ref)
    plan, plan_id = read_plan(ref)
    hook = KafkaClusterHook(settings.kafka_conn_id)
    client_config = hook.client_config()
    store, _options = _store(settings)
    enter_stage(ref, "handoff")
    with open_ledger() as ledger:
        summary = handoff(
            plan,
            plan_id,
            client_config=client_config,
            store=store,
            ledger=ledger,
            state_dir=Path(settings.state_dir) if settings.state_dir else None,
        )
        inputs = [TopicPartition(r.topic, r.partition) for r in plan.ranges if not r.internal]
        committed = hook.committed_offsets(plan.application_id)
        ends = hook.end_offsets(inputs)
        ledger.record_lag_after(
            ref.run_id,
            {f"{tp.topic}-{tp.partition}": (committed[tp].offset if tp in committed else None) for tp in inputs},
            {f"{tp.topic}-{tp.partition}": ends[tp] for tp in inputs},
        )
        ledger.finish_run(ref.run_id, "succeeded")
    log.info(
        "hand-off of plan %s: published %d task(s), wrote %d checkpoint(s), purged %d partition(s)%s",
        plan_id, len(summary.published), len(summary.checkpointed), len(summary.purged),
        f"; {len(summary.skipped)} step(s) already done" if summary.skipped else "",
    )  # fmt: skip
    return {"published": list(summary.published), "checkpointed": list(summary.checkpointed),
            "purged": list(summary.purged)}  # fmt: skip


# ---------------------------------------------------------------------------------------------------- failure
def record_failure(context: Mapping[str, Any]) -> None:
    """``on_failure_callback``: a task failed for good; the run (if it began) is failed with the task's error."""
    try:
        ref = DagRunRef.from_context(context)
        ti = context.get("ti") or context.get("task_instance")
        task_id = getattr(ti, "task_id", "?")
        error = f"{task_id}: {context.get('exception')}"
        with open_ledger() as ledger:
            detail = ledger.run(ref.run_id)
            if detail is None or detail.summary.status != "running":
                return
            ledger.finish_run(ref.run_id, "failed", error)
    except Exception:  # a callback must not hide the task's own error
        log.exception("could not record the failure in the run ledger")
