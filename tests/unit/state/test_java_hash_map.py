"""``HashMap`` iteration order emulation; expected orders were produced by a real JVM (OpenJDK 17)."""

from __future__ import annotations

import logging

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.state.java_hash_map import (
    hash_map_order,
    java_string_hash,
    string_map_order,
    table_size_for,
    to_int32,
    topic_partition_hash,
    topic_partition_map_order,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 97), ("hello", 99162322), ("counts", -1354575548), ("ü😀", 2015071)],
)
def test_java_string_hash_matches_jvm(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_to_int32_wraps() -> None:
    assert to_int32(2**31) == -(2**31)
    assert to_int32(-1) == -1
    assert to_int32(2**32 + 5) == 5


def test_topic_partition_hash_formula() -> None:
    tp = TopicPartition("t", 3)
    assert topic_partition_hash(tp) == to_int32(31 * (31 + 3) + java_string_hash("t"))


def test_table_size_for() -> None:
    assert [table_size_for(n) for n in (0, 1, 2, 3, 16, 17)] == [1, 1, 2, 4, 16, 32]


def test_one_topic_four_partitions_reverse() -> None:
    keys = [TopicPartition("t", p) for p in range(4)]
    assert topic_partition_map_order(keys) == list(reversed(keys))


def test_thirteen_entries_resized_table_order() -> None:
    keys = [TopicPartition(f"app-s{i:02d}-changelog", 2) for i in range(13)]
    order = [int(tp.topic[5:7]) for tp in topic_partition_map_order(keys)]
    assert order == [5, 10, 7, 2, 6, 1, 9, 0, 8, 12, 3, 4, 11]


def test_bucket_of_nine_in_small_table_resizes_like_treeify_bin() -> None:
    # t-2, t-18, ... all land in bucket 3 of a 16-slot table; the 9th doubles the table (treeifyBin), as in Java.
    keys = [TopicPartition("t", p) for p in range(2, 179, 16)]
    expected = [18, 50, 82, 114, 146, 178, 2, 34, 66, 98, 130, 162]
    assert [tp.partition for tp in topic_partition_map_order(keys)] == expected


def test_treeified_bucket_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    keys = [TopicPartition("t", p) for p in range(48, 700, 64)]
    with caplog.at_level(logging.WARNING):
        topic_partition_map_order(keys)
    assert "treeified" in caplog.text


def test_repeated_key_keeps_first_position() -> None:
    assert hash_map_order([1, 17, 1], lambda k: k) == [1, 17]


def test_string_map_with_initial_capacity_matches_jvm() -> None:
    keys = ["counts", "zeta", "alpha", "w1", "w2", "w3", "KSTREAM-AGG-0001"]
    expected = ["zeta", "KSTREAM-AGG-0001", "counts", "alpha", "w1", "w2", "w3"]
    assert string_map_order(keys) == expected
    assert string_map_order(keys, initial_capacity=1) == expected
