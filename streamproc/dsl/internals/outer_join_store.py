"""The values of the shared outer-join store of a left/outer stream-stream join (``KSTREAM-OUTERSHARED-…-store``):
``TimestampedKeyAndJoinSide`` keys and ``LeftOrRightValue`` values with Kafka's byte layouts, so the store (and its
changelog) iterate and restore as Kafka Streams' do.

Key bytes: ``timestamp (8 bytes, big-endian) ‖ 1 if left else 0 ‖ key``; iterating the store in byte order visits
non-joined records oldest first. Value bytes: ``1 if left else 0 ‖ value``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streamproc.engine.serdes import Deserializer, Serde, Serializer

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
        return TimestampedKeyAndJoinSide(self.key.deserialize(topic, data[9:]), _LONG.unpack_from(data)[0], data[8] == 1)


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
