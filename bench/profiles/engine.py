"""Records per CPU-second of the process step's engine path, run directly (no Spark), and a cProfile of it.

The path measured is the one a Spark task runs: staged Parquet segments → records → ``PartitionGroup`` → processors
→ output files and stores (:func:`streamproc.spark.task_runner.run_task`), on the topologies of
``bench/process_topologies.py`` (pass-through, count on RocksDB with every count sent on). Staging needs a broker
and is done once; runs reuse the staged data, so the same command can be compared before and after a change::

    python -m bench.profiles.engine stage /tmp/engine-bench --records 1000000   # starts and stops its own broker
    python -m bench.profiles.engine run /tmp/engine-bench --topology pass_through [--profile out.txt]

``run`` prints one line per topology: records, CPU seconds of this process (``getrusage``: the machine is shared,
so CPU time is steadier than wall time) and records per CPU-second (best of ``--repeats``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import process_topologies
from streamproc.plan.run_plan import RunPlan

PARTITIONS = 8
KEYS = 10_000
TOPOLOGIES = ("pass_through", "count")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stage(directory: Path, records: int) -> None:
    """Produce ``records`` records with Java's partitioner to a private broker; plan and fetch each topology."""
    from confluent_kafka.admin import AdminClient

    from bench.test_bench_process import seed
    from bench.test_bench_process import stage as stage_topology
    from streamproc_dev import broker
    from tests.integration.conftest import create_topic

    directory.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="engine-bench-kafka-"))
    handle = broker.start(workdir)
    try:
        admin = AdminClient({"bootstrap.servers": handle.address})
        create_topic(admin, process_topologies.INPUT, partitions=PARTITIONS)
        create_topic(admin, process_topologies.OUTPUT, partitions=PARTITIONS)
        create_topic(admin, "bench-profile-count-counts-changelog", partitions=PARTITIONS)
        seed(handle.address, 0, records)
        for name in TOPOLOGIES:
            app = f"bench-profile-{name.replace('_', '-')}"
            plan = stage_topology(handle.address, app, f"bench.process_topologies:{name}", directory / name)
            plan.write(directory / f"{name}.plan.json")
    finally:
        broker.stop(workdir)
        shutil.rmtree(workdir, ignore_errors=True)
    (directory / "staged.json").write_text(json.dumps({"records": records, "partitions": PARTITIONS}) + "\n")


def _works(directory: Path, name: str, factory: str | None = None) -> list[Any]:
    from streamproc.spark.job import partition_counts, task_work

    plan = RunPlan.read(directory / f"{name}.plan.json")
    counts = partition_counts(plan, {process_topologies.OUTPUT: PARTITIONS})
    topology = factory or f"bench.process_topologies:{name}"
    return task_work(plan, topology=topology, store_uri=str(directory / name), counts=counts)


def run(directory: Path, name: str, repeats: int, profile: Path | None, dsl: bool = False) -> dict[str, Any]:
    """Every task of ``name`` run in this process; best CPU seconds of ``repeats`` runs.

    ``dsl``: the same staged data through ``bench.workloads``' DSL version of the workload (``dsl_count``,
    ``dsl_pass_through``: the calls of Kafka Streams' ``BenchApps.dsl``) instead of the Processor API topology.
    """
    import os

    from streamproc.spark.task_runner import run_task

    factory = None
    if dsl:
        os.environ["STREAMPROC_BENCH_INPUT"] = process_topologies.INPUT
        os.environ["STREAMPROC_BENCH_OUTPUT"] = process_topologies.OUTPUT
        factory = f"bench.workloads:dsl_{name}"
    works = _works(directory, name, factory)
    total = json.loads((directory / "staged.json").read_text())["records"]
    best = float("inf")
    for _ in range(repeats):
        shutil.rmtree(directory / name / "process", ignore_errors=True)
        start = _cpu()
        processed = sum(run_task(work)["records_processed"] for work in works)
        best = min(best, _cpu() - start)
        assert processed == total, (processed, total)
    if profile is not None:
        shutil.rmtree(directory / name / "process", ignore_errors=True)
        profiler = cProfile.Profile()
        profiler.runcall(run_task, works[0])
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("tottime").print_stats(35)
        profile.write_text(f"cProfile of task {works[0].task_id} of {name}, by own time\n" + text.getvalue())
    shutil.rmtree(directory / name / "process", ignore_errors=True)
    label = f"dsl_{name}" if dsl else name
    return {"topology": label, "records": total, "cpu_s": round(best, 2), "records_per_cpu_s": round(total / best)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    staging = commands.add_parser("stage", help="produce, plan and fetch once (starts a private broker)")
    staging.add_argument("directory", type=Path)
    staging.add_argument("--records", type=int, default=1_000_000)
    running = commands.add_parser("run", help="run the staged tasks in this process and print records/CPU-s")
    running.add_argument("directory", type=Path)
    running.add_argument("--topology", choices=(*TOPOLOGIES, "all"), default="all")
    running.add_argument("--repeats", type=int, default=2)
    running.add_argument("--profile", type=Path, help="also write a cProfile of task 0_0 (by own time) here")
    running.add_argument("--dsl", action="store_true", help="run bench.workloads' DSL version of the topology")
    args = parser.parse_args(argv)
    if args.command == "stage":
        stage(args.directory, args.records)
        return 0
    names = TOPOLOGIES if args.topology == "all" else (args.topology,)
    for name in names:
        profile = None if args.profile is None else args.profile.with_name(f"{args.profile.stem}-{name}.txt")
        print(json.dumps(run(args.directory, name, args.repeats, profile, args.dsl)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
