"""Protobuf through a Schema Registry: Confluent's ``KafkaProtobufSerde<T>`` for a generated message class, on
confluent-kafka's ``ProtobufSerializer``/``ProtobufDeserializer``.

The framing is Confluent's: magic byte ``0``, the 4-byte schema id, the message indexes (``0`` alone for a file's
first message, as Confluent's Java serializer writes it), then the message's bytes. The serializer registers the
message's ``.proto`` file (as a descriptor, which Confluent's registry stores as the file's text) and the files it
imports under their own subjects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from streamproc.schema_registry.config import subject_name_strategy
from streamproc.schema_registry.serde import SchemaRegistryDeserializer, SchemaRegistrySerde, SchemaRegistrySerializer

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer


class KafkaProtobufSerializer(SchemaRegistrySerializer[Any]):
    """``KafkaProtobufSerializer``: instances of ``message_type``."""

    format = "Protobuf"

    def __init__(self, message_type: type[Any]) -> None:
        super().__init__()
        self._message_type = message_type

    def _configured(self) -> None:
        self._serializer: ProtobufSerializer | None = None

    def _write(self, topic: str, data: Any) -> bytes:
        if self._serializer is None:
            from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

            self._serializer = ProtobufSerializer(
                self._message_type, self.client, conf=self.config.serializer_config(self._is_key)
            )
        written = self._serializer(data, self.context(topic))
        assert isinstance(written, bytes)
        return written


class KafkaProtobufDeserializer(SchemaRegistryDeserializer[Any]):
    """``KafkaProtobufDeserializer`` into ``message_type`` (the writer's id is looked up, its bytes parsed)."""

    format = "Protobuf"

    def __init__(self, message_type: type[Any]) -> None:
        super().__init__()
        self._message_type = message_type

    def _configured(self) -> None:
        self._deserializer: ProtobufDeserializer | None = None

    def _read(self, topic: str, data: bytes) -> Any:
        if self._deserializer is None:
            from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

            strategy = subject_name_strategy(self.config.subject_strategy(self._is_key))
            self._deserializer = ProtobufDeserializer(
                self._message_type, {"subject.name.strategy": strategy}, schema_registry_client=self.client
            )
        return self._deserializer(data, self.context(topic))


class KafkaProtobufSerde(SchemaRegistrySerde[Any]):
    """``io.confluent.kafka.streams.serdes.protobuf.KafkaProtobufSerde<T>`` for a generated message class."""

    __slots__ = ()

    def __init__(self, message_type: type[Any], configs: Mapping[str, Any] | None = None, *, is_key: bool = False):
        super().__init__(KafkaProtobufSerializer(message_type), KafkaProtobufDeserializer(message_type))
        if configs is not None:
            self.configure(configs, is_key)
