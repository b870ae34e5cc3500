"""murmur2 and the default partitioner against kafka-clients 4.2.2, on Kafka's own vectors and seeded keys.

The oracle's ``reference`` mode serializes each key with Kafka's serializer (String, Long, Integer; raw bytes as
given), then answers ``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey`` for every partition count.
streamproc's serializers must give the same bytes, and its murmur2 and partitioner the same numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamproc.engine.partitioner import murmur2, murmur2_reference, partition_for_key, partition_for_key_reference
from streamproc.engine.serdes import IntegerSerializer, LongSerializer, StringSerializer
from streamproc_dev.conformance.reference import KAFKA_UTILS_TEST_KEYS, PARTITION_COUNTS, murmur2_keys

KEYS = murmur2_keys()
SERIALIZERS: dict[str, Any] = {"string": StringSerializer(), "long": LongSerializer(), "int": IntegerSerializer()}


def serialized(key: dict[str, Any]) -> bytes:
    if key["type"] == "bytes":
        return bytes.fromhex(key["value"])
    data: bytes = SERIALIZERS[key["type"]].serialize("t", key["value"])
    return data


def test_the_keys_cover_every_serializer_and_tail_length() -> None:
    assert {k["type"] for k in KEYS} == {"string", "long", "int", "bytes"}
    assert {len(serialized(k)) % 4 for k in KEYS} == {0, 1, 2, 3}
    assert any(len(k["value"].encode("utf-8")) > len(k["value"]) for k in KEYS if k["type"] == "string")
    assert [bytes.fromhex(k["value"]) for k in KEYS[: len(KAFKA_UTILS_TEST_KEYS)]] == list(KAFKA_UTILS_TEST_KEYS)


@pytest.mark.parametrize("index", range(len(KEYS)), ids=[f"{k['type']}{i}" for i, k in enumerate(KEYS)])
def test_serialized_bytes_murmur2_and_partitions_match_kafka(kafka_reference: dict[str, Any], index: int) -> None:
    java = kafka_reference["murmur2"][index]
    data = serialized(KEYS[index])
    assert data.hex() == java["serialized"]
    assert murmur2(data) == murmur2_reference(data) == java["murmur2"]  # compiled and the Python definition
    assert [partition_for_key(data, n) for n in PARTITION_COUNTS] == java["partitions"]
    assert [partition_for_key_reference(data, n) for n in PARTITION_COUNTS] == java["partitions"]
