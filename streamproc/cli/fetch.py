"""``streamproc fetch``: copy every planned range to the staging store as proved segments."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from streamproc.cli.options import bootstrap_option, client_config, client_setting_option, s3_options, store_options
from streamproc.cli.output import catch_errors, emit

if TYPE_CHECKING:
    from streamproc.fetch import RangeFetchResult


@click.command("fetch")
@bootstrap_option
@client_setting_option
@click.option(
    "--plan",
    "plan_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The plan JSON written by `streamproc plan --out`.",
)
@click.option(
    "--store", "store_uri", required=True, help="Staging location: a directory, file://… or s3://bucket/prefix."
)
@click.option(
    "--parallelism",
    type=int,
    default=4,
    show_default=True,
    help="Pieces (of 400 000 offsets, a partition's range cut at their multiples) fetched at once per process.",
)
@click.option(
    "--processes",
    type=int,
    default=1,
    show_default=True,
    help="Worker processes (1: threads in this process, which fetch faster and with less CPU than processes on a "
    "machine of a few cores).",
)
@s3_options
@click.pass_context
@catch_errors
def fetch_command(
    ctx: click.Context,
    bootstrap: str,
    client_settings: tuple[str, ...],
    plan_file: Path,
    store_uri: str,
    parallelism: int,
    processes: int,
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Copy every planned range to the staging store as proved segments (idempotent, resumable)."""
    from streamproc.fetch import fetch_plan
    from streamproc.plan.run_plan import RunPlan

    results = fetch_plan(
        client_config(bootstrap, client_settings),
        RunPlan.read(plan_file),
        store_uri,
        store_options=store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri),
        parallelism=parallelism,
        processes=processes,
    )
    show_fetch(ctx, results)


def show_fetch(ctx: click.Context, results: Sequence[RangeFetchResult]) -> None:
    """One line per range: what was staged now and what already was."""
    rows = [
        {
            "partition": f"{r.range.topic}-{r.range.partition}",
            "start": r.range.start,
            "end": r.range.end,
            "records": r.records,
            "bytes": r.bytes,
            "segments_written": r.segments_written,
            "segments_already_complete": r.segments_already_complete,
        }
        for r in results
    ]
    width = max([40, *(len(str(row["partition"])) for row in rows)])
    text = "\n".join(
        f"{row['partition']:<{width}} [{row['start']}, {row['end']}): {row['records']} records, "
        f"{row['segments_written']} segment(s) written, {row['segments_already_complete']} already staged"
        for row in rows
    )
    emit(ctx, {"ranges": rows}, text or "nothing to fetch: every planned range is empty")
