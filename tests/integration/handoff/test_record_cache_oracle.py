"""``--record-cache flush-at-end`` against the real thing: Kafka Streams 4.2.2 with a record cache flushed once.

The oracle (``BenchApps``' DSL ``count`` and ``aggregate``, CACHE ``one-flush``: a 1 GiB cache and a day's commit
interval, so that its one flush is ``close()``'s) counts (sums) a three-partition topic with repeated keys, out-of-order
timestamps and headers into its output topic. ``streamproc run --record-cache flush-at-end`` runs the same DSL program
(a new application over the same input) on Spark, over columns and per record, and hands its outputs off into another
topic. Each output partition must hold the same
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
from streamproc.dsl import Consumed, Materialized, Produced, StreamsBuilder, TimeWindows
from streamproc.engine.serdes import serde_for
from streamproc.engine.topology import Topology
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import read_all, run
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

INPUT = "record-cache-clicks"
#: (workload, how streamproc's task runs) → streamproc's output topic; Kafka Streams' per workload below.
#: ``spark/columnar/`` takes the count and the windowed count unless told not to; an aggregate under the cache runs
#: per record.
CASES = {
    ("count", "columnar"): "record-cache-counts",
    ("count", "per record"): "record-cache-counts-per-record",
    ("aggregate", "per record"): "record-cache-sums",
    ("window_count", "columnar"): "record-cache-window-counts",
    ("window_count", "per record"): "record-cache-window-counts-per-record",
}
KS_OUTPUTS = {
    "count": "record-cache-counts-ks",
    "aggregate": "record-cache-sums-ks",
    "window_count": "record-cache-window-counts-ks",
}
#: ``BenchApps.WINDOW_MS`` and ``GRACE``: 60 s tumbling windows, 7 days' grace.
WINDOW_MS, GRACE_MS = 60_000, 7 * 24 * 3_600_000
PARTITIONS = 3
RECORDS = 900
_BYTES, _LONG = serde_for("ByteArray"), serde_for("Long")


def _program(workload: str, output: str) -> Topology:
    """``BenchApps.dsl(workload)`` without its ``peek`` (which forwards unchanged): the same stores, sinks, serdes."""
    b = StreamsBuilder()
    grouped = b.stream(INPUT, Consumed.with_(_BYTES, _BYTES)).group_by_key()
    if workload == "window_count":
        counts = Materialized.as_("counts").with_key_serde(_BYTES).with_value_serde(_LONG)
        windowed = grouped.windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS)).count(materialized=counts)
        windowed.to_stream().select_key(lambda w, count: w.key).to(output, Produced.with_(_BYTES, _LONG))
        return b.build()
    if workload == "count":
        store = Materialized.as_(Stores.persistent_timestamped_key_value_store("counts"))
        table = grouped.count(materialized=store.with_key_serde(_BYTES).with_value_serde(_LONG))
    else:  # BenchApps.amount: the value's characters 6-11 as a number
        sums = Materialized.as_("sums").with_key_serde(_BYTES).with_value_serde(_LONG)
        table = grouped.aggregate(lambda: 0, lambda k, v, total: total + int(v[6:12]), materialized=sums)
    table.to_stream().to(output, Produced.with_(_BYTES, _LONG))
    return b.build()


def count_columnar() -> Topology:
    return _program("count", CASES["count", "columnar"])


def count_per_record() -> Topology:
    return _program("count", CASES["count", "per record"])


def aggregate_per_record() -> Topology:
    return _program("aggregate", CASES["aggregate", "per record"])


def window_count_columnar() -> Topology:
    return _program("window_count", CASES["window_count", "columnar"])


def window_count_per_record() -> Topology:
    return _program("window_count", CASES["window_count", "per record"])


def _produce(bootstrap: str) -> tuple[dict[bytes, int], int]:
    """The input: up to 49 keys, each always in one partition (chosen here), timestamps of the last hour out of
    order, headers on some records; returns each key sent's input partition, and how many (key, window) pairs."""
    rng = random.Random(31)
    keys = [b"user-%03d" % i for i in range(60)]
    partition_of = {key: i % PARTITIONS for i, key in enumerate(keys)}
    base = int(time.time() * 1000) - 3_600_000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent: set[bytes] = set()
    windows: set[tuple[bytes, int]] = set()
    for i in range(RECORDS):
        key = rng.choice(keys[: 20 + i // 30])  # new keys keep arriving: flush order is not first-seen order
        sent.add(key)
        timestamp = base + i * 50 - rng.randrange(0, 400)
        windows.add((key, timestamp // WINDOW_MS))
        headers = [("seq", str(i).encode())] if i % 3 == 0 else None
        producer.produce(
            INPUT,
            key=key,
            value=b"%05d,%06d,padding" % (rng.randrange(1000), rng.randrange(1_000_000)),
            partition=partition_of[key],
            timestamp=timestamp,
            headers=headers,
        )
    assert producer.flush(30) == 0
    return {key: partition_of[key] for key in sent}, len(windows)


def _flushes(bootstrap: str, topic: str, partition_of: dict[bytes, int]) -> dict[tuple[int, int], list[Any]]:
    """(output partition, input partition of the key) → the records in offset order."""
    blocks: dict[tuple[int, int], list[Any]] = {}
    for m in read_all(bootstrap, topic, PARTITIONS):
        row = (m.key(), int.from_bytes(m.value(), "big", signed=True), m.timestamp()[1], tuple(m.headers() or ()))
        blocks.setdefault((m.partition(), partition_of[m.key()]), []).append(row)
    return blocks


@pytest.fixture(scope="module")
def oracle(kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The input produced and Kafka Streams' one flush of it per workload: each key's input partition and blocks."""
    topics = (INPUT, *KS_OUTPUTS.values(), *CASES.values())
    for topic in topics:
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, *topics)
    partition_of, windows = _produce(kafka_broker)
    expected = {}
    for workload, output in KS_OUTPUTS.items():
        state = tmp_path_factory.mktemp("ks-state")
        app = f"record-cache-ks-{workload}-{time.time_ns()}"
        done = subprocess.run(
            ["java", "-jar", str(ensure_oracle_jar()), "bench", kafka_broker, app, workload, "dsl", INPUT, output,
             "1", "one-flush", str(RECORDS), str(state)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        expected[workload] = _flushes(kafka_broker, output, partition_of)
        # one flush: one update per key (per key and window)
        updates = windows if workload == "window_count" else len(partition_of)
        assert sum(len(block) for block in expected[workload].values()) == updates
    return {"partition_of": partition_of, "expected": expected}


@pytest.mark.parametrize(("workload", "execution"), list(CASES), ids=[" ".join(case) for case in CASES])
def test_the_one_flush_equals_kafka_streams_with_a_cache_flushed_once(
    workload: str,
    execution: str,
    oracle: dict[str, Any],
    kafka_broker: str,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    # Spark's Python workers get the environment from the conf (the JVM may be an earlier test's)
    per_record = ("--conf", f"spark.executorEnv.{PER_RECORD_ENV}=1") if execution == "per record" else ()
    factory = f"{workload}_{execution.replace(' ', '_')}"
    out = run(
        "run", "--bootstrap", kafka_broker, "--application-id", unique("cache-sp"),
        "--topology", f"{__name__}:{factory}", "--store", str(tmp_path / "staging"),
        "--work-dir", str(tmp_path / "work"), "--master", "local[1]", "--record-cache", "flush-at-end",
        "--create-internal-topics", "--streams-setting", "replication.factor=1",
        "--state-dir", str(tmp_path / "state"), *per_record, "--yes",
    )  # fmt: skip
    assert f"{RECORDS} records" in out.output, out.output
    assert _flushes(kafka_broker, CASES[workload, execution], oracle["partition_of"]) == oracle["expected"][workload]
