"""The DSL's configuration values: ``Named``, ``Consumed``, ``Produced``, ``Grouped``, ``Materialized``, ``Joined``,
``StreamJoined``, ``Repartitioned``, ``Branched`` (``org.apache.kafka.streams.kstream``, 4.2).

Each is a frozen dataclass; Java's fluent ``withX`` methods are ``with_x`` returning a copy. A user-given name
replaces a generated one in the topology, so it decides processor, store and internal-topic names exactly as in
Java; :func:`validate_name` applies ``Named#validate`` (legal characters, at most 249 of them) at the call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from streamproc.errors import TopologyError

K = TypeVar("K")
V = TypeVar("V")

#: ``Named.MAX_NAME_LENGTH`` and ``Named#validate``'s legal characters (those of a topic name).
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_name(name: str) -> str:
    """``Named#validate``: the exceptions Java throws for an empty, too long or illegal name."""
    if not name:
        raise TopologyError("Invalid topology: Name is illegal, it can't be empty")
    if name in (".", ".."):
        raise TopologyError('Invalid topology: Name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyError(
            f"Invalid topology: Name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise TopologyError(
            f'Invalid topology: Name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


def _checked(name: str | None) -> str | None:
    return None if name is None else validate_name(name)


@dataclass(frozen=True, slots=True)
class Named:
    """``Named.as(name)``: the processor name of one operation instead of a generated ``KSTREAM-…`` name."""

    name: str | None = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def as_(name: str) -> Named:
        """``Named.as(name)`` (``as`` is a Python keyword)."""
        if name is None:
            raise TopologyError("name can't be null")
        return Named(name)


@dataclass(frozen=True, slots=True)
class Consumed(Generic[K, V]):
    """``Consumed``: serdes, timestamp extractor, offset reset and source-node name of ``stream``/``table``."""

    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: Any = None
    offset_reset: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Consumed[Any, Any]:
        """``Consumed.with(keySerde, valueSerde)``."""
        return Consumed(key_serde, value_serde)

    @staticmethod
    def as_(name: str) -> Consumed[Any, Any]:
        """``Consumed.as(processorName)``."""
        return Consumed(name=name)

    def with_name(self, name: str) -> Consumed[K, V]:
        """``withName``: the source node's name (for a table, its source is ``<name>-source`` and its
        ``KTableSource`` processor ``<name>``)."""
        return replace(self, name=name)

    def with_timestamp_extractor(self, extractor: Any) -> Consumed[K, V]:
        """``withTimestampExtractor``."""
        return replace(self, timestamp_extractor=extractor)

    def with_offset_reset_policy(self, policy: str) -> Consumed[K, V]:
        """``withOffsetResetPolicy`` (``earliest``/``latest``)."""
        return replace(self, offset_reset=policy)


@dataclass(frozen=True, slots=True)
class Produced(Generic[K, V]):
    """``Produced``: serdes, partitioner and sink-node name of ``to``."""

    key_serde: Any = None
    value_serde: Any = None
    partitioner: Any = None
    name: str | None = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, partitioner: Any = None) -> Produced[Any, Any]:
        """``Produced.with(keySerde, valueSerde[, partitioner])``."""
        return Produced(key_serde, value_serde, partitioner)

    @staticmethod
    def as_(name: str) -> Produced[Any, Any]:
        """``Produced.as(processorName)``."""
        return Produced(name=name)

    def with_name(self, name: str) -> Produced[K, V]:
        return replace(self, name=name)

    def with_stream_partitioner(self, partitioner: Any) -> Produced[K, V]:
        """``withStreamPartitioner``."""
        return replace(self, partitioner=partitioner)


@dataclass(frozen=True, slots=True)
class Grouped(Generic[K, V]):
    """``Grouped``: serdes and the name of a grouping's repartition topic (``<name>-repartition``)."""

    key_serde: Any = None
    value_serde: Any = None
    name: str | None = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Grouped[Any, Any]:
        """``Grouped.with(keySerde, valueSerde)``."""
        return Grouped(key_serde, value_serde)

    @staticmethod
    def as_(name: str) -> Grouped[Any, Any]:
        """``Grouped.as(name)``."""
        return Grouped(name=name)

    def with_name(self, name: str) -> Grouped[K, V]:
        return replace(self, name=name)


