"""Iteration order of ``java.util.HashMap``, to reproduce files and metadata Kafka Streams writes byte for byte.

Kafka Streams writes a ``.checkpoint`` file (``OffsetCheckpoint.write``) and the processor metadata of the commit
metadata (``ProcessorMetadata.serialize``) by iterating a ``HashMap``. Readers never depend on that order, but a
writer that wants byte-identical output must emulate it (state.md §2.1). OpenJDK's ``HashMap`` (unchanged from
JDK 8 to 25): bucket index ``(h ^ (h >>> 16)) & (capacity - 1)``, buckets iterated in ascending index, entries of a
bucket in insertion order; the table doubles when ``++size > threshold`` (``threshold = (int) (capacity * 0.75)``),
and a bucket that reaches 9 entries while the table is smaller than 64 also doubles it (``treeifyBin``). Splitting
buckets on resize keeps the relative order, so the final order is (bucket in the final table, insertion index).
Not emulated: the order inside a *treeified* bucket (9+ colliding keys in a table of 64+ buckets), where Java moves
the tree root to the front; such a map is logged and returned in plain bucket order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from streamproc.engine.records import TopicPartition

LOG = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

#: ``HashMap.DEFAULT_INITIAL_CAPACITY``.
DEFAULT_INITIAL_CAPACITY = 16
#: ``HashMap.DEFAULT_LOAD_FACTOR``.
DEFAULT_LOAD_FACTOR = 0.75
#: ``HashMap.TREEIFY_THRESHOLD``.
TREEIFY_THRESHOLD = 8
#: ``HashMap.MIN_TREEIFY_CAPACITY``.
MIN_TREEIFY_CAPACITY = 64
#: ``HashMap.MAXIMUM_CAPACITY``.
MAXIMUM_CAPACITY = 1 << 30

_INT_MASK = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap ``value`` to a Java ``int`` (32-bit two's complement)."""
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a Java ``int``."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _INT_MASK
    return to_int32(h)


def topic_partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()`` as a Java ``int``."""
    return to_int32(31 * (31 + tp.partition) + java_string_hash(tp.topic))


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``capacity`` (at least 1)."""
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), MAXIMUM_CAPACITY)


def _spread(h: int) -> int:
    h &= _INT_MASK
    return h ^ (h >> 16)


def hash_map_order(
    keys: Iterable[K],
    hash_code: Callable[[K], int],
    *,
    initial_capacity: int | None = None,
) -> list[K]:
    """The iteration order of a ``HashMap`` after ``put``-ting ``keys`` in this order.

    ``initial_capacity`` is the argument of ``new HashMap<>(n)`` (``None`` for ``new HashMap<>()``). A key put twice
    keeps its first position, as ``put`` replaces the value in place.
    """
    capacity = DEFAULT_INITIAL_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
    buckets: list[list[tuple[int, K]]] = [[] for _ in range(capacity)]
    seen: set[K] = set()
    treeified = False

    def resize() -> None:
        nonlocal buckets, capacity
        if capacity >= MAXIMUM_CAPACITY:
            return
        capacity <<= 1
        new_buckets: list[list[tuple[int, K]]] = [[] for _ in range(capacity)]
        for bucket in buckets:
            for spread, key in bucket:
                new_buckets[spread & (capacity - 1)].append((spread, key))
        buckets = new_buckets

    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        spread = _spread(hash_code(key))
        bucket = buckets[spread & (capacity - 1)]
        bucket.append((spread, key))
        if len(bucket) > TREEIFY_THRESHOLD:
            if capacity < MIN_TREEIFY_CAPACITY:
                resize()
            else:
                treeified = True
        if len(seen) > int(capacity * DEFAULT_LOAD_FACTOR):
            resize()
    if treeified:
        LOG.warning("HashMap order emulation: a bucket was treeified; the order inside it may differ from Java")
    return [key for bucket in buckets for _, key in bucket]


def topic_partition_map_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Iteration order of a ``new HashMap<TopicPartition, ?>()`` filled in the given order (state.md §2.1)."""
    return hash_map_order(partitions, topic_partition_hash)


def string_map_order(keys: Iterable[str], *, initial_capacity: int | None = None) -> list[str]:
    """Iteration order of a ``HashMap<String, ?>`` filled in the given order."""
    return hash_map_order(keys, java_string_hash, initial_capacity=initial_capacity)
