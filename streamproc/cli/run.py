"""``streamproc run``: plan → fetch → process → hand-off in one command, for users without Airflow.

Each step is the step package's Python function, shown as the command of the same name shows it; the plan, the
topology text and the ledger are kept in ``--work-dir``, so that a run that stopped (a failure, ``--dry-run``,
``--no-handoff``) can be continued with the individual commands (``streamproc process``/``handoff --plan
<work-dir>/plan.json``; the hand-off finds the run's ledger beside the plan). A re-run of ``streamproc run`` makes a
new plan from the group's current offsets, except after a run whose process was killed: that run is taken over and
resumed at the step it died in, with its plan (``cli/resume.py``). The run is recorded in the ledger
(``streamproc.ledger.run_recording``) as Airflow's runs are.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from streamproc.cli.fetch import show_fetch
from streamproc.cli.group_wait import wait_for_empty_group_ms, wait_for_empty_group_option
from streamproc.cli.handoff import hand_off
from streamproc.cli.options import (
    application_settings,
    bootstrap_option,
    client_config,
    client_setting_option,
    kafka_streams_version_option,
    read_text,
    record_cache_option,
    split_option,
    streams_config_option,
    streams_setting_option,
)
from streamproc.cli.output import FAILURE_KEY, catch_errors, emit
from streamproc.cli.plan import show_plan
from streamproc.cli.process import conf_settings, partition_counts, process_with_progress, show_process
from streamproc.cli.resume import take_over_interrupted
from streamproc.cli.topology import checked_application
from streamproc.errors import HandoffError, HandoffNotConfirmed, StreamprocError

if TYPE_CHECKING:
    from streamproc.cli.resume import Resumption
    from streamproc.ledger.run_recording import RunRecording
    from streamproc.plan.run_plan import RunPlan

#: The plan ``streamproc run`` writes in its work directory (``streamproc process``/``handoff --plan`` take it).
PLAN_FILE = "plan.json"


class StepTimes:
    """Wall seconds per step of one ``streamproc run``, printed (stderr) as one line when the run stops: where a
    run's time goes, and the figure ``bench/test_bench_run.py`` records."""

    PREFIX = "streamproc run: "

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - started

    def line(self) -> str:
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.seconds.items())
        return f"{self.PREFIX}{steps} (total {sum(self.seconds.values()):.1f} s)"


