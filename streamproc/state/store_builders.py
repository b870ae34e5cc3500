"""``state.Stores``: the public factory of store suppliers and builders, as a Kafka Streams program writes them.

A program declares a store exactly as in Java::

    counts = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("counts"), serde_for("String"), serde_for("Long")
    )
    topology.add_state_store(counts, "count-processor")

A supplier (``KeyValueBytesStoreSupplier``, ``WindowBytesStoreSupplier``, ``SessionBytesStoreSupplier``) says where the
bytes live (RocksDB or memory) and, for window and session stores, retention, window size and segment interval; a
builder (``StoreBuilder``) adds the serdes and logging (on by default, ``with_logging_disabled``). A builder is what
``Topology.add_state_store`` takes (``name``, ``logging_enabled``, ``build()``) and what the state manager opens:
:meth:`StoreBuilder.definition` is the :class:`~streamproc.state.processor_state_manager.StoreDefinition` from which
``ProcessorStateManager`` opens RocksDB stores in Kafka Streams' layout with their changelogs. ``build()`` alone (the
test driver's path, no task directory) gives the same store in memory.

Kafka's validation and messages are kept (``Stores.java``, ``RocksDbWindowBytesStoreSupplier``, 4.2.0). Not modelled:
record caching for the Processor API (``with_caching_enabled`` is refused: it changes which changelog records are
written; the DSL's stores carry ``caching_enabled``, emulated only by ``state/record_cache.py``), versioned,
time-ordered and key-value-with-headers stores, custom suppliers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamproc.engine.serdes import Serde
from streamproc.errors import ConfigError, TopologyError
from streamproc.state.processor_state_manager import StoreDefinition, open_store
from streamproc.state.store_layout import default_segment_interval
from streamproc.state.store_type import StoreType
from streamproc.state.stores import StateStore


@dataclass(frozen=True, slots=True)
class KeyValueBytesStoreSupplier:
    """``KeyValueBytesStoreSupplier``: a key-value store's name, and RocksDB or memory, timestamped or not."""

    name: str
    persistent: bool
    timestamped: bool

    @property
    def metrics_scope(self) -> str:
        """``metricsScope()``: ``rocksdb`` or ``in-memory``."""
        return "rocksdb" if self.persistent else "in-memory"


@dataclass(frozen=True, slots=True)
class WindowBytesStoreSupplier:
    """``WindowBytesStoreSupplier``: retention, window size, segment interval and whether duplicates are kept."""

    name: str
    persistent: bool
    timestamped: bool
    retention_period_ms: int
    window_size_ms: int
    segment_interval_ms: int
    retain_duplicates: bool

    @property
    def metrics_scope(self) -> str:
        return "rocksdb-window" if self.persistent else "in-memory-window"


@dataclass(frozen=True, slots=True)
class SessionBytesStoreSupplier:
    """``SessionBytesStoreSupplier``: retention and segment interval."""

    name: str
    persistent: bool
    retention_period_ms: int
    segment_interval_ms: int

    @property
    def metrics_scope(self) -> str:
        return "rocksdb-session" if self.persistent else "in-memory-session"


def _check_name(name: str | None) -> str:
    if name is None:
        raise TopologyError("name cannot be null")
    return name


def _check_not_negative(value: int, what: str) -> None:
    if value < 0:
        raise ConfigError(f"{what} cannot be negative")


def _window_supplier(
    name: str, retention_ms: int, window_size_ms: int, retain_duplicates: bool, *, persistent: bool, timestamped: bool
) -> WindowBytesStoreSupplier:
    _check_name(name)
    _check_not_negative(retention_ms, "retentionPeriod")
    _check_not_negative(window_size_ms, "windowSize")
    if window_size_ms > retention_ms:
        raise ConfigError(
            f"The retention period of the window store {name} must be no smaller than its window size. "
            f"Got size=[{window_size_ms}], retention=[{retention_ms}]"
        )
    return WindowBytesStoreSupplier(
        name,
        persistent,
        timestamped,
        retention_ms,
        window_size_ms,
        default_segment_interval(retention_ms),
        retain_duplicates,
    )


