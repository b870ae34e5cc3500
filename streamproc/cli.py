"""The ``streamproc`` command line: one click group, text or JSON output, one-line errors.

It behaves like its peers (PyIceberg's ``pyiceberg``, Kafka's ``kafka-*`` tools): ``--version``, help on every
option, ``--output json`` for every command, and every error a user can cause (a ``StreamprocError``, a Kafka
cluster that cannot be reached, a file that cannot be read or written) as one line and exit code 1: ``error: …`` on
stderr, or with ``--output json`` a JSON object ``{"error": <class>, "message": …}`` on stdout, where the command's
other JSON goes (as PyIceberg prints its ``{"type", "message"}``). Usage errors stay click's (exit code 2).
librdkafka's own log goes through the ``streamproc.librdkafka`` logger and shows only with ``-v``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import click

from streamproc.errors import ConfigError, StreamprocError

if TYPE_CHECKING:
    from streamproc.fetch import RangeFetchResult
    from streamproc.plan.run_plan import RunPlan

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)


def _json_output() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.find_root().params.get("output") == "json"


#: Where ``_fail`` leaves its message in the context (shared by a command and those it invokes): ``streamproc run``
#: records it in the ledger as why the run failed, since the step's own command already turned it into an exit.
FAILURE_KEY = "streamproc.failure"


def _fail(error: str, message: str) -> NoReturn:
    """Report one error the way the chosen output asks for, and exit 1."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[FAILURE_KEY] = message
    if _json_output():
        click.echo(json.dumps({"error": error, "message": message}, sort_keys=True))
    else:
        click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _os_error_message(exc: OSError) -> str:
    """``No such file or directory: '/x/plan.json'``: what the system said and the file it said it about."""
    if exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: '{exc.filename}'"
    return exc.strerror or str(exc) or type(exc).__name__


#: A timeout without text: which service did not answer is in the ``-v`` traceback.
_NO_ANSWER = (
    "no answer in time from the Kafka cluster or the object store (down or restarting?); run the command again once "
    "it answers (-v shows where it waited)"
)


def catch_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the errors a user can cause into one line (or a JSON object) and exit code 1, never a traceback.

    ``-v`` logs the traceback as well, for a bug report.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from confluent_kafka import KafkaException

        from streamproc.kafka import clients

        try:
            return func(*args, **kwargs)
        except StreamprocError as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            _fail(type(exc).__name__, str(exc))
        except KafkaException as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            bootstrap = kwargs.get("bootstrap")
            error = clients.translate(exc, {"bootstrap.servers": bootstrap}) if bootstrap else exc
            if error is exc:  # a request the cluster refused: librdkafka's text says which and why
                kafka_error: Any = exc.args[0] if exc.args else None
                _fail(type(exc).__name__, f"Kafka: {kafka_error.str() if hasattr(kafka_error, 'str') else exc}")
            _fail(type(error).__name__, str(error))
        except TimeoutError as exc:  # an OSError with no text when a client library's future times out
            log.debug("%s failed", func.__name__, exc_info=True)
            _fail(type(exc).__name__, str(exc) or _NO_ANSWER)
        except OSError as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            _fail(type(exc).__name__, _os_error_message(exc))

    return wrapper


def emit(ctx: click.Context, payload: dict[str, Any], text: str) -> None:
    """Print ``payload`` as JSON with ``--output json``, else the human-readable ``text``."""
    if ctx.find_root().params.get("output") == "json":
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
    else:
        click.echo(text)


def _version_text() -> str:
    """``streamproc 0.1.0 for Kafka Streams 4.2.2 (confluent-kafka …, librdkafka …)``: the release whose semantics
    this streamproc reproduces, and the Kafka client it talks to the cluster with."""
    import confluent_kafka

    from streamproc.target import KAFKA_STREAMS_VERSION

    return (
        f"streamproc {metadata.version('streamproc')} for Kafka Streams {KAFKA_STREAMS_VERSION} "
        f"(confluent-kafka {metadata.version('confluent-kafka')}, librdkafka {confluent_kafka.libversion()[0]})"
    )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_text())
        ctx.exit()


