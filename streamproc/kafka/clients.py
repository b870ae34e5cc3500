"""The one place where streamproc builds its confluent-kafka clients (Admin, Consumer, Producer).

Three things every client needs and none got when each call site built its own:

- **Logging.** librdkafka prints its log lines straight to stderr unless a ``logger`` is configured; a broker that
  is down then costs thousands of ``FAIL … Connection refused`` lines. Every client here logs through the Python
  logger ``streamproc.librdkafka`` (the CLI shows it only with ``-v``), and Airflow or Spark decide where it goes.
- **Failing in seconds.** librdkafka retries a refused or silent bootstrap address until the call's own timeout
  (30 s and more) and then says only "Broker transport failure". :func:`admin` and :func:`consumer` first wait for
  the cluster's metadata for at most :data:`CONNECT_TIMEOUT_S` and otherwise raise a
  :class:`~streamproc.errors.KafkaUnavailableError` naming the bootstrap address and librdkafka's last connection
  error (the refused address, the unresolvable name, the TLS failure).
- **One Admin client per cluster.** An Admin client answers through librdkafka's background queue; destroying one
  right after its last answer races the queue's thread, which then reports its own wake-up as "BGQUEUE Purging 1
  unserved events". A new Admin client per helper call (five per plan) hit that race on most runs; one shared
  client per cluster and process (as Kafka's own tools keep one ``Admin``) is destroyed once, at exit, when its
  queue is idle, and connects once instead of five times. (A cluster that goes away after the first connection is
  then met by each operation's own timeout, as before.)

A client without ``bootstrap.servers`` is refused here (librdkafka would only warn ``CONFWARN No bootstrap.servers``
and never connect).
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from streamproc.errors import ConfigError, KafkaUnavailableError

#: Where librdkafka's own log lines go (``logger`` client setting); the CLI shows them with ``-v``.
LIBRDKAFKA_LOG = logging.getLogger("streamproc.librdkafka")

#: A librdkafka line that repeats (a refused connection is retried about 20 times a second) is logged once per
#: this many seconds.
REPEAT_QUIET_S = 10.0

_MILLIS = re.compile(r"\d+ ?ms\b")


class RepeatedLineFilter(logging.Filter):
    """Drops a librdkafka line that repeats one logged less than ``REPEAT_QUIET_S`` ago (timings aside).

    A broker that is down makes librdkafka log the same ``FAIL … Connection refused`` line on every retry; Airflow's
    task log should show it once, with how often it was repeated when it shows again.
    """

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = _MILLIS.sub("", record.getMessage())
        now = time.monotonic()
        with self._lock:
            logged_at, dropped = self._last.get(key, (float("-inf"), 0))
            if now - logged_at < REPEAT_QUIET_S:
                self._last[key] = (logged_at, dropped + 1)
                return False
            self._last[key] = (now, 0)
            if len(self._last) > 1_000:  # bounded: only recent lines matter
                self._last = {k: v for k, v in self._last.items() if now - v[0] < REPEAT_QUIET_S}
        if dropped:
            record.msg = f"{record.getMessage()} (and {dropped} more like it)"
            record.args = ()
        return True


LIBRDKAFKA_LOG.addFilter(RepeatedLineFilter())

#: How long a new Admin client or consumer waits for the cluster's first metadata before giving up.
CONNECT_TIMEOUT_S = 10.0

#: Settings streamproc gives every client unless the caller sets them: a silent address (a firewall that drops
#: packets) times out per attempt in 5 s rather than 30, and reconnects back off to at most 2 s so that a broker
#: that comes back is found quickly.
CONNECTION_DEFAULTS: Mapping[str, object] = {
    "socket.connection.setup.timeout.ms": 5_000,
    "reconnect.backoff.max.ms": 2_000,
}

# librdkafka's error names that mean "the cluster cannot be reached", not "the request was wrong".
_CONNECTION_ERRORS = frozenset(
    {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_TIMED_OUT", "_SSL", "_AUTHENTICATION", "_MSG_TIMED_OUT"}
)
# Errors whose text names the cause (the address and what the socket said); _ALL_BROKERS_DOWN only counts them.
_CAUSE_ERRORS = frozenset({"_TRANSPORT", "_RESOLVE", "_SSL", "_AUTHENTICATION"})


class ConnectionErrors:
    """The last connection error librdkafka reported for one client (its ``error_cb``), to name the cause."""

    def __init__(self) -> None:
        self.last_cause: str | None = None
        self.last_error: str | None = None

    def __call__(self, error: Any) -> None:
        name = error.name()
        text = error.str()
        self.last_error = text
        if name in _CAUSE_ERRORS:
            self.last_cause = text
        LIBRDKAFKA_LOG.debug("client error %s: %s", name, text)

    def cause(self) -> str:
        return self.last_cause or self.last_error or f"no answer within {CONNECT_TIMEOUT_S:.0f} s"


def bootstrap_of(client_config: Mapping[str, object]) -> str:
    """The configured ``bootstrap.servers``; a missing or empty one is a ``ConfigError`` (never a CONFWARN)."""
    bootstrap = client_config.get("bootstrap.servers")
    if not isinstance(bootstrap, str) or not bootstrap.strip():
        raise ConfigError("no Kafka bootstrap servers given: pass --bootstrap host:port (or set STREAMPROC_BOOTSTRAP)")
    return bootstrap


def client_config(bootstrap: str, settings: Mapping[str, object] | None = None) -> dict[str, object]:
    """``bootstrap.servers`` plus librdkafka settings (security, timeouts) as the caller names them."""
    config: dict[str, object] = {"bootstrap.servers": bootstrap, **(settings or {})}
    bootstrap_of(config)
    return config


def _full_config(client_config: Mapping[str, object], errors: ConnectionErrors) -> dict[str, object]:
    bootstrap_of(client_config)
    return {**CONNECTION_DEFAULTS, **client_config, "logger": LIBRDKAFKA_LOG, "error_cb": errors}


def unavailable(client_config: Mapping[str, object], cause: str) -> KafkaUnavailableError:
    """The one-line error for a cluster that cannot be reached: the bootstrap address, the cause, what to check."""
    return KafkaUnavailableError(bootstrap_of(client_config), cause)


def no_answer(what: str, timeout_s: float) -> str:
    """The one wording of a cluster request that got no answer in time: a bare ``TimeoutError`` from an Admin
    future has no text of its own, and the CLI would print only its class name."""
    return (
        f"{what}: the Kafka cluster did not answer in {timeout_s:.0f} s (a broker down or restarting?); run the "
        "command again once it answers"
    )


def error_text(exc: BaseException) -> str:
    """librdkafka's own text of a ``KafkaException`` (never its ``KafkaError{code=…,val=-185,…}`` repr, whose code is
    an internal number), saying so when the error means the cluster could not be reached or did not answer."""
    error: Any = exc.args[0] if exc.args else None
    if not hasattr(error, "str"):
        return str(exc) or type(exc).__name__
    if error.name() in _CONNECTION_ERRORS:
        return f"{error.str()} (the Kafka cluster did not answer: a broker down or restarting?)"
    return str(error.str())


def translate(exc: BaseException, client_config: Mapping[str, object]) -> BaseException:
    """A confluent-kafka exception as streamproc's error when it means "unreachable"; anything else unchanged."""
    error: Any = exc.args[0] if exc.args else None
    if hasattr(error, "name") and error.name() in _CONNECTION_ERRORS:
        return unavailable(client_config, error.str())
    return exc


