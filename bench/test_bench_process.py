"""Process-step throughput: Spark ``local[1]``/``local[2]`` against the same tasks run directly in one process.

The baseline runs every task of the plan with :func:`streamproc.spark.task_runner.run_task` one after the other in
this Python process (the engine, the staged-segment reader, RocksDB and the output writers, without Spark); the job
then runs the same tasks as Spark tasks. The ratios say what Spark costs (JVM start, Python workers, scheduling)
and what a second core gives. Sizes: ``STREAMPROC_BENCH_PARTITIONS`` (default 8) × ``STREAMPROC_BENCH_PROCESS_RECORDS``
(default 25 000; the issue's sizes are 1 M and 10 M in total) records with 10 000 distinct keys. Run with ``make
bench`` or ``pytest bench/test_bench_process.py -s``; results go to ``bench/results/process.json``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench import process_topologies
from bench.conftest import record
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.spark.job import partition_counts, process, task_work
from streamproc.spark.task_runner import run_task
from streamproc.storage import load_store
from tests.integration.conftest import create_topic

PARTITIONS = int(os.environ.get("STREAMPROC_BENCH_PARTITIONS", "8"))
RECORDS = int(os.environ.get("STREAMPROC_BENCH_PROCESS_RECORDS", "25000"))


def seed(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4"})  # fmt: skip
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            while True:
                try:
                    producer.produce(process_topologies.INPUT, key=b"key-%05d" % (i % 10_000), value=b"x" * 100,
                                     partition=p, timestamp=1_000_000 + i)  # fmt: skip
                    break
                except BufferError:
                    producer.poll(0.05)
    assert producer.flush(120) == 0


def stage(bootstrap: str, app: str, factory: str, store_dir: Path) -> Any:
    module, _, function = factory.partition(":")
    topology = getattr(process_topologies, function)()
    client = {"bootstrap.servers": bootstrap}
    plan = plan_run(client, app, PlanRequest(), topology=str(topology.describe()))
    ranges = [FetchRange(r.topic, r.partition, r.start, r.end) for r in plan.ranges if not r.empty]
    fetch_ranges(client, load_store(str(store_dir)), ranges, isolation=IsolationLevel(plan.isolation_level))
    return plan


@pytest.mark.bench
def test_process_on_spark_vs_the_tasks_run_directly(kafka_broker: str, admin: AdminClient, tmp_path: Path) -> None:
    create_topic(admin, process_topologies.INPUT, partitions=PARTITIONS)
    create_topic(admin, process_topologies.OUTPUT, partitions=PARTITIONS)
    seed(kafka_broker)
    total = PARTITIONS * RECORDS
    results: dict[str, Any] = {"partitions": PARTITIONS, "records": total}
    for name in ("pass_through", "count"):
        factory = f"bench.process_topologies:{name}"
        app = f"bench-process-{name.replace('_', '-')}"
        create_topic(admin, f"{app}-counts-changelog", partitions=PARTITIONS)
        store_dir = tmp_path / name
        plan = stage(kafka_broker, app, factory, store_dir)
        counts = {process_topologies.OUTPUT: PARTITIONS}

        started = time.perf_counter()
        for work in task_work(plan, topology=factory, store_uri=str(store_dir), counts=partition_counts(plan, counts)):
            run_task(work)
        direct_s = time.perf_counter() - started
        figures: dict[str, Any] = {"direct_s": round(direct_s, 2), "direct_records_per_s": round(total / direct_s)}
        for cores in (1, 2):
            shutil.rmtree(store_dir / "process")
            started = time.perf_counter()
            reports = process(plan, store_uri=str(store_dir), topology=factory, master=f"local[{cores}]",
                              partitions=counts)  # fmt: skip
            elapsed = time.perf_counter() - started
            assert sum(r["records_processed"] for r in reports) == total
            figures[f"local{cores}_s"] = round(elapsed, 2)
            figures[f"local{cores}_records_per_s"] = round(total / elapsed)
            figures[f"local{cores}_task_seconds"] = round(sum(r["seconds"] for r in reports), 2)
        figures["spark_overhead_local1"] = round(figures["local1_s"] / direct_s - 1, 3)
        figures["speedup_1_to_2_cores"] = round(figures["local1_s"] / figures["local2_s"], 3)
        results[name] = figures
        print(f"\n{name}: {figures}")
    record("process", results)
