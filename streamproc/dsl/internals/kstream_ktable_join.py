"""``KStreamKTableJoin``: each stream record joined with the table's current value of its key (inner or left).

Only stream records trigger output; a table update changes what later stream records see. A stream record with a
null key (or null value) is skipped as dropped, except that a left join still emits a null-key record joined with
null (Kafka Streams 3.7+). The result keeps the stream record's timestamp. A ``key_mapper`` (the global-table join)
maps the stream record to the table key; ``None`` from it finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.processor_support import (
    ContextualProcessor,
    KTableValueGetter,
    KTableValueGetterSupplier,
    ValueJoinerWithKey,
    record_dropped,
    value_or_none,
)
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record

KeyValueMapper = Callable[[Any, Any], Any]


def _same_key(key: Any, value: Any) -> Any:
    return key


class KStreamKTableJoinProcessor(ContextualProcessor):
    def __init__(self, supplier: KStreamKTableJoin) -> None:
        self.s = supplier
        self.getter: KTableValueGetter = supplier.value_getter_supplier()

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.getter.init(context)

    def key_locality(self) -> KeyLocality:
        """Reads the table at the stream record's key; a global-table join reads at ``key_mapper``'s key, but a
        global store is a constant of the run, not task state (``engine/key_locality.py``)."""
        return KeyLocality.stateful()

    def process(self, record: Record[Any, Any]) -> None:
        s = self.s
        table_key = s.key_mapper(record.key, record.value)
        keep_null_key = s.left_join and record.key is None and record.value is not None
        if not keep_null_key and (table_key is None or record.value is None):
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null join key or value.")
            return
        other = None if table_key is None else value_or_none(self.getter.get(table_key))
        if s.left_join or other is not None:
            self.context().forward(record.with_value(s.joiner(record.key, record.value, other)))

    def close(self) -> None:
        self.getter.close()


class KStreamKTableJoin:
    """``KStreamKTableJoin(valueGetterSupplier, joiner, leftJoin, gracePeriod=empty, storeName=empty)``."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        joiner: ValueJoinerWithKey,
        left_join: bool,
        key_mapper: KeyValueMapper = _same_key,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.joiner = joiner
        self.left_join = left_join
        self.key_mapper = key_mapper

    def __call__(self) -> KStreamKTableJoinProcessor:
        return KStreamKTableJoinProcessor(self)
