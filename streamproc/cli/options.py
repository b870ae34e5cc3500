"""The options several commands share, and the values they turn into: the cluster (``--bootstrap``, ``-X``), the
staging store's S3 settings, the Kafka Streams version that will open the state, and ``KEY=VALUE`` lists."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from streamproc.errors import ConfigError

P = ParamSpec("P")
R = TypeVar("R")

bootstrap_option = click.option(
    "--bootstrap",
    envvar="STREAMPROC_BOOTSTRAP",
    required=True,
    metavar="HOST:PORT[,…]",
    help="Kafka bootstrap servers (env STREAMPROC_BOOTSTRAP).",
)
client_setting_option = click.option(
    "-X",
    "client_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A librdkafka client setting (security.protocol=SSL, sasl.mechanism=…); repeatable.",
)
streams_config_option = click.option(
    "--streams-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The application's settings as a Java .properties file (what the Java app builds its topology and serdes "
    "with: schema.registry.url, basic.auth.user.info, ...): a topology factory with a parameter gets them.",
)
streams_setting_option = click.option(
    "--streams-setting",
    "streams_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="One of the application's settings, over --streams-config's (repeatable).",
)
kafka_streams_version_option = click.option(
    "--kafka-streams-version",
    type=click.Choice(["4.2", "4.3"]),
    default="4.2",
    show_default=True,
    help="The Kafka Streams version that will open the state: with 4.3 under exactly_once_v2 a task whose store "
    "has an empty changelog gets no state directory (4.3 would wipe it).",
)


split_option = click.option(
    "--split",
    default="auto",
    show_default=True,
    metavar="auto|off|N",
    help="Process a task as key shards in parallel, merged back into the task's exact results (issue #29): N shards "
    "per task, 'off' one each, 'auto' as many as pay (time- and session-windowed aggregates processed per record: "
    "docs/split.md). Sub-topologies that cannot be split (joins of streams, suppress, Processor API code...) run "
    "whole; the log says why.",
)


record_cache_option = click.option(
    "--record-cache",
    type=click.Choice(["off", "flush-at-end"]),
    default="off",
    show_default=True,
    help="Kafka Streams' record cache of the DSL's stores: 'off' sends every update (the app with "
    "statestore.cache.max.bytes=0); 'flush-at-end' sends what a cache large enough for the window flushed once, at "
    "its end, sends: each key's last update, in the order of those last updates (count, aggregate and reduce of a "
    "grouped stream, windowed by TimeWindows too; other cached stores are refused). Tasks then run whole.",
)


def client_config(bootstrap: str, settings: tuple[str, ...]) -> dict[str, object]:
    """``bootstrap.servers`` plus ``-X key=value`` client settings (security, timeouts), as librdkafka names them."""
    from streamproc.kafka import clients

    parsed: dict[str, object] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-X takes key=value (a librdkafka setting), not '{item}'")
        parsed[key.strip()] = value.strip()
    return clients.client_config(bootstrap, parsed)


def read_text(path: Path, option: str) -> str:
    """An input file's text; one that is not UTF-8 is named with the option that gave it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{option} {path}: not UTF-8 text (byte {exc.start}); give a text file") from exc
    except OSError as exc:  # an error while reading (EIO) carries no file name; the one-line error needs it
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def pairs(items: tuple[str, ...], option: str, shape: str) -> dict[str, str]:
    """``KEY=VALUE`` option values as a dict; a malformed one is named with its option."""
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{option} takes {shape}, not '{item}'")
        parsed[key.strip()] = value.strip()
    return parsed


def s3_options(func: Callable[P, R]) -> Callable[P, R]:
    """``--s3-connect-timeout``, ``--s3-read-timeout``, ``--s3-max-attempts`` (unset: ``STREAMPROC_S3_*``)."""
    for name, kind, what in (
        ("max-attempts", int, "Attempts per S3 call, the first included"),
        ("read-timeout", float, "Seconds an S3 call may wait for an answer"),
        ("connect-timeout", float, "Seconds to connect to the S3 endpoint"),
    ):
        env = "STREAMPROC_S3_" + name.upper().replace("-", "_")
        func = click.option(f"--s3-{name}", type=kind, help=f"{what} (default: env {env}, else built in).")(func)
    return func


def store_options(s3_connect_timeout: float | None, s3_read_timeout: float | None, s3_max_attempts: int | None,
                  store_uri: str) -> dict[str, Any]:  # fmt: skip
    """The ``load_store`` options the S3 flags give (none for a local store)."""
    if not store_uri.lower().startswith(("s3://", "s3a://")):
        return {}
    options = {"connect_timeout": s3_connect_timeout, "read_timeout": s3_read_timeout, "max_attempts": s3_max_attempts}
    return {key: value for key, value in options.items() if value is not None}


#: The application's settings as a JSON object, under --streams-config's and --streams-setting's: how a scheduler
#: (the Airflow DAGs' process step) hands them to ``spark-submit`` without putting them in its arguments.
STREAMS_SETTINGS_ENV = "STREAMPROC_STREAMS_SETTINGS"


def application_settings(config_file: Path | None, items: tuple[str, ...]) -> dict[str, str]:
    """The application's settings: ``STREAMPROC_STREAMS_SETTINGS``'s, then ``--streams-config``'s properties over
    them, then each ``--streams-setting``."""
    import javaproperties

    settings: dict[str, str] = {}
    from_env = os.environ.get(STREAMS_SETTINGS_ENV, "").strip()
    if from_env:
        try:
            parsed = json.loads(from_env)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise ConfigError(f"{STREAMS_SETTINGS_ENV} must hold a JSON object of settings; unset it or fix it")
        settings.update({str(key): str(value) for key, value in parsed.items()})
    if config_file is not None:
        try:
            settings.update(javaproperties.loads(read_text(config_file, "--streams-config")))
        except ValueError as exc:  # a malformed escape (javaproperties' InvalidUEscapeError)
            raise ConfigError(f"--streams-config {config_file}: not a Java properties file ({exc})") from exc
    settings.update(pairs(items, "--streams-setting", "KEY=VALUE"))
    return settings
