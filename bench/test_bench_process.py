"""Process-step speed and memory: Spark ``local[1]``/``local[2]`` against the same tasks run directly in one process.

The baseline runs every task of the plan with :func:`streamproc.spark.task_runner.run_task` one after the other in
this Python process (the engine, the staged-segment reader, RocksDB and the output writers, without Spark); the job
then runs the same tasks as Spark tasks. The ratios say what Spark costs (JVM start, Python workers, scheduling)
and what a second core gives.

Data: ``STREAMPROC_BENCH_PROCESS_SIZES`` (default ``1000000,10000000``) records in total over
``STREAMPROC_BENCH_PARTITIONS`` (default 8) partitions, 10 000 distinct keys, produced once with Java's partitioner
(librdkafka's ``murmur2_random`` is Kafka's default partitioner for keyed records): the topic grows from one size to
the next, and each size is planned and fetched once per topology and reused by the direct run and both Spark runs.

Measured per run: wall seconds, CPU seconds (the machine is shared, so records per CPU-second is the steadier
figure): the direct run's from ``getrusage(RUSAGE_SELF)``, a Spark run's as the driver's plus every descendant's
(JVM, ``pyspark.daemon`` and its workers) sampled from ``/proc`` (:mod:`bench.resources`); peak RSS: a Python
worker's ``VmHWM`` (the largest over the run's workers; a reused worker ran several tasks) and, for the direct run,
the largest per-task ``VmHWM`` of this process (reset before each task). A cProfile of one task run in-process is
saved next to the results. Results: ``bench/results/process.json`` and
``bench/results/<date>-<machine>-process.{json,md}``, written after each size so that an interrupted run keeps
what it measured.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench import process_topologies
from bench.conftest import RESULTS, machine, record
from bench.resources import DescendantSampler, peak_rss_mb, reset_peak_rss, self_cpu_seconds
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.spark.job import partition_counts, process, task_work
from streamproc.spark.task_runner import run_task
from streamproc.storage import load_store
from tests.integration.conftest import create_topic

PARTITIONS = int(os.environ.get("STREAMPROC_BENCH_PARTITIONS", "8"))
SIZES = [int(n) for n in os.environ.get("STREAMPROC_BENCH_PROCESS_SIZES", "1000000,10000000").split(",")]
KEYS = 10_000
TOPOLOGIES = ("pass_through", "count")


def seed(bootstrap: str, start: int, stop: int, topic: str = process_topologies.INPUT) -> None:
    """Records ``start`` .. ``stop`` - 1 of the one data set, keyed, partitioned as Kafka's Java producer does."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4", "partitioner": "murmur2_random"})  # fmt: skip
    for i in range(start, stop):
        while True:
            try:
                producer.produce(topic, key=b"key-%05d" % (i % KEYS), value=b"x" * 100,
                                 timestamp=1_000_000 + i)  # fmt: skip
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(300) == 0


def stage(bootstrap: str, app: str, factory: str, store_dir: Path) -> Any:
    module, _, function = factory.partition(":")
    topology = getattr(process_topologies, function)()
    client = {"bootstrap.servers": bootstrap}
    plan = plan_run(client, app, PlanRequest(), topology=str(topology.describe()))
    ranges = [FetchRange(r.topic, r.partition, r.start, r.end) for r in plan.ranges if not r.empty]
    fetch_ranges(client, load_store(str(store_dir)), ranges, isolation=IsolationLevel(plan.isolation_level))
    return plan


def profile(works: list[Any], name: str, size: int, stamp: str) -> str:
    """cProfile of the first task run in-process; the top functions by cumulative time, saved under results/."""
    profiler = cProfile.Profile()
    profiler.runcall(run_task, works[0])
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("cumulative").print_stats(40)
    path = RESULTS / f"{stamp}-process-profile-{name}.txt"
    header = f"cProfile of task {works[0].task_id} of {name} ({size // PARTITIONS} records), run in-process\n"
    path.write_text(header + text.getvalue())
    return path.name


def direct(works: list[Any], total: int) -> dict[str, Any]:
    cpu, started, peaks = self_cpu_seconds(), time.perf_counter(), []
    for work in works:
        reset_peak_rss()
        run_task(work)
        peaks.append(peak_rss_mb() or 0.0)
    wall, cpu = time.perf_counter() - started, self_cpu_seconds() - cpu
    return {
        "direct_s": round(wall, 2),
        "direct_cpu_s": round(cpu, 2),
        "direct_records_per_s": round(total / wall),
        "direct_records_per_cpu_s": round(total / cpu),
        "direct_task_peak_rss_mb": round(max(peaks), 1),
    }


