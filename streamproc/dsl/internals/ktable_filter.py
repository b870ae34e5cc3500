"""``KTableFilter``: a table of the parent's rows that pass the predicate (``filter``) or fail it (``filterNot``).

A row that stops passing becomes a tombstone (``Change(None, old)``); an update that is a tombstone on both sides
is not forwarded when old values are sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.ktable_processor_support import KTableParent, KTableTransform, KTableTransformProcessor
from streamproc.state.stores import ValueAndTimestamp

Predicate = Callable[[Any, Any], bool]


class KTableFilterProcessor(KTableTransformProcessor):
    def skip(self, new_value: Any, old_value: Any) -> bool:
        return self.s.send_old_values and old_value is None and new_value is None


class KTableFilter(KTableTransform):
    """``KTableFilter(parent, predicate, filterNot, queryableName)``."""

    def __init__(
        self, parent: KTableParent, predicate: Predicate, filter_not: bool, queryable_name: str | None = None
    ) -> None:
        super().__init__(parent, queryable_name)
        self.predicate = predicate
        self.filter_not = filter_not

    def compute_value(self, key: Any, value: Any) -> Any:
        if value is not None and (self.filter_not ^ bool(self.predicate(key, value))):
            return value
        return None

    def compute_value_and_timestamp(
        self, key: Any, value_and_timestamp: ValueAndTimestamp[Any] | None
    ) -> ValueAndTimestamp[Any] | None:
        if value_and_timestamp is not None and (self.filter_not ^ bool(self.predicate(key, value_and_timestamp.value))):
            return value_and_timestamp
        return None

    def __call__(self) -> KTableFilterProcessor:
        return KTableFilterProcessor(self)
