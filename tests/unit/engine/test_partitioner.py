"""Kafka's murmur2 and default partitioner, against Kafka's own vectors and values computed with kafka-clients 4.2.0."""

from __future__ import annotations

import struct

import pytest

from streamproc.engine.partitioner import (
    UNKNOWN_PARTITION,
    DefaultStreamPartitioner,
    default_partition,
    murmur2,
    partition_for_key,
    to_positive,
)

# org.apache.kafka.common.utils.UtilsTest#testMurmur2
UTILS_TEST_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# Printed by a Java program calling Utils.murmur2 and BuiltInPartitioner.partitionForKey (kafka-clients 4.2.0)
# on StringSerializer bytes: key, murmur2, partition for 3, 6 and 12 partitions.
JAVA_STRING_KEYS = [
    ("", 275646681, 0, 3, 9),
    ("a", -1563381124, 1, 4, 4),
    ("ab", 316155434, 2, 2, 2),
    ("abcd", -1323649548, 2, 2, 8),
    ("hello", 2132663229, 0, 3, 9),
    ("order-42", 501153024, 0, 0, 0),
    ("user-1", 1404122828, 2, 2, 8),
    ("käse", -1070276755, 1, 1, 1),
    ("été", -2101193575, 1, 1, 1),
    ("a-little-bit-longer-string", -1486304829, 2, 5, 11),
]

# LongSerializer keys: value, murmur2, partition for 3 and 7 partitions (same Java program).
JAVA_LONG_KEYS = [
    (0, -522759933, 2, 6),
    (1, 2100486060, 0, 1),
    (-1, 185950397, 2, 3),
    (42, 506863552, 1, 6),
    (1234567890123, 154523340, 0, 6),
    (-(1 << 63), 1290709624, 1, 1),
]

JAVA_INT_KEYS = [(0, 850957120, 1, 6), (1, -173113808, 0, 2), (-1, 644171429, 2, 6), (7, -1028359445, 0, 1)]


@pytest.mark.parametrize(("data", "expected"), UTILS_TEST_VECTORS)
def test_murmur2_matches_kafka_utils_test(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("key", "hashed", "p3", "p6", "p12"), JAVA_STRING_KEYS)
def test_string_keys_match_java(key: str, hashed: int, p3: int, p6: int, p12: int) -> None:
    data = key.encode("utf-8")
    assert murmur2(data) == hashed
    assert [partition_for_key(data, n) for n in (3, 6, 12)] == [p3, p6, p12]


@pytest.mark.parametrize(("value", "hashed", "p3", "p7"), JAVA_LONG_KEYS)
def test_long_keys_match_java(value: int, hashed: int, p3: int, p7: int) -> None:
    data = struct.pack(">q", value)
    assert murmur2(data) == hashed
    assert (partition_for_key(data, 3), partition_for_key(data, 7)) == (p3, p7)


@pytest.mark.parametrize(("value", "hashed", "p3", "p7"), JAVA_INT_KEYS)
def test_int_keys_match_java(value: int, hashed: int, p3: int, p7: int) -> None:
    data = struct.pack(">i", value)
    assert murmur2(data) == hashed
    assert (partition_for_key(data, 3), partition_for_key(data, 7)) == (p3, p7)


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
    assert partitioner.partitions("t", "hello", "v", 6) == frozenset({3})
    assert partitioner.partitions("t", None, "v", 6) is None
