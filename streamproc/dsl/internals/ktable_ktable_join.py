"""``KTableKTableInnerJoin``, ``LeftJoin``, ``RightJoin``, ``OuterJoin`` and ``KTableKTableJoinMerger``: a join of two
tables, one processor per side, each looking the key up in the other table's value getter.

An update on either side emits the joined row with timestamp ``max(this, other)`` (or this side's when the other
has no row): ``inner`` only when the other side has a row, ``left``/``outer`` also with a null partner (a row whose
new and old value are both absent is not emitted). The right side of a ``left`` join (``RightJoin``) emits only when
the left table has a row, joined as (left row, right update). ``joiner`` always takes the left table's value first;
the merger passes both sides' updates on (or keeps the result in its store when the join is materialized).

Wiring (``KTableImpl#doJoin``): both tables are materialized (each side reads the other's getter), and for a left
join the left table, for an outer join both tables, must send old values
(``enable_sending_old_values(True)``): a delete of a row that had no partner is then still seen as a change.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    ContextualProcessor,
    KTableValueGetter,
    KTableValueGetterSupplier,
    forward_change,
    record_dropped,
    value_or_none,
)
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import TimestampedKeyValueStore, ValueAndTimestamp

#: ``ValueJoiner.apply(leftValue, rightValue)``.
ValueJoiner = Callable[[Any, Any], Any]


class JoinKind(Enum):
    """Which of Kafka's four join processors a side is."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    OUTER = "outer"


class KTableKTableJoinProcessor(ContextualProcessor):
    def __init__(self, supplier: KTableKTableJoin) -> None:
        self.s = supplier
        self.getter: KTableValueGetter = supplier.other_view()

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.getter.init(context)

    def key_locality(self) -> KeyLocality:
        """A primary-key join: reads the other table at the record's key only."""
        return KeyLocality.stateful()

    def _join(self, this_value: Any, other_value: Any) -> Any:
        if self.s.this_is_left:
            return self.s.joiner(this_value, other_value)
        return self.s.joiner(other_value, this_value)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key.")
            return
        kind = self.s.kind
        change = record.value
        other_and_ts = self.getter.get(record.key)
        other = value_or_none(other_and_ts)
        send_old = self.s.send_old_values
        new = old = None
        if kind in (JoinKind.INNER, JoinKind.RIGHT):
            if other is None or other_and_ts is None:
                return
            timestamp = max(record.timestamp, other_and_ts.timestamp)
            if kind is JoinKind.RIGHT or change.new_value is not None:
                new = self._join(change.new_value, other)
            if send_old and (kind is JoinKind.RIGHT or change.old_value is not None):
                old = self._join(change.old_value, other)
        else:
            if other is None or other_and_ts is None:
                if change.new_value is None and change.old_value is None:
                    return
                timestamp = record.timestamp
            else:
                timestamp = max(record.timestamp, other_and_ts.timestamp)
            partner = other is not None if kind is JoinKind.OUTER else False
            if partner or change.new_value is not None:
                new = self._join(change.new_value, other)
            if send_old and (partner or change.old_value is not None):
                old = self._join(change.old_value, other)
        self.context().forward(record.with_value(Change(new, old, change.is_latest)).with_timestamp(timestamp))

    def close(self) -> None:
        self.getter.close()


class KTableKTableJoin:
    """One side of a table-table join: ``kind`` of this side, the other table's getter (``other_getters``), the
    joiner (left value first; ``this_is_left`` says which side this is)."""

    def __init__(
        self,
        kind: JoinKind,
        other_getters: KTableValueGetterSupplier,
        joiner: ValueJoiner,
        *,
        this_is_left: bool,
    ) -> None:
        self.kind = kind
        self.other_getters = other_getters
        self.joiner = joiner
        self.this_is_left = this_is_left
        self.send_old_values = False

    def other_view(self) -> KTableValueGetter:
        return self.other_getters()

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        self.send_old_values = True
        return True

    def __call__(self) -> KTableKTableJoinProcessor:
        return KTableKTableJoinProcessor(self)


class KTableKTableJoinMergerProcessor(ContextualProcessor):
    def __init__(self, queryable_name: str | None, send_old_values: bool) -> None:
        self.queryable_name = queryable_name
        self.send_old_values = send_old_values
        self.store: TimestampedKeyValueStore[Any, Any] | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.queryable_name is not None:
            store = context.get_state_store(self.queryable_name)
            assert isinstance(store, TimestampedKeyValueStore), f"{self.queryable_name} is not a timestamped store"
            self.store = store

    def key_locality(self) -> KeyLocality:
        """Puts the join's result at the record's key."""
        return KeyLocality.stateful()

    def process(self, record: Record[Any, Change[Any]]) -> None:
        change = record.value
        if self.store is not None:
            self.store.put(record.key, ValueAndTimestamp.make(change.new_value, record.timestamp))
        forward_change(self.context(), record, self.send_old_values)


class KTableKTableJoinMerger:
    """``KTableKTableJoinMerger(parent1, parent2, queryableName)``: the join's result node."""

    def __init__(self, queryable_name: str | None = None) -> None:
        self.queryable_name = queryable_name
        self.send_old_values = False

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        self.send_old_values = True
        return True

    def __call__(self) -> KTableKTableJoinMergerProcessor:
        return KTableKTableJoinMergerProcessor(self.queryable_name, self.send_old_values)
