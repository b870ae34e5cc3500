"""Confluent's two Avro example applications, handed off to their real Java apps through a real Schema Registry.

``WikipediaFeedAvroLambdaExample`` (SpecificAvro: filter → re-key → count) and ``PageViewRegionLambdaExample``
(GenericAvro: re-key → left join with a table → re-key → hopping-window count), written elsewhere, run as real
Kafka Streams apps (the oracle's ``avro-app``, Apicurio's serde standing for Confluent's) and ported to the Python
DSL without change (``examples/kafka_streams_examples/``). The real app processes the first part of the input,
``streamproc run`` the second (the registry's URL and credentials in ``--streams-config``, as the Java app's
properties hold them), the real app the third: it restores nothing, and its stores, its outputs and the registry's
subjects (one version each, the same schemas) equal those of one real app run over everything. The registry's
password appears in none of the run's plan, ledger, task reports or output.

The inputs are written as a Python producer would, with confluent_kafka's ``AvroSerializer`` and the examples'
``.avsc`` files; every timestamp falls in one minute, so that no window closes before the last record and counts
do not depend on the order records meet the count (the count is Kafka Streams', not a batch artefact).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from streamproc.cli import main
from streamproc_dev.conformance.avro import AVRO_APPS, avro_schema, run_avro_app
from tests.conftest import SchemaRegistry
from tests.integration.conftest import delete_topics, recreate_topics
from tests.integration.handoff.test_dsl_programs_handoff import PARTITIONS, _Outputs, _read, _summary

pytestmark = pytest.mark.integration

#: The ported application of each oracle program (``--topology``).
PORTS = {
    "wikipedia-feed": "examples.kafka_streams_examples.wikipedia_feed:build",
    "pageview-region": "examples.kafka_streams_examples.pageview_region:build",
}
#: The minute every record falls in (see the module doc), two minutes ago.
MINUTE_MS = (int(time.time() * 1000) // 60_000 - 2) * 60_000
USERS = ("ann", "bob", "cy", "dee", "eve")
REGIONS = {"ann": "europe", "bob": "asia", "cy": "europe", "dee": "americas", "eve": "oceania"}

#: (topic, key, value, timestamp, schema) per record of one part.
Part = list[tuple[str, str, dict[str, Any], int, str]]


def _parts(program: str) -> list[Part]:
    """Three parts, timestamps rising through one minute; a page-view app's profiles (with one user moving) first."""
    rng = random.Random(f"25/{program}")
    times = iter(range(MINUTE_MS + 1_000, MINUTE_MS + 59_000, 700))
    parts: list[Part] = []
    for part in range(3):
        records: Part = []
        if program == "pageview-region" and part == 0:
            for user in USERS:
                region = "asia" if user == "cy" else REGIONS[user]  # cy moves to europe below
                profile = {"experience": None if user == "ann" else "senior", "region": region}
                records.append(("UserProfiles", user, profile, next(times), "userprofile"))
            records.append(("UserProfiles", "cy", {"experience": "junior", "region": "europe"}, next(times),
                            "userprofile"))  # fmt: skip
        for i in range(20):
            user = rng.choice(USERS)
            if program == "wikipedia-feed":
                feed = {"user": user, "is_new": rng.random() < 0.7, "content": None if i % 5 == 0 else f"edit {i}"}
                records.append(("WikipediaFeed", user, feed, next(times), "wikifeed"))
            else:
                view = {"user": user, "page": f"/p{rng.randrange(4)}", "industry": "tech", "flags": None}
                records.append(("PageViews", user, view, next(times), "pageview"))
        parts.append(records)
    return parts


def _produce(bootstrap: str, registry: SchemaRegistry, records: Part) -> None:
    """As a Python producer writes them: AvroSerializer with the ``.avsc`` (TopicNameStrategy), String keys placed
    by Java's partitioner."""
    client = registry.client()
    serializers = {name: AvroSerializer(client, avro_schema(name)) for name in {r[4] for r in records}}
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for topic, key, value, timestamp, schema in records:
        data = serializers[schema](value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, key=key.encode(), value=data, timestamp=timestamp)
    assert producer.flush(60) == 0


def _subjects(registry: SchemaRegistry, app_id: str) -> dict[str, list[str]]:
    """The app's subjects without its id, each with its versions' schemas (parsed, so layout does not count)."""
    client = registry.client()
    return {
        subject.removeprefix(app_id): [
            json.dumps(json.loads(client.get_version(subject, v).schema.schema_str), sort_keys=True)
            for v in client.get_versions(subject)
        ]
        for subject in client.get_subjects()
        if subject.startswith(f"{app_id}-")
    }


@pytest.mark.parametrize("program", sorted(PORTS))
def test_the_real_avro_app_resumes_after_streamproc_run_as_if_it_had_processed_everything(
    program: str,
    kafka_broker: str,
    admin: AdminClient,
    schema_registry: SchemaRegistry,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    inputs, output = AVRO_APPS[program]
    recreate_topics(admin, [*inputs, output], PARTITIONS)
    parts = _parts(program)
    app_id, alone_id, state_dir = unique("avro-handoff"), unique("avro-alone"), tmp_path / "state"
    written = _Outputs(kafka_broker, [output])
    registry = (schema_registry.url, schema_registry.user, schema_registry.password)

    _produce(kafka_broker, schema_registry, parts[0])
    assert run_avro_app(kafka_broker, app_id, state_dir, program, *registry)["restored"] == 0
    written.ran("handoff")

    _produce(kafka_broker, schema_registry, parts[1])
    config = tmp_path / "app.properties"  # as the Java app's properties hold them: the URL and the credentials
    config.write_text("".join(f"{k}={v}\n" for k, v in schema_registry.serde_configs().items()), encoding="utf-8")
    config.chmod(0o600)
    work, staging = tmp_path / "work", tmp_path / "staging"
    result = CliRunner().invoke(
        main,
        ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", PORTS[program],
         "--streams-config", str(config), "--store", str(staging), "--work-dir", str(work), "--master", "local[1]",
         "--state-dir", str(state_dir), "--yes"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0 and "published" in result.output, result.output
    written.ran("handoff")

    _produce(kafka_broker, schema_registry, parts[2])
    resumed = run_avro_app(kafka_broker, app_id, state_dir, program, *registry)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the hand-off: {restores}"
    written.ran("handoff")

    alone = run_avro_app(kafka_broker, alone_id, tmp_path / "alone", program, *registry)
    written.ran("alone")
    records = _read(kafka_broker, [output])
    delete_topics(admin, [*inputs, output])

    assert all(alone["store"].values()), alone["store"]
    assert resumed["store"] == alone["store"]
    handed_off, by_alone = _summary(written.of("handoff", records)), _summary(written.of("alone", records))
    assert by_alone["records"], "the lone app wrote nothing"
    assert handed_off["last"] == by_alone["last"]
    assert handed_off["records"] == by_alone["records"]
    subjects = _subjects(schema_registry, app_id)
    assert subjects and subjects == _subjects(schema_registry, alone_id)
    assert all(len(versions) == 1 for versions in subjects.values()), subjects  # the Java app's schema, not a second
    # the registry's password: nowhere in what the run kept or printed
    kept = [work / "plan.json", work / "ledger.sqlite", *staging.rglob("report.json")]
    assert all(schema_registry.password.encode() not in path.read_bytes() for path in kept)
    assert schema_registry.password not in result.output
