"""Issue #29: what a key shard pays to restore its task's stores, everything against only its own keys.

``python -m bench.shard_restore [--records N] [--next M] [--shards K] [--workloads string_count,...]`` stages the
bench's first N records (``generator.values``, as ``bench.split_curve`` does) as one partition and runs each
workload's task over them whole (not measured). That run's changelog records are then staged as the restore of a
second run over the next M records (default N / 5, so that the restore is most of the second run). Measured, one
step at a time in a warmed worker process (nothing beside it, so each CPU figure is that step's own): the second run
whole, then each of its K shards alone. The first shard restores everything (its stores are the base of the task's
bundle); every other shard only its own keys' changelog records where ``spark/shard_restore.py`` allows it
(key-value stores, RocksDB window and session stores). Prints, per workload and step, the changelog records restored
and the CPU seconds, and one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench import split_curve

#: The application id of ``split_curve``'s task work: the changelog topics are ``<it>-<store>-changelog``.
APPLICATION_ID = "split-curve"


def _stage(root: Path, topic: str, start: int, rows: Sequence[tuple[bytes | None, bytes | None, int]]) -> int:
    """Stage ``rows`` (key, value, timestamp) as ``topic``'s partition 0 from offset ``start``; the end offset."""
    from streamproc.engine.records import ConsumerRecord
    from streamproc.intervals import to_intervals
    from streamproc.storage import LocalObjectStore
    from streamproc.storage.manifest import SegmentProof
    from streamproc.storage.staging import SegmentLimits, stage_range

    end = start + len(rows)
    records = [ConsumerRecord.raw(topic, 0, start + i, ts, k, v) for i, (k, v, ts) in enumerate(rows)]
    proof = SegmentProof(to_intervals(range(start, end)), {})
    stage_range(LocalObjectStore(root), topic, 0, start, end, records, proof, SegmentLimits())
    return end


def _restores(root: Path, plan: str) -> tuple[Any, ...]:
    """The changelog records the run of ``plan`` published, staged as each logged store's restore."""
    import pyarrow.parquet as pq

    from streamproc.engine.task_id import TaskId
    from streamproc.engine.topology_builder import store_builders
    from streamproc.spark.task_output import TaskObjects
    from streamproc.spark.task_runner import RestoreRange
    from streamproc.state.store_builders import store_definitions

    topology = split_curve.program()
    topology = topology[0] if isinstance(topology, tuple) else topology
    objects = TaskObjects(plan, TaskId.parse("0_0"))
    restores = []
    for definition in store_definitions(store_builders(topology, 0)):
        if not definition.logged:
            continue
        topic = f"{APPLICATION_ID}-{definition.name}-changelog"
        path = root / objects.changelog(topic, 0)
        rows: list[tuple[bytes | None, bytes | None, int]] = []
        if path.exists():
            table = pq.read_table(path, columns=["key", "value", "timestamp"])
            columns = (table.column(name).to_pylist() for name in ("key", "value", "timestamp"))
            rows = list(zip(*columns, strict=True))
        restores.append(RestoreRange(definition.name, topic, 0, 0, _stage(root, topic, 0, rows)))
    return tuple(restores)


def _work(root: Path, plan: str, start: int, end: int, restores: tuple[Any, ...], shard: tuple[int, int] | None) -> Any:
    from streamproc.spark.task_runner import InputRange

    work = split_curve._work(root, plan, end, shard)
    return dataclasses.replace(work, inputs=(InputRange(split_curve.INPUT, 0, start, end, -1),), restores=restores)


def _timed(work: Any) -> tuple[float, dict[str, Any]]:
    """Run one task or shard in this worker: its CPU seconds and report."""
    from streamproc.spark.task_runner import run_task

    started = time.process_time()
    report = run_task(work)
    return time.process_time() - started, report


def measure(root: Path, records: int, following: int, workload: str, shards: int, number: int) -> dict[str, Any]:
    """The first run (not measured), then the second run whole and each of its shards alone (see the module doc)."""
    os.environ["STREAMPROC_SPLIT_WORKLOAD"] = workload
    first = f"{number:08x}{0:08x}"
    with ProcessPoolExecutor(1, initializer=split_curve._warm) as pool:
        pool.submit(_timed, _work(root, first, 0, records, (), None)).result()
        restores = _restores(root, first)
        steps: list[dict[str, Any]] = []
        for n, shard in enumerate([None, *((i, shards) for i in range(shards))]):
            # a plan of its own each: a task whose report is published is not run again
            work = _work(root, f"{number:08x}{n + 1:08x}", records, records + following, restores, shard)
            cpu, report = pool.submit(_timed, work).result()
            steps.append({
                "step": "whole" if shard is None else f"shard {shard[0]} of {shard[1]}",
                "restored": sum(report["restored"].values()),
                "cpu_s": round(cpu, 3),
            })  # fmt: skip
    return {"workload": workload, "changelog_records": steps[0]["restored"], "steps": steps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shard_restore", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="the first run's records")
    parser.add_argument("--next", type=int, default=None, help="the second run's records (default: records / 5)")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--workloads", default="string_count,string_window_count,string_session_count")
    args = parser.parse_args(argv)
    following = args.next if args.next is not None else args.records // 5
    from bench.generator import values

    scratch = Path(tempfile.mkdtemp(prefix="streamproc-shard-restore-"))
    try:
        root = scratch / "store"
        rows = values(args.records + following, seed=29)
        _stage(root, split_curve.INPUT, 0, rows[: args.records])
        _stage(root, split_curve.INPUT, args.records, rows[args.records :])
        del rows
        workloads = args.workloads.split(",")
        results = [measure(root, args.records, following, w, args.shards, n) for n, w in enumerate(workloads)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.records} records, then {following} restored from their changelog; load {os.getloadavg()[0]:.1f}")  # noqa: T201
    for r in results:
        whole = r["steps"][0]["cpu_s"]
        for step in r["steps"]:
            print(f"{r['workload']:<24}{step['step']:<14}{step['restored']:>10} restored{step['cpu_s']:>9.2f} CPU-s"  # noqa: T201
                  f"{step['cpu_s'] / whole:>7.2f}× whole")  # fmt: skip
    print(json.dumps({"records": args.records, "next": following, "shards": args.shards, "results": results}))  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