def _configure_logging(verbose: int) -> None:
    """WARNING and up by default; ``-v``: streamproc's DEBUG lines and librdkafka's log; ``-vv``: every library's."""
    from streamproc.kafka.clients import LIBRDKAFKA_LOG

    logging.basicConfig(
        level=logging.DEBUG if verbose >= 2 else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("streamproc").setLevel(logging.DEBUG if verbose else logging.WARNING)
    # librdkafka reports every failed connection attempt at ERROR: useful when asked for, noise otherwise, since
    # the error that ends the command already names the address and the cause.
    LIBRDKAFKA_LOG.setLevel(logging.DEBUG if verbose else logging.CRITICAL + 1)


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
    _configure_logging(verbose)


# ----------------------------------------------------------------------------------------------- plan / fetch
def _client_config(bootstrap: str, settings: tuple[str, ...]) -> dict[str, object]:
    """``bootstrap.servers`` plus ``-X key=value`` client settings (security, timeouts), as librdkafka names them."""
    from streamproc.kafka import clients

    parsed: dict[str, object] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-X takes key=value (a librdkafka setting), not '{item}'")
        parsed[key.strip()] = value.strip()
    return clients.client_config(bootstrap, parsed)


def _read_text(path: Path, option: str) -> str:
    """An input file's text; one that is not UTF-8 is named with the option that gave it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{option} {path}: not UTF-8 text (byte {exc.start}); give a text file") from exc
    except OSError as exc:  # an error while reading (EIO) carries no file name; the one-line error needs it
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def _pairs(items: tuple[str, ...], option: str, shape: str) -> dict[str, str]:
    """``KEY=VALUE`` option values as a dict; a malformed one is named with its option."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{option} takes {shape}, not '{item}'")
        pairs[key.strip()] = value.strip()
    return pairs


_bootstrap_option = click.option(
    "--bootstrap",
    envvar="STREAMPROC_BOOTSTRAP",
    required=True,
    metavar="HOST:PORT[,…]",
    help="Kafka bootstrap servers (env STREAMPROC_BOOTSTRAP).",
)
_client_setting_option = click.option(
    "-X",
    "client_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A librdkafka client setting (security.protocol=SSL, sasl.mechanism=…); repeatable.",
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
@click.option(
    "--streams-setting",
    "streams_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="With --create-internal-topics: the application's replication.factor, "
    "windowstore.changelog.additional.retention.ms or topic.<config> setting (repeatable).",
)
@click.option(
    "--topology-optimization",
    help="The application's topology.optimization (all, or a list with reuse.ktable.source.topics): its tables "
    "restore from their source topics, which describe() does not show (default: none).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan (a table, or JSON with --output json) and stop.")
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
    isolation_level: str | None,
    auto_offset_reset: str,
    state_dir: Path | None,
    out: Path | None,
    dry_run: bool,
    create_internal_topics: bool = False,
    store_kinds: tuple[str, ...] = (),
    streams_settings: tuple[str, ...] = (),
    store_kind_values: Mapping[str, Any] | None = None,
    topology_optimization: str | None = None,
    source_topic_changelogs: Mapping[str, str] | None = None,
) -> RunPlan:
    """Resolve the offset ranges and tasks of a run (the reset tool's scenarios) into a RunPlan."""
    from streamproc.kafka.planner import plan_run
    from streamproc.plan import cluster_snapshot as cs
    from streamproc.plan.internal_topics import InternalTopicSettings, StoreKind

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
        starts.append(cs.FromFileStart(_read_text(from_file, "--from-file"), file_name=str(from_file)))
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
    topology = _read_text(topology_file, "--topology") if topology_file else None
    first_run = None
    if create_internal_topics:
        kinds = dict(store_kind_values or {})
        for store, value in _pairs(store_kinds, "--store-kind", "STORE=KIND").items():
            kinds[store] = StoreKind.parse(value, store)
        settings = _pairs(streams_settings, "--streams-setting", "KEY=VALUE")
        first_run = InternalTopicSettings.from_streams_settings(settings, kinds)
    elif store_kinds or streams_settings:
        raise ConfigError("--store-kind and --streams-setting only matter with --create-internal-topics")
    run_plan = plan_run(
        _client_config(bootstrap, client_settings),
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
        source_topic_changelogs=source_topic_changelogs,
        topology_optimization=topology_optimization,
    )
    if out is not None:
        run_plan.write(out)
    if dry_run or out is None:
        written = f"\n\nPlan written to {out}" if out is not None else ""
        emit(ctx, run_plan.to_dict(), run_plan.report() + written)
    else:
        emit(ctx, {"plan": str(out)}, f"Plan written to {out}\n\n{run_plan.report()}")
    return run_plan  # for `streamproc run`, which records it in the ledger


#: Shared by `streamproc handoff` and `streamproc run` (defined here, where both import from, so that importing
#: either module first works).
kafka_streams_version_option = click.option(
    "--kafka-streams-version",
    type=click.Choice(["4.2", "4.3"]),
    default="4.2",
    show_default=True,
    help="The Kafka Streams version that will open the state: with 4.3 under exactly_once_v2 a task whose store "
    "has an empty changelog gets no state directory (4.3 would wipe it).",
)


def _s3_options(func: Callable[P, R]) -> Callable[P, R]:
    """``--s3-connect-timeout``, ``--s3-read-timeout``, ``--s3-max-attempts`` (unset: ``STREAMPROC_S3_*``)."""
    for name, kind, what in (
        ("max-attempts", int, "Attempts per S3 call, the first included"),
        ("read-timeout", float, "Seconds an S3 call may wait for an answer"),
        ("connect-timeout", float, "Seconds to connect to the S3 endpoint"),
    ):
        env = "STREAMPROC_S3_" + name.upper().replace("-", "_")
        func = click.option(f"--s3-{name}", type=kind, help=f"{what} (default: env {env}, else built in).")(func)
    return func


