"""The Spark Structured Streaming peer (``bench/sss_app.py``) computes what streamproc's workloads compute.

Not a timing: it keeps the peer honest, since ``compare.py`` sets its figures beside streamproc's. A few hundred
records of the benchmark's shape (``IIIII,AAAAAA,…``, out of order, over several windows) on the session's broker,
each query run by the app in ``.venv-sss``; its output set against the Processor API workloads' through streamproc's
``TopologyTestDriver``. Spark's update mode sends a key's last value per micro-batch, so for the SQL count and the
window the last value per key (window) is compared; the pass-through and the ``transformWithStateInPandas`` count
send a record per input record, compared as multisets.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from bench import compare, sss_connector, workloads
from streamproc import TaskConfig, TopologyTestDriver, serde_for

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(not compare.SSS_PYTHON.exists(), reason="no .venv-sss: make bench-venv"),
]
IN, OUT = "bench-in", "bench-out"
BYTES, LONG = serde_for("ByteArray"), serde_for("Long")
PARTITIONS = 3
Sent = list[tuple[bytes, bytes | int]]


def _records() -> list[tuple[bytes, bytes, int]]:
    """400 records, 20 items, 30 keys, 7 s apart moved back by up to 5 s: about 47 one-minute windows."""
    rng = random.Random(28)
    out = []
    for i in range(400):
        value = f"{rng.randrange(20):05d},{rng.randrange(1_000_000):06d},padding".encode()
        timestamp = 1_767_225_600_000 + i * 7_000 - rng.randrange(5_000)
        out.append((f"user-{rng.randrange(30):06d}".encode(), value, timestamp))
    return out


@pytest.fixture(scope="module")
def source(kafka_broker: str, admin: Any) -> str:
    topic = f"sss-in-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random"})
    for key, value, timestamp in _records():
        producer.produce(topic, value, key, timestamp=timestamp)
    assert producer.flush(30) == 0
    return topic


def _streamproc(workload: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, Any]]:
    """What the Processor API workload sends for the records, in order (key, value, timestamp)."""
    monkeypatch.setenv("STREAMPROC_BENCH_INPUT", IN)
    monkeypatch.setenv("STREAMPROC_BENCH_OUTPUT", OUT)
    with TopologyTestDriver(workloads.PAPI_WORKLOADS[workload](), TaskConfig(application_id="bench-sss")) as driver:
        source = driver.create_input_topic(IN, BYTES, BYTES)
        for key, value, timestamp in _records():
            source.pipe_input(key, value, timestamp)
        out = driver.create_output_topic(OUT, BYTES, BYTES if workload == "pass_through" else LONG)
        return [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]


def _spark(bootstrap: str, admin: Any, source: str, output: str, workload: str, api: str) -> Sent:
    """Run the app on ``source``; what it wrote to ``output`` (values decoded as LongSerializer's longs)."""
    admin.create_topics([NewTopic(output, num_partitions=PARTITIONS, replication_factor=1)])[output].result(60)
    jars = ",".join(str(j) for j in sss_connector.jars())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as checkpoint:
        command = [str(compare.SSS_PYTHON), str(compare.ROOT / "bench" / "sss_app.py"), bootstrap, workload, api,
                   source, output, "--partitions", str(PARTITIONS), "--cores", "2", "--checkpoint", checkpoint,
                   "--jars", jars]  # fmt: skip
        run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)  # noqa: S603
    assert run.returncode == 0, run.stderr[-3000:]
    totals = json.loads(run.stdout.strip().splitlines()[-1])
    assert totals["input_rows"] == len(_records()) and totals["dropped_by_watermark"] == 0, totals
    sent = _read(bootstrap, output)
    assert len(sent) == totals["output_rows"], totals
    if workload == "pass_through":
        return list(sent)
    return [(key, int.from_bytes(value, "big", signed=True)) for key, value in sent]


def _read(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    try:
        partitions = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
        left = sum(consumer.get_watermark_offsets(tp, timeout=30)[1] for tp in partitions)
        consumer.assign(partitions)
        out: list[tuple[bytes, bytes]] = []
        while len(out) < left:
            out += [(m.key(), m.value()) for m in consumer.consume(1000, 5) if m.error() is None]
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize(("workload", "api"), [("pass_through", "dsl"), ("count", "papi"), ("count", "dsl"),
                                               ("window", "dsl")])  # fmt: skip
def test_the_spark_peer_sends_what_streamproc_sends(
    workload: str,
    api: str,
    source: str,
    kafka_broker: str,
    admin: Any,
    unique: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = _streamproc(workload, monkeypatch)
    sent = _spark(kafka_broker, admin, source, unique("sss-out"), workload, api)
    if api == "papi" or workload == "pass_through":  # a record per input record (the count: every update)
        assert Counter(sent) == Counter((key, value) for key, value, _ in expected)
    elif workload == "count":  # update mode: one batch, each key's last count
        assert dict(sent) == {key: value for key, value, _ in expected}
    else:  # the window: each (item, window)'s last sum; Spark's key is the item alone
        last = {(key, timestamp - timestamp % workloads.WINDOW_MS): value for key, value, timestamp in expected}
        assert Counter(sent) == Counter((item, total) for (item, _), total in last.items())
