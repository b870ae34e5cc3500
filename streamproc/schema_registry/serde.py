"""What every Schema Registry serde shares: Java's ``configure(configs, isKey)``, the registry client, and which
failures are a record's (a ``SerializationException``, the deserialization handler's to decide) and which the
registry's (``SchemaRegistryError``/``SchemaRegistryUnavailable``, which fail the task).

The bytes are Confluent's wire format as confluent-kafka's serializers write it: magic byte ``0``, the schema id as
a 4-byte big-endian integer, then the payload (Protobuf puts its message indexes first). A serde is configured
where the topology is built, on the driver and on every executor alike, from the same settings.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from streamproc.engine.serdes import Deserializer, Serde, SerializationException, Serializer
from streamproc.errors import ConfigError, StreamprocError
from streamproc.schema_registry.client import SCHEMA_NOT_FOUND, client_for, configured, registry_failure
from streamproc.schema_registry.config import SchemaRegistryConfig

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.serialization import SerializationContext

T = TypeVar("T")

#: Confluent's framing: the magic byte and the schema id.
MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")


def schema_id_of(data: bytes) -> int | None:
    """The schema id framed bytes carry, or ``None`` when they are not in Confluent's wire format."""
    if len(data) < _HEADER.size:
        return None
    magic, schema_id = _HEADER.unpack_from(data)
    return int(schema_id) if magic == MAGIC_BYTE else None


class _Configured:
    """The settings ``configure`` gave; a serde used before ``configure`` is a setting problem, named as such."""

    #: The format's name in messages (``Avro``, ``Protobuf``, ``JSON Schema``).
    format: ClassVar[str] = ""

    def __init__(self) -> None:
        self._config: SchemaRegistryConfig | None = None
        self._is_key = False

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        """``Serializer#configure(configs, isKey)``: the registry settings (Confluent's names) and which subject
        (``<topic>-key`` or ``<topic>-value``) this side writes."""
        self._config = SchemaRegistryConfig.from_configs(configs)
        self._is_key = is_key
        configured(self._config)
        self._configured()

    def _configured(self) -> None:
        """Drop what was built for earlier settings."""

    @property
    def config(self) -> SchemaRegistryConfig:
        if self._config is None:
            raise ConfigError(
                f"a {type(self).__name__} was used before configure(configs, is_key): give it "
                "schema.registry.url (or make it a default serde, configured with the streams settings)"
            )
        return self._config

    @property
    def client(self) -> SchemaRegistryClient:
        return client_for(self.config)

    def context(self, topic: str) -> SerializationContext:
        from confluent_kafka.serialization import MessageField, SerializationContext

        return SerializationContext(topic, MessageField.KEY if self._is_key else MessageField.VALUE)

    def _side(self, topic: str) -> str:
        return f"the {'key' if self._is_key else 'value'} of a record of topic '{topic}'"


class SchemaRegistrySerializer(_Configured, Serializer[T]):
    """A serializer writing through the registry: ``_write`` does the format's work."""

    def serialize(self, topic: str, data: T | None) -> bytes | None:
        if data is None:
            return None
        try:
            return self._write(topic, data)
        except StreamprocError:
            raise
        except Exception as exc:
            failure = registry_failure(exc, self.config, f"serializing {self._side(topic)}")
            if failure is not None:
                raise failure from exc
            raise SerializationException(
                f"Error serializing {self.format} message for topic '{topic}': {_one_line(exc)}"
            ) from exc

    def _write(self, topic: str, data: T) -> bytes:
        raise NotImplementedError


class SchemaRegistryDeserializer(_Configured, Deserializer[T]):
    """A deserializer reading through the registry: ``_read`` does the format's work. A schema id the registry does
    not know and a payload that does not match its schema are the record's fault (``SerializationException``, as
    Confluent's Java deserializers throw): the deserialization exception handler decides."""

    def deserialize(self, topic: str, data: bytes | None) -> T | None:
        if data is None:
            return None
        try:
            return self._read(topic, bytes(data))
        except StreamprocError:
            raise
        except Exception as exc:
            schema_id = schema_id_of(bytes(data))
            if getattr(exc, "error_code", None) == SCHEMA_NOT_FOUND:
                raise SerializationException(
                    f"Error retrieving {self.format} schema for id {schema_id} of {self._side(topic)}: the Schema "
                    f"Registry at {self.config.location} has no schema with that id"
                ) from exc
            failure = registry_failure(exc, self.config, f"deserializing {self._side(topic)}")
            if failure is not None:
                raise failure from exc
            which = f" for id {schema_id}" if schema_id is not None else ""
            raise SerializationException(
                f"Error deserializing {self.format} message{which} of {self._side(topic)}: {_one_line(exc)}"
            ) from exc

    def _read(self, topic: str, data: bytes) -> T:
        raise NotImplementedError


class SchemaRegistrySerde(Serde[T], Generic[T]):
    """``Serde<T>`` with ``configure(configs, isKey)``, which configures both halves (Java's ``Serde#configure``).

    Kafka Streams configures a default serde with the application's settings and leaves every other serde to the
    program, which calls ``configure`` as the Java program does; so does streamproc.
    """

    __slots__ = ()

    serializer: SchemaRegistrySerializer[T]
    deserializer: SchemaRegistryDeserializer[T]

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        self.serializer.configure(configs, is_key)
        self.deserializer.configure(configs, is_key)

    @property
    def configured(self) -> bool:
        """``configure`` was called (a default serde that was not is configured with the application's settings)."""
        return self.serializer._config is not None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
