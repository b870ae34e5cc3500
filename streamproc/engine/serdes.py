"""Serializers and deserializers whose bytes equal Kafka's own (``org.apache.kafka.common.serialization``, 4.2.0).

The bytes matter beyond this process: keys are hashed by the default partitioner (so a different encoding sends a
record to a different repartition partition), and changelog and output records are handed back to the live
application. Every serde maps ``None`` to ``None`` both ways, as Kafka's do (``VoidDeserializer`` excepted: it
rejects any non-null data). Size errors quote Kafka's ``SerializationException`` text, including its quirks
(``FloatDeserializer``/``DoubleDeserializer`` say "Deserializer" for ``byte[]`` input).

Kafka Streams has no JSON serde of its own; :class:`JsonSerde` writes compact UTF-8 JSON as Jackson's default
``ObjectMapper`` does (``org.apache.kafka.connect.json.JsonSerializer``): no spaces, non-ASCII kept as UTF-8.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streamproc.errors import ConfigError, StreamprocError

T = TypeVar("T")

_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: ``Float.floatToIntBits(NaN)`` / ``Double.doubleToLongBits(NaN)``: Java canonicalises every NaN.
_CANONICAL_FLOAT_NAN = bytes.fromhex("7fc00000")
_CANONICAL_DOUBLE_NAN = bytes.fromhex("7ff8000000000000")
_BOOLEAN_TRUE = 0x01
_BOOLEAN_FALSE = 0x00
# UUID.fromString: five '-'-separated hex groups, at most 36 characters.
_UUID_TEXT = re.compile(
    r"^([0-9a-fA-F]{1,8})-([0-9a-fA-F]{1,4})-([0-9a-fA-F]{1,4})-([0-9a-fA-F]{1,4})-([0-9a-fA-F]{1,12})$"
)


_JAVA_REPLACE = "streamproc.java-replace"


def _java_replace(error: UnicodeError) -> tuple[str, int]:
    """Decode errors as ``new String(bytes, UTF_8)`` does: one U+FFFD per maximal malformed subpart, except that
    Java takes ``ED A0..BF`` (the start of an encoded surrogate) as one malformed sequence with its next byte when
    that is a continuation byte (``ED A0..BF 80..BF``: one U+FFFD, Python gives three) and as one of two bytes
    otherwise (Python gives two U+FFFD); checked against kafka-clients' ``StringDeserializer`` on seeded inputs by
    ``tests/integration/conformance/test_reference_strings.py``."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    data, start = error.object, error.start
    if start + 1 < len(data) and data[start] == 0xED and 0xA0 <= data[start + 1] <= 0xBF:
        continued = start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF
        return "\ufffd", start + (3 if continued else 2)
    return "\ufffd", error.end


codecs.register_error(_JAVA_REPLACE, _java_replace)


class SerializationException(StreamprocError):
    """Kafka's ``SerializationException``: data cannot be (de)serialized; the message quotes Kafka's text."""


class Serializer(Generic[T]):
    """``Serializer<T>``: ``serialize(topic, data)``; ``None`` in gives ``None`` out."""

    def serialize(self, topic: str, data: T | None) -> bytes | None:
        raise NotImplementedError

    def __call__(self, topic: str, data: T | None) -> bytes | None:
        return self.serialize(topic, data)


class Deserializer(Generic[T]):
    """``Deserializer<T>``: ``deserialize(topic, data)``; ``None`` in gives ``None`` out."""

    def deserialize(self, topic: str, data: bytes | None) -> T | None:
        raise NotImplementedError

    def __call__(self, topic: str, data: bytes | None) -> T | None:
        return self.deserialize(topic, data)


