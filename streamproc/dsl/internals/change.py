"""A KTable update as it travels between the DSL's processors (``kstream.internals.Change``).

A KTable processor forwards the new value and, when a downstream processor asked for it (``enableSendingOldValues``),
the value it replaces: an aggregation that subtracts the old value and adds the new one needs both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from streamproc.engine.slotted_init import fast_frozen_init

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Change(Generic[V]):
    """``new_value``/``old_value`` are None for "absent" (a tombstone or no earlier value); ``is_latest`` is Kafka's
    flag for the versioned-store case, True for every update a plain KTable sends."""

    new_value: V | None
    old_value: V | None
    is_latest: bool = True


fast_frozen_init(Change)  # built for every KTable update (an aggregation's every record)
