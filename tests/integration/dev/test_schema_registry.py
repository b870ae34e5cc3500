"""The Schema Registry the tests start speaks Confluent's Schema Registry API as ``confluent_kafka.schema_registry``
uses it: subjects, ids and versions for Avro, JSON Schema and Protobuf, BACKWARD compatibility enforced with the
registry's message, the serializers' wire format (magic byte 0, the 4-byte schema id, the payload), basic auth, and
a restart that keeps its schemas."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from streamproc.errors import DevServiceError
from streamproc_dev import schema_registry as registry
from streamproc_dev.service_process import is_alive
from tests.conftest import SchemaRegistry

ORDER_FIELDS: list[dict[str, Any]] = [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}]
ORDER_V1: dict[str, Any] = {"type": "record", "name": "Order", "namespace": "demo", "fields": ORDER_FIELDS}


@dataclass(frozen=True)
class Evolution:
    """A schema, a BACKWARD-compatible next version, and a next version BACKWARD compatibility forbids."""

    schema_type: str
    v1: str
    v2: str
    incompatible: str


def _avro(*added_fields: dict[str, Any]) -> str:
    return json.dumps({**ORDER_V1, "fields": [*ORDER_FIELDS, *added_fields]})


def _json_schema(properties: dict[str, Any]) -> str:
    """A closed content model, so that adding an optional property is BACKWARD compatible (as on Confluent's)."""
    return json.dumps({
        "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
        "properties": properties, "required": ["id"], "additionalProperties": False,
    })  # fmt: skip


def _proto(fields: str) -> str:
    return f'syntax = "proto3";\npackage demo;\n\nmessage Order {{\n{fields}}}\n'


EVOLUTIONS = [
    Evolution(
        "AVRO",
        _avro(),
        _avro({"name": "note", "type": ["null", "string"], "default": None}),
        _avro({"name": "region", "type": "string"}),
    ),
    Evolution(
        "JSON",
        _json_schema({"id": {"type": "string"}, "amount": {"type": "integer"}}),
        _json_schema({"id": {"type": "string"}, "amount": {"type": "integer"}, "note": {"type": "string"}}),
        _json_schema({"id": {"type": "string"}, "amount": {"type": "string"}}),
    ),
    Evolution(
        "PROTOBUF",
        _proto("  string id = 1;\n  int64 amount = 2;\n"),
        _proto("  string id = 1;\n  int64 amount = 2;\n  string note = 3;\n"),
        _proto("  string id = 1;\n  string amount = 2;\n"),
    ),
]


@pytest.mark.parametrize("evolution", EVOLUTIONS, ids=lambda e: e.schema_type)
def test_register_get_by_id_list_versions_and_a_backward_incompatible_schema_is_refused(
    schema_registry: SchemaRegistry, unique: Callable[[str], str], evolution: Evolution
) -> None:
    client = schema_registry.client()
    subject = f"{unique('orders')}-value"
    assert client.get_compatibility() == "BACKWARD"  # Confluent's default, set on the new registry

    first = client.register_schema(subject, Schema(evolution.v1, evolution.schema_type))
    stored = client.get_schema(first)
    assert (stored.schema_type, stored.schema_str) == (evolution.schema_type, evolution.v1)
    second = client.register_schema(subject, Schema(evolution.v2, evolution.schema_type))
    assert second != first
    assert client.get_versions(subject) == [1, 2]
    assert client.get_version(subject, 1).schema_id == first
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id, latest.subject) == (2, second, subject)
    assert client.lookup_schema(subject, Schema(evolution.v1, evolution.schema_type)).version == 1
    # registering a schema the subject has is its version, not a new one
    assert client.register_schema(subject, Schema(evolution.v1, evolution.schema_type)) == first
    # one id per distinct schema: another subject registering it gets the same id, as on Confluent's registry
    assert client.register_schema(f"{unique('other')}-value", Schema(evolution.v1, evolution.schema_type)) == first

    assert client.test_compatibility(subject, Schema(evolution.incompatible, evolution.schema_type)) is False
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(evolution.incompatible, evolution.schema_type))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert "Incompatible artifact" in refused.value.error_message and subject in refused.value.error_message
    assert "\n" not in refused.value.error_message
    assert client.get_versions(subject) == [1, 2]


def test_an_avro_schema_in_another_layout_is_the_same_version(
    schema_registry: SchemaRegistry, unique: Callable[[str], str]
) -> None:
    client = schema_registry.client()
    subject = f"{unique('layout')}-value"
    compact = client.register_schema(subject, Schema(json.dumps(ORDER_V1, separators=(",", ":")), "AVRO"))
    assert client.register_schema(subject, Schema(json.dumps(ORDER_V1, indent=2), "AVRO")) == compact
    assert client.get_versions(subject) == [1]


