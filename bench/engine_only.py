"""The engine's own cost: a plan's tasks run one after the other in this process, no Spark (``bench/compare.py``).

``python -m bench.engine_only BOOTSTRAP APP_ID WORKLOAD API WORK_DIR RECORDS [STAGING_DIR]``: plans the application
over ``STREAMPROC_BENCH_INPUT``, fetches the ranges to Parquet segments under STAGING_DIR (default WORK_DIR/staging;
not measured; skipped when STAGING_DIR already holds the same ranges, so the workloads of one data set share one
fetch: the records are the same, only the engine's run is measured), then runs every
task with :func:`streamproc.spark.task_runner.run_task` (staged segments → records → ``PartitionGroup`` →
processors → stores and output files) and prints one JSON line: wall and CPU seconds (``getrusage(RUSAGE_SELF)``) of
the tasks alone, and the staging's wall seconds. This is the figure set against Kafka Streams' stream threads, which
likewise leave out start-up, JIT and GC. Single-stage workloads only (a repartition needs the hand-off between
stages, which ``streamproc run`` does). With ``STREAMPROC_BENCH_PROFILE=FILE`` it writes a cProfile of the first task
(by own time) to FILE instead of measuring.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench.resources import self_cpu_seconds
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.spark.job import partition_counts, task_work
from streamproc.spark.task_runner import run_task
from streamproc.storage import load_store


def main(bootstrap: str, app: str, workload: str, api: str, work_dir: str, records: int, staging: str = "") -> None:
    from bench import workloads

    factory = f"bench.workloads:{workload}" if api == "papi" else f"bench.workloads:dsl_{workload}"
    topology = (workloads.PAPI_WORKLOADS if api == "papi" else workloads.DSL_WORKLOADS)[workload]()
    source, sink = os.environ["STREAMPROC_BENCH_INPUT"], os.environ["STREAMPROC_BENCH_OUTPUT"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = len(admin.list_topics(source, timeout=30).topics[source].partitions)
    if workload in ("count", "filter_count"):  # the "counts" store's changelog
        changelog = f"{app}-counts-changelog"
        new = NewTopic(changelog, num_partitions=partitions, replication_factor=1)
        admin.create_topics([new])[changelog].result(60)
        time.sleep(1)  # a topic just created may have no leader yet when the plan lists its offsets
    client = {"bootstrap.servers": bootstrap}
    started = time.perf_counter()
    plan = plan_run(client, app, PlanRequest(), topology=str(topology.describe()))
    staged = Path(staging or Path(work_dir) / "staging")
    store_uri = str(staged)
    ranges = [FetchRange(r.topic, r.partition, r.start, r.end) for r in plan.ranges if not r.empty]
    marker = staged / "bench-ranges.json"
    wanted = json.dumps([[r.topic, r.partition, r.start, r.end] for r in ranges])
    if not (marker.exists() and marker.read_text() == wanted):
        fetch_ranges(client, load_store(store_uri), ranges, isolation=IsolationLevel(plan.isolation_level))
        staged.mkdir(parents=True, exist_ok=True)
        marker.write_text(wanted)
    counts = partition_counts(plan, {sink: partitions})
    works = task_work(plan, topology=factory, store_uri=store_uri, counts=counts,
                      state_dir=str(Path(work_dir) / "state"))  # fmt: skip
    stage_wall = time.perf_counter() - started
    profile_to = os.environ.get("STREAMPROC_BENCH_PROFILE")  # a cProfile of the first task (figures then not used)
    if profile_to:
        profiler = cProfile.Profile()
        profiler.enable()
        run_task(works[0])
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
        Path(profile_to).write_text(text.getvalue())
        return
    cpu, started = self_cpu_seconds(), time.perf_counter()
    processed = sum(run_task(work)["records_processed"] for work in works)
    wall, cpu = time.perf_counter() - started, self_cpu_seconds() - cpu
    if processed != records:
        raise SystemExit(f"engine_only: processed {processed} records, expected {records}")
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "stage_wall_s": stage_wall, "tasks": len(works)}))


if __name__ == "__main__":
    b, a, w, api, d, n, *shared = sys.argv[1:]
    main(b, a, w, api, d, int(n), *shared)
