"""Every statement the ledger runs, each a named SQLAlchemy Core statement with bound parameters.

Values never become SQL text: each statement binds them (``bindparam``), so an application id such as
``x'; DROP TABLE runs; --`` is stored verbatim. The upserts (``INSERT … ON CONFLICT``) and the lock's
``INSERT … ON CONFLICT DO NOTHING`` are dialect constructs of SQLite and PostgreSQL (both speak the same clause);
``for_dialect`` builds them once per dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    Delete,
    Insert,
    Select,
    Table,
    Update,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from streamproc.ledger.tables import (
    application_locks,
    handoff_steps,
    partition_lag,
    planned_ranges,
    runs,
    staged_ranges,
    task_dead_letters,
    task_drops,
    task_runs,
)
from streamproc.ledger.values import STEP_KINDS

# --- hand-off steps ---------------------------------------------------------------------------------------------

STEP_COLUMNS = (
    handoff_steps.c.plan_id,
    handoff_steps.c.kind,
    handoff_steps.c.subject,
    handoff_steps.c.detail,
    handoff_steps.c.finished_at,
)

#: One step, by its key.
STEP: Select[Any] = select(*STEP_COLUMNS).where(
    handoff_steps.c.plan_id == bindparam("plan_id"),
    handoff_steps.c.kind == bindparam("kind"),
    handoff_steps.c.subject == bindparam("subject"),
)

#: Record a finished step (the primary key refuses recording it twice).
INSERT_STEP: Insert = insert(handoff_steps)

#: Steps finished in the same millisecond are listed in the order a hand-off runs them.
_STEP_ORDER = (
    handoff_steps.c.finished_at,
    case({kind: rank for rank, kind in enumerate(STEP_KINDS)}, value=handoff_steps.c.kind),
    handoff_steps.c.subject,
)

#: Every step, in the order they finished.
ALL_STEPS: Select[Any] = select(*STEP_COLUMNS).order_by(*_STEP_ORDER)

#: The steps of one plan, in the order they finished.
PLAN_STEPS: Select[Any] = (
    select(*STEP_COLUMNS).where(handoff_steps.c.plan_id == bindparam("plan_id")).order_by(*_STEP_ORDER)
)

#: The steps of one plan that finished between two instants (a run's start and end), in the order they finished.
PLAN_STEPS_BETWEEN: Select[Any] = (
    select(*STEP_COLUMNS)
    .where(
        handoff_steps.c.plan_id == bindparam("plan_id"),
        handoff_steps.c.finished_at >= bindparam("since"),
        handoff_steps.c.finished_at <= bindparam("until"),
    )
    .order_by(*_STEP_ORDER)
)

# --- runs and the application lock -------------------------------------------------------------------------------

#: Start a run (status 'running', stage 'plan').
INSERT_RUN: Insert = insert(runs)

#: Begin an existing run again (an Airflow retry of its first task): running, no end, no error.
RESTART_RUN: Update = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"))
    .values(status=bindparam("status"), finished_at=None, error=None)
)

#: The run holding an application's lock, with what names it in an error and what a takeover needs.
LOCK_HOLDER: Select[Any] = (
    select(
        runs.c.run_id,
        runs.c.status,
        runs.c.started_at,
        runs.c.dag_id,
        runs.c.dag_run_id,
        runs.c.stage,
        runs.c.plan_id,
        runs.c.error,
        application_locks.c.owner,
    )
    .select_from(application_locks.join(runs, runs.c.run_id == application_locks.c.run_id))
    .where(application_locks.c.application_id == bindparam("application_id"))
)

#: Take over a lock whose run has ended without releasing it, only if it is still that run's (compare-and-set).
TAKE_OVER_LOCK: Update = (
    update(application_locks)
    .where(
        application_locks.c.application_id == bindparam("b_application_id"),
        application_locks.c.run_id == bindparam("b_holder"),
    )
    .values(run_id=bindparam("run_id"), locked_at=bindparam("locked_at"), owner=bindparam("owner"))
)

#: Take over the lock of a run whose owner is gone, only if that owner still holds it (compare-and-set: of two
#: re-runs taking over at once, one wins).
TAKE_OVER_FROM_OWNER: Update = (
    update(application_locks)
    .where(
        application_locks.c.application_id == bindparam("b_application_id"),
        application_locks.c.run_id == bindparam("b_holder"),
        application_locks.c.owner == bindparam("b_owner"),
    )
    .values(owner=bindparam("owner"), locked_at=bindparam("locked_at"))
)

#: Release the locks a run holds.
RELEASE_LOCK: Delete = delete(application_locks).where(application_locks.c.run_id == bindparam("run_id"))

#: The plan a run made.
SET_PLAN: Update = update(runs).where(runs.c.run_id == bindparam("b_run_id")).values(plan_id=bindparam("plan_id"))

#: Where a run is now.
SET_STAGE: Update = update(runs).where(runs.c.run_id == bindparam("b_run_id")).values(stage=bindparam("stage"))

#: How a run ended.
FINISH_RUN: Update = (
    update(runs)
    .where(runs.c.run_id == bindparam("b_run_id"))
    .values(status=bindparam("status"), finished_at=bindparam("finished_at"), error=bindparam("error"))
)

_records_planned = (
    select(func.coalesce(func.sum(planned_ranges.c.records_planned), 0))
    .where(planned_ranges.c.run_id == runs.c.run_id, planned_ranges.c.kind == "input")
    .scalar_subquery()
)
_records_processed = (
    select(func.coalesce(func.sum(task_runs.c.records_processed), 0))
    .where(task_runs.c.run_id == runs.c.run_id)
    .scalar_subquery()
)
_records_dropped = (
    select(func.coalesce(func.sum(task_drops.c.records), 0))
    .where(task_drops.c.run_id == runs.c.run_id)
    .scalar_subquery()
)

SUMMARY_COLUMNS = (
    runs.c.run_id,
    runs.c.application_id,
    runs.c.trigger,
    runs.c.dag_id,
    runs.c.dag_run_id,
    runs.c.plan_id,
    runs.c.status,
    runs.c.stage,
    runs.c.error,
    runs.c.started_at,
    runs.c.finished_at,
    _records_planned.label("records_planned"),
    _records_processed.label("records_processed"),
    _records_dropped.label("records_dropped"),
)

_NEWEST_FIRST = (runs.c.started_at.desc(), runs.c.run_id.desc())

#: One run's summary.
RUN: Select[Any] = select(*SUMMARY_COLUMNS).where(runs.c.run_id == bindparam("run_id"))

#: The newest runs of every application.
RUNS: Select[Any] = select(*SUMMARY_COLUMNS).order_by(*_NEWEST_FIRST).limit(bindparam("limit"))

#: The newest runs of one application.
APPLICATION_RUNS: Select[Any] = (
    select(*SUMMARY_COLUMNS)
    .where(runs.c.application_id == bindparam("application_id"))
    .order_by(*_NEWEST_FIRST)
    .limit(bindparam("limit"))
)

#: The (newest) run an Airflow DAG run recorded.
DAG_RUN: Select[Any] = (
    select(runs.c.run_id)
    .where(runs.c.dag_id == bindparam("dag_id"), runs.c.dag_run_id == bindparam("dag_run_id"))
    .order_by(*_NEWEST_FIRST)
    .limit(1)
)

# --- ranges, lag, tasks --------------------------------------------------------------------------------------------

#: Forget what an earlier plan of the run recorded (a re-planned retry replaces it).
CLEAR_PLANNED_RANGES: Delete = delete(planned_ranges).where(planned_ranges.c.run_id == bindparam("run_id"))
CLEAR_LAG: Delete = delete(partition_lag).where(partition_lag.c.run_id == bindparam("run_id"))

INSERT_PLANNED_RANGE: Insert = insert(planned_ranges)
INSERT_LAG: Insert = insert(partition_lag)

#: The lag after the hand-off, on a partition the plan recorded.
SET_LAG_AFTER: Update = (
    update(partition_lag)
    .where(
        partition_lag.c.run_id == bindparam("b_run_id"),
        partition_lag.c.topic == bindparam("b_topic"),
        partition_lag.c.partition == bindparam("b_partition"),
    )
    .values(
        committed_after=bindparam("committed_after"),
        end_offset_after=bindparam("end_offset_after"),
        lag_after=bindparam("lag_after"),
    )
)

PLANNED_RANGES: Select[Any] = (
    select(planned_ranges)
    .where(planned_ranges.c.run_id == bindparam("run_id"))
    .order_by(planned_ranges.c.kind, planned_ranges.c.topic, planned_ranges.c.partition, planned_ranges.c.start_offset)
)

STAGED_RANGES: Select[Any] = (
    select(staged_ranges)
    .where(staged_ranges.c.run_id == bindparam("run_id"))
    .order_by(staged_ranges.c.topic, staged_ranges.c.partition, staged_ranges.c.start_offset)
)

LAG: Select[Any] = (
    select(partition_lag)
    .where(partition_lag.c.run_id == bindparam("run_id"))
    .order_by(partition_lag.c.topic, partition_lag.c.partition)
)

TASKS: Select[Any] = select(task_runs).where(task_runs.c.run_id == bindparam("run_id"))
DROPS: Select[Any] = select(task_drops).where(task_drops.c.run_id == bindparam("run_id"))
DEAD_LETTERS: Select[Any] = select(task_dead_letters).where(task_dead_letters.c.run_id == bindparam("run_id"))

#: Forget a task's counts per reason and per DLQ before recording its newest report.
CLEAR_TASK_DROPS: Delete = delete(task_drops).where(
    and_(task_drops.c.run_id == bindparam("run_id"), task_drops.c.task_id == bindparam("task_id"))
)
CLEAR_TASK_DEAD_LETTERS: Delete = delete(task_dead_letters).where(
    and_(task_dead_letters.c.run_id == bindparam("run_id"), task_dead_letters.c.task_id == bindparam("task_id"))
)
INSERT_TASK_DROP: Insert = insert(task_drops)
INSERT_TASK_DEAD_LETTER: Insert = insert(task_dead_letters)


# --- dialect constructs --------------------------------------------------------------------------------------------


@cache
def take_lock(dialect_name: str) -> Insert:
    """Take an application's lock: ``INSERT … ON CONFLICT DO NOTHING`` (rowcount 1: taken; 0: someone holds it).
    The primary key decides, so two runs beginning at once cannot both win."""
    statement: Insert = _insert(dialect_name, application_locks).on_conflict_do_nothing(
        index_elements=["application_id"]
    )
    return statement


@cache
def upsert_staged_range(dialect_name: str) -> Insert:
    """Record what fetch staged of a range, replacing an earlier attempt's figures."""
    return _upsert(dialect_name, staged_ranges, ("run_id", "topic", "partition", "start_offset"))


@cache
def upsert_task(dialect_name: str) -> Insert:
    """Record a task's report, replacing an earlier attempt's."""
    return _upsert(dialect_name, task_runs, ("run_id", "task_id"))


def _insert(dialect_name: str, table: Table) -> Any:
    if dialect_name == "postgresql":
        return postgresql.insert(table)
    if dialect_name == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"the ledger runs on SQLite or PostgreSQL, not {dialect_name}")


def _upsert(dialect_name: str, table: Table, key: Sequence[str]) -> Insert:
    statement = _insert(dialect_name, table)
    changed = {c.name: statement.excluded[c.name] for c in table.columns if c.name not in key}
    upsert: Insert = statement.on_conflict_do_update(index_elements=list(key), set_=changed)
    return upsert