def _store_options(s3_connect_timeout: float | None, s3_read_timeout: float | None, s3_max_attempts: int | None,
                   store_uri: str) -> dict[str, Any]:  # fmt: skip
    """The ``load_store`` options the S3 flags give (none for a local store)."""
    if not store_uri.lower().startswith(("s3://", "s3a://")):
        return {}
    options = {"connect_timeout": s3_connect_timeout, "read_timeout": s3_read_timeout, "max_attempts": s3_max_attempts}
    return {key: value for key, value in options.items() if value is not None}


@main.command("fetch")
@_bootstrap_option
@_client_setting_option
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
@click.option("--parallelism", type=int, default=4, show_default=True, help="Partitions fetched at once per process.")
@click.option(
    "--processes",
    type=int,
    default=0,
    help="Worker processes (0: one per core for fetches of 500 000 records or more, else 1).",
)
@_s3_options
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
) -> list[RangeFetchResult]:
    """Copy every planned range to the staging store as proved segments (idempotent, resumable)."""
    from streamproc.fetch import fetch_ranges, planned_ranges
    from streamproc.kafka import clients
    from streamproc.plan.cluster_snapshot import IsolationLevel
    from streamproc.plan.run_plan import RunPlan
    from streamproc.storage import load_store

    run_plan = RunPlan.read(plan_file)
    ranges = planned_ranges(run_plan)
    store_options = _store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri)
    client_config = _client_config(bootstrap, client_settings)
    clients.admin(client_config)  # an unreachable cluster is one error now, not one per range after their timeouts
    if processes == 0:
        large = sum(r.end - r.start for r in ranges) >= 500_000
        processes = min(os.cpu_count() or 1, len(ranges)) if large else 1
    results = fetch_ranges(
        client_config,
        load_store(store_uri, **store_options),
        ranges,
        isolation=IsolationLevel(run_plan.isolation_level),
        parallelism=parallelism,
        processes=max(processes, 1),
        store_options=store_options,
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
    width = max([40, *(len(str(row["partition"])) for row in rows)])
    text = "\n".join(
        f"{row['partition']:<{width}} [{row['start']}, {row['end']}): {row['records']} records, "
        f"{row['segments_written']} segment(s) written, {row['segments_already_complete']} already staged"
        for row in rows
    )
    emit(ctx, {"ranges": rows}, text or "nothing to fetch: every planned range is empty")
    return results  # for `streamproc run`, which records them in the ledger


@main.command("verify")
@click.option("--store", "store_uri", required=True, help="Staging location to re-check against its manifests.")
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also prove that every range of this plan is staged (without it, an empty store fails).",
)
@_s3_options
@click.pass_context
@catch_errors
def verify_command(
    ctx: click.Context,
    store_uri: str,
    plan_file: Path | None,
    s3_connect_timeout: float | None,
    s3_read_timeout: float | None,
    s3_max_attempts: int | None,
) -> None:
    """Re-check every staged segment against its manifest (and the plan's ranges); exit 1 when anything is wrong."""
    from streamproc.fetch import planned_ranges
    from streamproc.plan.run_plan import RunPlan
    from streamproc.storage import load_store
    from streamproc.storage.verify import verify

    planned = planned_ranges(RunPlan.read(plan_file)) if plan_file is not None else None
    store_options = _store_options(s3_connect_timeout, s3_read_timeout, s3_max_attempts, store_uri)
    report = verify(load_store(store_uri, **store_options), planned=planned)
    problems = [{"object": p.name, "problem": p.message} for p in report.problems]
    text = f"{report.segments_ok} of {report.segments_checked} segment(s) verified"
    if planned is not None:
        text += f"; {report.ranges_covered} of {report.ranges_checked} planned range(s) staged"
    if problems:
        text += "\n" + "\n".join(f"  {p['object']}: {p['problem']}" for p in problems)
    payload: dict[str, Any] = {
        "segments_checked": report.segments_checked,
        "segments_ok": report.segments_ok,
        "problems": problems,
    }
    if planned is not None:
        payload.update(ranges_checked=report.ranges_checked, ranges_covered=report.ranges_covered)
    emit(ctx, payload, text)
    if problems:
        sys.exit(1)


import streamproc.dsl.cli  # noqa: E402, F401  (registers `streamproc topology`)
import streamproc.handoff.cli  # noqa: E402, F401  (registers `streamproc handoff`)
import streamproc.ledger.cli  # noqa: E402, F401  (registers `streamproc ledger`)
import streamproc.run_cli  # noqa: E402, F401  (registers `streamproc run`)
import streamproc.spark.cli  # noqa: E402, F401  (registers `streamproc process`; at the end: it imports `main`)

if __name__ == "__main__":
    main()
