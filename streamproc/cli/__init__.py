"""The ``streamproc`` command line: one click group over the step packages, text or JSON output, one-line errors.

It behaves like its peers (PyIceberg's ``pyiceberg``, Kafka's ``kafka-*`` tools): ``--version``, help on every
option, ``--output json`` for every command, and every error a user can cause as one line and exit code 1
(``output``). Each command is a module of its own that parses its options (the shared ones in ``options``), calls
its step package's Python API and prints the result; no step package imports this one. ``streamproc run``
composes the same functions, not the commands.
"""

from __future__ import annotations

import click

from streamproc.cli import fetch, handoff, ledger, plan, process, run, topology, verify
from streamproc.cli.output import configure_logging, version_text


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Print the versions of streamproc, the Kafka Streams it reproduces, confluent-kafka and librdkafka; exit.",
)
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people; json for scripts (results and errors as JSON objects on stdout).",
)
@click.option(
    "-v", "--verbose", count=True, help="Debug logs and librdkafka's own log on stderr; -vv adds other libraries'."
)
def main(output: str, verbose: int) -> None:
    """streamproc: Kafka Streams semantics as bounded batch jobs."""
    configure_logging(verbose)


for _command in (
    plan.plan_command,
    fetch.fetch_command,
    verify.verify_command,
    process.process_command,
    handoff.handoff_command,
    run.run_command,
    ledger.ledger_group,
    topology.topology_group,
):
    main.add_command(_command)

__all__ = ["main"]
