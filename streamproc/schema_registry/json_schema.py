"""JSON Schema through a Schema Registry: Confluent's ``KafkaJsonSchemaSerde``, values as dicts (and lists,
strings, numbers), on confluent-kafka's ``JSONSerializer``/``JSONDeserializer``.

The payload is compact UTF-8 JSON as Jackson writes it (no spaces), behind Confluent's header; every value is
validated against the schema before it is written, as Confluent's serializer does by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from streamproc.schema_registry.avro import _schema_text
from streamproc.schema_registry.config import subject_name_strategy
from streamproc.schema_registry.serde import SchemaRegistryDeserializer, SchemaRegistrySerde, SchemaRegistrySerializer

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer


class KafkaJsonSchemaSerializer(SchemaRegistrySerializer[Any]):
    """``KafkaJsonSchemaSerializer`` with ``schema`` (JSON Schema text or a parsed schema)."""

    format = "JSON Schema"

    def __init__(self, schema: str | Mapping[str, Any]) -> None:
        super().__init__()
        self._schema = _schema_text(schema)

    def _configured(self) -> None:
        self._serializer: JSONSerializer | None = None

    def _write(self, topic: str, data: Any) -> bytes:
        if self._serializer is None:
            from confluent_kafka.schema_registry.json_schema import JSONSerializer

            self._serializer = JSONSerializer(
                self._schema, self.client, conf=self.config.serializer_config(self._is_key)
            )
        written = self._serializer(data, self.context(topic))
        assert isinstance(written, bytes)
        return written


class KafkaJsonSchemaDeserializer(SchemaRegistryDeserializer[Any]):
    """``KafkaJsonSchemaDeserializer``: the writer's schema from the registry, each value validated against it."""

    format = "JSON Schema"

    def _configured(self) -> None:
        self._deserializer: JSONDeserializer | None = None

    def _read(self, topic: str, data: bytes) -> Any:
        if self._deserializer is None:
            from confluent_kafka.schema_registry.json_schema import JSONDeserializer

            strategy = subject_name_strategy(self.config.subject_strategy(self._is_key))
            self._deserializer = JSONDeserializer(
                None, conf={"subject.name.strategy": strategy}, schema_registry_client=self.client
            )
        return self._deserializer(data, self.context(topic))


class KafkaJsonSchemaSerde(SchemaRegistrySerde[Any]):
    """``io.confluent.kafka.streams.serdes.json.KafkaJsonSchemaSerde`` for values of ``schema``."""

    __slots__ = ()

    def __init__(
        self, schema: str | Mapping[str, Any], configs: Mapping[str, Any] | None = None, *, is_key: bool = False
    ) -> None:
        super().__init__(KafkaJsonSchemaSerializer(schema), KafkaJsonSchemaDeserializer())
        if configs is not None:
            self.configure(configs, is_key)
