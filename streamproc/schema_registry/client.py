"""One ``SchemaRegistryClient`` per registry and process, and the registry's failures as streamproc's errors.

confluent-kafka's client caches what the registry answered (schemas by id, the id of a schema under a subject), so
every serde of a process that talks to the same registry shares one client: a schema costs one registry call per
process (a Spark Python worker serves every task of the run it is given), never one per record.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from streamproc import extras
from streamproc.errors import SchemaRegistryError, SchemaRegistryUnavailable, StreamprocError

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient

from streamproc.schema_registry.config import SchemaRegistryConfig

#: confluent-kafka's error code for an id the registry does not know (``40403 Schema not found``).
SCHEMA_NOT_FOUND = 40403

_clients: dict[tuple[Any, ...], SchemaRegistryClient] = {}
_lock = threading.Lock()
#: The registries serdes were configured for while :func:`collected` watched (innermost last).
_collectors: list[set[SchemaRegistryConfig]] = []


def configured(config: SchemaRegistryConfig) -> None:
    """A serde was configured for ``config``'s registry."""
    for collector in _collectors:
        collector.add(config)


@contextmanager
def collected() -> Iterator[set[SchemaRegistryConfig]]:
    """The registries serdes are configured for inside the block (a topology being built)."""
    found: set[SchemaRegistryConfig] = set()
    _collectors.append(found)
    try:
        yield found
    finally:
        _collectors.remove(found)


def client_for(config: SchemaRegistryConfig) -> SchemaRegistryClient:
    """The process's client for ``config``'s registry (created at the first call)."""
    key = config.client_key()
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                extras.require(extras.SCHEMA_REGISTRY, "a Schema Registry serde")
                from confluent_kafka.schema_registry import SchemaRegistryClient

                client = SchemaRegistryClient(config.client_config())
                _clients[key] = client
    return client


def _transport_error() -> type[Exception]:
    """httpx's network failure, from the httpx confluent-kafka uses (httpx2, else httpx)."""
    import importlib

    try:
        module = importlib.import_module("httpx2")
    except ImportError:
        module = importlib.import_module("httpx")
    error: type[Exception] = module.TransportError
    return error


def registry_failure(exc: BaseException, config: SchemaRegistryConfig, doing: str) -> StreamprocError | None:
    """``exc`` as streamproc's error when it is the registry's (no answer, or a refusal not about one record), else
    ``None``. ``doing`` says what was asked (``registering the value schema of topic 'orders'``)."""
    from confluent_kafka.schema_registry import SchemaRegistryError as ClientError

    where = f"the Schema Registry at {config.location}"
    if isinstance(exc, _transport_error()):
        cause = str(exc) or type(exc).__name__
        return SchemaRegistryUnavailable(f"{where} did not answer while {doing}: {cause}; check schema.registry.url")
    if isinstance(exc, ClientError):
        status, message = exc.http_status_code, " ".join(str(exc.error_message).split())
        if status in (401, 403):
            return SchemaRegistryError(
                f"{where} refused the credentials while {doing} (HTTP {status}): {message}; check "
                "basic.auth.credentials.source and basic.auth.user.info"
            )
        if status >= 500:
            return SchemaRegistryUnavailable(f"{where} failed while {doing} (HTTP {status}): {message}")
        if status == 409:
            return SchemaRegistryError(f"{where} refused the schema as incompatible while {doing}: {message}")
        return SchemaRegistryError(f"{where} answered HTTP {status} while {doing}: {message}")
    return None


def check_reachable(config: SchemaRegistryConfig) -> None:
    """Ask the registry for its subjects once: a registry that is down, refuses the credentials or is not a Schema
    Registry is one error now, before any data moves."""
    try:
        client_for(config).get_subjects()
    except StreamprocError:
        raise
    except Exception as exc:
        failure = registry_failure(exc, config, "listing its subjects")
        if failure is None:
            raise SchemaRegistryError(
                f"the Schema Registry at {config.location} gave an answer streamproc cannot read while listing its "
                f"subjects ({type(exc).__name__}: {exc}); is schema.registry.url a Schema Registry?"
            ) from exc
        raise failure from exc


def check_registries(configs: Iterable[SchemaRegistryConfig]) -> None:
    """Every registry of ``configs`` answers (the serdes a topology was built with, :func:`collected`): the driver
    asks before any data moves, so that a registry that is down or refuses the credentials is one line, not a
    failure in every task."""
    seen: set[tuple[Any, ...]] = set()
    for config in sorted(configs, key=lambda c: c.location):
        if config.client_key() not in seen:
            seen.add(config.client_key())
            check_reachable(config)
