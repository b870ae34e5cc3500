"""``--record-cache flush-at-end`` against the real thing: Kafka Streams 4.2.2 with a record cache flushed once.

The oracle (``BenchApps``' DSL ``count``, CACHE ``one-flush``: a 1 GiB cache and a day's commit interval, so that its
one flush is ``close()``'s) counts a three-partition topic with repeated keys, out-of-order timestamps and headers
into its output topic. ``streamproc run --record-cache flush-at-end`` runs the same DSL program (a new application
over the same input) on Spark and hands its outputs off into another topic. Each output partition must hold the same
records (key, count, timestamp, headers) in the same order for every input partition's task: each key's last update,
in the order of those last updates. The tasks' blocks of one output partition are compared per task, since the order
in which different tasks flush into one partition is Kafka Streams' thread's, not the semantics'.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc import Stores
from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder
from streamproc.engine.serdes import serde_for
from streamproc.engine.topology import Topology
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import read_all, run
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

INPUT, KS_OUTPUT = "record-cache-clicks", "record-cache-counts-ks"
#: streamproc's output topic by the way its task runs (``spark/columnar/count.py`` takes this count unless told not to)
OUTPUTS = {"columnar": "record-cache-counts", "per record": "record-cache-counts-per-record"}
PARTITIONS = 3
RECORDS = 900
_BYTES, _LONG = serde_for("ByteArray"), serde_for("Long")


def _count(output: str) -> Topology:
    """``BenchApps.dsl("count")`` without its ``peek`` (which forwards unchanged): the same store, sink and serdes."""
    b = StreamsBuilder()
    materialized = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
    b.stream(INPUT, Consumed.with_(_BYTES, _BYTES)).group_by_key().count(
        materialized=materialized.with_key_serde(_BYTES).with_value_serde(_LONG)
    ).to_stream().to(output, Produced.with_(_BYTES, _LONG))
    return b.build()


def count_columnar() -> Topology:
    return _count(OUTPUTS["columnar"])


def count_per_record() -> Topology:
    return _count(OUTPUTS["per record"])


def _produce(bootstrap: str) -> dict[bytes, int]:
    """The input: up to 49 keys, each always in one partition (chosen here), timestamps of the last hour out of
    order, headers on some records; returns each key sent's input partition."""
    rng = random.Random(31)
    keys = [b"user-%03d" % i for i in range(60)]
    partition_of = {key: i % PARTITIONS for i, key in enumerate(keys)}
    base = int(time.time() * 1000) - 3_600_000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent: set[bytes] = set()
    for i in range(RECORDS):
        key = rng.choice(keys[: 20 + i // 30])  # new keys keep arriving: flush order is not first-seen order
        sent.add(key)
        headers = [("seq", str(i).encode())] if i % 3 == 0 else None
        producer.produce(
            INPUT,
            key=key,
            value=b"00001,000123,padding",
            partition=partition_of[key],
            timestamp=base + i * 50 - rng.randrange(0, 400),
            headers=headers,
        )
    assert producer.flush(30) == 0
    return {key: partition_of[key] for key in sent}


def _flushes(bootstrap: str, topic: str, partition_of: dict[bytes, int]) -> dict[tuple[int, int], list[Any]]:
    """(output partition, input partition of the key) → the records in offset order."""
    blocks: dict[tuple[int, int], list[Any]] = {}
    for m in read_all(bootstrap, topic, PARTITIONS):
        row = (m.key(), int.from_bytes(m.value(), "big", signed=True), m.timestamp()[1], tuple(m.headers() or ()))
        blocks.setdefault((m.partition(), partition_of[m.key()]), []).append(row)
    return blocks


@pytest.fixture(scope="module")
def oracle(kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The input produced and Kafka Streams' one flush of it: each key's input partition and the oracle's blocks."""
    for topic in (INPUT, KS_OUTPUT, *OUTPUTS.values()):
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, INPUT, KS_OUTPUT, *OUTPUTS.values())
    partition_of = _produce(kafka_broker)
    state = tmp_path_factory.mktemp("ks-state")
    app = f"record-cache-ks-{time.time_ns()}"
    done = subprocess.run(
        ["java", "-jar", str(ensure_oracle_jar()), "bench", kafka_broker, app, "count", "dsl", INPUT, KS_OUTPUT, "1",
         "one-flush", str(RECORDS), str(state)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    expected = _flushes(kafka_broker, KS_OUTPUT, partition_of)
    assert sum(len(block) for block in expected.values()) == len(partition_of)  # one flush: one update per key
    return {"partition_of": partition_of, "expected": expected}


@pytest.mark.parametrize("execution", list(OUTPUTS))
def test_the_one_flush_equals_kafka_streams_with_a_cache_flushed_once(
    execution: str,
    oracle: dict[str, Any],
    kafka_broker: str,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    # Spark's Python workers get the environment from the conf (the JVM may be an earlier test's)
    per_record = ("--conf", f"spark.executorEnv.{PER_RECORD_ENV}=1") if execution == "per record" else ()
    factory = "count_columnar" if execution == "columnar" else "count_per_record"
    out = run(
        "run", "--bootstrap", kafka_broker, "--application-id", unique("cache-sp"),
        "--topology", f"{__name__}:{factory}", "--store", str(tmp_path / "staging"),
        "--work-dir", str(tmp_path / "work"), "--master", "local[1]", "--record-cache", "flush-at-end",
        "--create-internal-topics", "--streams-setting", "replication.factor=1",
        "--state-dir", str(tmp_path / "state"), *per_record, "--yes",
    )  # fmt: skip
    assert f"{RECORDS} records" in out.output, out.output
    assert _flushes(kafka_broker, OUTPUTS[execution], oracle["partition_of"]) == oracle["expected"]