@dataclass(frozen=True, slots=True)
class Materialized(Generic[K, V]):
    """``Materialized``: a state store's name (else generated), serdes, logging and retention.

    ``store_supplier`` is a ``streamproc.state.store_builders`` supplier (``Materialized.as(supplier)``).
    ``caching_enabled`` is Kafka Streams' default; streamproc sends every update unless the run emulates the
    cache at one flush (``--record-cache flush-at-end``, ``state/record_cache.py``, docs/porting.md).
    """

    store_name: str | None = None
    key_serde: Any = None
    value_serde: Any = None
    logging_enabled: bool = True
    log_config: Mapping[str, str] = field(default_factory=dict)
    retention_ms: int | None = None
    store_supplier: Any = None
    caching_enabled: bool = True

    def __post_init__(self) -> None:
        if self.store_name is not None:
            validate_name(self.store_name)

    @staticmethod
    def as_(store: str | Any) -> Materialized[Any, Any]:
        """``Materialized.as(storeName)`` or ``Materialized.as(storeSupplier)``."""
        if isinstance(store, str):
            return Materialized(store_name=store)
        return Materialized(store_name=getattr(store, "name", None), store_supplier=store)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Materialized[Any, Any]:
        """``Materialized.with(keySerde, valueSerde)``: serdes only, the store name is generated."""
        return Materialized(key_serde=key_serde, value_serde=value_serde)

    def with_key_serde(self, serde: Any) -> Materialized[K, V]:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Materialized[K, V]:
        return replace(self, value_serde=serde)

    def with_logging_disabled(self) -> Materialized[K, V]:
        """``withLoggingDisabled``: no changelog topic."""
        return replace(self, logging_enabled=False, log_config={})

    def with_logging_enabled(self, config: Mapping[str, str]) -> Materialized[K, V]:
        return replace(self, logging_enabled=True, log_config=dict(config))

    def with_caching_disabled(self) -> Materialized[K, V]:
        """``withCachingDisabled``: the store sends every update even when the run emulates the record cache."""
        return replace(self, caching_enabled=False)

    def with_caching_enabled(self) -> Materialized[K, V]:
        """``withCachingEnabled`` (the default)."""
        return replace(self, caching_enabled=True)

    def with_retention(self, retention_ms: int) -> Materialized[K, V]:
        """``withRetention`` of a window or session store."""
        return replace(self, retention_ms=retention_ms)


@dataclass(frozen=True, slots=True)
class Joined(Generic[K, V]):
    """``Joined``: serdes and the name of a stream-table join (processor and repartition topic)."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    name: str | None = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, other_value_serde: Any = None) -> Joined[Any, Any]:
        """``Joined.with(keySerde, valueSerde, otherValueSerde)``."""
        return Joined(key_serde, value_serde, other_value_serde)

    @staticmethod
    def as_(name: str) -> Joined[Any, Any]:
        """``Joined.as(name)``."""
        return Joined(name=name)

    def with_name(self, name: str) -> Joined[K, V]:
        return replace(self, name=name)


@dataclass(frozen=True, slots=True)
class StreamJoined(Generic[K, V]):
    """``StreamJoined``: serdes, the processor-name base (``with_name``) and store-name base (``with_store_name``)
    of a stream-stream join."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    name: str | None = None
    store_name: str | None = None
    logging_enabled: bool = True

    def __post_init__(self) -> None:
        _checked(self.name)
        _checked(self.store_name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, other_value_serde: Any = None) -> StreamJoined[Any, Any]:
        """``StreamJoined.with(keySerde, valueSerde, otherValueSerde)``."""
        return StreamJoined(key_serde, value_serde, other_value_serde)

    @staticmethod
    def as_(store_name: str) -> StreamJoined[Any, Any]:
        """``StreamJoined.as(storeName)``."""
        return StreamJoined(store_name=store_name)

    def with_name(self, name: str) -> StreamJoined[K, V]:
        return replace(self, name=name)

    def with_store_name(self, store_name: str) -> StreamJoined[K, V]:
        return replace(self, store_name=store_name)

    def with_logging_disabled(self) -> StreamJoined[K, V]:
        return replace(self, logging_enabled=False)


@dataclass(frozen=True, slots=True)
class Repartitioned(Generic[K, V]):
    """``Repartitioned``: serdes, partition count, partitioner and the repartition topic's name."""

    key_serde: Any = None
    value_serde: Any = None
    name: str | None = None
    number_of_partitions: int | None = None
    partitioner: Any = None

    def __post_init__(self) -> None:
        _checked(self.name)

    @staticmethod
    def as_(name: str) -> Repartitioned[Any, Any]:
        """``Repartitioned.as(name)``."""
        return Repartitioned(name=name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Repartitioned[Any, Any]:
        return Repartitioned(key_serde, value_serde)

    @staticmethod
    def number_of_partitions_(count: int) -> Repartitioned[Any, Any]:
        """``Repartitioned.numberOfPartitions(n)``."""
        return Repartitioned(number_of_partitions=count)

    def with_name(self, name: str) -> Repartitioned[K, V]:
        return replace(self, name=name)

    def with_number_of_partitions(self, count: int) -> Repartitioned[K, V]:
        return replace(self, number_of_partitions=count)

    def with_stream_partitioner(self, partitioner: Any) -> Repartitioned[K, V]:
        return replace(self, partitioner=partitioner)


@dataclass(frozen=True, slots=True)
class Branched(Generic[K, V]):
    """``Branched``: a branch's name suffix, and a function (its result goes into the map) or a consumer."""

    name: str | None = None
    chain_function: Callable[[Any], Any] | None = None
    chain_consumer: Callable[[Any], None] | None = None

    @staticmethod
    def as_(name: str) -> Branched[Any, Any]:
        """``Branched.as(name)``."""
        return Branched(name=name)

    @staticmethod
    def with_function(function: Callable[[Any], Any], name: str | None = None) -> Branched[Any, Any]:
        """``Branched.withFunction(chain[, name])``."""
        return Branched(name, chain_function=function)

    @staticmethod
    def with_consumer(consumer: Callable[[Any], None], name: str | None = None) -> Branched[Any, Any]:
        """``Branched.withConsumer(chain[, name])``: the branch is not in the returned map."""
        return Branched(name, chain_consumer=consumer)