def on_spark(plan: Any, store_dir: Path, factory: str, cores: int, total: int) -> dict[str, Any]:
    sampler, cpu = DescendantSampler(), self_cpu_seconds()
    sampler.start()
    started = time.perf_counter()
    reports = process(plan, store_uri=str(store_dir), topology=factory, master=f"local[{cores}]",
                      partitions={process_topologies.OUTPUT: PARTITIONS})  # fmt: skip
    wall = time.perf_counter() - started
    sampler.stop()
    cpu = self_cpu_seconds() - cpu + sampler.cpu_seconds
    assert sum(r["records_processed"] for r in reports) == total
    assert not any(r["skipped"] for r in reports)
    k = f"local{cores}"
    return {
        f"{k}_s": round(wall, 2),
        f"{k}_cpu_s": round(cpu, 2),
        f"{k}_records_per_s": round(total / wall),
        f"{k}_records_per_cpu_s": round(total / cpu),
        f"{k}_task_seconds": round(sum(r["seconds"] for r in reports), 2),
        f"{k}_worker_peak_rss_mb": round(sampler.python_worker_peak_rss_mb, 1),
    }


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"# Process step, {results['date']}",
        "",
        f"Machine: {m['cpu_model']}, {m['cpus']} CPUs, Python {m['python']}, {m['platform']}; load average (1 min) "
        f"at the end {m['load_average_1m']}. Shared with other work: wall figures are disturbed, records per "
        "CPU-second less so. Spark runs are local mode; the direct run is the same tasks in one Python process.",
        "",
        "| records | topology | direct rec/s (rec/CPU-s) | local[1] rec/s (rec/CPU-s) | local[2] rec/s (rec/CPU-s) "
        "| Spark overhead, wall (CPU) | 1→2 cores | worker peak RSS MiB, local[1] / local[2] "
        "| direct per-task peak RSS MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in results["sizes"]:
        for name in TOPOLOGIES:
            f = results["runs"].get(str(size), {}).get(name)
            if f is None:
                continue
            lines.append(
                f"| {size:,} | {name} | {f['direct_records_per_s']:,} ({f['direct_records_per_cpu_s']:,}) "
                f"| {f['local1_records_per_s']:,} ({f['local1_records_per_cpu_s']:,}) "
                f"| {f['local2_records_per_s']:,} ({f['local2_records_per_cpu_s']:,}) "
                f"| {f['spark_overhead_local1']:+.1%} ({f['spark_overhead_local1_cpu']:+.1%}) "
                f"| {f['speedup_1_to_2_cores']:.2f}× | {f['local1_worker_peak_rss_mb']:.0f} / "
                f"{f['local2_worker_peak_rss_mb']:.0f} | {f['direct_task_peak_rss_mb']:.0f} |"
            )
    lines += ["", "Profiles: " + ", ".join(results.get("profiles", [])), ""]
    return "\n".join(lines)


@pytest.mark.bench
@pytest.mark.timeout(4 * 3600)
def test_process_on_spark_vs_the_tasks_run_directly(kafka_broker: str, admin: AdminClient, tmp_path: Path) -> None:
    create_topic(admin, process_topologies.INPUT, partitions=PARTITIONS)
    create_topic(admin, process_topologies.OUTPUT, partitions=PARTITIONS)
    for total in SIZES:  # up front: a topic just created may have no leader yet when the plan lists its offsets
        create_topic(admin, f"bench-process-count-{total}-counts-changelog", partitions=PARTITIONS)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d") + "-" + os.uname().nodename
    results: dict[str, Any] = {"date": stamp[:10], "partitions": PARTITIONS, "keys": KEYS, "sizes": SIZES, "runs": {}}
    results["profiles"] = []
    produced = 0
    for total in SIZES:
        seed(kafka_broker, produced, total)
        produced = total
        runs = results["runs"][str(total)] = {}
        for name in TOPOLOGIES:
            factory = f"bench.process_topologies:{name}"
            app = f"bench-process-{name.replace('_', '-')}-{total}"
            store_dir = tmp_path / f"{name}-{total}"
            plan = stage(kafka_broker, app, factory, store_dir)
            counts = partition_counts(plan, {process_topologies.OUTPUT: PARTITIONS})
            works = task_work(plan, topology=factory, store_uri=str(store_dir), counts=counts)
            if total == SIZES[0]:
                results["profiles"].append(profile(works, name, total, stamp))
                shutil.rmtree(store_dir / "process")
            figures = direct(works, total)
            for cores in (1, 2):
                shutil.rmtree(store_dir / "process")
                figures.update(on_spark(plan, store_dir, factory, cores, total))
            figures["spark_overhead_local1"] = round(figures["local1_s"] / figures["direct_s"] - 1, 3)
            figures["spark_overhead_local1_cpu"] = round(figures["local1_cpu_s"] / figures["direct_cpu_s"] - 1, 3)
            figures["speedup_1_to_2_cores"] = round(figures["local1_s"] / figures["local2_s"], 3)
            runs[name] = figures
            shutil.rmtree(store_dir)
            print(f"\n{total} {name}: {figures}", flush=True)
            results["machine"] = machine()
            record("process", results)
            (RESULTS / f"{stamp}-process.json").write_text(json.dumps(results, indent=2) + "\n")
            (RESULTS / f"{stamp}-process.md").write_text(markdown(results))
