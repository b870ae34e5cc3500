"""The engine's own cost: a plan's tasks run one after the other in this process, no Spark (``bench/compare.py``).

``python -m bench.engine_only BOOTSTRAP APP_ID WORKLOAD API WORK_DIR RECORDS [STAGING_DIR]``: plans the application
over ``STREAMPROC_BENCH_INPUT`` as a first run (its missing changelog and repartition topics created as ``streamproc
run --create-internal-topics`` creates them, with the input's partition count), fetches the ranges to Parquet
segments under STAGING_DIR (default WORK_DIR/staging; not measured; skipped when STAGING_DIR already holds the same
ranges, so the workloads of one data set share one fetch: the records are the same, only the engine's run is
measured), then runs every task with :func:`streamproc.spark.task_runner.run_task` (staged segments → records →
``PartitionGroup`` → processors → stores and output files), stage after stage through
:func:`streamproc.spark.job.run_stages` — ``streamproc run``'s own hand-over: a later stage's tasks read the output
objects earlier stages wrote to their input partitions (the window's repartition topic) as ``appended`` records.

Prints one JSON line: wall and CPU seconds (``getrusage(RUSAGE_SELF)``) of the tasks alone, in all and per stage,
and the staging's wall seconds. This is the figure set against Kafka Streams' stream threads, which likewise leave
out start-up, JIT and GC. The records are the input's: a two-stage workload processes each record twice (stage 1
reads it from the input, stage 2 from the repartition topic), as Kafka Streams' stream thread does (once per
sub-topology), so records per CPU-second over the input records compare directly. Checked before printing: the
first stage processed every input record, and each later stage exactly the records the earlier ones handed over.

With ``STREAMPROC_BENCH_PROFILE=FILE`` it writes a cProfile (by own time) of each stage's first task to FILE (one
stage) or FILE.stageN, runs every task (a later stage needs all of an earlier one's outputs) and measures nothing.
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
from typing import Any

from confluent_kafka.admin import AdminClient

from bench.resources import self_cpu_seconds
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.kafka.planner import plan_run
from streamproc.plan.cluster_snapshot import IsolationLevel, PlanRequest
from streamproc.plan.internal_topics import InternalTopicSettings, store_kinds_of
from streamproc.spark.job import Stage, partition_counts, run_stages, task_work
from streamproc.spark.task_runner import TaskWork, run_task
from streamproc.storage import load_store


def _profiled(work: TaskWork, to: Path) -> dict[str, Any]:
    profiler = cProfile.Profile()
    profiler.enable()
    report = run_task(work)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(40)
    to.write_text(text.getvalue())
    return report


def handed_over(reports: list[dict[str, Any]], read: set[str]) -> int:
    """Records ``reports``' tasks wrote to topics the plan reads (a repartition topic: a later stage's input)."""
    return sum(n for r in reports for name, n in r["outputs"].items() if name.rpartition("+")[0] in read)


def main(bootstrap: str, app: str, workload: str, api: str, work_dir: str, records: int, staging: str = "") -> None:
    from bench import workloads

    factory = f"bench.workloads:{workload}" if api == "papi" else f"bench.workloads:dsl_{workload}"
    topology = (workloads.PAPI_WORKLOADS if api == "papi" else workloads.DSL_WORKLOADS)[workload]()
    source, sink = os.environ["STREAMPROC_BENCH_INPUT"], os.environ["STREAMPROC_BENCH_OUTPUT"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = len(admin.list_topics(source, timeout=30).topics[source].partitions)
    client = {"bootstrap.servers": bootstrap}
    started = time.perf_counter()
    # a first run: the changelogs and the repartition topic created as `streamproc run --create-internal-topics
    # --streams-setting replication.factor=1` creates them (the input's partition count), then planned empty
    first_run = InternalTopicSettings(store_kinds=store_kinds_of(topology), replication_factor=1)
    plan = plan_run(client, app, PlanRequest(), topology=str(topology.describe()), create_internal_topics=first_run)
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
    staging_wall = time.perf_counter() - started
    profile_to = os.environ.get("STREAMPROC_BENCH_PROFILE")  # cProfiles of each stage's first task, no figures
    figures: list[dict[str, Any]] = []

    def run_stage(stage: Stage) -> list[dict[str, Any]]:
        if profile_to:
            to = Path(profile_to if stage.count == 1 else f"{profile_to}.stage{stage.number}")
            return [_profiled(stage.tasks[0], to), *(run_task(work) for work in stage.tasks[1:])]
        cpu, began = self_cpu_seconds(), time.perf_counter()
        reports = [run_task(work) for work in stage.tasks]
        wall, cpu = time.perf_counter() - began, self_cpu_seconds() - cpu
        processed = sum(r["records_processed"] for r in reports)
        figures.append({"tasks": len(reports), "records": processed, "wall_s": wall, "cpu_s": cpu})
        return reports

    reports = run_stages(plan, works, run_stage)
    if profile_to:
        return
    read = {r.topic for r in plan.ranges}
    if figures[0]["records"] != records:
        raise SystemExit(f"engine_only: stage 1 processed {figures[0]['records']} records, expected {records}")
    given, later = handed_over(reports, read), reports[figures[0]["tasks"] :]
    appended = sum(sum(r["appended"].values()) for r in later)
    if not sum(f["records"] for f in figures[1:]) == appended == given:
        raise SystemExit(
            f"engine_only: the later stages processed {sum(f['records'] for f in figures[1:])} records "
            f"({appended} appended from earlier stages), but the earlier stages handed over {given}"
        )
    print(
        json.dumps(
            {
                "wall_s": sum(f["wall_s"] for f in figures),
                "cpu_s": sum(f["cpu_s"] for f in figures),
                "stage_wall_s": staging_wall,  # planning and staging (not measured; the name kept for old results)
                "tasks": len(works),
                "stages": figures,
                "handed_over": given,
            }
        )
    )


if __name__ == "__main__":
    b, a, w, api, d, n, *shared = sys.argv[1:]
    main(b, a, w, api, d, int(n), *shared)
