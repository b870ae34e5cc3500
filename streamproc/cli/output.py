"""What every command prints: its result as text or JSON, its errors as one line, and the logs it lets through.

Every error a user can cause (a ``StreamprocError``, a Kafka cluster that cannot be reached, a file that cannot be
read or written) is one line and exit code 1: ``error: …`` on stderr, or with ``--output json`` a JSON object
``{"error": <class>, "message": …}`` on stdout, where the command's other JSON goes (as PyIceberg prints its
``{"type", "message"}``). Usage errors stay click's (exit code 2). librdkafka's own log goes through the
``streamproc.librdkafka`` logger and shows only with ``-v``.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from streamproc.errors import StreamprocError

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)


def json_output(ctx: click.Context | None = None) -> bool:
    """``--output json`` was chosen (on the root command of ``ctx``, else of the current context)."""
    ctx = ctx or click.get_current_context(silent=True)
    return ctx is not None and ctx.find_root().params.get("output") == "json"


#: Where ``fail`` leaves its message in the context (shared by a command and those it calls): ``streamproc run``
#: records it in the ledger as why the run failed, since the failing step already turned it into an exit.
FAILURE_KEY = "streamproc.failure"


def fail(error: str, message: str) -> NoReturn:
    """Report one error the way the chosen output asks for, and exit 1."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[FAILURE_KEY] = message
    if json_output(ctx):
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

    ``-v`` logs the traceback as well, for a bug report. A ``bootstrap`` keyword argument names the cluster in
    the message of a Kafka error that is about reaching it.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from confluent_kafka import KafkaException

        from streamproc.kafka import clients

        try:
            return func(*args, **kwargs)
        except StreamprocError as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            fail(type(exc).__name__, str(exc))
        except KafkaException as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            bootstrap = kwargs.get("bootstrap")
            error = clients.translate(exc, {"bootstrap.servers": bootstrap}) if bootstrap else exc
            if error is exc:  # a request the cluster refused: librdkafka's text says which and why
                kafka_error: Any = exc.args[0] if exc.args else None
                fail(type(exc).__name__, f"Kafka: {kafka_error.str() if hasattr(kafka_error, 'str') else exc}")
            fail(type(error).__name__, str(error))
        except TimeoutError as exc:  # an OSError with no text when a client library's future times out
            log.debug("%s failed", func.__name__, exc_info=True)
            fail(type(exc).__name__, str(exc) or _NO_ANSWER)
        except OSError as exc:
            log.debug("%s failed", func.__name__, exc_info=True)
            fail(type(exc).__name__, _os_error_message(exc))

    return wrapper


def emit(ctx: click.Context, payload: dict[str, Any], text: str) -> None:
    """Print ``payload`` as JSON with ``--output json``, else the human-readable ``text``."""
    if json_output(ctx):
        click.echo(json.dumps(payload, indent=2, sort_keys=True))
    else:
        click.echo(text)


def version_text() -> str:
    """``streamproc 0.1.0 for Kafka Streams 4.2.2 (confluent-kafka …, librdkafka …)``: the release whose semantics
    this streamproc reproduces, and the Kafka client it talks to the cluster with."""
    import confluent_kafka

    from streamproc.target import KAFKA_STREAMS_VERSION

    return (
        f"streamproc {metadata.version('streamproc')} for Kafka Streams {KAFKA_STREAMS_VERSION} "
        f"(confluent-kafka {metadata.version('confluent-kafka')}, librdkafka {confluent_kafka.libversion()[0]})"
    )


def configure_logging(verbose: int) -> None:
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