class StoreBuilder:
    """``StoreBuilder``: a supplier with serdes and logging; ``with_*`` return the builder, as in Java."""

    def __init__(
        self,
        store_type: StoreType,
        supplier: KeyValueBytesStoreSupplier | WindowBytesStoreSupplier | SessionBytesStoreSupplier,
        key_serde: Serde[Any],
        value_serde: Serde[Any],
    ) -> None:
        if supplier is None:
            raise TopologyError("storeSupplier cannot be null")
        self.store_type = store_type
        self.supplier = supplier
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._logging_enabled = True
        self.log_config: dict[str, str] = {}
        self._caching_enabled = False

    @property
    def name(self) -> str:
        return self.supplier.name

    @property
    def logging_enabled(self) -> bool:
        return self._logging_enabled

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> StoreBuilder:
        """``withLoggingEnabled(config)``: the store's changelog topic (created with ``config``) records every write."""
        self._logging_enabled = True
        self.log_config = dict(config or {})
        return self

    def with_logging_disabled(self) -> StoreBuilder:
        """``withLoggingDisabled``: no changelog; the store starts empty after a restart or a move of its task."""
        self._logging_enabled = False
        self.log_config = {}
        return self

    def with_caching_disabled(self) -> StoreBuilder:
        """``withCachingDisabled``: every write goes to the store and its changelog at once (the default)."""
        self._caching_enabled = False
        return self

    @property
    def caching_enabled(self) -> bool:
        """Whether Kafka Streams caches the store: the DSL's materializers (``Materialized``'s default), which
        streamproc emulates only at one flush (``state/record_cache.py``, ``--record-cache flush-at-end``)."""
        return self._caching_enabled

    def with_dsl_caching(self, enabled: bool) -> StoreBuilder:
        """``KeyValueStoreMaterializer``'s ``withCachingEnabled``/``withCachingDisabled`` from ``Materialized``: the
        DSL's stores only, since a cached store forwards through its owner's flush listener, which the Processor
        API's processors do not register (so :meth:`with_caching_enabled` stays refused)."""
        self._caching_enabled = enabled
        return self

    def with_caching_enabled(self) -> StoreBuilder:
        raise ConfigError(
            f"store {self.name}: record caching (withCachingEnabled) is not supported by streamproc: it changes which "
            "changelog and downstream records are written; build the store without caching"
        )

    def definition(self) -> StoreDefinition:
        """What ``ProcessorStateManager`` opens: kind, serdes, logging, RocksDB or memory, windowing."""
        supplier = self.supplier
        if isinstance(supplier, KeyValueBytesStoreSupplier):
            return StoreDefinition(
                supplier.name,
                self.store_type,
                self.key_serde,
                self.value_serde,
                persistent=supplier.persistent,
                logged=self._logging_enabled,
                caching_enabled=self._caching_enabled,
            )
        if isinstance(supplier, WindowBytesStoreSupplier):
            return StoreDefinition(
                supplier.name,
                self.store_type,
                self.key_serde,
                self.value_serde,
                persistent=supplier.persistent,
                logged=self._logging_enabled,
                retention_ms=supplier.retention_period_ms,
                segment_interval_ms=supplier.segment_interval_ms,
                window_size_ms=supplier.window_size_ms,
                retain_duplicates=supplier.retain_duplicates,
                caching_enabled=self._caching_enabled,
            )
        return StoreDefinition(
            supplier.name,
            self.store_type,
            self.key_serde,
            self.value_serde,
            persistent=supplier.persistent,
            logged=self._logging_enabled,
            retention_ms=supplier.retention_period_ms,
            segment_interval_ms=supplier.segment_interval_ms,
            caching_enabled=self._caching_enabled,
        )

    def build(self) -> StateStore:
        """A new store in memory, not attached to a task (the test driver's stores; a run opens them on disk)."""
        return open_store(self.definition(), None, None)

    def __repr__(self) -> str:
        logging = "logged" if self._logging_enabled else "not logged"
        return f"StoreBuilder({self.store_type.value} {self.name!r}, {self.supplier.metrics_scope}, {logging})"


def _matching(builder: str, supplier: object, expected: type, timestamped: bool | None) -> None:
    if supplier is None:
        raise TopologyError("supplier cannot be null")
    if not isinstance(supplier, expected):
        raise TopologyError(f"{builder} needs a {expected.__name__}, got {type(supplier).__name__}")
    if timestamped is not None and getattr(supplier, "timestamped", timestamped) != timestamped:
        kind = "a timestamped" if timestamped else "a plain"
        raise TopologyError(
            f"{builder} of store {getattr(supplier, 'name', '?')} needs {kind} supplier: streamproc does not adapt "
            "between plain and timestamped stores; use the persistent_timestamped_*/persistent_* supplier that matches"
        )


