"""Serdes: bytes in Kafka's formats, null handling, errors.

How the String serdes treat malformed UTF-8 and unpaired surrogates is compared with kafka-clients 4.2.2 at test
time on seeded inputs: ``tests/integration/conformance/test_reference_strings.py``.
"""

from __future__ import annotations

import math
import struct
import uuid
from typing import Any

import pytest

from streamproc.engine.serdes import (
    SERDES,
    BooleanDeserializer,
    BooleanSerializer,
    ByteArrayDeserializer,
    ByteArraySerializer,
    Deserializer,
    DoubleDeserializer,
    DoubleSerializer,
    FloatDeserializer,
    FloatSerializer,
    IntegerDeserializer,
    IntegerSerializer,
    JsonDeserializer,
    JsonSerializer,
    LongDeserializer,
    LongSerializer,
    SerializationException,
    Serializer,
    ShortDeserializer,
    ShortSerializer,
    StringDeserializer,
    StringSerializer,
    UUIDDeserializer,
    UUIDSerializer,
    VoidDeserializer,
    VoidSerializer,
    serde_for,
)
from streamproc.errors import ConfigError

CASES: list[tuple[Serializer[Any], Deserializer[Any], Any, str]] = [
    (StringSerializer(), StringDeserializer(), "käse", "6bc3a47365"),
    (LongSerializer(), LongDeserializer(), 1, "0000000000000001"),
    (LongSerializer(), LongDeserializer(), -2, "fffffffffffffffe"),
    (IntegerSerializer(), IntegerDeserializer(), 258, "00000102"),
    (IntegerSerializer(), IntegerDeserializer(), -1, "ffffffff"),
    (ShortSerializer(), ShortDeserializer(), -2, "fffe"),
    (FloatSerializer(), FloatDeserializer(), -2.25, "c0100000"),
    (DoubleSerializer(), DoubleDeserializer(), 1.5, "3ff8000000000000"),
    (BooleanSerializer(), BooleanDeserializer(), True, "01"),
    (BooleanSerializer(), BooleanDeserializer(), False, "00"),
    (ByteArraySerializer(), ByteArrayDeserializer(), b"\x00\xff", "00ff"),
    (
        UUIDSerializer(),
        UUIDDeserializer(),
        uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
        b"123e4567-e89b-12d3-a456-426614174000".hex(),
    ),
    (JsonSerializer(), JsonDeserializer(), {"a": [1, "é"]}, '{"a":[1,"é"]}'.encode().hex()),
]


@pytest.mark.parametrize(("ser", "de", "value", "hex_bytes"), CASES)
def test_round_trip_and_exact_bytes(ser: Serializer[Any], de: Deserializer[Any], value: Any, hex_bytes: str) -> None:
    data = ser.serialize("t", value)
    assert data is not None and data.hex() == hex_bytes
    assert de.deserialize("t", data) == value


@pytest.mark.parametrize(("ser", "de", "value", "hex_bytes"), CASES)
def test_null_in_null_out(ser: Serializer[Any], de: Deserializer[Any], value: Any, hex_bytes: str) -> None:
    assert ser.serialize("t", None) is None
    assert de.deserialize("t", None) is None


@pytest.mark.parametrize(
    ("de", "data", "message"),
    [
        (LongDeserializer(), b"\x00" * 7, "Size of data received by LongDeserializer is not 8"),
        (IntegerDeserializer(), b"\x00" * 5, "Size of data received by IntegerDeserializer is not 4"),
        (ShortDeserializer(), b"\x00", "Size of data received by ShortDeserializer is not 2"),
        (FloatDeserializer(), b"\x00", "Size of data received by Deserializer is not 4"),
        (DoubleDeserializer(), b"\x00", "Size of data received by Deserializer is not 8"),
        (BooleanDeserializer(), b"", "Size of data received by BooleanDeserializer is not 1"),
        (BooleanDeserializer(), b"\xff", "Unexpected byte received by BooleanDeserializer: -1"),
        (UUIDDeserializer(), b"not-a-uuid", "Error parsing data into UUID"),
        (VoidDeserializer(), b"", "Data should be null for a VoidDeserializer."),
    ],
)
def test_kafka_error_messages(de: Deserializer[Any], data: bytes, message: str) -> None:
    with pytest.raises(SerializationException) as info:
        de.deserialize("t", data)
    assert str(info.value) == message


def test_nan_is_canonical_as_in_java() -> None:
    nan_with_payload = struct.unpack(">d", bytes.fromhex("7ff8000000000001"))[0]
    assert math.isnan(nan_with_payload)
    assert DoubleSerializer().serialize("t", nan_with_payload) == bytes.fromhex("7ff8000000000000")
    assert FloatSerializer().serialize("t", math.nan) == bytes.fromhex("7fc00000")


def test_out_of_range_integers_are_refused() -> None:
    with pytest.raises(SerializationException, match="Java int"):
        IntegerSerializer().serialize("t", 1 << 31)
    with pytest.raises(SerializationException, match="Java long"):
        LongSerializer().serialize("t", 1 << 63)


def test_uuid_accepts_java_short_groups() -> None:
    assert UUIDDeserializer().deserialize("t", b"1-2-3-4-5") == uuid.UUID("00000001-0002-0003-0004-000000000005")


def test_void_serializer_is_always_null() -> None:
    assert VoidSerializer().serialize("t", None) is None


def test_serde_lookup_by_kafka_name() -> None:
    serde = serde_for("Long")
    assert serde.serializer.serialize("t", 7) == bytes.fromhex("0000000000000007")
    assert set(SERDES) >= {"String", "Long", "Integer", "Double", "UUID", "Void", "Boolean", "ByteArray", "Bytes"}
    with pytest.raises(ConfigError, match="unknown serde"):
        serde_for("Avro")
