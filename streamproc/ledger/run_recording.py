"""``streamproc run`` in the ledger: the run begun (taking the application's lock), each step's figures as it
finishes, the lag after the hand-off, and how the run ended — also when it ended in an error or an interrupt,
so that the lock is released and the run list says why.

The steps themselves stay the commands' (``streamproc.cli.run`` calls them); this module only records, so that the CLI
and Airflow (which records through the same ``Ledger`` methods from its tasks) write the same rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from streamproc.errors import HandoffNotConfirmed, StreamprocError
from streamproc.ledger.ledger import Ledger

if TYPE_CHECKING:
    from streamproc.fetch import RangeFetchResult
    from streamproc.ledger.owner import ProcessOwner
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)


class RunRecording:
    """The run being recorded: call each method when its step has finished."""

    def __init__(self, ledger: Ledger, run_id: str) -> None:
        self.ledger = ledger
        self.run_id = run_id
        #: how the run ends when no error stops it: ``dry_run`` after ``stopped_after_plan``
        self.status = "succeeded"
        #: why the hand-off was not confirmed, once ``rejected`` says so: the CLI turns that error into an exit
        #: before it reaches ``recorded_run``, which must still record the run ``rejected``, not ``failed``
        self.rejection: str | None = None

    def planned(self, plan: RunPlan) -> None:
        from streamproc.plan.run_plan import plan_id

        self.ledger.record_plan(self.run_id, plan, plan_id(plan))

    def stopped_after_plan(self) -> None:
        """A dry run: the plan (and its preview) is the whole run."""
        self.status = "dry_run"

    def nothing_new(self) -> None:
        """The plan found nothing to process or hand off (``RunPlan.nothing_new``): the run ends ``skipped``."""
        self.status = "skipped"

    def fetching(self) -> None:
        self.ledger.set_stage(self.run_id, "fetch")

    def fetched(self, results: Sequence[RangeFetchResult]) -> None:
        self.ledger.record_fetch(self.run_id, results)

    def processing(self) -> None:
        self.ledger.set_stage(self.run_id, "process")

    def processed(self, reports: Sequence[Mapping[str, Any]]) -> None:
        self.ledger.record_tasks(self.run_id, reports)

    def handing_off(self) -> None:
        self.ledger.set_stage(self.run_id, "handoff")

    def rejected(self, reason: str) -> None:
        """The hand-off was not confirmed: the run ends ``rejected`` whichever way the error then travels."""
        self.rejection = reason

    def handed_off(self, client_config: Mapping[str, object], plan: RunPlan) -> None:
        """The group's lag after the hand-off, on every partition the plan read. The hand-off is done by now:
        a cluster that cannot answer leaves the lag after empty (and says so) rather than fail a finished run."""
        from confluent_kafka import KafkaException

        from streamproc.kafka import clients

        for attempt in (1, 2):
            try:
                committed, end_offsets = read_lag_after(client_config, plan)
                break
            except (StreamprocError, KafkaException) as exc:
                if attempt == 1:  # a broker restarted under the hand-off: its Admin client's metadata may be stale
                    clients.renew_admin(client_config)
                    continue
                log.warning(
                    "run %s: the lag after the hand-off could not be read (%s); it stays unrecorded", self.run_id, exc
                )
                return
        self.ledger.record_lag_after(self.run_id, committed, end_offsets)


def read_lag_after(client_config: Mapping[str, object], plan: RunPlan) -> tuple[dict[str, int | None], dict[str, int]]:
    """The group's committed offset and the end offset (at the plan's isolation level) of each planned partition."""
    from streamproc.kafka import clients
    from streamproc.kafka.cluster import read_committed_offsets, read_end_offsets
    from streamproc.plan.cluster_snapshot import IsolationLevel, TopicPartition

    partitions = [TopicPartition(r.topic, r.partition) for r in plan.ranges]
    committed, _pending = read_committed_offsets(clients.admin(client_config), plan.application_id)
    ends = read_end_offsets(client_config, partitions, IsolationLevel(plan.isolation_level))
    name = {tp: f"{tp.topic}-{tp.partition}" for tp in partitions}
    return (
        {name[tp]: (committed[tp].offset if tp in committed else None) for tp in partitions},
        {name[tp]: ends[tp] for tp in partitions if tp in ends},
    )


@contextmanager
def recorded_run(
    ledger_url: str,
    *,
    application_id: str,
    trigger: str = "cli",
    failure: Callable[[], str | None] = lambda: None,
    owner: ProcessOwner | None = None,
    run_id: str | None = None,
) -> Iterator[RunRecording]:
    """Begin a run (``ApplicationBusy`` when another run of the application is active), yield it, and finish it:
    ``succeeded`` (or ``dry_run``); ``rejected`` when the hand-off was not confirmed; ``failed`` with the error's
    text on any error, an exit with an error status (``failure()`` gives the message the failing step printed) or
    an interrupt (a run that failed in its hand-off keeps the application's lock, to be resumed by the same command).
    The error is re-raised: recording never swallows it. ``owner`` (the process) goes on the lock;
    ``run_id`` continues a run this process took over (``Ledger.take_over``)."""
    with Ledger(ledger_url) as ledger:
        run_id = ledger.begin_run(application_id=application_id, trigger=trigger, owner=owner, run_id=run_id)
        log.info("run %s of %s recorded in the ledger %s", run_id, application_id, ledger.url)
        recording = RunRecording(ledger, run_id)
        try:
            yield recording
        except HandoffNotConfirmed as exc:
            _finish(ledger, run_id, "rejected", str(exc))
            raise
        except SystemExit as exc:
            if recording.rejection is not None:
                _finish(ledger, run_id, "rejected", recording.rejection)
            elif exc.code in (0, None):
                _finish(ledger, run_id, recording.status, None)
            else:
                _finish(ledger, run_id, "failed", failure() or f"a step exited with status {exc.code}")
            raise
        except BaseException as exc:
            _finish(ledger, run_id, "failed", str(exc) or type(exc).__name__)
            raise
        else:
            _finish(ledger, run_id, recording.status, None)


def _finish(ledger: Ledger, run_id: str, status: str, error: str | None) -> None:
    """End the run; when it is ending in an error already, a ledger that fails now must not hide that error. A run
    that failed in its hand-off keeps its application's lock (``Ledger.fail_run``): the same command resumes it."""
    if error is None:
        ledger.finish_run(run_id, status)
        return
    try:
        if status == "failed":
            ledger.fail_run(run_id, error)
        else:
            ledger.finish_run(run_id, status, error)
    except StreamprocError as exc:
        log.error("run %s could not be marked %s in the ledger %s: %s", run_id, status, ledger.url, exc)
