"""Hand-off publish throughput: one task's outputs published in a transaction, against a bare confluent-kafka
transactional producer loop on the same records in the same run (goal: ≥ 0.8× the loop's records/s).

The task's objects are written as the process step writes them (Parquet per topic and partition, a report); the
publish reads them back, produces, commits its input offset with commit metadata and reads the offset back.
Size: ``STREAMPROC_BENCH_RECORDS`` (default 100 000) records of 200 bytes over 4 partitions. Results go to
``bench/results/handoff.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench.conftest import record
from bench.measure import measured_here
from streamproc.engine.task_id import TaskId
from streamproc.handoff.publish import PublishedTask, publish_task, verify_committed
from streamproc.handoff.task_results import TaskResults
from streamproc.kafka import clients
from streamproc.plan.run_plan import PlannedTask
from streamproc.spark.task_output import OUTPUT_SCHEMA, TaskObjects
from streamproc.storage import load_store
from tests.integration.conftest import create_topic

RECORDS = int(os.environ.get("STREAMPROC_BENCH_RECORDS", "100000"))
PARTITIONS = 4
VALUE = b"x" * 190


def rows(partition: int) -> list[tuple[bytes, int]]:
    return [(b"key-%05d" % i, i) for i in range(partition, RECORDS, PARTITIONS)]


def bare_transactional_loop(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-bare", "linger.ms": 20,
                         "compression.type": "lz4"})  # fmt: skip
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in range(PARTITIONS):
        for key, timestamp in rows(p):
            while True:
                try:
                    producer.produce(topic, key=key, value=VALUE, partition=p, timestamp=timestamp)
                    break
                except BufferError:
                    producer.poll(0.05)
    producer.commit_transaction(120)


@pytest.mark.bench
def test_publish_vs_bare_transactional_loop(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic = create_topic(admin, unique("bench-handoff"), partitions=PARTITIONS)
    store = load_store(str(tmp_path / "store"))
    objects = TaskObjects("benchplan", TaskId(0, 0))
    outputs = {}
    for p in range(PARTITIONS):
        data = rows(p)
        table = pa.table(
            [list(range(len(data))), [topic] * len(data), [p] * len(data), [t for _, t in data], [k for k, _ in data],
             [VALUE] * len(data), [[] for _ in data], ["sink"] * len(data)],
            schema=OUTPUT_SCHEMA,
        )  # fmt: skip
        path = tmp_path / f"{p}.parquet"
        pq.write_table(table, path)
        store.put(objects.output(topic, p), path.read_bytes())
        outputs[f"{topic}+{p}"] = len(data)
    report = {"offsets": {f"{topic}-0": {"next_offset": 0, "partition_time": 1}}, "outputs": outputs, "changelogs": {},
              "objects": {}}  # fmt: skip
    store.put(objects.report, json.dumps(report).encode())
    task = PlannedTask("0_0", 0, 0, (f"{topic}-0",))
    results = TaskResults(task, objects, report, store)
    config = {"bootstrap.servers": kafka_broker}
    app_id = unique("bench-app")

    warm = Producer({"bootstrap.servers": kafka_broker, "transactional.id": f"{topic}-warm-up"})
    warm.init_transactions(120)  # the transaction coordinator loads once per broker: not part of either figure
    warm.begin_transaction()
    warm.produce(topic, value=b"warm-up", partition=0)
    warm.commit_transaction(60)

    _, bare_s, bare_cpu = measured_here(lambda: bare_transactional_loop(kafka_broker, topic))

    def publish() -> PublishedTask:
        published = publish_task(config, app_id, "benchplan", results)
        verify_committed(clients.admin(config), app_id, published.offsets)
        return published

    published, publish_s, publish_cpu = measured_here(publish)

    assert published.output_records == RECORDS
    assert published.offsets == {f"{topic}-0": 0}
    ratio = bare_s / publish_s
    result = {"records": RECORDS, "bare_records_per_s": round(RECORDS / bare_s), "publish_records_per_s":
              round(RECORDS / publish_s), "ratio": round(ratio, 3), "goal": 0.8,
              "bare_records_per_cpu_s": round(RECORDS / bare_cpu), "publish_records_per_cpu_s":
              round(RECORDS / publish_cpu), "ratio_per_cpu_s": round(bare_cpu / publish_cpu, 3),
              "goal_per_cpu_s": 0.9}  # fmt: skip
    print(f"\nhand-off publish: {result}")
    record("handoff", result)