def direct(function: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """The ``serialize``/``deserialize`` method a :class:`Serializer`/:class:`Deserializer` call goes to, else the
    callable itself: the same function without the ``__call__`` frame (per record, per field, on the hot path)."""
    call = type(function).__call__
    if call is Serializer.__call__:
        return function.serialize  # type: ignore[attr-defined,no-any-return]
    if call is Deserializer.__call__:
        return function.deserialize  # type: ignore[attr-defined,no-any-return]
    return function


def _check_range(value: int, bounds: tuple[int, int], java_type: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerializationException(f"{java_type}Serializer expects an int, got {type(value).__name__}")
    if not bounds[0] <= value <= bounds[1]:
        raise SerializationException(f"{value} does not fit in a Java {java_type.lower()} ({bounds[0]}..{bounds[1]})")


def _check_size(data: bytes, size: int, name: str) -> None:
    if len(data) != size:
        raise SerializationException(f"Size of data received by {name} is not {size}")


class StringSerializer(Serializer[str]):
    """``StringSerializer``: UTF-8; an unpaired surrogate becomes ``?`` as Java's encoder does."""

    def serialize(self, topic: str, data: str | None) -> bytes | None:
        return None if data is None else data.encode("utf-8", errors="replace")


class StringDeserializer(Deserializer[str]):
    """``StringDeserializer``: UTF-8; malformed input becomes U+FFFD as ``new String(bytes, UTF_8)`` does."""

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        return None if data is None else bytes(data).decode("utf-8", errors=_JAVA_REPLACE)


_LONG = struct.Struct(">q")


class LongSerializer(Serializer[int]):
    """``LongSerializer``: 8 bytes, big-endian two's complement."""

    def serialize(self, topic: str, data: int | None) -> bytes | None:
        if type(data) is int and _INT64[0] <= data <= _INT64[1]:  # the common case, without a call per check
            return _LONG.pack(data)
        if data is None:
            return None
        _check_range(data, _INT64, "Long")
        return _LONG.pack(data)


class LongDeserializer(Deserializer[int]):
    """``LongDeserializer``."""

    def deserialize(self, topic: str, data: bytes | None) -> int | None:
        if data is None:
            return None
        if len(data) != 8:
            _check_size(data, 8, "LongDeserializer")
        value: int = _LONG.unpack(data)[0]
        return value


class IntegerSerializer(Serializer[int]):
    """``IntegerSerializer``: 4 bytes, big-endian."""

    def serialize(self, topic: str, data: int | None) -> bytes | None:
        if data is None:
            return None
        _check_range(data, _INT32, "Integer")
        return struct.pack(">i", data)


class IntegerDeserializer(Deserializer[int]):
    """``IntegerDeserializer``."""

    def deserialize(self, topic: str, data: bytes | None) -> int | None:
        if data is None:
            return None
        _check_size(data, 4, "IntegerDeserializer")
        return int(struct.unpack(">i", data)[0])


class ShortSerializer(Serializer[int]):
    """``ShortSerializer``: 2 bytes, big-endian."""

    def serialize(self, topic: str, data: int | None) -> bytes | None:
        if data is None:
            return None
        _check_range(data, _INT16, "Short")
        return struct.pack(">h", data)


class ShortDeserializer(Deserializer[int]):
    """``ShortDeserializer``."""

    def deserialize(self, topic: str, data: bytes | None) -> int | None:
        if data is None:
            return None
        _check_size(data, 2, "ShortDeserializer")
        return int(struct.unpack(">h", data)[0])


class FloatSerializer(Serializer[float]):
    """``FloatSerializer``: IEEE-754 single precision via ``floatToRawIntBits`` (NaN canonical in practice)."""

    def serialize(self, topic: str, data: float | None) -> bytes | None:
        if data is None:
            return None
        if math.isnan(data):
            return _CANONICAL_FLOAT_NAN
        try:
            return struct.pack(">f", data)
        except OverflowError as exc:
            raise SerializationException(f"{data} does not fit in a Java float") from exc


class FloatDeserializer(Deserializer[float]):
    """``FloatDeserializer`` (its ``byte[]`` size message says "Deserializer", as Kafka's does)."""

    def deserialize(self, topic: str, data: bytes | None) -> float | None:
        if data is None:
            return None
        _check_size(data, 4, "Deserializer")
        return float(struct.unpack(">f", data)[0])


class DoubleSerializer(Serializer[float]):
    """``DoubleSerializer``: IEEE-754 double via ``doubleToLongBits`` (every NaN is ``7ff8000000000000``)."""

    def serialize(self, topic: str, data: float | None) -> bytes | None:
        if data is None:
            return None
        if math.isnan(data):
            return _CANONICAL_DOUBLE_NAN
        return struct.pack(">d", data)


class DoubleDeserializer(Deserializer[float]):
    """``DoubleDeserializer`` (its ``byte[]`` size message says "Deserializer", as Kafka's does)."""

    def deserialize(self, topic: str, data: bytes | None) -> float | None:
        if data is None:
            return None
        _check_size(data, 8, "Deserializer")
        return float(struct.unpack(">d", data)[0])


class BooleanSerializer(Serializer[bool]):
    """``BooleanSerializer`` (KIP-907, Kafka 3.5+): one byte, ``0x01``/``0x00``."""

    def serialize(self, topic: str, data: bool | None) -> bytes | None:
        if data is None:
            return None
        return bytes([_BOOLEAN_TRUE if data else _BOOLEAN_FALSE])


class BooleanDeserializer(Deserializer[bool]):
    """``BooleanDeserializer``: exactly one byte, ``0x01`` or ``0x00``."""

    def deserialize(self, topic: str, data: bytes | None) -> bool | None:
        if data is None:
            return None
        _check_size(data, 1, "BooleanDeserializer")
        if data[0] == _BOOLEAN_TRUE:
            return True
        if data[0] == _BOOLEAN_FALSE:
            return False
        signed = data[0] - 256 if data[0] > 127 else data[0]
        raise SerializationException(f"Unexpected byte received by BooleanDeserializer: {signed}")


class ByteArraySerializer(Serializer[bytes]):
    """``ByteArraySerializer`` (and ``BytesSerializer``: Python has one immutable byte type)."""

    def serialize(self, topic: str, data: bytes | None) -> bytes | None:
        return None if data is None else bytes(data)


class ByteArrayDeserializer(Deserializer[bytes]):
    """``ByteArrayDeserializer`` (and ``BytesDeserializer``)."""

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return None if data is None else bytes(data)


BytesSerializer = ByteArraySerializer
BytesDeserializer = ByteArrayDeserializer


class UUIDSerializer(Serializer[uuid.UUID]):
    """``UUIDSerializer``: the UTF-8 bytes of ``UUID#toString`` (lower-case canonical form)."""

    def serialize(self, topic: str, data: uuid.UUID | None) -> bytes | None:
        return None if data is None else str(data).encode("utf-8")


class UUIDDeserializer(Deserializer[uuid.UUID]):
    """``UUIDDeserializer``: ``UUID.fromString`` of the UTF-8 text (five hex groups, at most 36 characters)."""

    def deserialize(self, topic: str, data: bytes | None) -> uuid.UUID | None:
        if data is None:
            return None
        text = bytes(data).decode("utf-8", errors="replace")
        match = _UUID_TEXT.match(text) if len(text) <= 36 else None
        if match is None:
            raise SerializationException("Error parsing data into UUID")
        widths = (8, 4, 4, 4, 12)
        return uuid.UUID("-".join(group.rjust(width, "0") for group, width in zip(match.groups(), widths, strict=True)))


class VoidSerializer(Serializer[None]):
    """``VoidSerializer``: always ``null``."""

    def serialize(self, topic: str, data: None) -> bytes | None:
        return None


class VoidDeserializer(Deserializer[None]):
    """``VoidDeserializer``: only ``null`` is accepted (Kafka throws ``IllegalArgumentException``)."""

    def deserialize(self, topic: str, data: bytes | None) -> None:
        if data is not None:
            raise SerializationException("Data should be null for a VoidDeserializer.")
        return None


class JsonSerializer(Serializer[Any]):
    """Compact UTF-8 JSON, as Jackson's default ``ObjectMapper`` writes it (connect-json ``JsonSerializer``)."""

    def serialize(self, topic: str, data: Any) -> bytes | None:
        if data is None:
            return None
        try:
            return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SerializationException(f"Error serializing JSON message: {exc}") from exc


class JsonDeserializer(Deserializer[Any]):
    """UTF-8 JSON to Python values (connect-json ``JsonDeserializer``)."""

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SerializationException(f"Error deserializing JSON message: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Serde(Generic[T]):
    """``Serde<T>``: a serializer and its deserializer."""

    serializer: Serializer[T]
    deserializer: Deserializer[T]


def _serde(serializer: Serializer[Any], deserializer: Deserializer[Any]) -> Callable[[], Serde[Any]]:
    return lambda: Serde(serializer, deserializer)


#: ``Serdes.String()``, ``Serdes.Long()``, ... by Kafka's factory name (how a run configuration names them).
SERDES: Mapping[str, Callable[[], Serde[Any]]] = {
    "String": _serde(StringSerializer(), StringDeserializer()),
    "Long": _serde(LongSerializer(), LongDeserializer()),
    "Integer": _serde(IntegerSerializer(), IntegerDeserializer()),
    "Short": _serde(ShortSerializer(), ShortDeserializer()),
    "Float": _serde(FloatSerializer(), FloatDeserializer()),
    "Double": _serde(DoubleSerializer(), DoubleDeserializer()),
    "Boolean": _serde(BooleanSerializer(), BooleanDeserializer()),
    "ByteArray": _serde(ByteArraySerializer(), ByteArrayDeserializer()),
    "Bytes": _serde(BytesSerializer(), BytesDeserializer()),
    "ByteBuffer": _serde(ByteArraySerializer(), ByteArrayDeserializer()),
    "UUID": _serde(UUIDSerializer(), UUIDDeserializer()),
    "Void": _serde(VoidSerializer(), VoidDeserializer()),
    "Json": _serde(JsonSerializer(), JsonDeserializer()),
}


def serde_for(name: str) -> Serde[Any]:
    """The serde Kafka's ``Serdes.<name>()`` returns; an unknown name is a ``ConfigError`` listing the known ones."""
    try:
        return SERDES[name]()
    except KeyError:
        raise ConfigError(f"unknown serde {name!r}; use one of {sorted(SERDES)}") from None
