"""``KTableAggregate`` and ``KTableReduce``: a grouped table folded per key with an adder and a subtractor.

An update ``Change(new, old)`` first subtracts ``old`` from the key's aggregate (when both exist), then adds ``new``
(from the initializer's value, or for ``reduce`` the value itself, when the key has no aggregate yet). The result's
timestamp is the largest timestamp folded into it; a tombstone-only update leaves the aggregate as the subtraction
made it. A null key is an error (the repartition step never produces one).
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
    forward_change,
    value_or_none,
)
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.errors import ProcessingError
from streamproc.state.stores import TimestampedKeyValueStore, ValueAndTimestamp


class _TableFoldProcessor(ContextualProcessor):
    what = "aggregate"

    def __init__(self, store_name: str, send_old_values: bool) -> None:
        self.store_name = store_name
        self.send_old_values = send_old_values
        self.store: TimestampedKeyValueStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        assert isinstance(store, TimestampedKeyValueStore), f"{self.store_name} is not a timestamped key-value store"
        self.store = store

    def key_locality(self) -> KeyLocality:
        """Reads and writes its store at the record's (the group's) key only."""
        return KeyLocality.stateful()

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            raise ProcessingError(
                f"Record key for KTable {self.what} operator with state {self.store_name} should not be null."
            )
        old_and_ts = self.store.get(record.key)
        old = value_or_none(old_and_ts)
        new, timestamp = self.fold(record, old_and_ts)
        self.store.put(record.key, ValueAndTimestamp.make(new, timestamp))
        forward_change(
            self.context(), record.with_value(Change(new, old)).with_timestamp(timestamp), self.send_old_values
        )

    def fold(self, record: Record[Any, Change[Any]], old: ValueAndTimestamp[Any] | None) -> tuple[Any, int]:
        raise NotImplementedError


class KTableAggregateProcessor(_TableFoldProcessor):
    def __init__(self, supplier: KTableAggregate) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self.s = supplier

    def fold(self, record: Record[Any, Change[Any]], old: ValueAndTimestamp[Any] | None) -> tuple[Any, int]:
        change = record.value
        timestamp = record.timestamp
        if change.old_value is not None and old is not None:
            intermediate = self.s.subtractor(record.key, change.old_value, old.value)
            timestamp = max(record.timestamp, old.timestamp)
        else:
            intermediate = None if old is None else old.value
        if change.new_value is None:
            return intermediate, timestamp
        start = self.s.initializer() if intermediate is None else intermediate
        if old is not None:
            timestamp = max(record.timestamp, old.timestamp)
        return self.s.adder(record.key, change.new_value, start), timestamp


class KTableAggregate:
    """``KTableAggregate(storeName, initializer, add, remove)``."""

    def __init__(self, store_name: str, initializer: Initializer, adder: Aggregator, subtractor: Aggregator) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor
        self.send_old_values = False

    def __call__(self) -> KTableAggregateProcessor:
        return KTableAggregateProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        self.send_old_values = True
        return True

    def view(self) -> KTableValueGetterSupplier:
        return TimestampedStoreGetterSupplier(self.store_name)


class KTableReduceProcessor(_TableFoldProcessor):
    what = "reduce"

    def __init__(self, supplier: KTableReduce) -> None:
        super().__init__(supplier.store_name, supplier.send_old_values)
        self.s = supplier

    def fold(self, record: Record[Any, Change[Any]], old: ValueAndTimestamp[Any] | None) -> tuple[Any, int]:
        change = record.value
        if change.old_value is not None and old is not None:
            intermediate = self.s.subtractor(old.value, change.old_value)
            timestamp = max(record.timestamp, old.timestamp)
        else:
            intermediate = None if old is None else old.value
            timestamp = record.timestamp
        if change.new_value is None:
            return intermediate, timestamp
        if intermediate is None:
            return change.new_value, timestamp
        assert old is not None
        return self.s.adder(intermediate, change.new_value), max(record.timestamp, old.timestamp)


class KTableReduce:
    """``KTableReduce(storeName, addReducer, removeReducer)``."""

    def __init__(self, store_name: str, adder: Reducer, subtractor: Reducer) -> None:
        self.store_name = store_name
        self.adder = adder
        self.subtractor = subtractor
        self.send_old_values = False

    def __call__(self) -> KTableReduceProcessor:
        return KTableReduceProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        self.send_old_values = True
        return True

    def view(self) -> KTableValueGetterSupplier:
        return TimestampedStoreGetterSupplier(self.store_name)