def _await_cluster(
    client: Any, client_config: Mapping[str, object], errors: ConnectionErrors, topic: str | None = None
) -> None:
    """Return once the cluster answered a metadata request; after ``CONNECT_TIMEOUT_S`` raise with the cause.

    With ``topic`` the request asks for that topic only (a consumer's probe need not list a large cluster's every
    topic). Polling serves the client's ``error_cb`` and log queue, so the cause of a failure is known when it is
    raised.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        remaining = deadline - time.monotonic()
        try:
            metadata = client.list_topics(topic, timeout=max(min(remaining, 1.0), 0.1))
            if metadata.brokers:
                return
        except KafkaException as exc:
            errors.last_error = errors.last_error or exc.args[0].str()
        client.poll(0)
        if time.monotonic() >= deadline:
            raise unavailable(client_config, errors.cause())


_admins: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
_admins_lock = threading.Lock()


def _key(client_config: Mapping[str, object]) -> tuple[int, tuple[tuple[str, str], ...]]:
    return os.getpid(), tuple(sorted((k, repr(v)) for k, v in client_config.items()))


def admin(client_config: Mapping[str, object]) -> Any:
    """The process's Admin client for this cluster and settings, connected (or a ``KafkaUnavailableError``)."""
    from confluent_kafka.admin import AdminClient

    key = _key(client_config)
    with _admins_lock:
        client = _admins.get(key)
        if client is None:
            errors = ConnectionErrors()
            client = AdminClient(_full_config(client_config, errors))
            _await_cluster(client, client_config, errors)  # a client that never connected is not kept
            _admins[key] = client
    client.poll(0)  # hands queued log lines to the logger: nothing else polls a shared Admin client
    return client


def consumer(client_config: Mapping[str, object], *, topic: str | None = None, **settings: object) -> Any:
    """A new Consumer with ``settings`` over the caller's, connected (or a ``KafkaUnavailableError``).

    ``topic`` is the one the consumer will read: its metadata is the connection probe. The caller closes the
    consumer. Consumers are not shared: each reads its own assignment.
    """
    from confluent_kafka import Consumer

    errors = ConnectionErrors()
    client = Consumer({**_full_config(client_config, errors), **settings})
    try:
        _await_cluster(client, client_config, errors, topic)
    except BaseException:
        client.close()
        raise
    return client


def producer(client_config: Mapping[str, object], **settings: object) -> Any:
    """A new Producer with ``settings`` over the caller's; its delivery reports name unreachable brokers."""
    from confluent_kafka import Producer

    return Producer({**_full_config(client_config, ConnectionErrors()), **settings})


#: Admin clients replaced by ``renew_admin``: kept until exit, so that none is destroyed while its queue is busy.
_retired: list[Any] = []


def renew_admin(client_config: Mapping[str, object]) -> None:
    """Make the next :func:`admin` call connect a new client for this cluster. After a broker restart the shared
    client can keep partition leader epochs from before it (ListOffsets then answers FENCED_LEADER_EPOCH on every
    retry, seen after a broker SIGKILLed mid hand-off); a new client reads the metadata afresh."""
    with _admins_lock:
        client = _admins.pop(_key(client_config), None)
        if client is not None:
            _retired.append(client)


@atexit.register
def _close_admins() -> None:
    """Destroy the shared Admin clients before the interpreter tears down the threads that serve them."""
    with _admins_lock:
        _admins.clear()
        _retired.clear()
