"""The run ledger: runs, what they planned, staged and processed, the lag before and after, and the hand-off's
steps, in one SQL database (a SQLite file by default, PostgreSQL by URL) shared by the CLI and Airflow.

Why a ledger and not "look at Kafka": after a crash the cluster alone cannot say whether a task's transaction was
this run's (a committed offset equal to the plan's "after" offset could also come from the live app), nor whether a
``.checkpoint`` was written by this run. Each hand-off step is recorded right after it became durable and before
the next one starts, in its own transaction; a step found here is never repeated. The runs give the monitoring
page its figures and keep two runs of one application from running at once (``begin_run``'s lock).

Each method is one short transaction on the Ledger's one engine; every statement is a named, parameterised
statement of ``queries.py``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from streamproc.engine.global_state_task import GLOBAL_TASK_ID
from streamproc.errors import ApplicationBusy, ConfigError, LedgerError, RunEnded
from streamproc.ledger import queries as q
from streamproc.ledger.owner import ProcessOwner
from streamproc.ledger.schema import describe, open_engine, to_url
from streamproc.ledger.values import (
    RUNNING,
    STAGES,
    STEP_KINDS,
    TERMINAL_STATUSES,
    TRIGGERS,
    InterruptedRun,
    LagRow,
    LedgerStep,
    RangeRow,
    RunDetail,
    RunSummary,
    TaskRow,
    halted_in_handoff,
)

if TYPE_CHECKING:
    from streamproc.fetch import RangeFetchResult
    from streamproc.plan.run_plan import RunPlan

#: Later than any timestamp the ledger writes: the end of a run that has not ended.
_NEVER = "9999"

_PARTITION_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def now() -> str:
    """The ledger's timestamps: UTC, ISO 8601 with milliseconds (sortable as text on both databases)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Ledger:
    """One ledger database; open it with a ``Path`` (a SQLite file) or a URL, and close it (a context manager)."""

    def __init__(self, url_or_path: Path | str) -> None:
        self._url = to_url(url_or_path)
        self.url = describe(self._url)  # for messages: never the password
        self.path = (
            Path(self._url.database) if self._url.get_backend_name() == "sqlite" and self._url.database else None
        )
        self._engine = open_engine(self._url)
        self._dialect = self._engine.dialect.name

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self, what: str) -> Iterator[Connection]:
        try:
            with self._engine.begin() as connection:
                yield connection
        except SQLAlchemyError as exc:
            raise LedgerError(f"the ledger at {self.url} could not {what}: {_first_line(exc)}") from exc

    # --- hand-off steps ------------------------------------------------------------------------------------------

    def done(self, plan_id: str, kind: str, subject: str) -> LedgerStep | None:
        """The recorded step, or ``None`` when it has not finished."""
        with self._transaction("read a hand-off step") as db:
            row = db.execute(q.STEP, {"plan_id": plan_id, "kind": kind, "subject": subject}).first()
        return None if row is None else _step(row)

    def record(self, plan_id: str, kind: str, subject: str, detail: dict[str, Any]) -> LedgerStep:
        """Record a finished step (once: recording it again is a bug in the caller and refused)."""
        if kind not in STEP_KINDS:
            raise ValueError(f"unknown ledger step kind {kind!r}")
        step = LedgerStep(plan_id, kind, subject, detail, now())
        row = {**_step_row(step), "detail": json.dumps(detail, sort_keys=True)}
        try:
            with self._engine.begin() as db:
                db.execute(q.INSERT_STEP, row)
        except IntegrityError as exc:
            raise LedgerError(
                f"the hand-off step {kind} {subject} of plan {plan_id} is already recorded in {self.url}; "
                "a step is recorded once (this is a bug: report it)"
            ) from exc
        except SQLAlchemyError as exc:
            raise LedgerError(f"the ledger at {self.url} could not record a hand-off step: {_first_line(exc)}") from exc
        return step

    def steps(self, plan_id: str | None = None) -> list[LedgerStep]:
        """Every recorded step (of one plan), in the order they finished."""
        with self._transaction("read the hand-off steps") as db:
            if plan_id is None:
                rows = db.execute(q.ALL_STEPS).all()
            else:
                rows = db.execute(q.PLAN_STEPS, {"plan_id": plan_id}).all()
        return [_step(row) for row in rows]

    # --- runs ------------------------------------------------------------------------------------------------------

    def begin_run(
        self,
        *,
        application_id: str,
        trigger: str,
        dag_id: str | None = None,
        dag_run_id: str | None = None,
        run_id: str | None = None,
        owner: ProcessOwner | None = None,
    ) -> str:
        """Start a run (status ``running``, stage ``plan``) holding the application's lock; returns its run id.

        ``owner``: the process running it (the CLI's own), recorded on the lock so that a re-run can tell that the
        process was killed (``interrupted_run``, ``take_over``); ``None`` for runs whose steps are separate processes
        (Airflow's tasks), which are never taken over.

        Raises ``ApplicationBusy`` when another active run of the application holds the lock. Beginning again with
        the same ``run_id`` (an Airflow retry) is allowed: the run is running again and keeps (or retakes) the lock.
        A lock left by a run that ended is taken over. The lock is a primary key: two runs beginning at the same
        moment cannot both take it, on either database.
        """
        if trigger not in TRIGGERS:
            raise ConfigError(f"unknown run trigger {trigger!r}; use one of {', '.join(TRIGGERS)}")
        run_id = run_id or _new_run_id()
        started = now()
        with self._transaction("begin a run") as db:
            existing = db.execute(q.RUN, {"run_id": run_id}).first()
            if existing is None:
                db.execute(
                    q.INSERT_RUN,
                    {
                        "run_id": run_id,
                        "application_id": application_id,
                        "trigger": trigger,
                        "dag_id": dag_id,
                        "dag_run_id": dag_run_id,
                        "plan_id": None,
                        "status": RUNNING,
                        "stage": STAGES[0],
                        "error": None,
                        "started_at": started,
                        "finished_at": None,
                    },
                )
            elif existing.application_id != application_id:
                raise ConfigError(
                    f"run {run_id} in the ledger {self.url} is a run of application {existing.application_id!r}, "
                    f"not {application_id!r}; begin a new run with another run id"
                )
            else:
                db.execute(q.RESTART_RUN, {"b_run_id": run_id, "status": RUNNING})
            self._take_lock(db, application_id, run_id, started, None if owner is None else str(owner))
        return run_id

    def resume_run(self, run_id: str) -> None:
        """Carry on with run ``run_id`` in a step retried (or cleared) in Airflow: the run is running again and holds
        its application's lock once more.

        A run the failure callback ended as ``failed`` (its task failed for good, then was cleared) is running
        again, as ``begin_run`` with its id does; a run that ended any other way is refused with why: a succeeded
        run's hand-off is done, a rejected one was refused by a person, a dry or skipped one never fetched. Raises
        ``ApplicationBusy`` when another run of the application took the lock meanwhile.
        """
        with self._transaction("resume a run") as db:
            row = db.execute(q.RUN, {"run_id": run_id}).first()
            if row is None:
                raise LedgerError(f"the ledger at {self.url} has no run {run_id}; its plan task did not begin it")
            if row.status not in (RUNNING, "failed"):
                raise RunEnded(
                    f"run {run_id} of application '{row.application_id}' ended as {row.status} in the ledger "
                    f"{self.url}; it is not resumed: trigger a new run"
                )
            if row.status != RUNNING:
                db.execute(q.RESTART_RUN, {"b_run_id": run_id, "status": RUNNING})
            self._take_lock(db, row.application_id, run_id, now(), None)

    def interrupted_run(self, application_id: str) -> InterruptedRun | None:
        """The application's run that holds its lock but will not go on by itself: its process is gone
        (``ledger/owner.py``), or it failed in its hand-off (``halted_in_handoff``); else ``None``."""
        with self._transaction("read the application's lock") as db:
            holder = db.execute(q.LOCK_HOLDER, {"application_id": application_id}).first()
        if holder is None:
            return None
        owner = ProcessOwner.parse(holder.owner)
        if owner is None:  # an Airflow run: its tasks are retried by Airflow, never taken over
            return None
        halted = halted_in_handoff(holder.status, holder.stage, holder.plan_id)
        if not halted and (holder.status != RUNNING or not owner.is_gone()):
            return None
        return InterruptedRun(
            run_id=holder.run_id,
            application_id=application_id,
            stage=holder.stage,
            plan_id=holder.plan_id,
            started_at=holder.started_at,
            owner=holder.owner,
            error=holder.error if halted else None,
        )

    def take_over(self, interrupted: InterruptedRun, owner: ProcessOwner) -> bool:
        """Make ``owner`` the holder of the interrupted run's lock; False when another process took it first."""
        with self._transaction("take over an interrupted run") as db:
            moved = db.execute(
                q.TAKE_OVER_FROM_OWNER,
                {
                    "b_application_id": interrupted.application_id,
                    "b_holder": interrupted.run_id,
                    "b_owner": interrupted.owner,
                    "owner": str(owner),
                    "locked_at": now(),
                },
            )
        return moved.rowcount == 1

    def _take_lock(self, db: Connection, application_id: str, run_id: str, locked_at: str, owner: str | None) -> None:
        taken = db.execute(
            q.take_lock(self._dialect),
            {"application_id": application_id, "run_id": run_id, "locked_at": locked_at, "owner": owner},
        )
        if taken.rowcount == 1:
            return
        holder = db.execute(q.LOCK_HOLDER, {"application_id": application_id}).one()
        if holder.run_id == run_id:
            return
        halted = halted_in_handoff(holder.status, holder.stage, holder.plan_id)
        if holder.status != RUNNING and not halted:  # its run ended without releasing it (finish_run releases)
            moved = db.execute(
                q.TAKE_OVER_LOCK,
                {
                    "b_application_id": application_id,
                    "b_holder": holder.run_id,
                    "run_id": run_id,
                    "locked_at": locked_at,
                    "owner": owner,
                },
            )
            if moved.rowcount == 1:
                return
            holder = db.execute(q.LOCK_HOLDER, {"application_id": application_id}).one()
        raise ApplicationBusy(
            application_id,
            run_id=holder.run_id,
            started_at=holder.started_at,
            dag_id=holder.dag_id,
            dag_run_id=holder.dag_run_id,
            hint=self._busy_hint(holder),
        )

    def _busy_hint(self, holder: Any) -> str:
        """What is known of the active run (its step, its process) and the one command for the case where it is
        dead but cannot be seen to be (its process on another host)."""
        owner = ProcessOwner.parse(holder.owner)
        where = f"it is in its {holder.stage} step" + ("" if owner is None else f", run by {owner.describe()}")
        finish = f"`streamproc ledger finish {holder.run_id} --status failed --ledger {self.url}`"
        if halted_in_handoff(holder.status, holder.stage, holder.plan_id):
            return (
                f" (it failed in its {holder.stage} step, which may be half done, so it keeps the lock); `streamproc "
                f"run` with the options it was started with (no --dry-run) takes it over and resumes it; to abandon "
                f"it, {finish}"
            )
        if owner is not None and owner.is_gone():
            return (
                f" (it was interrupted in its {holder.stage} step: {owner.describe()} is gone); `streamproc run` with "
                f"the options it was started with (no --dry-run) takes it over and resumes it; to abandon it, {finish}"
            )
        if owner is not None and owner.host == ProcessOwner.current().host:
            return f" ({where}); to abandon it instead, {finish}"
        return f" ({where}); if that run is dead (its process was killed), end it with {finish}"

    def record_plan(self, run_id: str, plan: RunPlan, plan_id: str) -> None:
        """The run's plan: its id, its ranges (input and changelog restore), and the lag before per input partition
        (end − committed offset; end − planned start where the group had committed nothing)."""
        from streamproc.fetch import planned_ranges

        restores = {(r.changelog_topic, r.changelog_partition, r.start) for r in plan.restores}
        ranges = [
            {
                "run_id": run_id,
                "topic": r.topic,
                "partition": r.partition,
                "kind": "restore" if (r.topic, r.partition, r.start) in restores else "input",
                "start_offset": r.start,
                "end_offset": r.end,
                "records_planned": r.end - r.start,
            }
            for r in planned_ranges(plan)
        ]
        lag = [
            {
                "run_id": run_id,
                "topic": r.topic,
                "partition": r.partition,
                "committed_before": r.committed_offset,
                "end_offset_before": r.end,
                "lag_before": r.end - (r.start if r.committed_offset is None else r.committed_offset),
                "committed_after": None,
                "end_offset_after": None,
                "lag_after": None,
            }
            for r in plan.ranges
        ]
        with self._transaction("record the plan") as db:
            self._require_run(db, run_id)
            db.execute(q.SET_PLAN, {"b_run_id": run_id, "plan_id": plan_id})
            db.execute(q.CLEAR_PLANNED_RANGES, {"run_id": run_id})
            db.execute(q.CLEAR_LAG, {"run_id": run_id})
            if ranges:
                db.execute(q.INSERT_PLANNED_RANGE, ranges)
            if lag:
                db.execute(q.INSERT_LAG, lag)

    def record_fetch(self, run_id: str, results: Sequence[RangeFetchResult]) -> None:
        """What fetch staged per range; a range fetched again (a retry, a mapped task) replaces its figures. The
        records are the range's staged total (a resumed fetch's ``records_staged``), not only those copied by the
        last attempt; bytes and segments written are the last attempt's."""
        staged_at = now()
        rows = [
            {
                "run_id": run_id,
                "topic": r.range.topic,
                "partition": r.range.partition,
                "start_offset": r.range.start,
                "end_offset": r.range.end,
                "records": r.records_staged,
                "bytes": r.bytes,
                "segments_written": r.segments_written,
                "segments_already_staged": r.segments_already_complete,
                "seconds": float(r.seconds),
                "staged_at": staged_at,
            }
            for r in results
        ]
        with self._transaction("record the fetch") as db:
            self._require_run(db, run_id)
            if rows:
                db.execute(q.upsert_staged_range(self._dialect), rows)

    def record_tasks(self, run_id: str, reports: Sequence[Mapping[str, Any]]) -> None:
        """The process step's task reports: records processed, drops per reason, DLQ counts, stream time, seconds.
        A task reported again (a retried process step) replaces its figures."""
        recorded_at = now()
        with self._transaction("record the tasks") as db:
            self._require_run(db, run_id)
            for report in _with_global_task(reports):
                task_id = str(report["task_id"])
                db.execute(
                    q.upsert_task(self._dialect),
                    {
                        "run_id": run_id,
                        "task_id": task_id,
                        "records_processed": int(report["records_processed"]),
                        "stream_time": int(report["stream_time"]),
                        "seconds": float(report.get("seconds", 0.0)),
                        "skipped": bool(report.get("skipped", False)),
                        "recorded_at": recorded_at,
                    },
                )
                key = {"run_id": run_id, "task_id": task_id}
                db.execute(q.CLEAR_TASK_DROPS, key)
                db.execute(q.CLEAR_TASK_DEAD_LETTERS, key)
                drops = [{**key, "reason": k, "records": int(n)} for k, n in dict(report.get("dropped", {})).items()]
                letters = [
                    {**key, "topic": k, "records": int(n)} for k, n in dict(report.get("dead_letter_queue", {})).items()
                ]
                if drops:
                    db.execute(q.INSERT_TASK_DROP, drops)
                if letters:
                    db.execute(q.INSERT_TASK_DEAD_LETTER, letters)

    def record_lag_after(
        self, run_id: str, committed: Mapping[str, int | None], end_offsets: Mapping[str, int]
    ) -> None:
        """The group's committed offset and the end offset per input partition (``topic-p``) after the hand-off.
        Partitions the plan did not read are not the run's and are ignored."""
        rows = []
        for name, end in end_offsets.items():
            match = _PARTITION_NAME.match(name)
            if match is None:
                raise ValueError(f"{name!r} is not a topic-partition name (topic-N)")
            after = committed.get(name)
            rows.append(
                {
                    "b_run_id": run_id,
                    "b_topic": match["topic"],
                    "b_partition": int(match["partition"]),
                    "committed_after": after,
                    "end_offset_after": end,
                    "lag_after": None if after is None else end - after,
                }
            )
        with self._transaction("record the lag after the run") as db:
            self._require_run(db, run_id)
            for row in rows:
                db.execute(q.SET_LAG_AFTER, row)

    def set_stage(self, run_id: str, stage: str) -> None:
        """Where the run is now (it stays recorded when the run ends: a failed run shows where)."""
        if stage not in STAGES:
            raise ValueError(f"unknown run stage {stage!r}; one of {', '.join(STAGES)}")
        with self._transaction("record the run's stage") as db:
            self._require_run(db, run_id)
            db.execute(q.SET_STAGE, {"b_run_id": run_id, "stage": stage})

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        """End the run with ``status`` (and why it failed) and release its application's lock."""
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"unknown final run status {status!r}; one of {', '.join(TERMINAL_STATUSES)}")
        with self._transaction("finish the run") as db:
            self._require_run(db, run_id)
            db.execute(q.FINISH_RUN, {"b_run_id": run_id, "status": status, "finished_at": now(), "error": error})
            db.execute(q.RELEASE_LOCK, {"run_id": run_id})

    def fail_run(self, run_id: str, error: str) -> bool:
        """End the run ``failed`` with why; a run that failed in its hand-off keeps its application's lock
        (``halted_in_handoff``: the same command resumes it, ``ledger finish`` abandons it). Returns whether it kept
        the lock."""
        with self._transaction("finish the run") as db:
            self._require_run(db, run_id)
            run = db.execute(q.RUN, {"run_id": run_id}).one()
            db.execute(q.FINISH_RUN, {"b_run_id": run_id, "status": "failed", "finished_at": now(), "error": error})
            halted = halted_in_handoff("failed", run.stage, run.plan_id)
            if not halted:
                db.execute(q.RELEASE_LOCK, {"run_id": run_id})
        return halted

    def record_refused_run(
        self,
        *,
        application_id: str,
        trigger: str,
        error: str,
        dag_id: str | None = None,
        dag_run_id: str | None = None,
        run_id: str | None = None,
    ) -> str:
        """A run refused before it began (``ApplicationBusy``): recorded as failed, with why, without taking the
        application's lock, so that the run list and the DAG run's page say why it did not run."""
        if trigger not in TRIGGERS:
            raise ConfigError(f"unknown run trigger {trigger!r}; use one of {', '.join(TRIGGERS)}")
        run_id = run_id or _new_run_id()
        at = now()
        with self._transaction("record a refused run") as db:
            if db.execute(q.RUN, {"run_id": run_id}).first() is None:
                db.execute(
                    q.INSERT_RUN,
                    {"run_id": run_id, "application_id": application_id, "trigger": trigger, "dag_id": dag_id,
                     "dag_run_id": dag_run_id, "plan_id": None, "status": "failed", "stage": STAGES[0],
                     "error": error, "started_at": at, "finished_at": at},
                )  # fmt: skip
            else:
                db.execute(q.FINISH_RUN, {"b_run_id": run_id, "status": "failed", "finished_at": at, "error": error})
        return run_id

    def _require_run(self, db: Connection, run_id: str) -> None:
        if db.execute(q.RUN, {"run_id": run_id}).first() is None:
            raise LedgerError(f"the ledger at {self.url} has no run {run_id}; begin_run first")

    # --- reads -----------------------------------------------------------------------------------------------------

    def runs(self, application_id: str | None = None, limit: int = 200) -> list[RunSummary]:
        """The newest runs first (of one application, or of all)."""
        with self._transaction("list the runs") as db:
            if application_id is None:
                rows = db.execute(q.RUNS, {"limit": limit}).all()
            else:
                rows = db.execute(q.APPLICATION_RUNS, {"application_id": application_id, "limit": limit}).all()
        return [_summary(row) for row in rows]

    def run(self, run_id: str) -> RunDetail | None:
        """Everything recorded about one run, or ``None`` when the ledger has no such run. Its steps are the hand-off
        steps of its plan that finished while it ran: a later run of the same plan (nothing new arrived, so the
        same plan) did its own, and a run resuming a hand-off lists the steps it did, not those it skipped."""
        with self._transaction("read a run") as db:
            row = db.execute(q.RUN, {"run_id": run_id}).first()
            if row is None:
                return None
            summary = _summary(row)
            key = {"run_id": run_id}
            planned = db.execute(q.PLANNED_RANGES, key).all()
            staged = db.execute(q.STAGED_RANGES, key).all()
            lag = db.execute(q.LAG, key).all()
            tasks = db.execute(q.TASKS, key).all()
            drops = db.execute(q.DROPS, key).all()
            letters = db.execute(q.DEAD_LETTERS, key).all()
            steps = (
                []
                if summary.plan_id is None
                else db.execute(
                    q.PLAN_STEPS_BETWEEN,
                    {"plan_id": summary.plan_id, "since": summary.started_at, "until": summary.finished_at or _NEVER},
                ).all()
            )
        return RunDetail(
            summary=summary,
            ranges=_ranges(planned, staged),
            lag=[
                LagRow(
                    partition=f"{r.topic}-{r.partition}",
                    committed_before=r.committed_before,
                    end_offset=r.end_offset_before,
                    lag_before=r.lag_before,
                    committed_after=r.committed_after,
                    lag_after=r.lag_after,
                    end_offset_after=r.end_offset_after,
                )
                for r in lag
            ],
            tasks=_tasks(tasks, drops, letters),
            steps=[_step(s) for s in steps],
        )

    def run_for_dag_run(self, dag_id: str, dag_run_id: str) -> RunDetail | None:
        """The run an Airflow DAG run recorded (its newest, should it have begun twice)."""
        with self._transaction("find a DAG run's run") as db:
            run_id = db.execute(q.DAG_RUN, {"dag_id": dag_id, "dag_run_id": dag_run_id}).scalar()
        return None if run_id is None else self.run(run_id)


