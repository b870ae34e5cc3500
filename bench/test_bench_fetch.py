"""Fetch throughput: planned ranges → proved Parquet segments, against a bare confluent-kafka consume loop.

Guards against regressions in the fetch path (range reader, per-segment proof, Parquet encoding, object store).
Both sides read the same ranges from the same real broker in the same run; the figure that matters is the ratio
(issue #28's goal: fetch ≥ 0.9× the bare loop per CPU-second; wall and CPU figures are both recorded). Sizes:
``STREAMPROC_BENCH_PARTITIONS`` (default 8) × ``STREAMPROC_BENCH_RECORDS`` (default 100 000; the issue's full size
is 1 000 000) records of 200 bytes. The fetch runs three ways: threads (the default: the compiled per-message loops
hold the GIL briefly), one worker process per core, and threads into S3.
Run with ``make bench`` or ``pytest bench/test_bench_fetch.py -s``; results go to
``bench/results/fetch.json``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.conftest import record
from bench.measure import measured_here
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.plan.cluster_snapshot import IsolationLevel
from streamproc.storage import load_store
from tests.conftest import S3Server
from tests.integration.conftest import create_topic

PARTITIONS = int(os.environ.get("STREAMPROC_BENCH_PARTITIONS", "8"))
RECORDS = int(os.environ.get("STREAMPROC_BENCH_RECORDS", "100000"))
VALUE = b"x" * 190


def seed(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4"})  # fmt: skip
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            while True:
                try:
                    producer.produce(topic, key=b"key-%05d" % (i % 10_000), value=VALUE, partition=p, timestamp=i)
                    break
                except BufferError:
                    producer.poll(0.05)
    assert producer.flush(120) == 0


def bare_consume(bootstrap: str, topic: str) -> tuple[int, int]:
    """The baseline: one consumer, every partition assigned, batch consume until each reaches its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-baseline", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    records = size = 0
    done: set[int] = set()
    while len(done) < PARTITIONS:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error():
                done.add(message.partition())
                continue
            records += 1
            size += len(message.value()) + len(message.key())
    consumer.close()
    return records, size


@pytest.mark.bench
def test_fetch_vs_bare_consume_loop(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path, s3_server: S3Server,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    topic = create_topic(admin, unique("bench"), partitions=PARTITIONS)
    seed(kafka_broker, topic)
    ranges = [FetchRange(topic, p, 0, RECORDS) for p in range(PARTITIONS)]
    client = {"bootstrap.servers": kafka_broker}

    (records, size), baseline_s, baseline_cpu = measured_here(lambda: bare_consume(kafka_broker, topic))
    stage = load_store(str(tmp_path / "stage"))
    isolation = IsolationLevel.READ_COMMITTED
    results, fetch_s, fetch_cpu = measured_here(lambda: fetch_ranges(client, stage, ranges, isolation=isolation))
    processes = os.cpu_count() or 1
    stage_processes = load_store(str(tmp_path / "stage-processes"))
    _, processes_s, processes_cpu = measured_here(
        lambda: fetch_ranges(client, stage_processes, ranges, processes=processes)
    )

    bucket = unique("bench")
    s3_server.client().create_bucket(Bucket=bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", s3_server.region)
    s3_stage = load_store(f"s3://{bucket}/stage", endpoint_url=s3_server.endpoint)
    _, s3_s, s3_cpu = measured_here(lambda: fetch_ranges(client, s3_stage, ranges))

    total = PARTITIONS * RECORDS
    assert records == total and sum(r.records for r in results) == total
    result = {
        "benchmark": "fetch_vs_bare_consume",
        "partitions": PARTITIONS,
        "records_per_partition": RECORDS,
        "record_bytes": size // records,
        "baseline_records_per_s": round(total / baseline_s),
        "baseline_records_per_cpu_s": round(total / baseline_cpu),
        "fetch_local_records_per_cpu_s": round(total / fetch_cpu),
        "fetch_local_processes_records_per_cpu_s": round(total / processes_cpu),
        "fetch_s3_records_per_cpu_s": round(total / s3_cpu),
        "ratio_per_cpu_local_over_baseline": round(baseline_cpu / fetch_cpu, 3),
        "ratio_per_cpu_local_processes_over_baseline": round(baseline_cpu / processes_cpu, 3),
        "ratio_per_cpu_s3_over_baseline": round(baseline_cpu / s3_cpu, 3),
        "fetch_local_records_per_s": round(total / fetch_s),
        "fetch_s3_records_per_s": round(total / s3_s),
        "fetch_local_processes": processes,
        "fetch_local_processes_records_per_s": round(total / processes_s),
        "baseline_mb_per_s": round(size / baseline_s / 1e6, 1),
        "fetch_local_mb_per_s": round(size / fetch_s / 1e6, 1),
        "fetch_s3_mb_per_s": round(size / s3_s / 1e6, 1),
        "ratio_local_over_baseline": round(baseline_s / fetch_s, 3),
        "ratio_s3_over_baseline": round(baseline_s / s3_s, 3),
        "ratio_local_processes_over_baseline": round(baseline_s / processes_s, 3),
    }
    record("fetch", result)
    print("\n" + "\n".join(f"{k}: {v}" for k, v in result.items()))
