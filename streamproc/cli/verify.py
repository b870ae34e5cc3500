"""``streamproc verify``: re-check staged segments against their manifests, and optionally a plan's ranges."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from streamproc.cli.options import s3_options, store_options
from streamproc.cli.output import catch_errors, emit


@click.command("verify")
@click.option("--store", "store_uri", required=True, help="Staging location to re-check against its manifests.")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also prove that every range of this plan is staged (without it, an empty store fails).",
)
@s3_options
@click.pass_context
@catch_errors
def verify_command(
    ctx: click.Context,
    store_uri: str,
    plan_file: Path | None,
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Re-check every staged segment against its manifest (and the plan's ranges); exit 1 when anything is wrong."""
    from streamproc.fetch import planned_ranges
    from streamproc.plan.run_plan import RunPlan
    from streamproc.storage import load_store
    from streamproc.storage.verify import verify

    planned = planned_ranges(RunPlan.read(plan_file)) if plan_file is not None else None
    options = store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri)
    report = verify(load_store(store_uri, **options), planned=planned)
    problems = [{"object": p.name, "problem": p.message} for p in report.problems]
    text = f"{report.segments_ok} of {report.segments_checked} segment(s) verified"
    if planned is not None:
        text += f"; {report.ranges_covered} of {report.ranges_checked} planned range(s) staged"
    if problems:
        text += "\n" + "\n".join(f"  {p['object']}: {p['problem']}" for p in problems)
    payload: dict[str, Any] = {
        "segments_checked": report.segments_checked,
        "segments_ok": report.segments_ok,
        "problems": problems,
    }
    if planned is not None:
        payload.update(ranges_checked=report.ranges_checked, ranges_covered=report.ranges_covered)
    emit(ctx, payload, text)
    if problems:
        sys.exit(1)
