"""``streamproc topology``: commands about a program's topology (``check``: compare with the live app's describe())."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from streamproc.cli.options import application_settings, streams_config_option, streams_setting_option
from streamproc.cli.output import catch_errors, emit


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
    """Print "identical" (exit 0) or the first line where the two describe() texts differ (exit 1)."""
    from streamproc.engine.describe_diff import first_difference
    from streamproc.engine.topology_loader import load_topology

    expected = describe_file.read_text(encoding="utf-8")
    actual = str(load_topology(reference, application_settings(streams_config, streams_settings))[0].describe())
    difference = first_difference(expected, actual)
    if difference is None:
        emit(ctx, {"identical": True}, "identical")
        return
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
