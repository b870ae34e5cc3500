"""What every DSL processor shares: the context it keeps, how it counts a skipped record, how it forwards a KTable
update, and the value getter a KTable offers to joins (``ContextualProcessor``, ``TimestampedTupleForwarder``,
``KTableValueGetter`` of ``kstream.internals``).

By default Kafka Streams' record cache is off (DESIGN: caching changes which records are forwarded), so a forwarder
forwards every update at once, as Kafka Streams does with ``statestore.cache.max.bytes=0``. With the cache emulated at
one flush (``state/record_cache.py``), a processor whose store caches forwards nothing itself and registers a
:class:`CacheFlushListener`, which forwards each flushed entry from the processor's node.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from streamproc.dsl.internals.change import Change
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.records import ProcessorRecordContext, Record
from streamproc.state.stores import ValueAndTimestamp

LOG = logging.getLogger("streamproc.dsl")

Initializer = Callable[[], Any]
#: ``Aggregator.apply(key, value, aggregate)``.
Aggregator = Callable[[Any, Any, Any], Any]
#: ``Reducer.apply(aggregate, value)``.
Reducer = Callable[[Any, Any], Any]
#: ``Merger.apply(key, aggregate1, aggregate2)`` (session windows).
Merger = Callable[[Any, Any, Any], Any]
#: ``ValueJoinerWithKey.apply(key, value1, value2)``; a plain ``ValueJoiner`` is wrapped by the DSL.
ValueJoinerWithKey = Callable[[Any, Any, Any], Any]


class ContextualProcessor(Processor):
    """``api.ContextualProcessor``: keeps the context given to ``init``."""

    _context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._context = context

    def context(self) -> ProcessorContext:
        assert self._context is not None, "process() before init()"
        return self._context


def record_dropped(processor: ContextualProcessor, reason: str, message: str) -> None:
    """``droppedRecordsSensor.record()`` with Kafka's warning: ``message`` plus the record's topic/partition/offset."""
    context = processor.context()
    metadata = context.record_metadata()
    if metadata is not None:
        LOG.warning(
            "%s topic=[%s] partition=[%s] offset=[%s]", message, metadata.topic, metadata.partition, metadata.offset
        )
    else:
        LOG.warning("%s Topic, partition, and offset not known.", message)
    record = getattr(context, "record_dropped", None)
    if record is not None:
        record(reason)


def value_or_none(value_and_timestamp: ValueAndTimestamp[Any] | None) -> Any:
    """``ValueAndTimestamp.getValueOrNull``."""
    return None if value_and_timestamp is None else value_and_timestamp.value


def forward_change(context: ProcessorContext, record: Record[Any, Change[Any]], send_old_values: bool) -> None:
    """``TimestampedTupleForwarder.maybeForward`` without a cache: the old value only when asked for."""
    if not send_old_values and record.value.old_value is not None:
        record = record.with_value(Change(record.value.new_value, None, record.value.is_latest))
    context.forward(record)


def sent_change(new_value: Any, old_value: Any, send_old_values: bool) -> Change[Any]:
    """The :class:`Change` :func:`forward_change` sends for ``(new_value, old_value)``, built once: for a processor
    that makes its update and forwards it in one step (an aggregation, per record) without the copy."""
    return Change(new_value, old_value if send_old_values else None)


class CacheFlushListener:
    """``TimestampedCacheFlushListener``: forwards a flushed cache entry from the node that owns the store, as
    ``Change(new, old if sending old values)`` stamped with the new value's timestamp (a tombstone: the entry's)."""

    def __init__(self, context: ProcessorContext, send_old_values: bool) -> None:
        self.context = context
        self.node = getattr(context, "current_node", None)  # the processor being initialised (``myNode``)
        self.send_old_values = send_old_values

    def apply(
        self,
        key: Any,
        new: ValueAndTimestamp[Any] | None,
        old: ValueAndTimestamp[Any] | None,
        entry: ProcessorRecordContext,
    ) -> None:
        change = Change(value_or_none(new), value_or_none(old) if self.send_old_values else None)
        timestamp = entry.timestamp if new is None else new.timestamp
        context: Any = self.context
        previous = context.current_node
        context.current_node = self.node
        try:
            context.forward(Record(key, change, timestamp, entry.headers))
        finally:
            context.current_node = previous


def forwards_through_cache(store: object, context: ProcessorContext, send_old_values: bool) -> bool:
    """``TimestampedTupleForwarder``'s constructor: whether ``store`` caches (then it forwards at its flush, through a
    listener registered here, and the processor forwards nothing itself)."""
    set_flush_listener = getattr(store, "set_flush_listener", None)
    if set_flush_listener is None:
        return False
    return bool(set_flush_listener(CacheFlushListener(context, send_old_values)))


class KTableValueGetter(Protocol):
    """``KTableValueGetter``: the current value of a key in a table (a join's lookup)."""

    def init(self, context: ProcessorContext) -> None: ...

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None: ...

    def close(self) -> None: ...


class KTableValueGetterSupplier(Protocol):
    """``KTableValueGetterSupplier``: a new getter per task, and the stores it reads (connected to the joiner)."""

    def __call__(self) -> KTableValueGetter: ...

    def store_names(self) -> tuple[str, ...]: ...


class TimestampedStoreGetter:
    """The value getter of a materialized table: a read of its timestamped key-value store."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name
        self._store: Any = None

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self.store_name)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        result: ValueAndTimestamp[Any] | None = self._store.get(key)
        return result

    def close(self) -> None:
        """Nothing to release."""


class TimestampedStoreGetterSupplier:
    """``KTableMaterializedValueGetterSupplier``: getters over one timestamped key-value store."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name

    def __call__(self) -> KTableValueGetter:
        return TimestampedStoreGetter(self.store_name)

    def store_names(self) -> tuple[str, ...]:
        return (self.store_name,)
