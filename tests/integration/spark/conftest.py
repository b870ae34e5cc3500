"""The count topology's staged input, shared by the Spark test modules (one broker topic set per session)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.plan.run_plan import RunPlan
from tests.integration.conftest import create_topic, wait_for_leaders  # wait_for_leaders: imported from here by others
from tests.integration.spark import topologies

PARTITIONS = 4
RECORDS = 4_000


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="session")
def staged(kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The count topology's input on the broker (out-of-order timestamps, Java's partitioner), planned and fetched."""
    create_topic(admin, topologies.COUNT_INPUT, partitions=PARTITIONS)
    create_topic(admin, topologies.COUNT_OUTPUT, partitions=PARTITIONS)
    app_id = "spark-count-app"
    create_topic(admin, f"{app_id}-counts-changelog", partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.COUNT_INPUT, topologies.COUNT_OUTPUT, f"{app_id}-counts-changelog")
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random", "linger.ms": 5})
    rng = random.Random(12)
    for i in range(RECORDS):
        timestamp = 1_000_000 + i * 10 + rng.randint(-300, 300)  # out of order within and across partitions
        producer.produce(topologies.COUNT_INPUT, key=f"k{rng.randint(0, 60)}".encode(), value=b"x", timestamp=timestamp)
    producer.flush(60)
    work = tmp_path_factory.mktemp("spark-count")
    describe = work / "topology.txt"
    describe.write_text(str(topologies.count().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--out", str(plan_file))  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    return {"app_id": app_id, "plan": RunPlan.read(plan_file), "store": store, "bootstrap": kafka_broker}
