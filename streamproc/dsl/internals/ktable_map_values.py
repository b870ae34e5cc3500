"""``KTableMapValues``: a table of the parent's rows with each value mapped (``mapValues``); a tombstone stays one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.ktable_processor_support import KTableParent, KTableTransform
from streamproc.state.stores import ValueAndTimestamp

#: ``ValueMapperWithKey.apply(key, value)``.
ValueMapperWithKey = Callable[[Any, Any], Any]


class KTableMapValues(KTableTransform):
    """``KTableMapValues(parent, mapper, queryableName)``."""

    def __init__(self, parent: KTableParent, mapper: ValueMapperWithKey, queryable_name: str | None = None) -> None:
        super().__init__(parent, queryable_name)
        self.mapper = mapper

    def compute_value(self, key: Any, value: Any) -> Any:
        return None if value is None else self.mapper(key, value)

    def compute_value_and_timestamp(
        self, key: Any, value_and_timestamp: ValueAndTimestamp[Any] | None
    ) -> ValueAndTimestamp[Any] | None:
        if value_and_timestamp is None:
            return ValueAndTimestamp.make(None, 0)
        return ValueAndTimestamp.make(self.mapper(key, value_and_timestamp.value), value_and_timestamp.timestamp)
