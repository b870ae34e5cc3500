"""The ``streamproc`` command line: one click group, text or JSON output, one-line errors.

Every ``StreamprocError`` becomes a single line on stderr and exit code 1, so scripts and Airflow logs show the
message the error was written to give (what failed, where, what to do) rather than a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from streamproc.errors import ConfigError, StreamprocError

P = ParamSpec("P")
R = TypeVar("R")


def catch_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn a ``StreamprocError`` into ``Error: <message>`` and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except StreamprocError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)

    return wrapper


def emit(ctx: click.Context, payload: dict[str, Any], text: str) -> None:
    """Print ``payload`` as JSON with ``--output json``, else the human-readable ``text``."""
    if ctx.find_root().params.get("output") == "json":
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
    else:
        click.echo(text)


@click.group()
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-v", "--verbose", count=True, help="-v for INFO logs, -vv for DEBUG.")
def main(output: str, verbose: int) -> None:
    """streamproc: Kafka Streams semantics as bounded batch jobs."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)


# ---------------------------------------------------------------------------------------------------- conformance
@main.group()
def conformance() -> None:
    """Run the spec's conformance scenarios through streamproc."""


@conformance.command("run")
@click.argument("scenario_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@catch_errors
def conformance_run(scenario_file: Path) -> None:
    """Print streamproc's result for SCENARIO_FILE as JSON, in the shape of the scenario's ``expected``."""
    from streamproc.conformance import load_scenario, run_scenario

    result = run_scenario(load_scenario(scenario_file))
    click.echo(json.dumps(result, indent=2, sort_keys=True))


# ----------------------------------------------------------------------------------------------- plan / fetch
def _client_config(bootstrap: str, settings: tuple[str, ...]) -> dict[str, object]:
    """``bootstrap.servers`` plus ``-X key=value`` client settings (security, timeouts), as librdkafka names them."""
    config: dict[str, object] = {"bootstrap.servers": bootstrap}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"-X takes key=value (a librdkafka setting), not '{item}'")
        config[key.strip()] = value.strip()
    return config


_bootstrap_option = click.option(
    "--bootstrap",
    envvar="STREAMPROC_BOOTSTRAP",
    required=True,
    help="Kafka bootstrap servers (env STREAMPROC_BOOTSTRAP).",
)
_client_setting_option = click.option(
    "-X", "client_settings", multiple=True, metavar="KEY=VALUE", help="Extra Kafka client setting; repeatable."
)


