"""What the KTable processors that transform a parent table share (``KTableFilter``, ``KTableMapValues``): the
parent they ask for old values and value getters, and the optional store of their own result (``queryableName``)."""

from __future__ import annotations

from typing import Any, Protocol

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    ContextualProcessor,
    KTableValueGetterSupplier,
    TimestampedStoreGetterSupplier,
    forward_change,
    value_or_none,
)
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import TimestampedKeyValueStore, ValueAndTimestamp


class KTableParent(Protocol):
    """The supplier of a table's parent node (``KTableProcessorSupplier``)."""

    def enable_sending_old_values(self, force_materialization: bool) -> bool: ...

    def view(self) -> KTableValueGetterSupplier: ...


class KTableTransform:
    """A table derived value by value from ``parent``: subclasses give :meth:`compute_value`."""

    def __init__(self, parent: KTableParent, queryable_name: str | None = None) -> None:
        self.parent = parent
        self.queryable_name = queryable_name
        self.send_old_values = False

    def compute_value(self, key: Any, value: Any) -> Any:
        raise NotImplementedError

    def compute_value_and_timestamp(
        self, key: Any, value_and_timestamp: ValueAndTimestamp[Any] | None
    ) -> ValueAndTimestamp[Any] | None:
        raise NotImplementedError

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """Own store: always; else only if the parent can send them."""
        if self.queryable_name is not None:
            self.send_old_values = True
            return True
        if self.parent.enable_sending_old_values(force_materialization):
            self.send_old_values = True
        return self.send_old_values

    def view(self) -> KTableValueGetterSupplier:
        if self.queryable_name is not None:
            return TimestampedStoreGetterSupplier(self.queryable_name)
        return _DerivedGetterSupplier(self, self.parent.view())

    def __call__(self) -> KTableTransformProcessor:
        return KTableTransformProcessor(self)


class KTableTransformProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableTransform) -> None:
        self.s = supplier
        self.store: TimestampedKeyValueStore[Any, Any] | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.s.queryable_name is not None:
            store = context.get_state_store(self.s.queryable_name)
            assert isinstance(store, TimestampedKeyValueStore), f"{self.s.queryable_name} is not a timestamped store"
            self.store = store

    def key_locality(self) -> KeyLocality:
        """A materialized filter or mapValues reads and writes its store at the record's key (an unmaterialized
        one reads nothing); what it forwards may depend on the old value (a filter's "both filtered out")."""
        return KeyLocality.stateful()

    def skip(self, new_value: Any, old_value: Any) -> bool:
        """Whether an update need not be forwarded (the filter's "both sides filtered out")."""
        return False

    def process(self, record: Record[Any, Change[Any]]) -> None:
        s = self.s
        change = record.value
        new = s.compute_value(record.key, change.new_value)
        old = None
        if s.send_old_values:
            if self.store is not None:
                old = value_or_none(self.store.get(record.key))
            else:
                old = s.compute_value(record.key, change.old_value)
        if self.skip(new, old):
            return
        if self.store is not None:
            self.store.put(record.key, ValueAndTimestamp.make(new, record.timestamp))
            forward_change(self.context(), record.with_value(Change(new, old)), s.send_old_values)
        else:
            self.context().forward(record.with_value(Change(new, old, change.is_latest)))


class _DerivedGetter:
    def __init__(self, transform: KTableTransform, parent: Any) -> None:
        self.transform = transform
        self.parent = parent

    def init(self, context: ProcessorContext) -> None:
        self.parent.init(context)

    def get(self, key: Any) -> ValueAndTimestamp[Any] | None:
        return self.transform.compute_value_and_timestamp(key, self.parent.get(key))

    def close(self) -> None:
        self.parent.close()


class _DerivedGetterSupplier:
    """A derived table's getter: the parent's value, transformed on read (the table is not materialized)."""

    def __init__(self, transform: KTableTransform, parent: KTableValueGetterSupplier) -> None:
        self.transform = transform
        self.parent = parent

    def __call__(self) -> _DerivedGetter:
        return _DerivedGetter(self.transform, self.parent())

    def store_names(self) -> tuple[str, ...]:
        return self.parent.store_names()
