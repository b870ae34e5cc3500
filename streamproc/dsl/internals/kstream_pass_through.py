"""``KStreamPassThrough``: forwards every record unchanged (``merge``, a join's ``KSTREAM-MERGE`` node)."""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.processor_support import ContextualProcessor
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.records import Record


class KStreamPassThroughProcessor(ContextualProcessor):
    def key_locality(self) -> KeyLocality:
        return KeyLocality.one_to_one()

    def process(self, record: Record[Any, Any]) -> None:
        self.context().forward(record)


class KStreamPassThrough:
    """The supplier."""

    def __call__(self) -> KStreamPassThroughProcessor:
        return KStreamPassThroughProcessor()
