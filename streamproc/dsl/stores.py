"""The stores the DSL creates for its operators (``KeyValueStoreMaterializer``, ``WindowStoreMaterializer``,
``SessionStoreMaterializer``, the join and suppress buffers), built with :mod:`streamproc.state.store_builders`.

Their names are decided by the operators; this module only turns a name, serdes, windowing and the
``Materialized`` logging choice into a store builder, with Kafka's retention rules and messages.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamproc.dsl.options import Materialized
from streamproc.engine.topology import StoreSpec
from streamproc.errors import TopologyError
from streamproc.state.store_builders import StoreBuilder, Stores
from streamproc.state.store_type import StoreType


def apply_default_serdes(builders: Iterable[object], key_serde: Any, value_serde: Any) -> None:
    """Fill the serdes the program left unset with the application's defaults (``default.key.serde``/
    ``default.value.serde``), which is what Kafka's stores do when they are initialised."""
    for builder in builders:
        if not isinstance(builder, StoreBuilder):
            continue
        # Materialized without serdes leaves them None, although StoreBuilder's annotation says otherwise.
        if getattr(builder, "key_serde", None) is None:
            builder.key_serde = key_serde
        if getattr(builder, "value_serde", None) is None:
            builder.value_serde = value_serde


def _logging(builder: StoreBuilder, materialized: Materialized[Any, Any] | None) -> StoreBuilder:
    """``Materialized``'s logging and caching choices on a materialized store (caching: Kafka's default on)."""
    builder.with_dsl_caching(materialized is None or materialized.caching_enabled)
    if materialized is not None and not materialized.logging_enabled:
        return builder.with_logging_disabled()
    if materialized is not None and materialized.log_config:
        return builder.with_logging_enabled(materialized.log_config)
    return builder


def key_value_store(
    name: str, materialized: Materialized[Any, Any] | None, key_serde: Any, value_serde: Any
) -> StoreBuilder:
    """``KeyValueStoreMaterializer``: a timestamped RocksDB key-value store (``Materialized``'s serdes first)."""
    m = materialized
    builder = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store(name),
        (m.key_serde if m is not None and m.key_serde is not None else key_serde),
        (m.value_serde if m is not None and m.value_serde is not None else value_serde),
    )
    return _logging(builder, m)


def window_store(
    name: str,
    materialized: Materialized[Any, Any] | None,
    key_serde: Any,
    value_serde: Any,
    *,
    size_ms: int,
    grace_ms: int,
    retention_floor_ms: int,
) -> StoreBuilder:
    """``TimeWindowedKStreamImpl#materialize`` / ``SlidingWindowedKStreamImpl#materialize``: retention defaults to
    ``retention_floor_ms`` (size + grace; sliding: 2 × difference + grace) and may not be smaller."""
    m = materialized
    retention = m.retention_ms if m is not None and m.retention_ms is not None else retention_floor_ms
    if retention_floor_ms > retention:
        raise TopologyError(
            f"The retention period of the window store {name} must be no smaller than its window size plus the grace "
            f"period. Got size=[{size_ms}], grace=[{grace_ms}], retention=[{retention}]"
        )
    builder = Stores.timestamped_window_store_builder(
        Stores.persistent_timestamped_window_store(name, retention, size_ms, False),
        (m.key_serde if m is not None and m.key_serde is not None else key_serde),
        (m.value_serde if m is not None and m.value_serde is not None else value_serde),
    )
    return _logging(builder, m)


def session_store(
    name: str,
    materialized: Materialized[Any, Any] | None,
    key_serde: Any,
    value_serde: Any,
    *,
    gap_ms: int,
    grace_ms: int,
) -> StoreBuilder:
    """``SessionWindowedKStreamImpl#materialize``: retention defaults to gap + grace and may not be smaller."""
    m = materialized
    floor = gap_ms + grace_ms
    retention = m.retention_ms if m is not None and m.retention_ms is not None else floor
    if floor > retention:
        raise TopologyError(
            f"The retention period of the session store {name} must be no smaller than the session inactivity gap "
            f"plus the grace period. Got gap=[{gap_ms}], grace=[{grace_ms}], retention=[{retention}]"
        )
    builder = Stores.session_store_builder(
        Stores.persistent_session_store(name, retention),
        (m.key_serde if m is not None and m.key_serde is not None else key_serde),
        (m.value_serde if m is not None and m.value_serde is not None else value_serde),
    )
    return _logging(builder, m)


def join_window_store(
    name: str, key_serde: Any, value_serde: Any, *, size_ms: int, grace_ms: int, logged: bool
) -> StoreBuilder:
    """``KStreamImplJoin#joinWindowStoreBuilder``: ``<name>`` holding duplicates, retention size + grace."""
    builder = Stores.window_store_builder(
        Stores.persistent_window_store(name, size_ms + grace_ms, size_ms, True), key_serde, value_serde
    )
    return builder if logged else builder.with_logging_disabled()


def buffer_store(name: str, *, logged: bool = True) -> StoreSpec:
    """A store streamproc's state package has no builder for yet (the outer-join and suppress buffers): its name
    and logging, which is all the topology and its changelog topics need."""
    return StoreSpec(name, logged=logged, persistent=False)


def suppress_buffer_store(name: str, key_serde: Any, value_serde: Any) -> StoreBuilder:
    """The suppress buffer's store (``InMemoryTimeOrderedKeyValueChangeBuffer.Builder(name, keySerde, valueSerde)``:
    in memory, logged); the table's serdes, ``None`` ones filled with the application's defaults at build."""
    return StoreBuilder(
        StoreType.TIME_ORDERED_KEY_VALUE_BUFFER, Stores.in_memory_key_value_store(name), key_serde, value_serde
    )
