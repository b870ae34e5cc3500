"""``streamproc plan``: resolve a run's offset ranges and tasks (the reset tool's scenarios) into a ``RunPlan``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from streamproc.cli.group_wait import wait_for_empty_group_ms, wait_for_empty_group_option
from streamproc.cli.options import (
    application_settings,
    bootstrap_option,
    client_config,
    client_setting_option,
    pairs,
    read_text,
    streams_config_option,
)
from streamproc.cli.output import catch_errors, emit
from streamproc.errors import ConfigError

if TYPE_CHECKING:
    from streamproc.plan import cluster_snapshot as cs
    from streamproc.plan.internal_topics import StoreKind
    from streamproc.plan.run_plan import RunPlan
    from streamproc.plan.streams_group_topology import DeclaredTopology


@click.command("plan")
@bootstrap_option
@client_setting_option
@click.option("--application-id", required=True, help="The Kafka Streams application.id (its group id).")
@click.option(
    "--topology",
    "topology_reference",
    metavar="MODULE:FUNCTION|FILE",
    help="The application's topology: the Python port (MODULE:FUNCTION, as process and run take it; its store kinds "
    "and source-topic changelogs come with it), or a file with the Java app's Topology#describe() text.",
)
@click.option(
    "--describe",
    "describe_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With a Python --topology: the Java app's Topology#describe() text, which the port must match.",
)
@click.option("--input-topic", "input_topics", multiple=True, help="Plan these topics instead of a topology.")
@click.option("--to-earliest", is_flag=True, help="Start at the log start offset.")
@click.option("--to-latest", is_flag=True, help="Start at the latest offset (an empty run that moves the group).")
@click.option("--to-offset", type=int, help="Start every partition at this offset.")
@click.option(
    "--to-current",
    is_flag=True,
    help="Start at the committed offset, the latest where none is committed (kafka-streams-groups.sh --to-current).",
)
@click.option("--to-datetime", help="Start at the first record at or after this instant (yyyy-MM-ddTHH:mm:ss.SSS).")
@click.option("--by-duration", help="Start this ISO-8601 duration before now (e.g. PT6H).")
@click.option("--shift-by", type=int, help="Start the committed offset plus N (negative moves back).")
@click.option(
    "--from-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="CSV topic,partition,offset."
)
@click.option(
    "--start-partitions",
    "start_partitions",
    multiple=True,
    metavar="TOPIC[:P,P]",
    help="Apply the start option to these input topics or partitions only (kafka-streams-groups.sh --input-topic "
    "TOPIC:0,1; repeatable); the others start from their committed offsets.",
)
@click.option(
    "--all-input-topics",
    is_flag=True,
    help="Apply the start option to the input partitions that have a committed offset only, as "
    "kafka-streams-groups.sh --all-input-topics; the others start as without a start option (auto.offset.reset).",
)
@click.option("--end-offset", type=int, help="End every partition at this offset (default: latest).")
@click.option("--end-datetime", help="End before the first record at or after this instant.")
@click.option("--end-by-duration", help="End this ISO-8601 duration before now.")
@click.option(
    "--on-data-loss",
    type=click.Choice(["fail", "clamp"]),
    default="fail",
    show_default=True,
    help="A start before the log start: fail (name the lost offsets) or clamp to the log start, as the reset tool.",
)
@click.option(
    "--processing-guarantee",
    type=click.Choice(["at_least_once", "exactly_once_v2"]),
    default="at_least_once",
    show_default=True,
    help="The application's processing.guarantee: exactly_once_v2 reads read_committed.",
)
@click.option(
    "--auto-offset-reset",
    type=click.Choice(["earliest", "latest", "none"]),
    default="earliest",
    show_default=True,
    help="The application's auto.offset.reset, for partitions without a committed offset.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    help="The consumer's isolation.level (default: what --processing-guarantee implies; exactly_once_v2 forces "
    "read_committed).",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The application's state.dir for the batch: task checkpoints there decide where restores start.",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan JSON here (also with --dry-run)."
)
@click.option(
    "--create-internal-topics",
    is_flag=True,
    help="A new application's first run: create its missing repartition and changelog topics as Kafka Streams "
    "would (names, partition counts, configs); with --dry-run only show them.",
)
@click.option(
    "--store-kind",
    "store_kinds",
    multiple=True,
    metavar="STORE=KIND",
    help="With --create-internal-topics: a store's kind, which decides its changelog's configs: key_value, "
    "window:<retention ms>, session:<retention ms>, versioned:<history retention ms> or unlogged (repeatable).",
)
@streams_config_option
@click.option(
    "--streams-setting",
    "streams_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="One of the application's settings, over --streams-config's (repeatable): a Python topology's function "
    "gets them; --create-internal-topics takes replication.factor, windowstore.changelog.additional.retention.ms "
    "and topic.<config> from them; with group.protocol=streams the plan asks the broker for that protocol.",
)
@click.option(
    "--topology-optimization",
    help="The application's topology.optimization (all, or a list with reuse.ktable.source.topics): its tables "
    "restore from their source topics, which describe() does not show (default: none).",
)
@wait_for_empty_group_option
@click.option("--dry-run", is_flag=True, help="Print the plan (a table, or JSON with --output json) and stop.")
@click.pass_context
@catch_errors
def plan_command(
    ctx: click.Context,
    bootstrap: str,
    client_settings: tuple[str, ...],
    application_id: str,
    topology_reference: str | None,
    describe_file: Path | None,
    input_topics: tuple[str, ...],
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_current: bool,
    to_datetime: str | None,
    by_duration: str | None,
    shift_by: int | None,
    from_file: Path | None,
    start_partitions: tuple[str, ...],
    all_input_topics: bool,
    end_offset: int | None,
    end_datetime: str | None,
    end_by_duration: str | None,
    on_data_loss: str,
    processing_guarantee: str,
    isolation_level: str | None,
    auto_offset_reset: str,
    state_dir: Path | None,
    out: Path | None,
    dry_run: bool,
    create_internal_topics: bool,
    store_kinds: tuple[str, ...],
    streams_config: Path | None,
    streams_settings: tuple[str, ...],
    topology_optimization: str | None,
    wait_for_empty_group: str | None,
) -> None:
    """Resolve the offset ranges and tasks of a run (the reset tool's scenarios) into a RunPlan."""
    from streamproc.kafka.planner import plan_run
    from streamproc.plan import cluster_snapshot as cs
    from streamproc.plan.internal_topics import InternalTopicSettings, StoreKind, internal_topic_settings

    starts: list[cs.StartSpec] = []
    if to_earliest:
        starts.append(cs.EarliestStart())
    if to_latest:
        starts.append(cs.LatestStart())
    if to_offset is not None:
        starts.append(cs.ToOffsetStart(offset=to_offset))
    if to_current:
        starts.append(cs.ToCurrentStart())
    if to_datetime is not None:
        starts.append(cs.ToDatetimeStart(to_datetime))
    if by_duration is not None:
        starts.append(cs.ByDurationStart(by_duration))
    if shift_by is not None:
        starts.append(cs.ShiftByStart(shift_by))
    if from_file is not None:
        starts.append(cs.FromFileStart(read_text(from_file, "--from-file"), file_name=str(from_file)))
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
        start_partitions=_start_partitions(start_partitions, all_input_topics),
    )
    settings = application_settings(streams_config, streams_settings)
    topology, kinds, changelogs, declared = _topology(
        topology_reference, describe_file, settings, application_id, first_run=create_internal_topics
    )
    first_run = None
    if create_internal_topics:
        for store, value in pairs(store_kinds, "--store-kind", "STORE=KIND").items():
            kinds[store] = StoreKind.parse(value, store)
        first_run = InternalTopicSettings.from_streams_settings(internal_topic_settings(settings), kinds)
    elif store_kinds:
        raise ConfigError("--store-kind only matters with --create-internal-topics")
    run_plan = plan_run(
        client_config(bootstrap, client_settings),
        application_id,
        request,
        topology=topology,
        source_topics=input_topics,
        processing_guarantee=processing_guarantee,
        auto_offset_reset=auto_offset_reset,
        state_dir=state_dir,
        isolation_level=isolation_level,
        create_internal_topics=first_run,
        dry_run=dry_run,
        topology_optimization=topology_optimization,
        source_topic_changelogs=changelogs,
        wait_for_empty_group_ms=wait_for_empty_group_ms(wait_for_empty_group),
        group_protocol=settings.get("group.protocol"),
        declared=declared,
    )
    show_plan(ctx, run_plan, out, dry_run=dry_run)


