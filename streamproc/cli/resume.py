"""``streamproc run`` re-run after its process was killed: it takes the interrupted run over and resumes it.

A run whose process is gone (``ledger.Ledger.interrupted_run``) still holds its application's lock, and may have
handed off part of its window. Planning anew over a window that is half handed off would plan from offsets some
tasks moved and others did not; so the re-run takes the run over (same run id, its lock now this process's) and
resumes at the step it died in, with the plan it made, read back from its work directory: fetch again where it died
fetching (what is staged is kept), process where it died processing, and the hand-off (which skips what its ledger
holds as done and fences a task's open transaction) where it died handing off. A run that died while planning
had moved nothing: it is planned anew.

A run that failed (not killed) in its hand-off, for instance because the Kafka cluster stopped answering, is the
same case: it keeps its application's lock (``ledger.values.halted_in_handoff``) and the same command resumes it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from streamproc.errors import LedgerError

if TYPE_CHECKING:
    from streamproc.ledger import InterruptedRun
    from streamproc.ledger.owner import ProcessOwner
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)

#: The steps in the order a run takes them: a resumed run starts at the one it died in.
STEP_ORDER = ("plan", "fetch", "process", "handoff")


@dataclass(frozen=True, slots=True)
class Resumption:
    """An interrupted run taken over by this process: where it resumes and with which plan."""

    run_id: str
    #: the step it died in (``fetch``, ``process`` or ``handoff``; a run that died planning is planned anew)
    stage: str
    #: the run's plan, read back from its work directory; ``None`` when it died before recording one
    plan: RunPlan | None
    #: why it failed, when it failed in its hand-off rather than being killed
    error: str | None = None

    def skips(self, step: str) -> bool:
        """Whether the resumed run skips ``step``: a step before the one it died in finished."""
        if self.plan is None:
            return False
        return STEP_ORDER.index(step) < STEP_ORDER.index(self.stage)

    def line(self) -> str:
        if self.plan is None:
            return f"resuming interrupted run {self.run_id}: it died planning, so it plans anew"
        why = "" if self.error is None else " (it failed there, its hand-off part done)"
        return f"resuming interrupted run {self.run_id} at its {self.stage} step with its plan{why}"


def take_over_interrupted(
    ledger_url: str, application_id: str, plan_file: Path, owner: ProcessOwner
) -> Resumption | None:
    """The application's interrupted run, taken over by ``owner``; ``None`` when there is none (or another re-run
    took it over first: beginning a run then says it is busy). A run whose plan file is gone or is another plan is
    refused, with the two ways on."""
    from streamproc.ledger import Ledger

    with Ledger(ledger_url) as ledger:
        interrupted = ledger.interrupted_run(application_id)
        if interrupted is None:
            return None
        plan = None
        if interrupted.plan_id is not None:
            plan = _its_plan(interrupted, plan_file, ledger.url)
        if not ledger.take_over(interrupted, owner):
            return None
    stage = interrupted.stage if interrupted.stage in STEP_ORDER else "handoff"  # 'approval' is Airflow's
    log.info(
        "run %s of %s was %s (%s); resuming it",
        interrupted.run_id, application_id, interrupted.what_happened(), interrupted.error or "its process is gone",
    )  # fmt: skip
    return Resumption(interrupted.run_id, stage, plan, interrupted.error)


def _its_plan(interrupted: InterruptedRun, plan_file: Path, ledger_url: str) -> RunPlan:
    """The plan the interrupted run recorded, from its work directory; refused when that file is not that plan."""
    from streamproc.plan.run_plan import RunPlan, plan_id

    abandon = f"`streamproc ledger finish {interrupted.run_id} --status failed --ledger {ledger_url}`"
    why = f"run {interrupted.run_id} of {interrupted.application_id!r} was {interrupted.what_happened()}"
    if not plan_file.is_file():
        raise LedgerError(
            f"{why} with plan {interrupted.plan_id}, and {plan_file} is missing: re-run with the --work-dir it was "
            f"started with to resume it, or abandon it with {abandon} (a half handed-off window is then yours)"
        )
    plan = RunPlan.read(plan_file)
    found = plan_id(plan)
    if found != interrupted.plan_id:
        raise LedgerError(
            f"{why} with plan {interrupted.plan_id}, but {plan_file} is plan {found}: re-run with the --work-dir "
            f"it was started with to resume it, or abandon it with {abandon}"
        )
    return plan
