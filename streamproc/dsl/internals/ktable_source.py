"""``KTableSource``: a topic read as a table; each record becomes a ``Change`` (new value, old value).

Materialized (a store name given, or forced by a join or ``sendOldValues``), it keeps the latest value and timestamp
of each key in a timestamped key-value store and forwards ``Change(new, old)``; an update older than the stored one
is still applied (Kafka Streams only warns: "Detected out-of-order KTable update"). Not materialized, it forwards
``Change(new, None)``. A null key is skipped as dropped; a null value is a delete (tombstone).
"""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    LOG,
    ContextualProcessor,
    KTableValueGetterSupplier,
    TimestampedStoreGetterSupplier,
    forward_change,
    record_dropped,
)
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import TimestampedKeyValueStore, ValueAndTimestamp


class KTableSourceProcessor(ContextualProcessor):
    def __init__(self, store_name: str | None, send_old_values: bool) -> None:
        self.store_name = store_name
        self.send_old_values = send_old_values
        self.store: TimestampedKeyValueStore[Any, Any] | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.store_name is not None:
            store = context.get_state_store(self.store_name)
            assert isinstance(store, TimestampedKeyValueStore), f"{self.store_name} is not a timestamped KV store"
            self.store = store

    def key_locality(self) -> KeyLocality:
        """Reads and writes its store at the record's key; every record with a key goes on, one for one, with its
        key and timestamp (no user code), so it does not hide which records reach the processors after it."""
        return KeyLocality.one_to_one()

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key.")
            return
        store = self.store
        if store is None:
            self.context().forward(record.with_value(Change(record.value, None)))
            return
        old_and_ts = store.get(record.key)
        old = None
        if old_and_ts is not None:
            old = old_and_ts.value
            if record.timestamp < old_and_ts.timestamp:
                LOG.warning(
                    "Detected out-of-order KTable update for %s, old timestamp=[%s] new timestamp=[%s].",
                    store.name,
                    old_and_ts.timestamp,
                    record.timestamp,
                )
        store.put(record.key, ValueAndTimestamp.make(record.value, record.timestamp))
        forward_change(self.context(), record.with_value(Change(record.value, old)), self.send_old_values)


class KTableSource:
    """``KTableSource(storeName, queryableName)``: ``store_name`` is the name the table's store has if it is ever
    materialized; ``queryable_name`` is set when it is (given, or by :meth:`materialize`)."""

    def __init__(self, store_name: str, queryable_name: str | None = None) -> None:
        self.store_name = store_name
        self.queryable_name = queryable_name
        self.send_old_values = False

    def __call__(self) -> KTableSourceProcessor:
        return KTableSourceProcessor(self.queryable_name, self.send_old_values)

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """Old values need the store: without it, only when ``force_materialization`` (which materializes)."""
        if self.queryable_name is None:
            if not force_materialization:
                return False
            self.materialize()
        self.send_old_values = True
        return True

    def materialize(self) -> None:
        """A join or a downstream aggregation needs the table's values: keep them in ``store_name``."""
        self.queryable_name = self.store_name

    def materialized(self) -> bool:
        return self.queryable_name is not None

    def view(self) -> KTableValueGetterSupplier:
        """The store's getter; materializes the table (``KTableSource#view`` does too)."""
        self.materialize()
        return TimestampedStoreGetterSupplier(self.store_name)
