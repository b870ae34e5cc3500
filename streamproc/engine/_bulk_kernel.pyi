"""Types of the compiled kernel (``_bulk_kernel.c``): the replay loop, murmur2, slotted objects from columns."""

from typing import Any

def steps(
    loop: Any,
    heap: list[int],
    keys: list[int],
    heads: list[Any],
    partition_times: list[int],
    consumed: dict[int, int],
    statics: list[Any],
    task: Any,
    group: Any,
    context: Any,
    record_type: type,
    now: int,
    due: int,
    schedules_seen: int,
    unknown: int,
    out: list[int],
    record_slots: tuple[object, ...] | None,
    raw_fields: tuple[type, tuple[object, ...]] | None,
    shard_skip: tuple[dict[Any, int], int] | None,
    /,
) -> int:
    """Run the bulk replay loop from the given state; returns the number of steps (``out``: steps, last index)."""

def murmur2(data: bytes, /) -> int:
    """``Utils.murmur2`` as a signed Java int (reference: ``partitioner.murmur2_reference``)."""

def partition_for_key(key: bytes, num_partitions: int, /) -> int:
    """``toPositive(murmur2(key)) % num_partitions``; ``ValueError`` for a count below 1."""

def build_slotted(type_: type, descriptors: tuple[object, ...], columns: tuple[list[Any], ...], /) -> list[Any]:
    """One ``type_`` instance per row, each field stored through its slot descriptor (``fast_frozen_init``)."""

class SlottedInit:
    """A compiled ``__init__`` storing its arguments through slot descriptors (``fast_frozen_init``)."""

    def __init__(
        self, descriptors: tuple[object, ...], names: tuple[str, ...], defaults: tuple[object, ...], /
    ) -> None: ...
    def __call__(self, instance: object, /, *args: Any, **kwargs: Any) -> None: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Any: ...
