"""A new user's first hour (issue #26): what streamproc can find itself it does not ask for, and what can be checked
before data moves is checked first.

- ``streamproc topology check`` and ``streamproc run`` refuse a port that misses its default serdes at once, with
  the fix, before any Kafka or Spark work (they used to say "identical" and fail 25 s in, in every Spark task);
- ``streamproc plan`` takes the Python topology (``--topology MODULE:FUNCTION``): a new application's first run
  needs no ``--store-kind``, and the plan records the output topics' partition counts, so ``process`` needs no
  ``--partitions``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc_dev.service_process import free_port
from tests.integration.cli import first_hour_topologies as topologies
from tests.integration.conftest import recreate_topics

pytestmark = pytest.mark.integration

MODULE = "tests.integration.cli.first_hour_topologies"
NO_SERDES = f"{MODULE}:word_count_without_default_serdes"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_port_without_its_default_serdes_is_refused_before_anything_runs(tmp_path: Path) -> None:
    describe = tmp_path / "describe.txt"
    describe.write_text(str(topologies.word_count().describe()), encoding="utf-8")
    code, output = _invoke("topology", "check", "--describe", str(describe), "--topology", NO_SERDES)
    assert code == 1, output
    assert "identical" not in output
    assert "no key serde given and no default.key.serde set; give the Java application's default.key.serde to " \
        "StreamsBuilder.build(" in output  # fmt: skip
    code, output = _invoke(
        "run", "--bootstrap", f"127.0.0.1:{free_port()}", "--application-id", "first-hour",
        "--topology", NO_SERDES, "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"),
    )  # fmt: skip
    assert code == 1
    [error] = [line for line in output.splitlines() if line.startswith("error:")]
    assert "no key serde given" in error and "Consumed.with_(key_serde, value_serde)" in error
    assert not (tmp_path / "work" / "plan.json").exists() and not (tmp_path / "staging").exists()


def test_plan_takes_the_python_topology_and_process_needs_no_partitions(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    recreate_topics(admin, [topologies.WORDS_INPUT, topologies.WORDS_OUTPUT], 2)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random"})
    for i, line in enumerate(["the quick fox", "the lazy dog", "a quick dog"]):
        producer.produce(topologies.WORDS_INPUT, key=f"line-{i}".encode(), value=line.encode(), timestamp=1_000 + i)
    assert producer.flush(30) == 0
    app_id, plan = unique("first-hour"), tmp_path / "plan.json"
    code, output = _invoke(
        "plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", f"{MODULE}:word_count",
        "--create-internal-topics", "--out", str(plan),
    )  # fmt: skip
    assert code == 0, output
    planned = json.loads(plan.read_text())
    assert planned["sink_partitions"] == {topologies.WORDS_OUTPUT: 2}
    created = {t["name"]: t for t in planned["create_internal_topics"]["topics"]}
    assert {name.removeprefix(f"{app_id}-") for name in created} == {
        "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition",
        "KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog",
    }
    staging = tmp_path / "staging"
    code, output = _invoke("fetch", "--bootstrap", kafka_broker, "--plan", str(plan), "--store", str(staging))
    assert code == 0, output
    code, output = _invoke(
        "process", "--plan", str(plan), "--store", str(staging), "--topology", f"{MODULE}:word_count",
        "--master", "local[1]",
    )  # fmt: skip
    assert code == 0, output
    assert "records" in output
