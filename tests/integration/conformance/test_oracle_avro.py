"""The oracle's Avro modes against the real broker and Schema Registry (issue #25).

``avro-serde`` (Apicurio's Kafka serde, standing for Confluent's Java serializers, ``conformance/README.md``) must write
the bytes confluent_kafka's ``AvroSerializer`` writes for the same datum against the same registry, registering the
same subject and version, for a generic record and for a generated SpecificRecord. ``avro-app`` runs Confluent's two
Avro example apps (``WikipediaFeedAvroLambdaExample``, ``PageViewRegionLambdaExample``) over inputs Python wrote
with ``AvroSerializer`` (TopicNameStrategy, String keys placed by Java's partitioner): each restores nothing, its
stores and output topic hold what the inputs give, and it registers exactly the subjects of its internal topics
whose values are Avro (repartition topics, and the changelog of the table's source store), with the examples'
schemas.
"""

from __future__ import annotations

import json
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import topic_record_subject_name_strategy
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from streamproc_dev.conformance.avro import (
    AVRO_APPS,
    avro_schema,
    registry_base,
    run_avro_app,
    run_avro_serde,
)
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from tests.conftest import SchemaRegistry
from tests.integration.conftest import delete_topics, recreate_topics

pytestmark = pytest.mark.integration