def _start_partitions(texts: tuple[str, ...], all_input_topics: bool) -> cs.PartitionSelection | None:
    """``--start-partitions`` or ``--all-input-topics`` (the tool takes one scope too), or neither: every partition."""
    from streamproc.plan import cluster_snapshot as cs
    from streamproc.plan.reset_formats import parse_partition_selection

    if texts and all_input_topics:
        raise ConfigError("give --start-partitions or --all-input-topics, not both (kafka-streams-groups.sh's scopes)")
    if all_input_topics:
        return cs.PartitionSelection(committed=True)
    return parse_partition_selection(texts) if texts else None


def _topology(
    reference: str | None, describe_file: Path | None, settings: Mapping[str, str], application_id: str, *,
    first_run: bool,
) -> tuple[str | None, dict[str, StoreKind], Mapping[str, str] | None, DeclaredTopology | None]:  # fmt: skip
    """The ``describe()`` text to plan from, the store kinds known without ``--store-kind``, the stores that
    restore from their source topics and what a streams group's topology is compared with beyond the text (logged
    stores, copartition groups): a Python topology gives all four (built and checked first), a describe() file the
    text only."""
    if reference is None:
        if describe_file is not None:
            raise ConfigError("--describe checks a Python --topology MODULE:FUNCTION against the Java app's text")
        return None, {}, None, None
    if Path(reference).is_file():
        if describe_file is not None:
            raise ConfigError(f"--describe: --topology {reference} is describe() text already; give MODULE:FUNCTION")
        return read_text(Path(reference), "--topology"), {}, None, None
    if ":" not in reference:
        raise ConfigError(f"--topology {reference}: no such file, and not MODULE:FUNCTION (e.g. myapp.topology:build)")
    from streamproc.cli.topology import checked_topology
    from streamproc.plan.internal_topics import store_kinds_of
    from streamproc.plan.streams_group_topology import declared_topology

    describe = read_text(describe_file, "--describe") if describe_file is not None else None
    topology = checked_topology(
        reference, settings, application_id=application_id, describe=describe, first_run=first_run
    )
    declared = declared_topology(topology, application_id)
    return str(topology.describe()), store_kinds_of(topology), topology.source_topic_changelogs, declared


def show_plan(
    ctx: click.Context, run_plan: RunPlan, out: Path | None, *, dry_run: bool, parallelism: Sequence[str] = ()
) -> None:
    """Write the plan to ``out`` (when given) and print it, or with an ``out`` and no ``--dry-run`` where it went;
    ``parallelism``: how the process step will run each sub-topology's tasks (``streamproc run``), after the plan."""
    if out is not None:
        run_plan.write(out)
    report = run_plan.report() + ("\n\n" + "\n".join(parallelism) if parallelism else "")
    if dry_run or out is None:
        written = f"\n\nPlan written to {out}" if out is not None else ""
        emit(ctx, run_plan.to_dict(), report + written)
    else:
        emit(ctx, {"plan": str(out)}, f"Plan written to {out}\n\n{report}")
