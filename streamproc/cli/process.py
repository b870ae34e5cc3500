"""``streamproc process``: run a plan's tasks on Spark over the staged segments (Spark and the engine load when the
command runs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from streamproc.cli.options import (
    application_settings,
    record_cache_option,
    s3_options,
    split_option,
    store_options,
    streams_config_option,
    streams_setting_option,
)
from streamproc.cli.output import catch_errors, emit
from streamproc.errors import ConfigError

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    """``KEY=VALUE`` values (an empty value allowed: a Spark setting may be empty)."""
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key:
            raise ConfigError(f"{option} {value!r}: give KEY=VALUE")
        pairs[key] = setting
    return pairs


def conf_settings(values: tuple[str, ...]) -> dict[str, str]:
    """``--conf KEY=VALUE`` values as Spark settings."""
    return _pairs(values, "--conf")


def partition_counts(values: tuple[str, ...]) -> dict[str, int]:
    """``--partitions TOPIC=N`` values as counts per topic."""
    counts: dict[str, int] = {}
    for topic, text in _pairs(values, "--partitions").items():
        try:
            counts[topic] = int(text)
        except ValueError:
            raise ConfigError(f"--partitions {topic}={text}: the partition count must be a number") from None
    return counts


@click.command("process")
@click.option(
    "--plan",
    "plan_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The plan file `streamproc plan --out` wrote (the same one fetch staged).",
)
@click.option(
    "--store", "store_uri", required=True, help="The staging location fetch wrote (DIR or s3://bucket/prefix)."
)
@click.option("--topology", required=True, help="MODULE:FUNCTION returning the application's Topology.")
@click.option(
    "--master",
    default=None,
    help="Spark master URL (default: local[*], or spark-submit's --master); without Spark, 'inline' runs the tasks in "
    "this process, 'processes[N]' in N worker processes of this machine (processes: one per core).",
)
@click.option("--conf", "conf_values", multiple=True, help="A Spark setting KEY=VALUE (repeatable).")
@click.option(
    "--partitions",
    "partition_values",
    multiple=True,
    help="TOPIC=N: partition count of an output topic that did not exist when the plan was made (repeatable).",
)
@click.option(
    "--state-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The state.dir the plan was made with (--state-dir of plan): each task starts from its task directory "
    "there and restores the rest of the changelog. Every executor must be able to read it.",
)
@split_option
@record_cache_option
@streams_config_option
@streams_setting_option
@s3_options
@click.pass_context
@catch_errors
def process_command(
    ctx: click.Context,
    plan_file: Path,
    store_uri: str,
    topology: str,
    master: str | None,
    conf_values: tuple[str, ...],
    partition_values: tuple[str, ...],
    state_dir: Path | None,
    split: str,
    record_cache: str,
    streams_config: Path | None,
    streams_settings: tuple[str, ...],
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Process every planned task on Spark: outputs, changelogs, drops, stores and a report per task."""
    from streamproc import extras

    extras.require(extras.SPARK, "streamproc process")
    from streamproc.plan.run_plan import RunPlan

    reports = process_with_progress(
        RunPlan.read(plan_file),
        store_uri=store_uri,
        topology=topology,
        master=master,
        conf=conf_settings(conf_values),
        partitions=partition_counts(partition_values),
        state_dir=state_dir,
        store_options=store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri),
        streams_settings=application_settings(streams_config, streams_settings),
        split=split,
        record_cache=record_cache,
    )
    show_process(ctx, reports)


def process_with_progress(
    plan: RunPlan,
    *,
    store_uri: str,
    topology: str,
    master: str | None,
    conf: Mapping[str, str],
    partitions: Mapping[str, int],
    state_dir: Path | None,
    store_options: Mapping[str, Any],
    streams_settings: Mapping[str, str],
    split: str = "auto",
    record_cache: str = "off",
) -> list[dict[str, Any]]:
    """Run the plan's tasks on Spark (``streamproc.spark.job.process``) with a bar of the tasks done on stderr; the
    caller has checked that the ``spark`` extra is installed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from streamproc.spark.job import process
    from streamproc.spark.task_split import parse_split

    shards = parse_split(split)

    with Progress(
        TextColumn("[bold]process[/bold] tasks"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
        console=Console(stderr=True),  # stdout carries the result (text or --output json)
    ) as bar:
        progress_task = bar.add_task("tasks", total=len(plan.tasks))

        def advance(done: int, total: int) -> None:
            bar.update(progress_task, completed=done, total=total)

        return process(
            plan,
            store_uri=store_uri,
            topology=topology,
            master=master,
            conf=dict(conf),
            partitions=dict(partitions),
            state_dir=None if state_dir is None else str(state_dir.resolve()),
            store_options=dict(store_options),
            progress=advance,
            streams_settings=streams_settings,
            split=shards,
            record_cache=record_cache,
        )


def show_process(ctx: click.Context, reports: Sequence[Mapping[str, Any]]) -> None:
    """One line per task: records processed and dropped, its stream time, whether an earlier run had done it."""
    rows: list[dict[str, Any]] = [
        {
            "task_id": r["task_id"],
            "records_processed": r["records_processed"],
            "dropped": r["dropped"],
            "stream_time": r["stream_time"],
            "outputs": r["outputs"],
            "skipped": r["skipped"],
            "seconds": r["seconds"],
        }
        for r in reports
    ]
    text = "\n".join(
        f"{row['task_id']:<8} {row['records_processed']:>12} records  dropped {sum(row['dropped'].values()):>8}  "
        f"stream time {row['stream_time']}{'  (already done)' if row['skipped'] else ''}"
        for row in rows
    )
    total = sum(row["records_processed"] for row in rows)
    emit(ctx, {"tasks": rows}, f"{text}\n{len(rows)} task(s), {total} records" if rows else "no tasks in the plan")