PARTITIONS = 2
#: The minute the page views fall in: each view is in the same five hopping windows (5 min, advancing by 1 min), none
#: of which closes before the last view, so the counts do not depend on the order the views reach the count.
VIEWS_MINUTE_MS = (int(time.time() * 1000) // 60_000 - 120) * 60_000


@pytest.fixture(scope="module")
def oracle_jar() -> Path:
    return ensure_oracle_jar()


def _request(registry: SchemaRegistry, **fields: Any) -> dict[str, Any]:
    return {"registry": registry_base(registry.url), "user": registry.user, "password": registry.password,
            "is_key": False, "subject_strategy": "topic", "auto_register": True, "use_latest_version": False,
            **fields}  # fmt: skip


def _versions(registry: SchemaRegistry, subject: str) -> list[tuple[int, int]]:
    client = registry.client()
    return [(v, client.get_version(subject, v).schema_id) for v in client.get_versions(subject)]


def _schema_id(data: bytes) -> int:
    assert data[0] == 0, f"magic byte {data[0]}, not Confluent's 0"
    return int(struct.unpack(">i", data[1:5])[0])


def _without_java_string(schema: Any) -> Any:
    """A schema's JSON with avro-maven-plugin's ``{"type": "string", "avro.java.string": "String"}`` as ``"string"``."""
    if isinstance(schema, dict):
        if schema == {"type": "string", "avro.java.string": "String"}:
            return "string"
        return {k: _without_java_string(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_without_java_string(v) for v in schema]
    return schema


def test_avro_serde_writes_the_bytes_confluent_kafka_writes(
    oracle_jar: Path, schema_registry: SchemaRegistry, unique: Callable[[str], str]
) -> None:
    client = schema_registry.client()
    generic_topic, specific_topic = unique("views"), unique("feed")
    pageview = avro_schema("pageview")
    view = {"user": "ann", "page": "/checkout/é", "industry": "retail", "flags": "beta"}
    # Python first for the generic record (it registers the .avsc text as it is; Java finds that version), the
    # oracle first for the specific one (it registers the generated class's schema, which Python then uses).
    python_generic = AvroSerializer(client, pageview)(view, SerializationContext(generic_topic, MessageField.VALUE))
    python_key = AvroSerializer(client, pageview, conf={"subject.name.strategy": topic_record_subject_name_strategy})(
        view, SerializationContext(generic_topic, MessageField.KEY)
    )
    view_json = {**view, "flags": {"string": "beta"}}
    feed_json = {"user": "bob", "is_new": True, "content": {"string": "two words"}}
    incompatible = {**json.loads(pageview), "fields": [*json.loads(pageview)["fields"], {"name": "n", "type": "int"}]}
    generic, specific, key, refused, back, back_specific = run_avro_serde([
        _request(schema_registry, topic=generic_topic, schema=pageview, value=view_json, kind="generic"),
        _request(schema_registry, topic=specific_topic, schema=avro_schema("wikifeed"), value=feed_json,
                 kind="specific"),
        _request(schema_registry, topic=generic_topic, schema=pageview, value=view_json, is_key=True,
                 subject_strategy="topic_record"),
        _request(schema_registry, topic=generic_topic, schema=json.dumps(incompatible), value={**view_json, "n": 1}),
        _request(schema_registry, topic=generic_topic, bytes=python_generic.hex(), kind="generic"),
        _request(schema_registry, topic=generic_topic, bytes=python_generic.hex(), kind="specific"),
    ])  # fmt: skip
    registered = client.get_latest_version(f"{specific_topic}-value").schema.schema_str
    python_specific = AvroSerializer(client, registered)(
        {"user": "bob", "is_new": True, "content": "two words"},
        SerializationContext(specific_topic, MessageField.VALUE),
    )

    assert generic == {"bytes": python_generic.hex()}
    assert specific == {"bytes": python_specific.hex()}
    assert key == {"bytes": python_key.hex()}
    for subject, data in ((f"{generic_topic}-value", python_generic), (f"{specific_topic}-value", python_specific),
                          (f"{generic_topic}-io.confluent.examples.streams.avro.PageView", python_key)):  # fmt: skip
        assert _versions(schema_registry, subject) == [(1, _schema_id(data))]
    # BACKWARD (the registry's global level): a new field without a default is refused, in one line.
    assert "Incompatible" in refused["error"] and "\n" not in refused["error"], refused
    # Confluent's serializer registers a SpecificRecord's SCHEMA$: with the examples' stringType String, the
    # generated schema marks its strings "avro.java.string" (and is another schema than the .avsc's for the registry).
    assert '"avro.java.string":"String"' in registered
    assert _without_java_string(json.loads(registered)) == json.loads(avro_schema("wikifeed"))
    assert back == {"value": view_json, "class": "org.apache.avro.generic.GenericData$Record"}
    assert back_specific == {"value": view_json, "class": "io.confluent.examples.streams.avro.PageView"}


# ------------------------------------------------------------------------------------------------ the example apps
@pytest.fixture
def example_topics(admin: AdminClient, request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The program's fixed topics (the examples' names), fresh, deleted afterwards."""
    inputs, output = AVRO_APPS[request.param]
    topics = [*inputs, output]
    recreate_topics(admin, topics, PARTITIONS)
    yield topics
    delete_topics(admin, topics)


def _produce(
    bootstrap: str, registry: SchemaRegistry, topic: str, schema: str, records: list[tuple[str, Any, int]]
) -> None:
    """``(key, value, timestamp)`` with confluent_kafka's AvroSerializer (TopicNameStrategy, auto-register), String
    keys placed as Java's producer places them."""
    serializer = AvroSerializer(registry.client(), schema)
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value, timestamp in records:
        data = serializer(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, key=key.encode(), value=data, timestamp=timestamp)
    assert producer.flush(60) == 0


def _read_all(bootstrap: str, topic: str, group: str) -> list[tuple[int, str, int]]:
    """Every record of ``topic``: (partition, key, Long value), in partition order, up to each partition's end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    consumer.subscribe([topic])
    records: list[tuple[int, str, int]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < PARTITIONS:
            assert time.monotonic() < deadline, f"{topic}: no end of partitions {set(range(PARTITIONS)) - at_end}"
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            records.append((message.partition(), message.key().decode(), struct.unpack(">q", message.value())[0]))
    finally:
        consumer.close()
    return records


def _app_subjects(registry: SchemaRegistry, app_id: str) -> dict[str, list[dict[str, Any]]]:
    """The subjects under the app's prefix: their versions' schemas (as JSON)."""
    client = registry.client()
    return {
        subject: [json.loads(client.get_version(subject, v).schema.schema_str) for v in client.get_versions(subject)]
        for subject in client.get_subjects()
        if subject.startswith(f"{app_id}-")
    }


@pytest.mark.parametrize("example_topics", ["wikipedia-feed"], indirect=True)
def test_wikipedia_feed_example_app(
    oracle_jar: Path, kafka_broker: str, schema_registry: SchemaRegistry, example_topics: list[str],
    unique: Callable[[str], str], tmp_path: Path,
) -> None:  # fmt: skip
    start = VIEWS_MINUTE_MS
    feeds = [(f"u{i % 3}", {"user": f"u{i % 3}", "is_new": i % 4 != 0, "content": None if i % 5 == 0 else f"edit {i}"},
              start + i * 1_000) for i in range(14)]  # fmt: skip
    _produce(kafka_broker, schema_registry, "WikipediaFeed", avro_schema("wikifeed"), feeds)
    app_id = unique("wikifeed")

    result = run_avro_app(kafka_broker, app_id, tmp_path / "state", "wikipedia-feed", schema_registry.url,
                          schema_registry.user, schema_registry.password)  # fmt: skip

    new = [(value["user"], timestamp) for _key, value, timestamp in feeds if value["is_new"]]
    counts = Counter(user for user, _t in new)
    last = dict(new)  # the last new feed of each user
    assert result["restored"] == 0
    assert result["store"] == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000003": sorted(f"{u} -> <{n},{last[u]}>" for u, n in counts.items())
    }
    outputs = _read_all(kafka_broker, "WikipediaStats", unique("check"))
    per_user: dict[str, list[int]] = {}
    for _partition, user, count in outputs:
        per_user.setdefault(user, []).append(count)
    assert per_user == {u: list(range(1, n + 1)) for u, n in counts.items()}  # no cache: every update
    subjects = _app_subjects(schema_registry, app_id)
    assert list(subjects) == [f"{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition-value"]
    (repartition,) = subjects.values()
    assert len(repartition) == 1
    assert _without_java_string(repartition[0]) == json.loads(avro_schema("wikifeed"))
    assert repartition[0] != json.loads(avro_schema("wikifeed")), "the specific record's schema has avro.java.string"


@pytest.mark.parametrize("example_topics", ["pageview-region"], indirect=True)
def test_pageview_region_example_app(
    oracle_jar: Path, kafka_broker: str, schema_registry: SchemaRegistry, example_topics: list[str],
    unique: Callable[[str], str], tmp_path: Path,
) -> None:  # fmt: skip
    regions = {"u0": "europe", "u1": "asia", "u2": "europe", "u3": "americas"}
    profiles_at = VIEWS_MINUTE_MS - 60_000
    profiles = [(u, {"experience": None if u == "u0" else "senior", "region": r}, profiles_at + i * 1_000)
                for i, (u, r) in enumerate(regions.items())]  # fmt: skip
    profiles.append(("u1", {"experience": "junior", "region": "oceania"}, profiles_at + 10_000))  # u1 moved
    regions["u1"] = "oceania"
    views = [(f"u{i % 4}", {"user": f"u{i % 4}", "page": f"/p{i % 3}", "industry": "tech", "flags": None},
              VIEWS_MINUTE_MS + i * 2_000) for i in range(16)]  # fmt: skip
    _produce(kafka_broker, schema_registry, "UserProfiles", avro_schema("userprofile"), profiles)
    _produce(kafka_broker, schema_registry, "PageViews", avro_schema("pageview"), views)
    app_id = unique("pageviews")

    result = run_avro_app(kafka_broker, app_id, tmp_path / "state", "pageview-region", schema_registry.url,
                          schema_registry.user, schema_registry.password)  # fmt: skip

    per_region = Counter(regions[value["user"]] for _k, value, _t in views)
    last_view = {regions[value["user"]]: t for _k, value, t in views}
    starts = [VIEWS_MINUTE_MS - k * 60_000 for k in range(5)]  # the five windows every view falls in
    latest_profile = {key: (value, t) for key, value, t in profiles}
    assert result["restored"] == 0
    assert result["store"] == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000011": sorted(
            f"[{r}@{s}/{s + 300_000}] -> <{n},{last_view[r]}>" for r, n in per_region.items() for s in starts
        ),
        "UserProfiles-STATE-STORE-0000000002": sorted(
            f"{u} -> <{json.dumps(v, separators=(', ', ': '))},{t}>" for u, (v, t) in latest_profile.items()
        ),
    }
    final: dict[str, int] = {}
    for _partition, window, count in _read_all(kafka_broker, "PageViewsByRegion", unique("check")):
        final[window] = count
    assert final == {f"[{r}@{s}/{s + 300_000}]": n for r, n in per_region.items() for s in starts}
    assert _app_subjects(schema_registry, app_id) == {
        f"{app_id}-KSTREAM-MAP-0000000001-repartition-value": [json.loads(avro_schema("pageview"))],
        f"{app_id}-UserProfiles-STATE-STORE-0000000002-changelog-value": [json.loads(avro_schema("userprofile"))],
        f"{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000011-repartition-value": [
            json.loads(avro_schema("pageviewregion"))
        ],
    }
