"""streamproc's Avro serdes write the bytes a Java application's serializer writes, and register the same subjects.

The Java writer is the oracle's ``avro-serde`` (Apicurio's Kafka serde in Confluent's wire format, standing for
Confluent's ``KafkaAvroSerializer``, which is not on Maven Central: ``conformance/README.md``). For each datum, both
write against the same registry under the same subject strategy: the bytes are equal, the subject holds one version,
and each side reads the other's bytes back to the same datum. Every Avro type is covered (primitives, logical types,
enum, fixed, array, map, a nested record, unions), for generic records, for a specific record generated with
``stringType`` String (the examples' WikiFeed), for a key, and under the three subject strategies.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import fastavro
import pytest

from streamproc.schema_registry import GenericAvroSerde, GenericRecord, SpecificAvroSerde, specific_record
from streamproc_dev.conformance.avro import avro_schema, registry_base, run_avro_serde
from tests.conftest import SchemaRegistry

pytestmark = pytest.mark.integration

EVERYTHING: dict[str, Any] = {
    "type": "record",
    "name": "Everything",
    "namespace": "identity",
    "doc": "Every Avro type once.",
    "fields": [
        {"name": "flag", "type": "boolean"},
        {"name": "small", "type": "int"},
        {"name": "big", "type": "long"},
        {"name": "ratio", "type": "float"},
        {"name": "precise", "type": "double"},
        {"name": "raw", "type": "bytes"},
        {"name": "text", "type": "string", "doc": "UTF-8, outside ASCII too"},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "colour", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]}},
        {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 4}},
        {"name": "scores", "type": {"type": "array", "items": "long"}},
        {"name": "labels", "type": {"type": "map", "values": "string"}},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "zip", "type": ["null", "int"], "default": None}]}},
        {"name": "maybe", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["long", "string"]},
    ],
}  # fmt: skip
#: ``EVERYTHING``'s datum in Avro's JSON encoding (what the oracle reads; unions as ``{"type": value}``, bytes as
#: ISO-8859-1 code points).
EVERYTHING_JSON: dict[str, Any] = {
    "flag": True, "small": -7, "big": 2**40, "ratio": 0.5, "precise": -1.25e-3, "raw": "\u0000\u00ff",
    "text": "Zürich ✓", "day": 19_000, "at": 1_700_000_000_123, "amount": "\u0004\u00d2", "colour": "GREEN",
    "tag": "ab\u0000\u00ff", "scores": [1, -2, 3], "labels": {"a": "x", "b": "y"},
    "address": {"street": "Main", "zip": {"int": 8001}}, "maybe": None, "either": {"string": "s"},
}  # fmt: skip


def _datum(schema: dict[str, Any] | str, avro_json: dict[str, Any]) -> dict[str, Any]:
    """The Avro JSON encoding as the Python datum the serde takes (fastavro's reading of it)."""
    parsed = json.loads(schema) if isinstance(schema, str) else schema
    [record] = fastavro.json_reader(io.StringIO(json.dumps(avro_json)), parsed)
    return dict(record)


def _request(registry: SchemaRegistry, **fields: Any) -> dict[str, Any]:
    return {"registry": registry_base(registry.url), "user": registry.user, "password": registry.password,
            "is_key": False, "subject_strategy": "topic", "auto_register": True, "use_latest_version": False,
            **fields}  # fmt: skip


@pytest.mark.parametrize(
    ("strategy", "java_strategy", "subject"),
    [
        ("TopicNameStrategy", "topic", "{topic}-{side}"),
        ("RecordNameStrategy", "record", "{record}"),
        ("TopicRecordNameStrategy", "topic_record", "{topic}-{record}"),
    ],
)
@pytest.mark.parametrize("is_key", [False, True], ids=["value", "key"])
def test_a_generic_record_of_every_type_is_written_as_javas_serializer_writes_it(
    schema_registry: SchemaRegistry,
    unique: Callable[[str], str],
    strategy: str,
    java_strategy: str,
    subject: str,
    is_key: bool,
) -> None:
    topic = unique("identity")
    schema = {**EVERYTHING, "namespace": unique("ns").replace("-", "_")}  # record subjects are per test too
    side = "key" if is_key else "value"
    serde = GenericAvroSerde({**schema_registry.serde_configs(), f"{side}.subject.name.strategy": strategy},
                             is_key=is_key)  # fmt: skip
    record = GenericRecord(schema, _datum(schema, EVERYTHING_JSON))
    ours = serde.serializer.serialize(topic, record)
    assert ours is not None
    [java] = run_avro_serde([_request(schema_registry, topic=topic, schema=json.dumps(schema), value=EVERYTHING_JSON,
                                      kind="generic", is_key=is_key, subject_strategy=java_strategy)])  # fmt: skip
    assert java == {"bytes": ours.hex()}
    name = subject.format(topic=topic, side=side, record=f"{schema['namespace']}.Everything")
    assert list(schema_registry.client().get_versions(name)) == [1]
    assert serde.deserializer.deserialize(topic, bytes.fromhex(java["bytes"])) == record


def test_a_specific_record_generated_with_string_type_string_is_written_as_the_java_class_writes_it(
    schema_registry: SchemaRegistry, unique: Callable[[str], str]
) -> None:
    """The Java app registers its generated class's schema first (``avro.java.string`` marks); the port's
    ``specific_record(..., string_type="String")`` finds that version and writes the same bytes."""
    topic = unique("feed")
    feed_json = {"user": "bob", "is_new": True, "content": {"string": "two words"}}
    [java] = run_avro_serde([_request(schema_registry, topic=topic, schema=avro_schema("wikifeed"), value=feed_json,
                                      kind="specific")])  # fmt: skip
    wiki_feed = specific_record(avro_schema("wikifeed"), string_type="String")
    serde = SpecificAvroSerde(wiki_feed, schema_registry.serde_configs())
    feed = wiki_feed(user="bob", is_new=True, content="two words")
    assert serde.serializer.serialize(topic, feed) == bytes.fromhex(java["bytes"])
    assert list(schema_registry.client().get_versions(f"{topic}-value")) == [1]
    assert serde.deserializer.deserialize(topic, bytes.fromhex(java["bytes"])) == feed
    [back] = run_avro_serde([_request(schema_registry, topic=topic, bytes=java["bytes"], kind="specific")])
    assert back["value"] == feed_json
