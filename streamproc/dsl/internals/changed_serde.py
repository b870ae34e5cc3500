"""``ChangedSerializer``/``ChangedDeserializer``: a KTable update (:class:`Change`) as one record value of a
repartition topic (``KTable.groupBy`` → ``…-repartition`` → ``KTableAggregate``), read from the kafka-streams 4.2.2 jar.

Layout (the last byte says which parts are present):

- only the new value: ``new ‖ 0x01``; only the old value: ``old ‖ 0x00``;
- both: ``zigzag-varint(len(new)) ‖ new ‖ old ‖ 0x02`` (unless ``upgrade.from`` names a version before 3.4, which
  this serializer does not model: ``KTableRepartitionMap`` then sends two records);
- flags 3, 4, 5 are 0, 1, 2 with an ``is_latest`` byte (1 = latest) before the flag (versioned tables; read only).

Both values null is an error, as in Kafka ("Both old and new values are null in ChangeSerializer, which is not
allowed.").
"""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.engine.serdes import Deserializer, Serde, SerializationException, Serializer


def _write_varint(value: int) -> bytes:
    """``ByteUtils.writeVarint``: zigzag, then 7 bits a byte, low first."""
    unsigned = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while unsigned & ~0x7F:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    """``ByteUtils.readVarint``: the value and the position after it."""
    value = shift = 0
    while True:
        if position >= len(data) or shift > 28:
            raise SerializationException("Varint is too long or the Change record is truncated")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (value >> 1) ^ -(value & 1), position


class ChangedSerializer(Serializer[Change[Any]]):
    def __init__(self, inner: Serializer[Any]) -> None:
        self.inner = inner

    def serialize(self, topic: str, data: Change[Any] | None) -> bytes | None:
        if data is None:
            return None
        new = None if data.new_value is None else self.inner.serialize(topic, data.new_value)
        old = None if data.old_value is None else self.inner.serialize(topic, data.old_value)
        if new is not None and old is not None:
            return _write_varint(len(new)) + new + old + b"\x02"
        if new is not None:
            return new + b"\x01"
        if old is not None:
            return old + b"\x00"
        raise SerializationException("Both old and new values are null in ChangeSerializer, which is not allowed.")


class ChangedDeserializer(Deserializer[Change[Any]]):
    def __init__(self, inner: Deserializer[Any]) -> None:
        self.inner = inner

    def deserialize(self, topic: str, data: bytes | None) -> Change[Any] | None:
        if data is None:
            return None
        flag = data[-1]
        if flag > 5:
            raise SerializationException(f"Encoding flag {flag} is not supported in a Change record")
        is_latest = True
        body = data[:-1]
        if flag >= 3:
            is_latest = body[-1] == 1
            body = body[:-1]
            flag -= 3
        new_raw = old_raw = None
        if flag == 0:
            old_raw = body
        elif flag == 1:
            new_raw = body
        else:
            length, position = _read_varint(body, 0)
            if length > len(body) - position:
                raise SerializationException(f"Change record's new value length {length} exceeds the record")
            new_raw, old_raw = body[position : position + length], body[position + length :]
        new = None if new_raw is None else self.inner.deserialize(topic, new_raw)
        old = None if old_raw is None else self.inner.deserialize(topic, old_raw)
        return Change(new, old, is_latest)


def changed_serde(inner: Serde[Any]) -> Serde[Change[Any]]:
    """The value serde of a KTable repartition topic over ``inner``."""
    return Serde(ChangedSerializer(inner.serializer), ChangedDeserializer(inner.deserializer))