@click.command("run")
@bootstrap_option
@client_setting_option
@click.option("--application-id", required=True, help="The Kafka Streams application.id (its group id).")
@click.option("--topology", required=True, help="MODULE:FUNCTION returning the application's Topology.")
@click.option("--store", "store_uri", required=True, help="Staging location: a directory or s3://bucket/prefix.")
@click.option(
    "--work-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the plan, the topology text and the ledger are kept.",
)
@click.option(
    "--processing-guarantee",
    type=click.Choice(["at_least_once", "exactly_once_v2"]),
    default="at_least_once",
    show_default=True,
    help="The application's processing.guarantee.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The application's state.dir on this host: the hand-off writes each task's stores and .checkpoint there.",
)
@click.option(
    "--master",
    default=None,
    help="Spark master URL (local[*], spark://…), or without Spark: 'inline' runs the tasks in this process, "
    "'processes[N]' in N worker processes (default: a worker process per 1,000,000 records of the window, at most one "
    "per core, and inline for one or none; with --conf, local[*]).",
)
@click.option("--conf", "conf_values", multiple=True, help="A Spark setting KEY=VALUE (repeatable).")
@click.option(
    "--partitions",
    "partition_values",
    multiple=True,
    help="TOPIC=N for an output topic that does not exist yet (the plan reads the others'; repeatable).",
)
@click.option(
    "--create-internal-topics",
    is_flag=True,
    help="A new application's first run: the plan creates its missing repartition and changelog topics as Kafka "
    "Streams would (store kinds from the topology); with --dry-run they are only shown.",
)
@split_option
@record_cache_option
@streams_config_option
@streams_setting_option
@click.option(
    "--describe",
    "describe_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The Java app's Topology#describe() text: the port must match it before anything runs.",
)
@wait_for_empty_group_option
@click.option("--dry-run", is_flag=True, help="Stop after the plan (printed).")
@click.option("--no-handoff", is_flag=True, help="Stop after processing.")
@click.option("--yes", is_flag=True, help="Hand off without asking for confirmation.")
@click.option(
    "--ledger",
    "ledger_url",
    metavar="URL|FILE",
    help="The run ledger: a database URL (sqlite:///…, postgresql+psycopg://user@host/db) or a SQLite file. "
    "Default: env STREAMPROC_LEDGER_URL, else <work-dir>/ledger.sqlite.",
)
@kafka_streams_version_option
@click.pass_context
@catch_errors
def run_command(
    ctx: click.Context,
    bootstrap: str,
    client_settings: tuple[str, ...],
    application_id: str,
    topology: str,
    store_uri: str,
    work_dir: Path,
    processing_guarantee: str,
    state_dir: Path | None,
    master: str | None,
    conf_values: tuple[str, ...],
    partition_values: tuple[str, ...],
    create_internal_topics: bool,
    split: str,
    record_cache: str,
    streams_config: Path | None,
    streams_settings: tuple[str, ...],
    describe_file: Path | None,
    wait_for_empty_group: str | None,
    dry_run: bool,
    no_handoff: bool,
    yes: bool,
    ledger_url: str | None,
    kafka_streams_version: str,
) -> None:
    """Plan from the group's committed offsets to the latest, fetch, process on Spark and hand off."""
    from streamproc import extras

    extras.require(extras.SPARK, "streamproc run")  # before the plan: a run must not stop at its process step
    from streamproc.ledger import run_ledger
    from streamproc.ledger.owner import ProcessOwner
    from streamproc.ledger.run_recording import recorded_run

    times = StepTimes()
    ledger = ledger_url or run_ledger(work_dir)
    owner = ProcessOwner.current()
    # a run of this application whose process was killed is taken over and resumed, never planned anew (a dry run
    # only plans: it is told the application is busy, and how to resume)
    resumed = None if dry_run else take_over_interrupted(ledger, application_id, work_dir / PLAN_FILE, owner)
    if resumed is not None:
        click.echo(resumed.line(), err=True)
    try:
        with recorded_run(
            ledger,
            application_id=application_id,
            failure=lambda: ctx.meta.get(FAILURE_KEY),
            owner=owner,
            run_id=None if resumed is None else resumed.run_id,
        ) as run:
            # every option but --ledger, as click parsed them (one list of names: the signatures below); a step's
            # error is printed inside the recording, which then records the printed line as why the run failed
            options = {name: value for name, value in ctx.params.items() if name != "ledger_url"}
            catch_errors(_run_steps)(ctx, times, run, resumed, ledger=ledger, **options)
    finally:
        if times.seconds:
            click.echo(times.line(), err=True)


