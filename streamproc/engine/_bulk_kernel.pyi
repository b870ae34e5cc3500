"""Types of the compiled replay loop (``_bulk_kernel.c``); ``bulk_replay._BulkLoop._steps`` is its only caller."""

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
    /,
) -> int:
    """Run the bulk replay loop from the given state; returns the number of steps (``out``: steps, last index)."""
