"""Throughput and memory of the ordering engine (``replay``: ``PartitionGroup`` + ``StreamTask``) vs ``heapq.merge``.

Guards against regressions in the per-record cost of the engine: lazy head deserialization, timestamp extraction,
the ``java.util.PriorityQueue`` reproduction, the record context and a pass-through processor. The baseline is a
bare ``heapq.merge`` of the same records by timestamp, measured in the same run, so only the ratios are meaningful
(no assertions on time: the machine is shared). Three replay loops are measured: the bulk loop
(``bulk_replay.process_buffered``, what ``replay`` uses) compiled (``_bulk_kernel.c``), the same loop in Python
(``STREAMPROC_PURE_PYTHON_REPLAY``), and the record-at-a-time ``StreamTask.process`` (``bulk=False``). The memory
test replays 1 M and 10 M lazily generated records with a 1 000-record buffer per
partition in fresh processes and reports their peak RSS, which must not grow with the record count.

``make bench`` runs this file (``pytest bench -s``); results go to ``bench/results/engine.json`` with the machine
description (CPUs, CPU model, load average). Sizes: ``STREAMPROC_BENCH_RECORDS`` (default 1 M) and
``STREAMPROC_BENCH_RSS_RECORDS`` (default ``1000000,10000000``). As a script: ``python bench/test_bench_engine.py
--rss N`` prints the peak RSS of one replay of N records (what the memory test runs in a subprocess).
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamproc.engine.bulk_replay import PURE_PYTHON_ENV, _bulk_kernel
from streamproc.engine.processor import Processor
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "engine.json"
PARTITIONS = 8
RECORDS = 1_000_000
BUFFER = 1000
REPEATS = 3

RawRecord = ConsumerRecord[bytes | None, bytes | None]


class PassThrough(Processor):
    """Counts records and does nothing else."""

    def __init__(self) -> None:
        self.count = 0

    def process(self, record: Record[Any, Any]) -> None:
        self.count += 1


def identity(topic: str, data: bytes | None) -> object:
    return data


def partition_records(partition: int, count: int, seed: int = 42) -> Iterator[RawRecord]:
    """Offsets 0.., timestamps increasing with random steps 0..20, so partitions interleave and heads often tie."""
    rng = random.Random(seed * 1000 + partition)
    timestamp = 1_700_000_000_000
    for offset in range(count):
        timestamp += rng.randint(0, 20)
        yield ConsumerRecord.raw("input", partition, offset, timestamp, b"key", b"value")


def make_records(partitions: int, total: int) -> list[list[RawRecord]]:
    return [list(partition_records(p, total // partitions)) for p in range(partitions)]


def run_heapq(records: list[list[RawRecord]]) -> float:
    start = time.perf_counter()
    count = 0
    for _ in heapq.merge(*records, key=lambda record: record.timestamp):
        count += 1
    elapsed = time.perf_counter() - start
    assert count == sum(len(r) for r in records)
    return elapsed


def run_engine(
    records: list[list[RawRecord]] | None,
    *,
    bulk: bool,
    total: int = 0,
    buffer: int = BUFFER,
    pure_python: bool = False,
) -> float:
    """One replay with a pass-through processor; ``records=None`` generates ``total`` records lazily."""
    if pure_python:
        os.environ[PURE_PYTHON_ENV] = "1"
    try:
        return _run_engine(records, bulk=bulk, total=total, buffer=buffer)
    finally:
        os.environ.pop(PURE_PYTHON_ENV, None)


def _run_engine(records: list[list[RawRecord]] | None, *, bulk: bool, total: int, buffer: int) -> float:
    partitions = [TopicPartition("input", p) for p in range(len(records) if records is not None else PARTITIONS)]
    source = SourceNode("source", ["input"], identity, identity)
    processor = PassThrough()
    node = ProcessorNode("proc", processor)
    source.add_child(node)
    task = StreamTask(TaskId(0, 0), ProcessorTopology([source, node]), partitions, config=TaskConfig())
    if records is not None:
        inputs = [PartitionInput(tp, iter(r)) for tp, r in zip(partitions, records, strict=True)]
        expected = sum(len(r) for r in records)
    else:
        inputs = [PartitionInput(tp, partition_records(tp.partition, total // PARTITIONS)) for tp in partitions]
        expected = total // PARTITIONS * PARTITIONS
    start = time.perf_counter()
    result = replay(task, inputs, buffered_records_per_partition=buffer, bulk=bulk)
    elapsed = time.perf_counter() - start
    assert processor.count == expected == result.records_processed
    return elapsed


def machine() -> dict[str, Any]:
    """``bench.conftest.machine()`` (CPU model, CPUs, 1-minute load) plus what this benchmark also reports."""
    from bench.conftest import machine as shared_machine  # not at import: the --rss child stays lean

    return {
        **shared_machine(),
        "implementation": platform.python_implementation(),
        "nproc": len(os.sched_getaffinity(0)),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def measure_throughput(total: int = RECORDS, partitions: int = PARTITIONS, buffer: int = BUFFER) -> dict[str, Any]:
    records = make_records(partitions, total)
    count = sum(len(r) for r in records)
    load_before = [round(x, 2) for x in os.getloadavg()]
    # Best of REPEATS for the baseline and the bulk loop (interleaved, so both see the same load).
    baseline = bulk = bulk_python = float("inf")
    for _ in range(REPEATS):
        baseline = min(baseline, run_heapq(records))
        bulk = min(bulk, run_engine(records, bulk=True, buffer=buffer))
    bulk_python = run_engine(records, bulk=True, buffer=buffer, pure_python=True)
    exact = run_engine(records, bulk=False, buffer=buffer)
    return {
        "records": count,
        "partitions": partitions,
        "buffered_records_per_partition": buffer,
        "repeats": REPEATS,
        "heapq_merge_seconds": round(baseline, 3),
        "compiled_loop": _bulk_kernel is not None,
        "bulk_seconds": round(bulk, 3),
        "bulk_python_loop_seconds": round(bulk_python, 3),
        "record_at_a_time_seconds": round(exact, 3),
        "heapq_records_per_second": round(count / baseline),
        "bulk_records_per_second": round(count / bulk),
        "bulk_python_loop_records_per_second": round(count / bulk_python),
        "record_at_a_time_records_per_second": round(count / exact),
        "bulk_throughput_over_heapq": round(baseline / bulk, 3),
        "bulk_python_loop_throughput_over_heapq": round(baseline / bulk_python, 3),
        "record_at_a_time_throughput_over_heapq": round(baseline / exact, 3),
        "load_average_before": load_before,
        "machine": machine(),
    }


def peak_rss_kib(total: int) -> dict[str, Any]:
    """Replay ``total`` lazily generated records in a fresh interpreter; its peak RSS and time."""
    output = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--rss", str(total)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def record(section: str, value: dict[str, Any]) -> None:
    """Merge one section into ``bench/results/engine.json`` (the other test's section is kept)."""
    try:
        results = json.loads(RESULTS.read_text(encoding="utf-8"))
        if "records" in results:  # the previous, flat format
            results = {}
    except (OSError, ValueError):
        results = {}
    results["benchmark"] = "engine_vs_heapq_merge"
    results[section] = value
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


@pytest.mark.bench
def test_bench_engine_throughput() -> None:
    result = measure_throughput(int(os.environ.get("STREAMPROC_BENCH_RECORDS", RECORDS)))
    record("throughput", result)
    print(
        f"\n{result['records']:,} records, {result['partitions']} partitions, load {result['load_average_before']}: "
        f"heapq.merge {result['heapq_records_per_second']:,} rec/s; "
        f"bulk replay {result['bulk_records_per_second']:,} rec/s ({result['bulk_throughput_over_heapq']}x heapq, "
        f"compiled loop: {result['compiled_loop']}); the same loop in Python "
        f"{result['bulk_python_loop_records_per_second']:,} rec/s "
        f"({result['bulk_python_loop_throughput_over_heapq']}x heapq); "
        f"record at a time {result['record_at_a_time_records_per_second']:,} rec/s "
        f"({result['record_at_a_time_throughput_over_heapq']}x heapq)"
    )


@pytest.mark.bench
def test_bench_engine_memory_stays_flat() -> None:
    sizes = [int(n) for n in os.environ.get("STREAMPROC_BENCH_RSS_RECORDS", "1000000,10000000").split(",")]
    runs = [peak_rss_kib(total) for total in sizes]
    record("memory", {"buffered_records_per_partition": BUFFER, "runs": runs, "machine": machine()})
    for run in runs:
        print(
            f"\n{run['records']:,} records (lazy input, buffer {BUFFER}): "
            f"peak RSS {run['peak_rss_kib'] / 1024:.1f} MiB "
            f"(before replay {run['rss_before_replay_kib'] / 1024:.1f} MiB), {run['records_per_second']:,} rec/s"
        )


def _peak_rss_kib() -> int:
    """``VmHWM`` of this process: unlike ``ru_maxrss`` it is not inherited from the parent across fork/exec."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _rss_child(total: int) -> None:
    before = _peak_rss_kib()
    elapsed = run_engine(None, bulk=True, total=total)
    peak = _peak_rss_kib()
    print(
        json.dumps(
            {
                "records": total // PARTITIONS * PARTITIONS,
                "rss_before_replay_kib": before,
                "peak_rss_kib": peak,
                "seconds": round(elapsed, 3),
                "records_per_second": round(total / elapsed),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rss", type=int, help="replay this many lazily generated records; print peak RSS as JSON")
    args = parser.parse_args()
    if args.rss is not None:
        _rss_child(args.rss)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
