"""``ChangedSerializer`` / ``ChangedDeserializer`` (``kstream.internals``, 4.2): a KTable update (:class:`Change`) in
a ``KTable#groupBy`` repartition topic, in Kafka's byte layout so that a hand-off can leave such records in flight.

Layout (the last byte says which): ``old ‖ 0``, ``new ‖ 1``, or ``varint(len(new)) ‖ new ‖ old ‖ 2`` (zig-zag
varint, ``ByteUtils.writeVarint``). The inner serde is the table's value serde, or ``default.value.serde`` when the
program gave none (``setIfUnset``).
"""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.engine.serdes import Deserializer, SerializationException, Serializer


def _write_varint(value: int) -> bytes:
    encoded = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while encoded & ~0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def _read_varint(data: bytes) -> tuple[int, int]:
    value = shift = position = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise SerializationException("Varint is too long")
    return (value >> 1) ^ -(value & 1), position


class ChangedSerializer(Serializer[Change[Any]]):
    """``ChangedSerializer``: one or both sides of a ``Change``; both absent is Kafka's ``StreamsException``."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner

    def set_if_unset(self, default_value_serde: Any) -> None:
        """``setIfUnset``: the application's default value serde when the program gave none."""
        if self.inner is None:
            self.inner = default_value_serde

    def _inner(self, topic: str, value: Any) -> bytes:
        if self.inner is None:
            raise SerializationException(
                f"topic {topic}: the KTable#groupBy repartition topic has no value serde; give Grouped a value serde "
                "or set default.value.serde"
            )
        serializer = getattr(self.inner, "serializer", self.inner)
        data = serializer(topic, value)
        assert data is not None
        return bytes(data)

    def serialize(self, topic: str, data: Change[Any] | None) -> bytes | None:
        if data is None:
            return None
        new, old = data.new_value, data.old_value
        if new is not None and old is not None:
            new_bytes, old_bytes = self._inner(topic, new), self._inner(topic, old)
            return _write_varint(len(new_bytes)) + new_bytes + old_bytes + b"\x02"
        if new is not None:
            return self._inner(topic, new) + b"\x01"
        if old is not None:
            return self._inner(topic, old) + b"\x00"
        raise SerializationException("Both old and new values are null in ChangeSerializer, which is not allowed.")


class ChangedDeserializer(Deserializer[Change[Any]]):
    """``ChangedDeserializer``: the inverse of :class:`ChangedSerializer`."""

    def __init__(self, serializer: ChangedSerializer) -> None:
        self._serializer = serializer

    def _inner(self, topic: str, data: bytes) -> Any:
        inner = self._serializer.inner
        if inner is None:
            raise SerializationException(f"topic {topic}: the KTable#groupBy repartition topic has no value serde")
        deserializer = getattr(inner, "deserializer", inner)
        return deserializer(topic, data)

    def deserialize(self, topic: str, data: bytes | None) -> Change[Any] | None:
        if data is None:
            return None
        flag, body = data[-1], data[:-1]
        if flag == 0:
            return Change(None, self._inner(topic, body))
        if flag == 1:
            return Change(self._inner(topic, body), None)
        if flag == 2:
            length, start = _read_varint(body)
            return Change(self._inner(topic, body[start : start + length]), self._inner(topic, body[start + length :]))
        raise SerializationException(f"Encoding flag should be 0, 1 or 2, got {flag}")
