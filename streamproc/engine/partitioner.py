"""Kafka's default key partitioning: ``Utils.murmur2``, ``Utils.toPositive`` and ``BuiltInPartitioner.partitionForKey``.

Records a sub-topology writes to a repartition topic must land in exactly the partition the live application's
producer would choose, or the downstream task of the batch would see different keys than the live one. Checked
against kafka-clients 4.2.0 (``org.apache.kafka.common.utils.Utils``,
``org.apache.kafka.clients.producer.internals.BuiltInPartitioner``) and kafka-streams 4.2.0
(``DefaultStreamPartitioner``, ``RecordCollectorImpl#send``).

Null keys. In Kafka Streams 4.2 a sink without a user ``StreamPartitioner`` passes no partitioner at all to
``RecordCollectorImpl#send``, which then sends with ``partition = null``; ``DefaultStreamPartitioner`` (used only
for metadata look-ups) returns ``Optional.empty()`` for a null serialized key, which also means "let the producer
decide". The producer then hashes the serialized key when it is not ``null`` (an empty key is hashed), and for a
``null`` key uses its sticky/adaptive partitioner, whose choice depends on batching and broker latency: it is not
reproducible. :func:`default_partition` therefore refuses to choose for a null key (``UNKNOWN_PARTITION``) and the
caller must decide (DSL repartition topics never see null keys: the repartition filter drops them).
"""

from __future__ import annotations

from collections.abc import Callable

try:
    from streamproc.engine import _bulk_kernel
except ImportError:  # not built (a source checkout without `make install`): the Python definitions below serve
    _bulk_kernel = None  # type: ignore[assignment]

#: ``RecordMetadata.UNKNOWN_PARTITION``: "the producer decides" (sticky partitioner for null keys).
UNKNOWN_PARTITION = -1

_MASK32 = 0xFFFFFFFF
_MURMUR2_SEED = 0x9747B28C
_MURMUR2_M = 0x5BD1E995
_MURMUR2_R = 24


def _to_int32(value: int) -> int:
    """Wrap ``value`` to a Java ``int`` (two's complement, 32 bits)."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2_reference(data: bytes) -> int:
    """``Utils.murmur2``: the 32-bit murmur2 hash of ``data`` as a signed Java ``int`` (the rule's definition).

    Java's ``>>>`` on an ``int`` is a logical shift of the 32-bit pattern, so all arithmetic is done on unsigned
    32-bit values and converted to signed at the end. The compiled kernel computes the same (``murmur2_bytes`` in
    ``_bulk_kernel.c``, ≈ 4 µs a key less, which is ~14 % of a pass-through task); ``tests/unit/engine/
    test_partitioner.py`` checks both equal on many keys, and this one is used when the kernel is not built.
    """
    length = len(data)
    h = (_MURMUR2_SEED ^ length) & _MASK32
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * _MURMUR2_M) & _MASK32
        k ^= k >> _MURMUR2_R
        k = (k * _MURMUR2_M) & _MASK32
        h = (h * _MURMUR2_M) & _MASK32
        h ^= k
    tail = length % 4
    base = length & ~3
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _MURMUR2_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR2_M) & _MASK32
    h ^= h >> 15
    return _to_int32(h)


def to_positive(number: int) -> int:
    """``Utils.toPositive``: clear the sign bit of a Java ``int`` (not ``abs``: ``MIN_VALUE`` maps to 0)."""
    return number & 0x7FFFFFFF


def partition_for_key_reference(serialized_key: bytes, num_partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % numPartitions``."""
    if num_partitions <= 0:
        raise ValueError(f"number of partitions must be positive, got {num_partitions}")
    return to_positive(murmur2_reference(serialized_key)) % num_partitions


#: ``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey``: compiled when the kernel is built, else the
#: reference definitions above (one rule, two implementations checked equal by the tests).
murmur2: Callable[[bytes], int] = murmur2_reference if _bulk_kernel is None else _bulk_kernel.murmur2
partition_for_key: Callable[[bytes, int], int] = (
    partition_for_key_reference if _bulk_kernel is None else _bulk_kernel.partition_for_key
)


def default_partition(serialized_key: bytes | None, num_partitions: int) -> int:
    """The partition Kafka Streams' default path (no user partitioner) sends a record to.

    Returns :data:`UNKNOWN_PARTITION` for a ``null`` serialized key: the producer's sticky partitioner would
    choose, which no batch job can reproduce (see the module docstring).
    """
    if serialized_key is None:
        return UNKNOWN_PARTITION
    return partition_for_key(serialized_key, num_partitions)


class DefaultStreamPartitioner:
    """``DefaultStreamPartitioner``: serialize the key, then ``partitionForKey``; ``None`` = "producer decides"."""

    __slots__ = ("_key_serializer",)

    def __init__(self, key_serializer: Callable[[str, object], bytes | None]) -> None:
        self._key_serializer = key_serializer

    def partitions(self, topic: str, key: object, value: object, num_partitions: int) -> frozenset[int] | None:
        """Mirror ``StreamPartitioner#partitions``: ``None`` is Java's ``Optional.empty()``."""
        key_bytes = self._key_serializer(topic, key)
        if key_bytes is None:
            return None
        return frozenset({partition_for_key(key_bytes, num_partitions)})
