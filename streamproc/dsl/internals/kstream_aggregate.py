"""``KStreamAggregate`` and ``KStreamReduce``: a grouped stream folded into a KTable, one update per record.

``count()`` is ``aggregate`` with initializer ``0`` and aggregator ``agg + 1``. A record with a null key or value is
skipped (dropped-records sensor); the aggregate's timestamp is the largest timestamp folded into it.
"""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    Aggregator,
    ContextualProcessor,
    Initializer,
    KTableValueGetterSupplier,
    Reducer,
    TimestampedStoreGetterSupplier,
    forwards_through_cache,
    record_dropped,
    sent_change,
)
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import TimestampedKeyValueStore, ValueAndTimestamp

NULL_KEY_OR_VALUE_MESSAGE = "Skipping record due to null key or value."


def counting_aggregator(key: Any, value: Any, aggregate: int) -> int:
    """``KGroupedStreamImpl.countAggregator``."""
    return aggregate + 1


def count_initializer() -> int:
    """``KGroupedStreamImpl.countInitializer``."""
    return 0


def _forward_nothing(record: Record[Any, Any]) -> None:
    """``TimestampedTupleForwarder.maybeForward`` with caching on: the cache's flush forwards instead."""


class _StoreProcessor(ContextualProcessor):
    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self.store_name = store_name
        self.send_old_values = send_old_values
        self.store: TimestampedKeyValueStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        assert isinstance(store, TimestampedKeyValueStore), f"{self.store_name} is not a timestamped key-value store"
        self.store = store
        # a cached store forwards at its flush (state/record_cache.py): the processor sends nothing itself
        cached = forwards_through_cache(store, context, self.send_old_values)
        self.forward = _forward_nothing if cached else context.forward

    def key_locality(self) -> KeyLocality:
        """``get_for_update`` and ``put_serialized`` at the record's key, nothing else: no time, no other key."""
        return KeyLocality.stateful()

    def _skip(self, record: Record[Any, Any]) -> bool:
        if record.key is None or record.value is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, NULL_KEY_OR_VALUE_MESSAGE)
            return True
        return False

    def _put_serialized_and_forward(
        self, record: Record[Any, Any], raw_key: bytes, old: Any, new: Any, timestamp: int
    ) -> None:
        """Store the new aggregate under the key :meth:`TimestampedKeyValueStore.get_for_update` serialized and
        forward the update, as ``forward_change`` would send it, built once per record (no ``with_value`` and
        ``with_timestamp`` copies, no second ``Change`` for the old-value rule: ``sent_change``)."""
        self.store.put_serialized(raw_key, ValueAndTimestamp(new, timestamp))
        change = sent_change(new, old, self.send_old_values)
        self.forward(Record(record.key, change, timestamp, record.headers))


class KStreamAggregateProcessor(_StoreProcessor):
    def __init__(self, supplier: KStreamAggregate) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self.initializer = supplier.initializer
        self.aggregator = supplier.aggregator
        #: ``count()``: its adder written out (``aggregate + 1``), one call less per record of every count
        self.counting = supplier.aggregator is counting_aggregator

    def process(self, record: Record[Any, Any]) -> None:
        # _skip, value_or_none and _put_serialized_and_forward inlined: this runs once per record of every
        # aggregate/count, and each frame less is measurable (bench/README.md, engine section)
        key, value = record.key, record.value
        if key is None or value is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, NULL_KEY_OR_VALUE_MESSAGE)
            return
        store = self.store
        raw_key, old_and_ts = store.get_for_update(key)
        old = None if old_and_ts is None else old_and_ts.value
        if old is None or old_and_ts is None:
            old = self.initializer()
            timestamp = record.timestamp
        else:
            timestamp = record.timestamp if record.timestamp > old_and_ts.timestamp else old_and_ts.timestamp
        new = old + 1 if self.counting else self.aggregator(key, value, old)
        store.put_serialized(raw_key, ValueAndTimestamp(new, timestamp))
        change = Change(new, old) if self.send_old_values else Change(new, None)  # sent_change
        self.forward(Record(key, change, timestamp, record.headers))


class KStreamAggregate:
    """``KStreamAggregate(storeName, initializer, aggregator)``: the supplier; ``old_value`` of an update is the
    previous aggregate, or the initializer's value for a new key (as Kafka sends it)."""

    #: Its store's record cache forwards the updates (``state/record_cache.check_cached_stores``).
    forwards_through_cache = True

    def __init__(self, store_name: str, initializer: Initializer, aggregator: Aggregator) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False

    def __call__(self) -> KStreamAggregateProcessor:
        return KStreamAggregateProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool = True) -> bool:
        """An aggregation is always materialized: it can always send old values."""
        self.send_old_values = True
        return True

    def view(self) -> KTableValueGetterSupplier:
        return TimestampedStoreGetterSupplier(self.store_name)


class KStreamReduceProcessor(_StoreProcessor):
    def __init__(self, supplier: KStreamReduce) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self.reducer = supplier.reducer

    def process(self, record: Record[Any, Any]) -> None:
        if self._skip(record):
            return
        raw_key, old_and_ts = self.store.get_for_update(record.key)
        if old_and_ts is None:
            self._put_serialized_and_forward(record, raw_key, None, record.value, record.timestamp)
        else:
            new = self.reducer(old_and_ts.value, record.value)
            timestamp = max(record.timestamp, old_and_ts.timestamp)
            self._put_serialized_and_forward(record, raw_key, old_and_ts.value, new, timestamp)


class KStreamReduce:
    """``KStreamReduce(storeName, reducer)``: the first value of a key is its aggregate."""

    #: Its store's record cache forwards the updates (``state/record_cache.check_cached_stores``).
    forwards_through_cache = True

    def __init__(self, store_name: str, reducer: Reducer) -> None:
        self.store_name = store_name
        self.reducer = reducer
        self.send_old_values = False

    def __call__(self) -> KStreamReduceProcessor:
        return KStreamReduceProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool = True) -> bool:
        """An aggregation is always materialized: it can always send old values."""
        self.send_old_values = True
        return True

    def view(self) -> KTableValueGetterSupplier:
        return TimestampedStoreGetterSupplier(self.store_name)
