"""``streamproc topology``: commands about a program's topology (``check``: compare with the live app's describe(),
and everything else a port can be checked for before data moves)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from streamproc.cli.options import application_settings, streams_config_option, streams_setting_option
from streamproc.cli.output import catch_errors, emit

if TYPE_CHECKING:
    from streamproc.engine.stream_task import TaskConfig
    from streamproc.engine.topology import Topology

#: The application id ``topology check`` builds the runtime graph with when none is given: it decorates internal
#: topics' names only, which the serde checks do not read.
_ANY_APPLICATION = "application"


def checked_topology(
    reference: str,
    settings: Mapping[str, str],
    *,
    application_id: str,
    describe: str | None = None,
    first_run: bool = False,
) -> Topology:
    """``MODULE:FUNCTION``'s topology, built with the application's ``settings`` and checked before any data moves
    (``plan.preflight``), then every Schema Registry its serdes were configured for must answer: what ``plan``,
    ``run``, ``topology check`` and the DAGs' plan task do first."""
    return checked_application(
        reference, settings, application_id=application_id, describe=describe, first_run=first_run
    )[0]


def checked_application(
    reference: str,
    settings: Mapping[str, str],
    *,
    application_id: str,
    describe: str | None = None,
    first_run: bool = False,
) -> tuple[Topology, TaskConfig]:
    """:func:`checked_topology` with the ``TaskConfig`` the factory gave (the default one when it gave none): what
    the plan's parallelism preview needs to say where ``--split auto`` splits."""
    from streamproc.engine.topology_loader import load_topology
    from streamproc.plan.preflight import preflight
    from streamproc.schema_registry.client import check_registries, collected

    with collected() as registries:
        topology, config = load_topology(reference, settings)
    preflight(topology, application_id=application_id, reference=reference, describe=describe, first_run=first_run)
    check_registries(registries)
    return topology, config


@click.group("topology")
def topology_group() -> None:
    """Check a Python topology against the Kafka Streams application it replays."""


@topology_group.command("check")
@click.option(
    "--describe",
    "describe_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The application's Topology#describe() text (what the live Java app prints).",
)
@click.option("--topology", "reference", required=True, help="MODULE:FUNCTION returning the Python Topology.")
@streams_config_option
@streams_setting_option
@click.pass_context
@catch_errors
def check_command(
    ctx: click.Context,
    describe_file: Path,
    reference: str,
    streams_config: Path | None,
    streams_settings: tuple[str, ...],
) -> None:
    """Print "identical" (exit 0) or the first line where the two describe() texts differ (exit 1); then check that
    every source and sink has its serdes and every Schema Registry its serdes use answers (an error, exit 1)."""
    from streamproc.engine.describe_diff import first_difference
    from streamproc.engine.topology_loader import load_topology
    from streamproc.plan.preflight import check_serdes
    from streamproc.schema_registry.client import check_registries, collected

    expected = describe_file.read_text(encoding="utf-8")
    with collected() as registries:
        topology = load_topology(reference, application_settings(streams_config, streams_settings))[0]
    difference = first_difference(expected, str(topology.describe()))
    if difference is not None:
        emit(
            ctx,
            {
                "identical": False,
                "line": difference.line,
                "expected": difference.expected,
                "actual": difference.actual,
                "same_structure": difference.same_structure,
            },
            str(difference),
        )
        sys.exit(1)
    check_serdes(topology, _ANY_APPLICATION)
    check_registries(registries)
    emit(ctx, {"identical": True}, "identical")
