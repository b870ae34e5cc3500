"""The ``streamproc`` command line: one click group, text or JSON output, one-line errors.

Every ``StreamprocError`` becomes a single line on stderr and exit code 1, so scripts and Airflow logs show the
message the error was written to give (what failed, where, what to do) rather than a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from streamproc.errors import StreamprocError

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


if __name__ == "__main__":
    main()