class Stores:
    """``state.Stores``: suppliers (``persistent_*``, ``in_memory_*``) and builders (``*_store_builder``)."""

    # -- key-value suppliers ---------------------------------------------------------------------------------------

    @staticmethod
    def persistent_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """``persistentKeyValueStore``: a RocksDB store (``RocksDBStore``)."""
        return KeyValueBytesStoreSupplier(_check_name(name), persistent=True, timestamped=False)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """``persistentTimestampedKeyValueStore``: RocksDB with the ``keyValueWithTimestamp`` column family."""
        return KeyValueBytesStoreSupplier(_check_name(name), persistent=True, timestamped=True)

    @staticmethod
    def in_memory_key_value_store(name: str) -> KeyValueBytesStoreSupplier:
        """``inMemoryKeyValueStore``: a sorted map (timestamped or not is decided by the builder)."""
        return KeyValueBytesStoreSupplier(_check_name(name), persistent=False, timestamped=False)

    # -- window and session suppliers ------------------------------------------------------------------------------

    @staticmethod
    def persistent_window_store(
        name: str, retention_period_ms: int, window_size_ms: int, retain_duplicates: bool = False
    ) -> WindowBytesStoreSupplier:
        """``persistentWindowStore(name, retentionPeriod, windowSize, retainDuplicates)``."""
        return _window_supplier(
            name, retention_period_ms, window_size_ms, retain_duplicates, persistent=True, timestamped=False
        )

    @staticmethod
    def persistent_timestamped_window_store(
        name: str, retention_period_ms: int, window_size_ms: int, retain_duplicates: bool = False
    ) -> WindowBytesStoreSupplier:
        """``persistentTimestampedWindowStore``."""
        return _window_supplier(
            name, retention_period_ms, window_size_ms, retain_duplicates, persistent=True, timestamped=True
        )

    @staticmethod
    def in_memory_window_store(
        name: str, retention_period_ms: int, window_size_ms: int, retain_duplicates: bool = False
    ) -> WindowBytesStoreSupplier:
        """``inMemoryWindowStore``."""
        return _window_supplier(
            name, retention_period_ms, window_size_ms, retain_duplicates, persistent=False, timestamped=False
        )

    @staticmethod
    def persistent_session_store(name: str, retention_period_ms: int) -> SessionBytesStoreSupplier:
        """``persistentSessionStore(name, retentionPeriod)``."""
        _check_name(name)
        _check_not_negative(retention_period_ms, "retentionPeriod")
        return SessionBytesStoreSupplier(name, True, retention_period_ms, default_segment_interval(retention_period_ms))

    @staticmethod
    def in_memory_session_store(name: str, retention_period_ms: int) -> SessionBytesStoreSupplier:
        """``inMemorySessionStore``."""
        _check_name(name)
        _check_not_negative(retention_period_ms, "retentionPeriod")
        return SessionBytesStoreSupplier(
            name, False, retention_period_ms, default_segment_interval(retention_period_ms)
        )

    # -- builders --------------------------------------------------------------------------------------------------

    @staticmethod
    def key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> StoreBuilder:
        """``keyValueStoreBuilder``: a ``KeyValueStore`` (plain values)."""
        _matching("keyValueStoreBuilder", supplier, KeyValueBytesStoreSupplier, False)
        return StoreBuilder(StoreType.KEY_VALUE, supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_key_value_store_builder(
        supplier: KeyValueBytesStoreSupplier, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> StoreBuilder:
        """``timestampedKeyValueStoreBuilder``: a ``TimestampedKeyValueStore`` (``ValueAndTimestamp`` values)."""
        _matching(
            "timestampedKeyValueStoreBuilder",
            supplier,
            KeyValueBytesStoreSupplier,
            True if supplier is not None and supplier.persistent else None,
        )
        return StoreBuilder(StoreType.TIMESTAMPED_KEY_VALUE, supplier, key_serde, value_serde)

    @staticmethod
    def window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> StoreBuilder:
        """``windowStoreBuilder``: a ``WindowStore``."""
        _matching("windowStoreBuilder", supplier, WindowBytesStoreSupplier, False)
        return StoreBuilder(StoreType.WINDOW, supplier, key_serde, value_serde)

    @staticmethod
    def timestamped_window_store_builder(
        supplier: WindowBytesStoreSupplier, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> StoreBuilder:
        """``timestampedWindowStoreBuilder``: a ``TimestampedWindowStore``."""
        _matching(
            "timestampedWindowStoreBuilder",
            supplier,
            WindowBytesStoreSupplier,
            True if supplier is not None and supplier.persistent else None,
        )
        return StoreBuilder(StoreType.TIMESTAMPED_WINDOW, supplier, key_serde, value_serde)

    @staticmethod
    def session_store_builder(
        supplier: SessionBytesStoreSupplier, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> StoreBuilder:
        """``sessionStoreBuilder``: a ``SessionStore``."""
        _matching("sessionStoreBuilder", supplier, SessionBytesStoreSupplier, None)
        return StoreBuilder(StoreType.SESSION, supplier, key_serde, value_serde)


def store_definitions(builders: Mapping[str, object]) -> list[StoreDefinition]:
    """The definitions a task's ``ProcessorStateManager`` opens, from a sub-topology's store builders (in order).

    Takes ``engine.topology_builder.store_builders(topology, subtopology)``: a :class:`StoreBuilder` of
    :class:`Stores`, or a :class:`StoreDefinition` given directly; anything else cannot be opened on disk.
    """
    definitions: list[StoreDefinition] = []
    for name, builder in builders.items():
        if isinstance(builder, StoreBuilder):
            definitions.append(builder.definition())
        elif isinstance(builder, StoreDefinition):
            definitions.append(builder)
        else:
            raise TopologyError(
                f"store {name} was added as {type(builder).__name__}, which a run cannot open in Kafka Streams' "
                "layout; build it with streamproc.Stores (e.g. Stores.key_value_store_builder("
                "Stores.persistent_key_value_store(name), key_serde, value_serde))"
            )
    return definitions
