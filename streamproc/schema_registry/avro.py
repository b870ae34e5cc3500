"""Avro through a Schema Registry: Confluent's ``GenericAvroSerde`` and ``SpecificAvroSerde``, on confluent-kafka's
``AvroSerializer``/``AvroDeserializer`` (fastavro).

- **Generic records** are :class:`GenericRecord`: a ``dict`` of the record's fields that also carries its schema, as
  Java's ``GenericData.Record`` does. The serializer writes each record with its own schema (registered under the
  subject the strategy names, once per schema), so a record deserialized from one topic is written unchanged to
  another, and a program builds new ones with ``GenericRecord(schema, {...})``. Nested records are plain dicts.
- **Specific records** are instances of a class with the record's schema in ``SCHEMA`` (:func:`specific_record`
  makes a frozen dataclass from a schema): read with that schema as the reader schema (Avro's resolution from the
  writer's schema, as Java's specific reader does) and written with it.

For the same schema and datum the bytes are Avro's binary encoding behind Confluent's header, byte for byte what
Confluent's Java serializers write (``tests/integration/conformance/`` holds it to a Java writer).
"""

from __future__ import annotations

import dataclasses
import json
import keyword
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from streamproc.errors import ConfigError
from streamproc.schema_registry.serde import (
    SchemaRegistryDeserializer,
    SchemaRegistrySerde,
    SchemaRegistrySerializer,
    schema_id_of,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

R = TypeVar("R")


def _schema_text(schema: str | Mapping[str, Any]) -> str:
    """An Avro schema as JSON text (a parsed schema is written compactly)."""
    if isinstance(schema, str):
        return schema
    return json.dumps(schema, separators=(",", ":"))


def _full_name(schema_text: str) -> str | None:
    """A named schema's full name (``namespace.name``), for messages and the record-name strategies."""
    try:
        parsed = json.loads(schema_text)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or "name" not in parsed:
        return None
    name = str(parsed["name"])
    namespace = parsed.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


class GenericRecord(dict[str, Any]):
    """An Avro record as a dict of its fields, with its schema (``GenericData.Record``)."""

    __slots__ = ("schema",)

    def __init__(self, schema: str | Mapping[str, Any], fields: Mapping[str, Any] | None = None, /, **more: Any):
        super().__init__(fields or {}, **more)
        self.schema = _schema_text(schema)

    def __repr__(self) -> str:
        return f"GenericRecord({_full_name(self.schema) or 'schema'}, {dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (GenericRecord, (self.schema, dict(self)))


class _AvroSerializer(SchemaRegistrySerializer[R]):
    """One confluent-kafka ``AvroSerializer`` per writer schema (it holds one schema), built on first use."""

    format = "Avro"

    def _configured(self) -> None:
        self._serializers: dict[str, AvroSerializer] = {}

    def _serializer(self, schema: str) -> AvroSerializer:
        serializer = self._serializers.get(schema)
        if serializer is None:
            from confluent_kafka.schema_registry.avro import AvroSerializer

            serializer = AvroSerializer(self.client, schema, conf=self.config.serializer_config(self._is_key))
            self._serializers[schema] = serializer
        return serializer


class GenericAvroSerializer(_AvroSerializer[Any]):
    """``GenericAvroSerializer``: a :class:`GenericRecord` with its own schema; any other value (a dict, or a
    primitive) with the serde's ``schema``, when one was given."""

    def __init__(self, schema: str | Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self._schema = None if schema is None else _schema_text(schema)

    def _write(self, topic: str, data: Any) -> bytes:
        schema = data.schema if isinstance(data, GenericRecord) else self._schema
        if schema is None:
            raise ConfigError(
                f"GenericAvroSerializer for topic '{topic}': a {type(data).__name__} carries no schema; write "
                "GenericRecord(schema, fields), or give the serde a schema for plain values"
            )
        written = self._serializer(schema)(data, self.context(topic))
        assert isinstance(written, bytes)
        return written


class GenericAvroDeserializer(SchemaRegistryDeserializer[Any]):
    """``GenericAvroDeserializer``: records as :class:`GenericRecord` with the writer's schema (other datums, e.g.
    a string schema's, as they are)."""

    format = "Avro"

    def _configured(self) -> None:
        self._deserializer: AvroDeserializer | None = None

    def _read(self, topic: str, data: bytes) -> Any:
        if self._deserializer is None:
            from confluent_kafka.schema_registry.avro import AvroDeserializer

            self._deserializer = AvroDeserializer(self.client, conf=_deserializer_config(self))
        value = self._deserializer(data, self.context(topic))
        if isinstance(value, dict):
            schema_id = schema_id_of(data)
            assert schema_id is not None  # the deserializer read the header
            schema = self.client.get_schema(schema_id).schema_str  # the client's cache: no call per record
            return GenericRecord(schema or "{}", value)
        return value


class GenericAvroSerde(SchemaRegistrySerde[Any]):
    """``io.confluent.kafka.streams.serdes.avro.GenericAvroSerde``; ``configure(configs, is_key)`` before use (or
    give ``configs`` here)."""

    __slots__ = ()

    def __init__(
        self,
        configs: Mapping[str, Any] | None = None,
        *,
        is_key: bool = False,
        schema: str | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(GenericAvroSerializer(schema), GenericAvroDeserializer())
        if configs is not None:
            self.configure(configs, is_key)


class _SpecificAvroSerializer(_AvroSerializer[Any]):
    def __init__(self, record_type: type[Any]) -> None:
        super().__init__()
        self._record_type = record_type
        self._schema = _record_schema(record_type)

    def _write(self, topic: str, data: Any) -> bytes:
        written = self._serializer(self._schema)(_as_dict(data), self.context(topic))
        assert isinstance(written, bytes)
        return written


class _SpecificAvroDeserializer(SchemaRegistryDeserializer[Any]):
    format = "Avro"

    def __init__(self, record_type: type[Any]) -> None:
        super().__init__()
        self._record_type = record_type
        self._schema = _record_schema(record_type)

    def _configured(self) -> None:
        self._deserializer: AvroDeserializer | None = None

    def _read(self, topic: str, data: bytes) -> Any:
        if self._deserializer is None:
            from confluent_kafka.schema_registry.avro import AvroDeserializer

            self._deserializer = AvroDeserializer(self.client, self._schema, conf=_deserializer_config(self))
        value = self._deserializer(data, self.context(topic))
        return self._record_type(**_python_names(value)) if isinstance(value, dict) else value


class SpecificAvroSerde(SchemaRegistrySerde[Any]):
    """``io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde<T>`` for ``record_type``, a class with the
    record's Avro schema in ``SCHEMA`` whose instances are built from the record's fields by name
    (:func:`specific_record` makes one)."""

    __slots__ = ()

    def __init__(self, record_type: type[Any], configs: Mapping[str, Any] | None = None, *, is_key: bool = False):
        super().__init__(_SpecificAvroSerializer(record_type), _SpecificAvroDeserializer(record_type))
        if configs is not None:
            self.configure(configs, is_key)


def specific_record(schema: str | Mapping[str, Any], *, string_type: str | None = None) -> type[Any]:
    """A frozen dataclass for an Avro record schema: the record's name, its fields in the schema's order (a field
    named like a Python keyword gets a trailing ``_``), each field's default where the schema has one, and the
    schema in ``SCHEMA`` (what Avro's Java code generator makes of a schema, for :class:`SpecificAvroSerde`).

    ``string_type`` is the ``stringType`` the Java application's classes were generated with (avro-maven-plugin's
    setting): with ``"String"`` every string of the schema carries ``"avro.java.string": "String"``, as the generated
    class's ``SCHEMA$`` does and Confluent's serializer registers it, so that the port registers the same schema
    (the same subject version and id) as the Java application rather than a new version.
    """
    parsed = json.loads(_schema_text(schema))
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise ConfigError("specific_record takes an Avro record schema")
    if string_type is not None:
        parsed = _with_java_string_type(parsed, string_type)
    text = json.dumps(parsed, separators=(",", ":")) if string_type is not None else _schema_text(schema)
    fields: list[tuple[str, Any, Any]] = []
    for avro_field in parsed["fields"]:
        name = _python_name(avro_field["name"])
        default = avro_field.get("default", dataclasses.MISSING)
        if isinstance(default, (dict, list)):
            fields.append((name, Any, dataclasses.field(default_factory=_copier(default))))
        else:
            fields.append((name, Any, dataclasses.field(default=default)))
    # a field without a default may not follow one with a default in a dataclass: keyword-only keeps schema order
    cls = dataclasses.make_dataclass(str(parsed["name"]), fields, frozen=True, kw_only=True)
    cls.SCHEMA = text  # type: ignore[attr-defined]
    cls.__doc__ = parsed.get("doc") or f"The Avro record {_full_name(text)}."
    return cls


def _with_java_string_type(schema: Any, string_type: str) -> Any:
    """``schema`` with ``"avro.java.string": string_type`` on every string type, as Avro's Java compiler marks them."""
    if schema == "string":
        return {"type": "string", "avro.java.string": string_type}
    if isinstance(schema, list):
        return [_with_java_string_type(branch, string_type) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "string":
        return {**schema, "avro.java.string": string_type}
    if kind == "record" or kind == "error":
        fields = [{**f, "type": _with_java_string_type(f["type"], string_type)} for f in schema["fields"]]
        return {**schema, "fields": fields}
    if kind == "array":
        return {**schema, "items": _with_java_string_type(schema["items"], string_type)}
    if kind == "map":
        return {**schema, "values": _with_java_string_type(schema["values"], string_type), "avro.java.string":
                string_type}  # fmt: skip
    return {**schema, "type": _with_java_string_type(kind, string_type)} if isinstance(kind, (list, dict)) else schema


def _copier(default: Any) -> Any:
    """A fresh copy of a record or array default for each instance (as each Java instance gets its own)."""
    text = json.dumps(default)
    return lambda: json.loads(text)


def _record_schema(record_type: type[Any]) -> str:
    schema = getattr(record_type, "SCHEMA", None)
    if schema is None:
        raise ConfigError(f"{record_type.__name__} has no SCHEMA: a specific record class carries its Avro schema")
    return _schema_text(schema)


def _python_name(avro_name: str) -> str:
    """An Avro field's attribute name: a Python keyword gets a trailing ``_``."""
    return avro_name + "_" if keyword.iskeyword(avro_name) else avro_name


def _avro_name(python_name: str) -> str:
    stem = python_name.removesuffix("_")
    return stem if stem != python_name and keyword.iskeyword(stem) else python_name


def _python_names(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {_python_name(name): value for name, value in fields.items()}


def _as_dict(record: Any) -> dict[str, Any]:
    """A specific record's fields by their Avro names."""
    if isinstance(record, Mapping):
        return dict(record)
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {_avro_name(f.name): getattr(record, f.name) for f in dataclasses.fields(record)}
    return {_avro_name(name): value for name, value in vars(record).items()}


def _deserializer_config(side: SchemaRegistryDeserializer[Any]) -> dict[str, Any]:
    from streamproc.schema_registry.config import subject_name_strategy

    return {"subject.name.strategy": subject_name_strategy(side.config.subject_strategy(side._is_key))}


__all__ = [
    "GenericAvroDeserializer",
    "GenericAvroSerde",
    "GenericAvroSerializer",
    "GenericRecord",
    "SpecificAvroSerde",
    "specific_record",
]
