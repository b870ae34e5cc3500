"""``streamproc handoff``: hand a processed plan's results to Kafka and the state directory. Shows the hand-off
preview first and asks for confirmation unless ``--yes``; ``--status`` lists the steps the ledger recorded;
``handoff install-state`` unpacks a state bundle on another host.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from streamproc.cli.options import (
    client_config,
    client_setting_option,
    kafka_streams_version_option,
    s3_options,
    store_options,
)
from streamproc.cli.output import catch_errors, emit, json_output
from streamproc.errors import ConfigError, HandoffNotConfirmed

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan


def hand_off(
    ctx: click.Context,
    plan: RunPlan,
    *,
    client_config: dict[str, object],
    store_uri: str,
    store_options: dict[str, Any],
    state_dir: Path | None,
    ledger_url: str,
    yes: bool,
    reduce_changelogs: bool,
    state_bundle_uri: str | None = None,
    kafka_streams_version: str = "4.2",
) -> None:
    """The preview, the confirmation and the hand-off (``streamproc handoff``, ``streamproc run``).

    The preview is the exact one (``handoff.preview.processed_preview``): the process step's reports are in the
    store by now, so every commit, purge and task directory is shown with its offsets and paths."""
    from streamproc.handoff.preview import processed_preview
    from streamproc.handoff.procedure import handoff
    from streamproc.ledger import Ledger
    from streamproc.plan.run_plan import plan_id as plan_hash
    from streamproc.storage import load_store

    plan_id = plan_hash(plan)
    store = load_store(store_uri, **store_options)
    if not yes:
        if json_output(ctx):
            raise ConfigError("the hand-off is irreversible: with --output json pass --yes (no prompt is shown)")
        with Ledger(ledger_url) as ledger:
            shown = processed_preview(
                plan,
                plan_id,
                client_config=client_config,
                store=store,
                ledger=ledger,
                state_dir=state_dir,
                state_bundle=state_bundle_uri,
                kafka_streams_version=kafka_streams_version,
                reduce_changelogs=reduce_changelogs,
            )
        click.echo(shown, err=True)
        if not click.confirm("Hand off?", err=True):
            raise HandoffNotConfirmed("hand-off not confirmed: nothing was done")
    with Ledger(ledger_url) as ledger:
        summary = handoff(
            plan,
            plan_id,
            client_config=client_config,
            store=store,
            ledger=ledger,
            state_dir=state_dir,
            state_bundle=load_store(state_bundle_uri, **store_options) if state_bundle_uri else None,
            reduce_changelogs=reduce_changelogs,
            kafka_streams_version=kafka_streams_version,
        )
    payload = {
        "plan_id": summary.plan_id,
        "published": list(summary.published),
        "checkpointed": list(summary.checkpointed),
        "purged": list(summary.purged),
        "skipped": list(summary.skipped),
    }
    text = (
        f"hand-off of plan {summary.plan_id}: published {len(summary.published)} task(s), wrote "
        f"{len(summary.checkpointed)} checkpoint(s), purged {len(summary.purged)} partition(s)"
        + (f"; {len(summary.skipped)} step(s) already done" if summary.skipped else "")
    )
    emit(ctx, payload, text)


@click.group("handoff", invoke_without_command=True)
@click.option(
    "--bootstrap",
    envvar="STREAMPROC_BOOTSTRAP",
    metavar="HOST:PORT[,…]",
    help="Kafka bootstrap servers (env STREAMPROC_BOOTSTRAP); not needed with --status.",
)
@client_setting_option
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The plan the process step ran (required unless a subcommand is given).",
)
@click.option("--store", "store_uri", help="The staging location the process step wrote (DIR or s3://bucket/prefix).")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The application's state.dir on this host: each task's stores and .checkpoint are written there.",
)
@click.option(
    "--state-bundle",
    "state_bundle_uri",
    help="Also write each task's state as a tar to this location (DIR or s3://…) for another host: "
    "`streamproc handoff install-state` unpacks it there.",
)
@click.option(
    "--ledger",
    "ledger_file",
    metavar="URL|FILE",
    help="The run's ledger: a SQLite file or a database URL (sqlite:///…, postgresql+psycopg://…). Default: env "
    "STREAMPROC_LEDGER_URL, else ledger.sqlite beside the plan when `streamproc run` made one there, else "
    "<plan>.ledger.sqlite.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--status", is_flag=True, help="Only print the steps the ledger recorded for this plan.")
@click.option(
    "--no-reduce-changelogs",
    is_flag=True,
    help="Publish every changelog record (default: the last value per key, which restores the same state).",
)
@kafka_streams_version_option
@s3_options
@click.pass_context
@catch_errors
def handoff_command(
    ctx: click.Context,
    bootstrap: str | None,
    client_settings: tuple[str, ...],
    plan_file: Path | None,
    store_uri: str | None,
    state_dir: Path | None,
    state_bundle_uri: str | None,
    ledger_file: str | None,
    yes: bool,
    status: bool,
    no_reduce_changelogs: bool,
    kafka_streams_version: str,
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Publish each task's outputs and changelogs with its offsets, write state directories, purge repartitions."""
    if ctx.invoked_subcommand is not None:
        return
    if plan_file is None:
        raise ConfigError("--plan is required (the plan the process step ran)")
    if status:
        from streamproc.ledger import Ledger, handoff_ledger
        from streamproc.plan.run_plan import RunPlan
        from streamproc.plan.run_plan import plan_id as plan_hash

        plan_id = plan_hash(RunPlan.read(plan_file))
        with Ledger(ledger_file or handoff_ledger(plan_file)) as ledger:
            steps = ledger.steps(plan_id)
        rows = [{"kind": s.kind, "subject": s.subject, "finished_at": s.finished_at, "detail": s.detail} for s in steps]
        text = "\n".join(f"{s.finished_at}  {s.kind:<10} {s.subject}" for s in steps)
        emit(ctx, {"plan_id": plan_id, "steps": rows}, text or f"no hand-off step of plan {plan_id} is recorded")
        return
    if store_uri is None:
        raise ConfigError("--store is required (the staging location the process step wrote)")
    if bootstrap is None:
        raise ConfigError("no Kafka bootstrap servers given: pass --bootstrap host:port (or set STREAMPROC_BOOTSTRAP)")
    from streamproc.ledger import handoff_ledger
    from streamproc.plan.run_plan import RunPlan

    hand_off(
        ctx,
        RunPlan.read(plan_file),
        client_config=client_config(bootstrap, client_settings),
        store_uri=store_uri,
        store_options=store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri),
        state_dir=state_dir,
        state_bundle_uri=state_bundle_uri,
        ledger_url=ledger_file or handoff_ledger(plan_file),
        yes=yes,
        reduce_changelogs=not no_reduce_changelogs,
        kafka_streams_version=kafka_streams_version,
    )


@handoff_command.command("install-state")
@click.option("--bundle", "bundle_uri", required=True, help="The --state-bundle location the hand-off wrote.")
@click.option(
    "--state-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The application's state.dir on this host.",
)
@s3_options
@click.pass_context
@catch_errors
def install_state_command(
    ctx: click.Context,
    bundle_uri: str,
    state_dir: Path,
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Unpack a state bundle into this host's state.dir (each task directory, .checkpoint last)."""
    from streamproc.handoff.state_bundle import install
    from streamproc.storage import load_store

    store = load_store(bundle_uri, **store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, bundle_uri))
    done = install(store, bundle_uri, state_dir)
    lines = [f"wrote {d}" for d in done.written]
    lines += [f"removed {d} (the task starts without local state: its changelogs restore it)" for d in done.removed]
    emit(
        ctx,
        {"task_dirs": list(done.written), "removed_task_dirs": list(done.removed)},
        "\n".join(lines) or "the bundle holds no task state",
    )