@main.command("plan")
@_bootstrap_option
@_client_setting_option
@click.option("--application-id", required=True, help="The Kafka Streams application.id (its group id).")
@click.option(
    "--topology",
    "topology_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A file with the application's Topology#describe() text.",
)
@click.option("--input-topic", "input_topics", multiple=True, help="Plan these topics instead of a topology.")
@click.option("--to-earliest", is_flag=True, help="Start at the log start offset.")
@click.option("--to-latest", is_flag=True, help="Start at the latest offset (an empty run that moves the group).")
@click.option("--to-offset", type=int, help="Start every partition at this offset.")
@click.option("--to-datetime", help="Start at the first record at or after this instant (yyyy-MM-ddTHH:mm:ss.SSS).")
@click.option("--by-duration", help="Start this ISO-8601 duration before now (e.g. PT6H).")
@click.option("--shift-by", type=int, help="Start the committed offset plus N (negative moves back).")
@click.option(
    "--from-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="CSV topic,partition,offset."
)
@click.option("--end-offset", type=int, help="End every partition at this offset (default: latest).")
@click.option("--end-datetime", help="End before the first record at or after this instant.")
@click.option("--end-by-duration", help="End this ISO-8601 duration before now.")
@click.option("--on-data-loss", type=click.Choice(["fail", "clamp"]), default="fail", show_default=True)
@click.option(
    "--processing-guarantee",
    type=click.Choice(["at_least_once", "exactly_once_v2"]),
    default="at_least_once",
    show_default=True,
)
@click.option("--auto-offset-reset", type=click.Choice(["earliest", "latest", "none"]), default="earliest")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The application's state.dir for the batch: task checkpoints there decide where restores start.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan JSON here.")
@click.option("--dry-run", is_flag=True, help="Print the plan as a table and stop.")
@click.pass_context
@catch_errors
def plan_command(
    ctx: click.Context,
    bootstrap: str,
    client_settings: tuple[str, ...],
    application_id: str,
    topology_file: Path | None,
    input_topics: tuple[str, ...],
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    by_duration: str | None,
    shift_by: int | None,
    from_file: Path | None,
    end_offset: int | None,
    end_datetime: str | None,
    end_by_duration: str | None,
    on_data_loss: str,
    processing_guarantee: str,
    auto_offset_reset: str,
    state_dir: Path | None,
    out: Path | None,
    dry_run: bool,
) -> None:
    """Resolve the offset ranges and tasks of a run (the reset tool's scenarios) into a RunPlan."""
    from streamproc.plan import cluster_snapshot as cs
    from streamproc.plan.planner import plan_run

    starts: list[cs.StartSpec] = []
    if to_earliest:
        starts.append(cs.EarliestStart())
    if to_latest:
        starts.append(cs.LatestStart())
    if to_offset is not None:
        starts.append(cs.ToOffsetStart(offset=to_offset))
    if to_datetime is not None:
        starts.append(cs.ToDatetimeStart(to_datetime))
    if by_duration is not None:
        starts.append(cs.ByDurationStart(by_duration))
    if shift_by is not None:
        starts.append(cs.ShiftByStart(shift_by))
    if from_file is not None:
        starts.append(cs.FromFileStart(from_file.read_text(encoding="utf-8"), file_name=str(from_file)))
    ends: list[cs.EndSpec] = []
    if end_offset is not None:
        ends.append(cs.ToOffsetEnd(offset=end_offset))
    if end_datetime is not None:
        ends.append(cs.ToDatetimeEnd(end_datetime))
    if end_by_duration is not None:
        ends.append(cs.ByDurationEnd(end_by_duration))
    if len(starts) > 1 or len(ends) > 1:
        raise ConfigError(
            "give at most one start option (--to-…, --by-duration, --shift-by, --from-file) and one end option"
        )
    request = cs.PlanRequest(
        start=starts[0] if starts else cs.CommittedStart(),
        end=ends[0] if ends else cs.LatestEnd(),
        start_policy=cs.StartPolicy.from_on_data_loss(on_data_loss),
    )
    topology = topology_file.read_text(encoding="utf-8") if topology_file else None
    run_plan = plan_run(
        _client_config(bootstrap, client_settings),
        application_id,
        request,
        topology=topology,
        source_topics=input_topics,
        processing_guarantee=processing_guarantee,
        auto_offset_reset=auto_offset_reset,
        state_dir=state_dir,
    )
    if out is not None and not dry_run:
        run_plan.write(out)
    if dry_run or out is None:
        emit(ctx, run_plan.to_dict(), run_plan.report())
    else:
        emit(ctx, {"plan": str(out)}, f"Plan written to {out}\n\n{run_plan.report()}")


@main.command("fetch")
@_bootstrap_option
@_client_setting_option
@click.option("--plan", "plan_file", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--store", "store_uri", required=True, help="Staging location: a directory, file://… or s3://bucket/prefix."
)
@click.option("--parallelism", type=int, default=4, show_default=True, help="Partitions fetched at once per process.")
@click.option(
    "--processes",
    type=int,
    default=0,
    help="Worker processes (0: one per core for fetches of 500 000 records or more, else 1).",
)
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
) -> None:
    """Copy every planned range to the staging store as proved segments (idempotent, resumable)."""
    from streamproc.fetch import FetchRange, fetch_ranges
    from streamproc.plan.cluster_snapshot import IsolationLevel
    from streamproc.plan.run_plan import RunPlan
    from streamproc.storage import load_store

    run_plan = RunPlan.read(plan_file)
    ranges = [
        FetchRange(r.topic, r.partition, r.start, r.end, r.compacted, r.topic_id)
        for r in run_plan.ranges
        if not r.empty
    ]
    # Changelogs are compacted topics (Kafka Streams creates them so): a gap is a marker or a compacted offset.
    ranges += [
        FetchRange(r.changelog_topic, r.changelog_partition, r.start, r.end, compacted=True)
        for r in run_plan.restores
        if r.end > r.start
    ]
    if processes == 0:
        large = sum(r.end - r.start for r in ranges) >= 500_000
        processes = min(os.cpu_count() or 1, len(ranges)) if large else 1
    results = fetch_ranges(
        _client_config(bootstrap, client_settings),
        load_store(store_uri),
        ranges,
        isolation=IsolationLevel(run_plan.isolation_level),
        parallelism=parallelism,
        processes=max(processes, 1),
    )
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
    text = "\n".join(
        f"{row['partition']:<40} [{row['start']}, {row['end']}): {row['records']} records, "
        f"{row['segments_written']} segment(s) written, {row['segments_already_complete']} already staged"
        for row in rows
    )
    emit(ctx, {"ranges": rows}, text or "nothing to fetch: every planned range is empty")


