"""The values of the shared outer-join store of a left/outer stream-stream join (``KSTREAM-OUTERSHARED-…-store``):
``TimestampedKeyAndJoinSide`` keys and ``LeftOrRightValue`` values with Kafka's byte layouts, so the store (and its
changelog) iterate and restore as Kafka Streams' do.

Key bytes: ``timestamp (8 bytes, big-endian) ‖ 1 if left else 0 ‖ key``; iterating the store in byte order visits
non-joined records oldest first. A value is the list of every non-joined record with that key, timestamp and side
(``ListValueStore`` over ``Serdes.ListSerde(ArrayList, ByteArray)``: ``0x01 ‖ count (4 bytes) ‖ (length (4 bytes) ‖
bytes)*``), each element ``1 if left else 0 ‖ value``. :class:`OuterJoinStore` gives the processors
``ListValueStore``'s operations over such a store.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streamproc.engine.serdes import Deserializer, Serde, Serializer
from streamproc.state.stores import KeyValueStore

K = TypeVar("K")

_LONG = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class TimestampedKeyAndJoinSide(Generic[K]):
    """``TimestampedKeyAndJoinSide``: a non-joined record's key, timestamp and side."""

    key: K
    timestamp: int
    left_side: bool


@dataclass(frozen=True, slots=True)
class LeftOrRightValue:
    """``LeftOrRightValue``: the value of a non-joined record, on the side it came from."""

    left_value: Any
    right_value: Any

    @staticmethod
    def make_left(value: Any) -> LeftOrRightValue:
        return LeftOrRightValue(value, None)

    @staticmethod
    def make_right(value: Any) -> LeftOrRightValue:
        return LeftOrRightValue(None, value)


class _KeySerializer(Serializer[TimestampedKeyAndJoinSide[Any]]):
    def __init__(self, key: Serializer[Any]) -> None:
        self.key = key

    def serialize(self, topic: str, data: TimestampedKeyAndJoinSide[Any] | None) -> bytes | None:
        if data is None:
            return None
        raw = self.key.serialize(topic, data.key) or b""
        return _LONG.pack(data.timestamp) + (b"\x01" if data.left_side else b"\x00") + raw


class _KeyDeserializer(Deserializer[TimestampedKeyAndJoinSide[Any]]):
    def __init__(self, key: Deserializer[Any]) -> None:
        self.key = key

    def deserialize(self, topic: str, data: bytes | None) -> TimestampedKeyAndJoinSide[Any] | None:
        if data is None:
            return None
        key = self.key.deserialize(topic, data[9:])
        return TimestampedKeyAndJoinSide(key, _LONG.unpack_from(data)[0], data[8] == 1)


class _ValueSerializer(Serializer[LeftOrRightValue]):
    def __init__(self, left: Serializer[Any], right: Serializer[Any]) -> None:
        self.left = left
        self.right = right

    def serialize(self, topic: str, data: LeftOrRightValue | None) -> bytes | None:
        if data is None:
            return None
        is_left = data.left_value is not None
        raw = self.left.serialize(topic, data.left_value) if is_left else self.right.serialize(topic, data.right_value)
        return None if raw is None else (b"\x01" if is_left else b"\x00") + raw


class _ValueDeserializer(Deserializer[LeftOrRightValue]):
    def __init__(self, left: Deserializer[Any], right: Deserializer[Any]) -> None:
        self.left = left
        self.right = right

    def deserialize(self, topic: str, data: bytes | None) -> LeftOrRightValue | None:
        if data is None:
            return None
        if data[0] == 1:
            return LeftOrRightValue.make_left(self.left.deserialize(topic, data[1:]))
        return LeftOrRightValue.make_right(self.right.deserialize(topic, data[1:]))


def timestamped_key_and_join_side_serde(key_serde: Serde[Any]) -> Serde[TimestampedKeyAndJoinSide[Any]]:
    """``TimestampedKeyAndJoinSideSerde``."""
    return Serde(_KeySerializer(key_serde.serializer), _KeyDeserializer(key_serde.deserializer))


def left_or_right_value_serde(left_serde: Serde[Any], right_serde: Serde[Any]) -> Serde[LeftOrRightValue]:
    """``LeftOrRightValueSerde``."""
    return Serde(
        _ValueSerializer(left_serde.serializer, right_serde.serializer),
        _ValueDeserializer(left_serde.deserializer, right_serde.deserializer),
    )


_INT = struct.Struct(">i")
#: ``ListSerializer``'s ``SerializationStrategy.VARIABLE_SIZE``.
_VARIABLE_SIZE = 1


class _ListSerializer(Serializer[list[Any]]):
    def __init__(self, element: Serializer[Any]) -> None:
        self.element = element

    def serialize(self, topic: str, data: list[Any] | None) -> bytes | None:
        if data is None:
            return None
        parts = [bytes([_VARIABLE_SIZE]), _INT.pack(len(data))]
        for item in data:
            raw = self.element.serialize(topic, item) or b""
            parts += [_INT.pack(len(raw)), raw]
        return b"".join(parts)


class _ListDeserializer(Deserializer[list[Any]]):
    def __init__(self, element: Deserializer[Any]) -> None:
        self.element = element

    def deserialize(self, topic: str, data: bytes | None) -> list[Any] | None:
        if data is None:
            return None
        (count,) = _INT.unpack_from(data, 1)
        position, items = 5, []
        for _ in range(count):
            (length,) = _INT.unpack_from(data, position)
            position += 4
            items.append(self.element.deserialize(topic, data[position : position + length]))
            position += length
        return items


def outer_join_value_serde(left_serde: Serde[Any], right_serde: Serde[Any]) -> Serde[list[Any]]:
    """The outer-join store's value serde: a list of :class:`LeftOrRightValue` (``ListValueStore``'s layout)."""
    element = left_or_right_value_serde(left_serde, right_serde)
    return Serde(_ListSerializer(element.serializer), _ListDeserializer(element.deserializer))


class OuterJoinStore:
    """``ListValueStore``: ``put`` appends to a key's list (``None`` deletes the key), ``put_if_absent(key, None)``
    deletes the key if present (a joined partner clears a waiting record), ``all`` yields every listed value."""

    def __init__(self, store: KeyValueStore[Any, Any]) -> None:
        self.store = store

    def put(self, key: TimestampedKeyAndJoinSide[Any], value: LeftOrRightValue | None) -> None:
        if value is None:
            self.store.put(key, None)
        else:
            self.store.put(key, [*(self.store.get(key) or []), value])

    def put_if_absent(self, key: TimestampedKeyAndJoinSide[Any], value: LeftOrRightValue | None) -> None:
        old = self.store.get(key)
        if old is not None:
            self.store.put(key, None if value is None else [*old, value])

    def all(self) -> Iterator[tuple[TimestampedKeyAndJoinSide[Any], LeftOrRightValue]]:
        for key, values in self.store.all():
            for value in values:
                yield key, value
