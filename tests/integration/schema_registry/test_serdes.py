"""The Schema Registry serdes (``streamproc.schema_registry``) against the real registry the tests start.

Confluent's wire format (magic byte 0, the 4-byte schema id, the payload), the subjects each strategy registers and
how many versions, generic records carrying their schema from one topic to another, specific records read with their
own schema, Protobuf and JSON Schema, and the failures: a record's (an unknown id, a payload that does not match:
``SerializationException``, the handler's to decide) and the registry's (down, wrong credentials, an incompatible
schema: one line naming the registry, never its password). Byte identity with a Java writer is the oracle's
(``tests/integration/conformance/``).
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

import fastavro
import pytest

from streamproc.dsl import Consumed, Produced, StreamsBuilder
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.serdes import SERDES, SerializationException
from streamproc.engine.stream_task import TaskConfig
from streamproc.errors import ConfigError, SchemaRegistryError, SchemaRegistryUnavailable, StreamsError
from streamproc.schema_registry import (
    GenericAvroSerde,
    GenericRecord,
    KafkaJsonSchemaSerde,
    KafkaProtobufSerde,
    SpecificAvroSerde,
    check_reachable,
    check_registries,
    specific_record,
)
from streamproc.schema_registry import client as registry_client
from streamproc.schema_registry.client import collected
from streamproc.schema_registry.config import SchemaRegistryConfig
from streamproc.testing import TopologyTestDriver
from streamproc_dev.service_process import free_port
from tests.conftest import SchemaRegistry
from tests.integration.dev.test_schema_registry import _order_message_class

ORDER: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
#: ``ORDER`` with a field added (with a default): BACKWARD compatible, and a reader of ``ORDER`` drops it.
ORDER_V2: dict[str, Any] = {**ORDER, "fields": [*ORDER["fields"], {"name": "coupon", "type": "string", "default": ""}]}


@pytest.fixture
def configs(schema_registry: SchemaRegistry) -> dict[str, str]:
    return schema_registry.serde_configs()


def _versions(registry: SchemaRegistry, subject: str) -> list[int]:
    return list(registry.client().get_versions(subject))


def _framed(schema_id: int, payload: bytes) -> bytes:
    return struct.pack(">bI", 0, schema_id) + payload


def _avro(schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return out.getvalue()


def test_a_generic_record_is_confluents_wire_format_under_its_topics_subject(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    topic = unique("orders")
    serde = GenericAvroSerde(configs)
    record = GenericRecord(ORDER, {"id": "o-1", "amount": 42, "note": None})
    data = serde.serializer.serialize(topic, record)
    assert data is not None
    registered = schema_registry.client().get_latest_version(f"{topic}-value")
    assert data == _framed(registered.schema_id, _avro(ORDER, dict(record)))
    assert _versions(schema_registry, f"{topic}-value") == [1]
    read = serde.deserializer.deserialize(topic, data)
    assert isinstance(read, GenericRecord) and read == record
    assert json.loads(read.schema)["name"] == "Order"
    key_serde = GenericAvroSerde(configs, is_key=True)
    assert key_serde.serializer.serialize(topic, record) == data  # the same schema, so the same id
    assert _versions(schema_registry, f"{topic}-key") == [1]


def test_a_record_read_from_one_topic_is_written_to_another_with_its_writers_schema(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    source, repartition = unique("views"), unique("app-repartition")
    serde = GenericAvroSerde(configs)
    data = serde.serializer.serialize(source, GenericRecord(ORDER_V2, id="o-2", amount=1, note="x", coupon="c"))
    read = serde.deserializer.deserialize(source, data)
    assert serde.serializer.serialize(repartition, read) == data  # same schema, same id, same bytes
    assert _versions(schema_registry, f"{repartition}-value") == [1]


@pytest.mark.parametrize(
    ("strategy", "subject"),
    [
        ("io.confluent.kafka.serializers.subject.TopicNameStrategy", "{topic}-value"),
        ("RecordNameStrategy", "shop.Order"),
        ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", "{topic}-shop.Order"),
    ],
)
def test_each_subject_name_strategy_registers_under_its_subject(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str], strategy: str, subject: str
) -> None:
    topic = unique("strategy")
    namespace = unique("ns").replace("-", "_")  # RecordNameStrategy's subject is shared across tests otherwise
    schema = {**ORDER, "namespace": namespace}
    serde = GenericAvroSerde({**configs, "value.subject.name.strategy": strategy})
    serde.serializer.serialize(topic, GenericRecord(schema, id="o", amount=1))
    expected = subject.format(topic=topic).replace("shop.", f"{namespace}.")
    assert expected in schema_registry.client().get_subjects()


def test_use_latest_version_writes_with_the_subjects_latest_schema(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    topic = unique("latest")
    GenericAvroSerde(configs).serializer.serialize(topic, GenericRecord(ORDER, id="o", amount=1))
    latest = GenericAvroSerde({**configs, "auto.register.schemas": "false", "use.latest.version": "true"})
    data = latest.serializer.serialize(topic, GenericRecord(ORDER, id="o", amount=2))
    assert data is not None and data[1:5] == struct.pack(">I", schema_registry.client().get_latest_version(
        f"{topic}-value").schema_id)  # fmt: skip
    unregistered = GenericAvroSerde({**configs, "auto.register.schemas": "false"})
    with pytest.raises(SchemaRegistryError, match=rf"Schema Registry at {schema_registry.url} answered HTTP 404"):
        unregistered.serializer.serialize(unique("never-registered"), GenericRecord(ORDER, id="o", amount=1))


def test_a_specific_record_is_read_with_its_own_schema(configs: dict[str, str], unique: Callable[[str], str]) -> None:
    topic = unique("specific")
    order = specific_record(ORDER)
    written_v2 = GenericAvroSerde(configs).serializer.serialize(
        topic, GenericRecord(ORDER_V2, id="o-3", amount=7, note=None, coupon="half")
    )
    serde = SpecificAvroSerde(order, configs)
    read = serde.deserializer.deserialize(topic, written_v2)  # v2's writer schema resolved to the class's v1
    assert read == order(id="o-3", amount=7, note=None)
    again = serde.serializer.serialize(topic, read)
    assert serde.deserializer.deserialize(topic, again) == read
    assert order(id="x", amount=1).note is None  # the schema's default


def test_protobuf_and_json_schema_round_trip(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    message_class = _order_message_class()
    topic = unique("proto")
    proto = KafkaProtobufSerde(message_class, configs)
    data = proto.serializer.serialize(topic, message_class(id="p-1", amount=5))
    assert data is not None and data[0] == 0 and data[5] == 0  # magic byte, id, message index [0] as Confluent's
    assert proto.deserializer.deserialize(topic, data) == message_class(id="p-1", amount=5)
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    json_topic = unique("json")
    js = KafkaJsonSchemaSerde(schema, configs)
    data = js.serializer.serialize(json_topic, {"id": "j-1"})
    assert data is not None and data[5:] == b'{"id":"j-1"}'
    assert js.deserializer.deserialize(json_topic, data) == {"id": "j-1"}
    with pytest.raises(SerializationException, match=r"Error serializing JSON Schema message .*'id' is a required"):
        js.serializer.serialize(json_topic, {"other": 1})
    assert f"{json_topic}-value" in schema_registry.client().get_subjects()


def test_an_unknown_id_and_a_payload_that_does_not_match_are_the_records_fault(
    configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    topic = unique("bad")
    serde = GenericAvroSerde(configs)
    good = serde.serializer.serialize(topic, GenericRecord(ORDER, id="o", amount=1))
    assert good is not None
    with pytest.raises(SerializationException, match=r"Error retrieving Avro schema for id 2147483647 .* no schema"):
        serde.deserializer.deserialize(topic, _framed(2**31 - 1, b"\x02x"))
    with pytest.raises(SerializationException, match=r"Error deserializing Avro message for id \d+ of the value"):
        serde.deserializer.deserialize(topic, good[:6])
    with pytest.raises(SerializationException, match=r"Error deserializing Avro message of the value"):
        serde.deserializer.deserialize(topic, b"\x01not framed")


def test_a_registry_that_is_down_or_refuses_is_one_line_without_the_password(
    schema_registry: SchemaRegistry, configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SchemaRegistryUnavailable, match=rf"the Schema Registry at {down} did not answer") as caught:
        check_reachable(SchemaRegistryConfig.from_configs({**configs, "schema.registry.url": down}))
    assert schema_registry.password not in str(caught.value)
    wrong = {**configs, "basic.auth.user.info": f"{schema_registry.user}:not-{schema_registry.password}"}
    with pytest.raises(SchemaRegistryError, match=r"refused the credentials .*\(HTTP 401\)") as refused:
        GenericAvroSerde(wrong).serializer.serialize(unique("t"), GenericRecord(ORDER, id="o", amount=1))
    assert schema_registry.password not in str(refused.value)
    assert schema_registry.password not in repr(SchemaRegistryConfig.from_configs(configs))
    in_url = configs["schema.registry.url"].replace("://", f"://{schema_registry.user}:{schema_registry.password}@")
    assert schema_registry.password not in SchemaRegistryConfig.from_configs({"schema.registry.url": in_url}).location


def test_an_incompatible_schema_is_refused_with_the_registrys_message(
    configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    topic = unique("evolve")
    serde = GenericAvroSerde(configs)
    serde.serializer.serialize(topic, GenericRecord(ORDER, id="o", amount=1))
    incompatible = {**ORDER, "fields": [{"name": "id", "type": "int"}]}
    with pytest.raises(SchemaRegistryError, match=r"refused the schema as incompatible .*: .*Incompatible") as caught:
        serde.serializer.serialize(topic, GenericRecord(incompatible, id=1))
    assert "\n" not in str(caught.value)


def test_a_schema_costs_one_registry_call_per_process_not_one_per_record(
    configs: dict[str, str], unique: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = unique("calls")
    serde = GenericAvroSerde(configs)
    calls: list[str] = []
    rest = registry_client.client_for(serde.serializer.config)._rest_client
    send = rest.send_request
    monkeypatch.setattr(rest, "send_request", lambda url, *a, **k: calls.append(url) or send(url, *a, **k))
    records = [GenericRecord(ORDER, id=f"o-{i}", amount=i, note=None) for i in range(500)]
    written = [serde.serializer.serialize(topic, r) for r in records]
    other = GenericAvroSerde(configs)  # another serde of the process (another task's topology): the same client
    assert [other.deserializer.deserialize(topic, d) for d in written] == records
    assert calls and len(calls) == len(set(calls)) <= 2, calls  # the register, at most a lookup by id: once each


def test_a_default_serde_is_configured_with_the_applications_settings_and_a_driver_runs_it(
    configs: dict[str, str], unique: Callable[[str], str]
) -> None:
    source, sink = unique("in"), unique("out")
    builder = StreamsBuilder()
    builder.stream(source).map_values(lambda order: GenericRecord(order.schema, order, amount=order["amount"] * 2)).to(
        sink
    )
    with collected() as registries:
        topology = builder.build({**configs, "default.key.serde": "String", "default.value.serde": GenericAvroSerde})
    assert [r.location for r in registries] == [configs["schema.registry.url"]]
    check_registries(registries)  # it answers
    writer = GenericAvroSerde(configs)
    with TopologyTestDriver(topology) as driver:
        driver.pipe_raw(source, 0, b"k", writer.serializer.serialize(source, GenericRecord(ORDER, id="o", amount=4)))
        out = driver.read_raw(sink)
    assert writer.deserializer.deserialize(sink, out.value) == {"id": "o", "amount": 8, "note": None}
    unconfigured = StreamsBuilder()
    unconfigured.stream(source, Consumed.with_(SERDES["String"](), GenericAvroSerde())).to(
        sink, Produced.with_(SERDES["String"](), SERDES["String"]())
    )
    with TopologyTestDriver(unconfigured.build()) as driver, pytest.raises(StreamsError) as caught:
        driver.pipe_raw(source, 0, b"k", b"\x00\x00\x00\x00\x01")
    assert isinstance(caught.value.__cause__, ConfigError)
    assert "used before configure(configs, is_key)" in str(caught.value.__cause__)


def _counting_topology(source: str, sink: str, value_serde: GenericAvroSerde) -> Any:
    builder = StreamsBuilder()
    builder.stream(source, Consumed.with_(SERDES["String"](), value_serde)).map_values(lambda v: v["id"]).to(
        sink, Produced.with_(SERDES["String"](), SERDES["String"]())
    )
    return builder.build()


@pytest.fixture
def bad_id_record(configs: dict[str, str], unique: Callable[[str], str]) -> Iterator[tuple[str, str, bytes, bytes]]:
    source, sink = unique("in"), unique("out")
    good = GenericAvroSerde(configs).serializer.serialize(source, GenericRecord(ORDER, id="ok", amount=1))
    assert good is not None
    yield source, sink, good, _framed(2**31 - 2, good[5:])


def test_a_record_with_an_unknown_id_takes_the_deserialization_handlers_path(
    configs: dict[str, str], bad_id_record: tuple[str, str, bytes, bytes]
) -> None:
    source, sink, good, bad = bad_id_record
    continuing = TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler())
    with TopologyTestDriver(_counting_topology(source, sink, GenericAvroSerde(configs)), continuing) as driver:
        for value in (good, bad, good):
            driver.pipe_raw(source, 0, b"k", value)
        assert [driver.read_raw(sink).value for _ in range(2)] == [b"ok", b"ok"]
        [dropped] = driver.dropped_records()
    assert (dropped.topic, dropped.offset, dropped.reason) == (source, 1, "deserialization")
    with TopologyTestDriver(_counting_topology(source, sink, GenericAvroSerde(configs))) as driver:  # LogAndFail
        driver.pipe_raw(source, 0, b"k", good)
        with pytest.raises(StreamsError, match=rf"topic=\[{source}\] partition=\[0\] offset=\[1\]"):
            driver.pipe_raw(source, 0, b"k", bad)


def test_a_registry_that_goes_down_fails_the_task_instead_of_skipping_records(
    configs: dict[str, str], bad_id_record: tuple[str, str, bytes, bytes]
) -> None:
    source, sink, good, _bad = bad_id_record
    down = GenericAvroSerde({**configs, "schema.registry.url": f"http://127.0.0.1:{free_port()}"})
    continuing = TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler())
    with TopologyTestDriver(_counting_topology(source, sink, down), continuing) as driver:
        with pytest.raises(SchemaRegistryUnavailable, match="did not answer while deserializing the value"):
            driver.pipe_raw(source, 0, b"k", good)
        assert driver.dropped_records() == ()