def _run_steps(
    ctx: click.Context,
    times: StepTimes,
    run: RunRecording,
    resumed: Resumption | None,
    *,
    ledger: str,
    bootstrap: str,
    client_settings: tuple[str, ...],
    application_id: str,
    topology: str,
    store_uri: str,
    work_dir: Path,
    processing_guarantee: str,
    state_dir: Path | None,
    master: str | None,
    conf_values: tuple[str, ...],
    partition_values: tuple[str, ...],
    create_internal_topics: bool,
    split: str,
    record_cache: str,
    streams_config: Path | None,
    streams_settings: tuple[str, ...],
    describe_file: Path | None,
    wait_for_empty_group: str | None,
    dry_run: bool,
    no_handoff: bool,
    yes: bool,
    kafka_streams_version: str,
) -> None:
    from confluent_kafka import KafkaException

    from streamproc.fetch import fetch_plan
    from streamproc.kafka.planner import plan_run
    from streamproc.plan.cluster_snapshot import PlanRequest
    from streamproc.plan.internal_topics import InternalTopicSettings, internal_topic_settings, store_kinds_of
    from streamproc.plan.streams_group_topology import declared_topology
    from streamproc.spark.task_split import parallelism_lines, parse_split

    settings = application_settings(streams_config, streams_settings)
    wait_ms = wait_for_empty_group_ms(wait_for_empty_group)  # a bad DURATION before any work
    parse_split(split)  # a bad --split too
    with times.step("plan"):
        # everything the topology can be checked for, before any Kafka or Spark work (cli/topology.py)
        app_topology, app_config = checked_application(
            topology,
            settings,
            application_id=application_id,
            describe=None if describe_file is None else read_text(describe_file, "--describe"),
            first_run=create_internal_topics,
        )
        work_dir.mkdir(parents=True, exist_ok=True)
        describe = str(app_topology.describe())
        (work_dir / "topology.txt").write_text(describe, encoding="utf-8")
        config = client_config(bootstrap, client_settings)
        if resumed is not None and resumed.plan is not None:
            plan = resumed.plan  # the run's own plan, as the ledger recorded it when it was made
        else:
            plan = plan_run(
                config,
                application_id,
                PlanRequest(),
                topology=describe,
                processing_guarantee=processing_guarantee,
                state_dir=state_dir,
                create_internal_topics=InternalTopicSettings.from_streams_settings(
                    internal_topic_settings(settings), store_kinds_of(app_topology)
                )
                if create_internal_topics
                else None,
                dry_run=dry_run,
                source_topic_changelogs=app_topology.source_topic_changelogs,
                wait_for_empty_group_ms=wait_ms,
                group_protocol=settings.get("group.protocol"),
                declared=declared_topology(app_topology, application_id),
            )
            show_plan(ctx, plan, work_dir / PLAN_FILE, dry_run=dry_run,
                      parallelism=parallelism_lines(app_topology, plan, parse_split(split), app_config))  # fmt: skip
            run.planned(plan)
    if dry_run:
        run.stopped_after_plan()
        return
    if resumed is None and plan.nothing_new:
        run.nothing_new()
        message = (f"nothing new for application '{application_id}' since its committed offsets: no fetch, process "
                   "or hand-off (the run is recorded skipped)")  # fmt: skip
        emit(ctx, {"skipped": True, "reason": "nothing new", "application_id": application_id}, message)
        return
    if master is None and not conf_values:  # Spark settings without a master: Spark's default master, local[*]
        master = _default_master(plan)
    if resumed is None or not resumed.skips("fetch"):
        with times.step("fetch"):
            run.fetching()
            fetched = fetch_plan(config, plan, store_uri)
            show_fetch(ctx, fetched)
            run.fetched(fetched)
    if resumed is None or not resumed.skips("process"):
        with times.step("process"):
            run.processing()
            reports = process_with_progress(
                plan,
                store_uri=store_uri,
                topology=topology,
                master=master,
                conf=conf_settings(conf_values),
                partitions=partition_counts(partition_values),
                state_dir=state_dir,
                store_options={},
                streams_settings=settings,
                split=split,
                record_cache=record_cache,
            )
            show_process(ctx, reports)
            run.processed(reports)
    if no_handoff:
        return
    with times.step("hand-off"):
        run.handing_off()
        try:
            hand_off(
                ctx,
                plan,
                client_config=config,
                store_uri=store_uri,
                store_options={},
                state_dir=state_dir,
                ledger_url=ledger,
                yes=yes,
                reduce_changelogs=True,
                kafka_streams_version=kafka_streams_version,
            )
        except HandoffNotConfirmed as exc:
            run.rejected(str(exc))
            raise
        except (StreamprocError, KafkaException, OSError) as exc:
            raise HandoffError(_halted_in_handoff(run, exc, config)) from exc
        run.handed_off(config, plan)


def _halted_in_handoff(run: RunRecording, exc: BaseException, config: dict[str, object]) -> str:
    """The one line of a run that failed in its hand-off: why, and that the same command resumes it (the run keeps
    its application's lock, ``ledger.values.halted_in_handoff``), or how to abandon it."""
    from confluent_kafka import KafkaException

    from streamproc.kafka import clients

    if isinstance(exc, KafkaException):
        unreachable = clients.translate(exc, config)
        cause = clients.error_text(exc) if unreachable is exc else str(unreachable)
    elif isinstance(exc, TimeoutError) and not str(exc):
        cause = "no answer in time from the Kafka cluster (a broker down or restarting?)"
    else:
        cause = str(exc) or type(exc).__name__
    return (
        f"run {run.run_id} failed in its hand-off step: {cause}; part of its window may be handed off, so the run "
        f"keeps the application's lock: run this same `streamproc run` command again (once the cause is fixed) to "
        f"resume its hand-off, or abandon it with `streamproc ledger finish {run.run_id} --status failed --ledger "
        f"{run.ledger.url}`"
    )


def _default_master(plan: RunPlan) -> str:
    """No ``--master``: the window runs on this machine without Spark (``spark.job.default_master``), in this
    process or in worker processes, and the log says which and why."""
    from streamproc.spark.job import INLINE_MASTER, RECORDS_PER_WORKER, default_master, processes_of, window_records

    master = default_master(plan)
    if master == INLINE_MASTER:
        where = "in this process (--master inline)"
    else:
        where = f"in {processes_of(master)} worker processes (--master {master})"
    click.echo(
        f"processing the window's {window_records(plan):,} record(s) {where}: a worker process per "
        f"{RECORDS_PER_WORKER:,} records, at most one per core; give --master to run on Spark (local[*], a cluster)",
        err=True,
    )
    return master
