"""The values the ledger hands out (frozen: a row read is a fact, not a handle to change it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Hand-off step kinds, in the order a hand-off runs them.
STEP_KINDS = ("publish", "checkpoint", "purge")

#: How a run was started: ``streamproc run``, the scheduled DAG, the manual (backfill) DAG.
TRIGGERS = ("cli", "scheduled", "manual")

#: Where a run is; the stage it was in when it ended stays recorded (a failed run says where it failed).
STAGES = ("plan", "fetch", "verify", "process", "approval", "handoff")

#: The status of a run that is still going; it holds its application's lock.
RUNNING = "running"

#: How a run can end; each releases its application's lock, except a run halted in its hand-off (below).
TERMINAL_STATUSES = ("succeeded", "failed", "skipped", "rejected", "dry_run")


def halted_in_handoff(status: str, stage: str, plan_id: str | None) -> bool:
    """A run that failed (not killed) in its hand-off step, its plan recorded: the one rule for a run that keeps its
    application's lock after it ended.

    Its window may be half handed off (some tasks' transactions committed, others not), and planning anew over it
    would plan from offsets some tasks moved and others did not; so, like a run whose process was killed, it holds
    the lock until the same ``streamproc run`` command takes it over and resumes its hand-off with its plan, or
    ``streamproc ledger finish`` abandons it (which releases the lock).
    """
    return status == "failed" and stage == "handoff" and plan_id is not None


@dataclass(frozen=True, slots=True)
class LedgerStep:
    """One finished hand-off step: its kind, what it concerned (a task id or a topic-partition) and what it did."""

    plan_id: str
    kind: str
    subject: str
    detail: dict[str, Any]
    finished_at: str


@dataclass(frozen=True, slots=True)
class InterruptedRun:
    """A run still holding its application's lock whose process is gone (killed), or that failed in its hand-off
    (``halted_in_handoff``): a re-run takes it over and resumes it at ``stage`` with its plan ``plan_id`` (``None``:
    it died before its plan was recorded)."""

    run_id: str
    application_id: str
    stage: str
    plan_id: str | None
    started_at: str
    #: the dead process, as the lock row named it (``host@pid:start``)
    owner: str
    #: why it failed, when it failed in its hand-off (``halted_in_handoff``) rather than being killed
    error: str | None = None

    def what_happened(self) -> str:
        """``interrupted in its fetch step`` or ``failed in its handoff step``: how the run stopped, for messages."""
        return f"{'failed' if self.error is not None else 'interrupted'} in its {self.stage} step"


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run as the run list shows it; the record counts are sums over its ranges and tasks."""

    run_id: str
    application_id: str
    trigger: str
    dag_id: str | None
    dag_run_id: str | None
    plan_id: str | None
    status: str
    stage: str
    error: str | None
    started_at: str
    finished_at: str | None
    records_planned: int
    records_processed: int
    records_dropped: int


@dataclass(frozen=True, slots=True)
class RangeRow:
    """A planned range and what fetch staged of it (the staged figures are ``None`` until it was fetched)."""

    topic: str
    partition: int
    start: int
    end: int
    records_planned: int
    records_staged: int | None
    bytes: int | None
    segments_written: int | None
    segments_already_staged: int | None
    seconds: float | None
    #: ``input`` (a source or repartition partition) or ``restore`` (a store's changelog read before processing)
    kind: str = "input"


@dataclass(frozen=True, slots=True)
class LagRow:
    """The group's lag on one input partition (``topic-p``) before the run and after its hand-off."""

    partition: str
    committed_before: int | None
    end_offset: int
    lag_before: int
    committed_after: int | None
    lag_after: int | None
    #: the partition's end offset when the lag after was read
    end_offset_after: int | None = None


@dataclass(frozen=True, slots=True)
class TaskRow:
    """What the process step did for one task: records processed, dropped per reason, sent to each DLQ."""

    task_id: str
    records_processed: int
    dropped: dict[str, int]
    dead_letter_queue: dict[str, int]
    stream_time: int
    seconds: float
    skipped: bool


@dataclass(frozen=True, slots=True)
class RunDetail:
    """One run with everything recorded about it; ``steps`` are the hand-off steps of its plan that finished while
    it ran (between its start and its end)."""

    summary: RunSummary
    ranges: list[RangeRow]
    lag: list[LagRow]
    tasks: list[TaskRow]
    steps: list[LedgerStep]
