"""Changelog records reduced to the last value per changelog key, as Kafka Streams' record cache would send them.

A store's changelog key already holds everything that identifies the store entry (a window store's key carries the
window start and sequence number, a session store's the session window), so the last record per key bytes restores
exactly the same state; a tombstone stays (it deletes the key from a changelog that held it before the run). The
surviving records keep their relative order (the order of their last writes), so a restore's write order matches.

The hand-off publishes a changelog reduced so (``handoff/publish.py``); a split task's merge applies the other
shards' changelog records to shard 0's stores reduced so (``spark/shard_merge.py``): for the key-value stores it
merges, a store restored from the last write of each key holds what a restore of every write would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc


class _Keyed(Protocol):
    @property
    def key(self) -> bytes | None: ...


T = TypeVar("T")
K = TypeVar("K", bound=_Keyed)


def last_per_key(items: Iterable[T], key: Callable[[T], bytes | None]) -> list[T]:
    """The last item of each ``key(item)`` (changelog keys are never null), in the order of those last writes."""
    last: dict[bytes | None, T] = {}
    for item in items:
        k = key(item)
        last.pop(k, None)  # re-inserting moves the key to the end: dicts keep insertion order
        last[k] = item
    return list(last.values())


def last_value_per_key(records: Iterable[K]) -> list[K]:
    """The last record of each key, in the order of those last writes (:func:`last_per_key` on records)."""
    return last_per_key(records, attrgetter("key"))


def last_write_per_key(table: pa.Table) -> pa.Table:
    """:func:`last_per_key` over a table with a ``key`` column, in Arrow's hash aggregation instead of a Python
    loop (the reduction was a quarter of a 1 M record hand-off's CPU): the rows of each key's last write, in the
    order of those last writes."""
    if table.num_rows == 0:
        return table
    rows = pa.table({"key": table.column("key"), "row": pa.array(range(table.num_rows), pa.int64())})
    last = rows.group_by("key", use_threads=False).aggregate([("row", "max")]).column("row_max")
    return table.take(pc.take(last, pc.sort_indices(last)))