def _context(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_avro_serializer_writes_confluents_wire_format_and_the_deserializer_reads_it(
    schema_registry: SchemaRegistry, unique: Callable[[str], str]
) -> None:
    client = schema_registry.client()
    topic = unique("orders")
    order = {"id": "a1", "amount": 1234}

    data = AvroSerializer(client, json.dumps(ORDER_V1))(order, _context(topic))

    # auto.register.schemas (the default) under TopicNameStrategy's subject "<topic>-value"
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.version == 1
    payload = io.BytesIO()
    fastavro.schemaless_writer(payload, fastavro.parse_schema(ORDER_V1), order)
    assert data == b"\x00" + registered.schema_id.to_bytes(4, "big") + payload.getvalue()
    assert AvroDeserializer(client)(data, _context(topic)) == order


def test_json_schema_serializer_round_trips(schema_registry: SchemaRegistry, unique: Callable[[str], str]) -> None:
    client = schema_registry.client()
    topic = unique("orders")
    order = {"id": "a1", "amount": 1234}

    data = JSONSerializer(EVOLUTIONS[1].v1, client)(order, _context(topic))

    registered = client.get_latest_version(f"{topic}-value")
    assert data[:5] == b"\x00" + registered.schema_id.to_bytes(4, "big")
    assert json.loads(data[5:]) == order
    assert JSONDeserializer(None, schema_registry_client=client)(data, _context(topic)) == order


def _order_message_class() -> Any:
    """A Protobuf message class for ``demo.Order`` as ``protoc`` would generate it, built from its descriptor."""
    proto = descriptor_pb2.FileDescriptorProto(name="demo/order.proto", package="demo", syntax="proto3")
    message = proto.message_type.add(name="Order")
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=optional)
    message.field.add(name="amount", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("demo.Order"))


def test_protobuf_serializer_round_trips(schema_registry: SchemaRegistry, unique: Callable[[str], str]) -> None:
    client = schema_registry.client()
    topic = unique("orders")
    order_class = _order_message_class()
    order = order_class(id="a1", amount=1234)

    data = ProtobufSerializer(order_class, client, {"use.deprecated.format": False})(order, _context(topic))

    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    # magic byte, schema id, the message indexes ([0], the file's first message: one zero byte), the message
    assert data == b"\x00" + registered.schema_id.to_bytes(4, "big") + b"\x00" + order.SerializeToString()
    back = ProtobufDeserializer(order_class, {"use.deprecated.format": False})(data, _context(topic))
    assert (back.id, back.amount) == ("a1", 1234)


def test_the_registry_requires_its_credentials_and_never_logs_them(
    schema_registry: SchemaRegistry, unique: Callable[[str], str]
) -> None:
    subject = f"{unique('secret')}-value"
    schema_registry.client().register_schema(subject, Schema(json.dumps(ORDER_V1), "AVRO"))
    for config in ({"url": schema_registry.url}, {**schema_registry.config(), "basic.auth.user.info": "streamproc:no"}):
        with pytest.raises(SchemaRegistryError) as refused:
            SchemaRegistryClient(config).get_versions(subject)
        assert refused.value.http_status_code == 401

    log = schema_registry.log_path.read_text(encoding="utf-8", errors="replace")
    assert subject in log  # the access log names the requests
    assert schema_registry.password not in log


def test_registry_restarts_on_its_schemas_and_url_and_a_failed_start_shows_the_log(tmp_path: Path) -> None:
    workdir = tmp_path / "registry"
    first = registry.start(workdir)
    try:
        client = SchemaRegistryClient(registry.client_config(first))
        schema_id = client.register_schema("kept-value", Schema(json.dumps(ORDER_V1), "AVRO"))
        client.set_compatibility(level="FULL")
    finally:
        assert registry.stop(workdir)
    assert not is_alive(first.pid)
    assert "stopped" in registry.status(workdir)

    second = registry.start(workdir)
    try:
        assert second.address == first.address and second.pid != first.pid
        assert registry.status(workdir).startswith(f"running: pid {second.pid}")
        client = SchemaRegistryClient(registry.client_config(second))
        assert json.loads(client.get_schema(schema_id).schema_str) == ORDER_V1
        assert client.get_versions("kept-value") == [1]
        assert client.get_compatibility() == "FULL"  # a restart keeps the global level it was given
    finally:
        registry.stop(workdir)

    with pytest.raises(DevServiceError, match="exited during start; last lines of") as failed:
        registry.start(workdir, heap="nonsense", timeout_s=60)
    assert "Invalid maximum heap size: -Xmxnonsense" in str(failed.value)
