"""murmur2 and the default partitioner: their own rules.

Their values are compared with kafka-clients 4.2.2 computing them at test time, on Kafka's own vectors and seeded
keys of every serializer: ``tests/integration/conformance/test_reference_partitioner.py``.
"""

from __future__ import annotations

import pytest

from streamproc.engine.partitioner import (
    UNKNOWN_PARTITION,
    DefaultStreamPartitioner,
    default_partition,
    murmur2,
    partition_for_key,
    to_positive,
)


def test_murmur2_result_is_a_signed_java_int() -> None:
    for data in (b"", b"x" * 1000, bytes(range(256))):
        assert -(1 << 31) <= murmur2(data) < (1 << 31)


def test_to_positive_clears_the_sign_bit_not_abs() -> None:
    assert to_positive(-(1 << 31)) == 0
    assert to_positive(-1) == 2147483647
    assert to_positive(5) == 5


def test_null_key_is_left_to_the_producer() -> None:
    assert default_partition(None, 4) == UNKNOWN_PARTITION
    assert default_partition(b"", 4) == partition_for_key(b"", 4)


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        partition_for_key(b"a", 0)


def test_default_stream_partitioner_serializes_then_hashes() -> None:
    partitioner = DefaultStreamPartitioner(lambda topic, key: None if key is None else str(key).encode("utf-8"))
    assert partitioner.partitions("t", "hello", "v", 6) == frozenset({partition_for_key(b"hello", 6)})
    assert partitioner.partitions("t", None, "v", 6) is None


def test_compiled_murmur2_and_partition_equal_the_reference_on_many_keys() -> None:
    """One rule, two implementations: the kernel's C murmur2 against the Python definition, every length mod 4,
    bytes with the high bit set (Java's signed bytes), and the partition for several counts."""
    import random

    from streamproc.engine.partitioner import _bulk_kernel, murmur2_reference, partition_for_key_reference

    assert _bulk_kernel is not None, "the compiled kernel is not built: make install builds it"
    rng = random.Random(17)
    keys = [b"", b"\xff", b"\x80\x00\x7f", b"key-00042", *(bytes(range(n)) for n in range(1, 260, 7))]
    keys += [rng.randbytes(rng.randrange(0, 300)) for _ in range(20_000)]
    for key in keys:
        assert _bulk_kernel.murmur2(key) == murmur2_reference(key), key
        for count in (1, 3, 8, 32, 2**31 - 1):
            assert _bulk_kernel.partition_for_key(key, count) == partition_for_key_reference(key, count), key
    assert murmur2 is _bulk_kernel.murmur2 and partition_for_key is _bulk_kernel.partition_for_key
    with pytest.raises(ValueError, match="positive"):
        _bulk_kernel.partition_for_key(b"a", 0)
