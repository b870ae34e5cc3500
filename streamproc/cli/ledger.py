"""``streamproc ledger``: read the run ledger (``runs``, ``show``) and end a run whose process died (``finish``), which
otherwise holds its application's lock for ever."""

from __future__ import annotations

import dataclasses

import click

from streamproc.cli.output import catch_errors, emit
from streamproc.ledger.location import LEDGER_URL_ENV
from streamproc.ledger.values import TERMINAL_STATUSES

_ledger_option = click.option(
    "--ledger",
    "ledger_url",
    required=True,
    envvar=LEDGER_URL_ENV,
    metavar="URL|FILE",
    help=f"The run ledger: a database URL or a SQLite file (env {LEDGER_URL_ENV}).",
)


@click.group("ledger")
def ledger_group() -> None:
    """The run ledger: runs of every application, what each planned, staged, processed and handed off."""


@ledger_group.command("runs")
@_ledger_option
@click.option("--application-id", help="Only this application's runs.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="The newest N runs.")
@click.pass_context
@catch_errors
def runs_command(ctx: click.Context, ledger_url: str, application_id: str | None, limit: int) -> None:
    """List the newest runs first."""
    from streamproc.ledger.ledger import Ledger

    with Ledger(ledger_url) as ledger:
        runs = ledger.runs(application_id, limit=limit)
    text = "\n".join(
        f"{r.run_id}  {r.started_at}  {r.application_id}  {r.trigger:<9} {r.status:<9} {r.stage:<8} "
        f"planned {r.records_planned}  processed {r.records_processed}  dropped {r.records_dropped}"
        + (f"\n    {r.error}" if r.error else "")
        for r in runs
    )
    emit(ctx, {"runs": [dataclasses.asdict(r) for r in runs]}, text or "no runs recorded")


@ledger_group.command("show")
@_ledger_option
@click.argument("run_id")
@click.pass_context
@catch_errors
def show_command(ctx: click.Context, ledger_url: str, run_id: str) -> None:
    """Everything recorded about one run: ranges, lag before/after, tasks, hand-off steps."""
    from streamproc.errors import LedgerError
    from streamproc.ledger.ledger import Ledger

    with Ledger(ledger_url) as ledger:
        detail = ledger.run(run_id)
        where = ledger.url
    if detail is None:
        raise LedgerError(f"the ledger at {where} has no run {run_id}; `streamproc ledger runs` lists them")
    s = detail.summary
    lines = [
        f"run {s.run_id} of {s.application_id} ({s.trigger}"
        + (f", DAG {s.dag_id} run {s.dag_run_id}" if s.dag_id else "")
        + f"): {s.status} at stage {s.stage}, {s.started_at} → {s.finished_at or '…'}",
        *([f"error: {s.error}"] if s.error else []),
        f"plan {s.plan_id or '(none yet)'}",
        *(
            f"  {r.kind:<7} {r.topic}-{r.partition} [{r.start}, {r.end}): planned {r.records_planned}, staged "
            f"{'-' if r.records_staged is None else r.records_staged}"
            for r in detail.ranges
        ),
        *(
            f"  lag {lag.partition}: {lag.lag_before} before, {'-' if lag.lag_after is None else lag.lag_after} after"
            for lag in detail.lag
        ),
        *(
            f"  task {t.task_id}: {t.records_processed} processed, dropped {sum(t.dropped.values())}"
            f"{' (already done)' if t.skipped else ''}"
            for t in detail.tasks
        ),
        *(f"  {step.finished_at}  {step.kind:<10} {step.subject}" for step in detail.steps),
    ]
    emit(ctx, dataclasses.asdict(detail), "\n".join(lines))


@ledger_group.command("finish")
@_ledger_option
@click.argument("run_id")
@click.option(
    "--status", type=click.Choice(TERMINAL_STATUSES), default="failed", show_default=True, help="How the run ended."
)
@click.option("--error", "error_text", help="Why (default: ended by hand with `streamproc ledger finish`).")
@click.pass_context
@catch_errors
def finish_command(ctx: click.Context, ledger_url: str, run_id: str, status: str, error_text: str | None) -> None:
    """End a run whose process died, releasing its application's lock (only when it is really gone: a live run
    ended here would hand off beside the next)."""
    from streamproc.ledger.ledger import Ledger

    error = error_text or ("ended by hand with `streamproc ledger finish`" if status == "failed" else None)
    with Ledger(ledger_url) as ledger:
        ledger.finish_run(run_id, status, error)
    emit(ctx, {"run_id": run_id, "status": status}, f"run {run_id} marked {status}; its application's lock is free")