def _new_run_id() -> str:
    """A run id a person can place in time (when it began), unique by a random suffix."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def _first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _step_row(step: LedgerStep) -> dict[str, Any]:
    return {
        "plan_id": step.plan_id,
        "kind": step.kind,
        "subject": step.subject,
        "detail": step.detail,
        "finished_at": step.finished_at,
    }


def _step(row: Any) -> LedgerStep:
    return LedgerStep(row.plan_id, row.kind, row.subject, json.loads(row.detail), row.finished_at)


def _summary(row: Any) -> RunSummary:
    return RunSummary(
        run_id=row.run_id,
        application_id=row.application_id,
        trigger=row.trigger,
        dag_id=row.dag_id,
        dag_run_id=row.dag_run_id,
        plan_id=row.plan_id,
        status=row.status,
        stage=row.stage,
        error=row.error,
        started_at=row.started_at,
        finished_at=row.finished_at,
        records_planned=int(row.records_planned),
        records_processed=int(row.records_processed),
        records_dropped=int(row.records_dropped),
    )


def _ranges(planned: Sequence[Any], staged: Sequence[Any]) -> list[RangeRow]:
    """Planned ranges with what fetch staged of each; a staged range the plan did not list is shown too."""
    by_key = {(s.topic, s.partition, s.start_offset): s for s in staged}
    rows = []
    for p in planned:
        s = by_key.pop((p.topic, p.partition, p.start_offset), None)
        rows.append(_range(p.topic, p.partition, p.start_offset, p.end_offset, p.records_planned, s, p.kind))
    for s in by_key.values():
        rows.append(
            _range(s.topic, s.partition, s.start_offset, s.end_offset, s.end_offset - s.start_offset, s, "input")
        )
    return rows


def _range(topic: str, partition: int, start: int, end: int, planned: int, staged: Any, kind: str) -> RangeRow:
    return RangeRow(
        topic=topic,
        partition=int(partition),
        start=int(start),
        end=int(end),
        records_planned=int(planned),
        records_staged=None if staged is None else int(staged.records),
        bytes=None if staged is None else int(staged.bytes),
        segments_written=None if staged is None else int(staged.segments_written),
        segments_already_staged=None if staged is None else int(staged.segments_already_staged),
        seconds=None if staged is None else float(staged.seconds),
        kind=kind,
    )


def _task_order(task_id: str) -> tuple[int, int, str]:
    """Tasks in Kafka Streams' order: by subtopology, then partition (``0_10`` after ``0_9``; the global task
    ``-1_-1`` first)."""
    left, _, right = task_id.partition("_")
    try:
        return int(left), int(right), task_id
    except ValueError:
        return 1 << 62, 0, task_id


def _with_global_task(reports: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The reports, plus one for the global task when the run's global bootstrap dropped records: the one report the
    driver chose carries them (``global_dropped``), and they are the run's drops like any task's. The global task
    processes no input of the plan (its records are restored into the global stores), so it counts none; a retry
    whose chosen task was already done reports no global drops and leaves the first attempt's row as it was."""
    rows = list(reports)
    for report in reports:
        dropped = dict(report.get("global_dropped", {}))
        if dropped:
            rows.append({"task_id": str(GLOBAL_TASK_ID), "records_processed": 0, "stream_time": -1, "dropped": dropped})
    return rows


def _tasks(tasks: Sequence[Any], drops: Sequence[Any], letters: Sequence[Any]) -> list[TaskRow]:
    dropped: dict[str, dict[str, int]] = {}
    for d in drops:
        dropped.setdefault(d.task_id, {})[d.reason] = int(d.records)
    dead: dict[str, dict[str, int]] = {}
    for d in letters:
        dead.setdefault(d.task_id, {})[d.topic] = int(d.records)
    return [
        TaskRow(
            task_id=t.task_id,
            records_processed=int(t.records_processed),
            dropped=dict(sorted(dropped.get(t.task_id, {}).items())),
            dead_letter_queue=dict(sorted(dead.get(t.task_id, {}).items())),
            stream_time=int(t.stream_time),
            seconds=float(t.seconds),
            skipped=bool(t.skipped),
        )
        for t in sorted(tasks, key=lambda t: _task_order(t.task_id))
    ]
