"""``KTableRepartitionMap``: ``KTable.groupBy``'s re-keying, before the repartition topic of a table aggregation.

Each update maps the old and the new row through the selector. When both map to the same new key, one
``Change(new, old)`` goes to that key; otherwise the old row is subtracted under its key (``Change(None, old)``)
and then the new row added under its own (``Change(new, None)``). A pair with a null key or value is not sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.records import Record
from streamproc.errors import ProcessingError

#: ``KeyValueMapper.apply(key, value) -> (new key, new value)``; ``None`` for no pair.
KeyValueMapper = Callable[[Any, Any], tuple[Any, Any] | None]


def _usable(pair: tuple[Any, Any] | None) -> bool:
    return pair is not None and pair[0] is not None and pair[1] is not None


class KTableRepartitionMapProcessor(ContextualProcessor):
    def __init__(self, mapper: KeyValueMapper) -> None:
        self.mapper = mapper

    def key_locality(self) -> KeyLocality:
        """The grouping's new key goes to the repartition topic: the next sub-topology's key, not this one's."""
        return KeyLocality.per_record(changes_key=True)

    def process(self, record: Record[Any, Change[Any]]) -> None:
        if record.key is None:
            raise ProcessingError("Record key for the grouping KTable should not be null.")
        change = record.value
        new_pair = None if change.new_value is None else self.mapper(record.key, change.new_value)
        old_pair = None if change.old_value is None else self.mapper(record.key, change.old_value)
        latest = change.is_latest
        forward = self.context().forward
        if _usable(old_pair) and _usable(new_pair) and old_pair[0] == new_pair[0]:  # type: ignore[index]
            forward(record.with_key(old_pair[0]).with_value(Change(new_pair[1], old_pair[1], latest)))  # type: ignore[index]
            return
        if _usable(old_pair):
            forward(record.with_key(old_pair[0]).with_value(Change(None, old_pair[1], latest)))  # type: ignore[index]
        if _usable(new_pair):
            forward(record.with_key(new_pair[0]).with_value(Change(new_pair[1], None, latest)))  # type: ignore[index]


class KTableRepartitionMap:
    """``KTableRepartitionMap(parent, mapper)``: needs the parent's old values (asked for when built)."""

    def __init__(self, parent: Any, mapper: KeyValueMapper) -> None:
        self.parent = parent
        self.mapper = mapper

    def __call__(self) -> KTableRepartitionMapProcessor:
        return KTableRepartitionMapProcessor(self.mapper)

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """``KTableRepartitionMap`` always sends the old pair; the parent must give old values."""
        return bool(self.parent.enable_sending_old_values(True))