@main.command("verify")
@click.option("--store", "store_uri", required=True, help="Staging location to re-check against its manifests.")
@click.pass_context
@catch_errors
def verify_command(ctx: click.Context, store_uri: str) -> None:
    """Re-check every staged segment against its manifest; exit 1 when anything is wrong."""
    from streamproc.storage import load_store
    from streamproc.storage.manifest import verify

    report = verify(load_store(store_uri))
    problems = [{"object": p.name, "problem": p.message} for p in report.problems]
    text = f"{report.segments_ok} of {report.segments_checked} segment(s) verified"
    if problems:
        text += "\n" + "\n".join(f"  {p['object']}: {p['problem']}" for p in problems)
    emit(
        ctx,
        {"segments_checked": report.segments_checked, "segments_ok": report.segments_ok, "problems": problems},
        text,
    )
    if problems:
        sys.exit(1)


# ------------------------------------------------------------------------------------------------------------ dev
@main.group()
def dev() -> None:
    """Local development services: a real Kafka broker and a real S3 server (MinIO)."""


def _default_workdir(service: str) -> Path:
    from streamproc.dev.versions import cache_dir

    return cache_dir() / "run" / service


_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the service keeps its data, log and PID (default: ~/.cache/streamproc/run/<service>).",
)


@dev.group()
def broker() -> None:
    """A single-node KRaft Kafka broker on 127.0.0.1 from Maven Central's jars."""


@broker.command("fetch")
@catch_errors
def broker_fetch() -> None:
    """Copy the broker jars into the cache (once)."""
    from streamproc.dev import broker as kafka_broker

    click.echo(f"Kafka jars in {kafka_broker.fetch()}")


@broker.command("start")
@_workdir_option
@click.option("--fresh", is_flag=True, help="Delete the work directory's data first.")
@click.pass_context
@catch_errors
def broker_start(ctx: click.Context, workdir: Path | None, fresh: bool) -> None:
    """Start the broker (restarting it on its old data and ports when the work directory has some)."""
    from streamproc.dev import broker as kafka_broker

    workdir = workdir or _default_workdir("broker")
    if fresh and workdir.exists():
        kafka_broker.stop(workdir)
        shutil.rmtree(workdir)
    handle = kafka_broker.start(workdir)
    emit(
        ctx,
        {"bootstrap": handle.address, "pid": handle.pid, "log": handle.log_path},
        f"Kafka broker running: bootstrap {handle.address}, pid {handle.pid}, log {handle.log_path}",
    )


@broker.command("stop")
@_workdir_option
@catch_errors
def broker_stop(workdir: Path | None) -> None:
    """Stop the broker started from the work directory, by its PID."""
    from streamproc.dev import broker as kafka_broker

    workdir = workdir or _default_workdir("broker")
    click.echo("Stopped" if kafka_broker.stop(workdir) else f"No broker running from {workdir}")


@broker.command("status")
@_workdir_option
@catch_errors
def broker_status(workdir: Path | None) -> None:
    """Say whether the broker runs and answers."""
    from streamproc.dev import broker as kafka_broker

    click.echo(kafka_broker.status(workdir or _default_workdir("broker")))


@dev.group()
def s3() -> None:
    """A MinIO S3 server on 127.0.0.1, built with go install."""


@s3.command("fetch")
@catch_errors
def s3_fetch() -> None:
    """Build the MinIO binary into the cache (once)."""
    from streamproc.dev import s3 as minio

    click.echo(f"MinIO at {minio.fetch()}")


@s3.command("start")
@_workdir_option
@click.pass_context
@catch_errors
def s3_start(ctx: click.Context, workdir: Path | None) -> None:
    """Start MinIO."""
    from streamproc.dev import s3 as minio

    handle = minio.start(workdir or _default_workdir("s3"))
    emit(
        ctx,
        {"endpoint": handle.address, "pid": handle.pid, **handle.extra},
        f"MinIO running: endpoint {handle.address}, access key {handle.extra['access_key']}, pid {handle.pid}",
    )


@s3.command("stop")
@_workdir_option
@catch_errors
def s3_stop(workdir: Path | None) -> None:
    """Stop MinIO by its PID."""
    from streamproc.dev import s3 as minio

    workdir = workdir or _default_workdir("s3")
    click.echo("Stopped" if minio.stop(workdir) else f"No MinIO running from {workdir}")


@s3.command("status")
@_workdir_option
@catch_errors
def s3_status(workdir: Path | None) -> None:
    """Say whether MinIO runs and is live."""
    from streamproc.dev import s3 as minio

    click.echo(minio.status(workdir or _default_workdir("s3")))


import streamproc.spark.cli  # noqa: E402, F401  (registers `streamproc process`; at the end: it imports `main`)

if __name__ == "__main__":
    main()
