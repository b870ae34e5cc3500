"""Throughput of the ordering engine (``PartitionGroup`` + ``StreamTask`` via ``replay``) vs a bare ``heapq`` merge.

Guards against regressions in the per-record cost of the engine: lazy head deserialization, timestamp extraction,
the ``java.util.PriorityQueue`` reproduction, the record context and a pass-through processor. The baseline is
``heapq.merge`` of the same records by timestamp, measured in the same run; only the ratio is meaningful (no
assertions on time). Run it as a script (``python3 bench/bench_engine.py [--records N] [--record]``) or through
pytest with ``-m bench`` (``pytest bench/bench_engine.py -s``); ``--record`` writes ``bench/results/engine.json``
with the machine description.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamproc.engine.processor import Processor  # noqa: E402
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode  # noqa: E402
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition  # noqa: E402
from streamproc.engine.replay import PartitionInput, replay  # noqa: E402
from streamproc.engine.stream_task import StreamTask, TaskConfig  # noqa: E402
from streamproc.engine.task_id import TaskId  # noqa: E402

PARTITIONS = 8
RECORDS = 1_000_000

RawRecord = ConsumerRecord[bytes | None, bytes | None]


class PassThrough(Processor):
    """Counts records and does nothing else."""

    def __init__(self) -> None:
        self.count = 0

    def process(self, record: Record[Any, Any]) -> None:
        self.count += 1


def identity(topic: str, data: bytes | None) -> object:
    return data


def make_records(partitions: int, total: int, seed: int = 42) -> list[list[RawRecord]]:
    """Per partition: offsets 0.., timestamps increasing with random steps (so the merge needs the heap)."""
    rng = random.Random(seed)
    per_partition = total // partitions
    out: list[list[RawRecord]] = []
    for partition in range(partitions):
        timestamp = 1_700_000_000_000
        records: list[RawRecord] = []
        for offset in range(per_partition):
            timestamp += rng.randint(0, 20)
            records.append(ConsumerRecord.raw("input", partition, offset, timestamp, b"key", b"value"))
        out.append(records)
    return out


def run_heapq(records: list[list[RawRecord]]) -> float:
    start = time.perf_counter()
    count = 0
    for _ in heapq.merge(*records, key=lambda record: record.timestamp):
        count += 1
    elapsed = time.perf_counter() - start
    assert count == sum(len(r) for r in records)
    return elapsed


def run_engine(records: list[list[RawRecord]], buffer_size: int) -> float:
    source = SourceNode("source", ["input"], identity, identity)
    processor = PassThrough()
    node = ProcessorNode("proc", processor)
    source.add_child(node)
    partitions = [TopicPartition("input", p) for p in range(len(records))]
    task = StreamTask(TaskId(0, 0), ProcessorTopology([source, node]), partitions, config=TaskConfig())
    inputs = [PartitionInput(tp, iter(r)) for tp, r in zip(partitions, records, strict=True)]
    start = time.perf_counter()
    replay(task, inputs, buffered_records_per_partition=buffer_size)
    elapsed = time.perf_counter() - start
    assert processor.count == sum(len(r) for r in records)
    return elapsed


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def measure(total: int = RECORDS, partitions: int = PARTITIONS, buffer_size: int = 1000) -> dict[str, Any]:
    records = make_records(partitions, total)
    baseline = run_heapq(records)
    engine = run_engine(records, buffer_size)
    count = sum(len(r) for r in records)
    return {
        "benchmark": "engine_vs_heapq_merge",
        "records": count,
        "partitions": partitions,
        "buffered_records_per_partition": buffer_size,
        "heapq_merge_seconds": round(baseline, 3),
        "engine_seconds": round(engine, 3),
        "heapq_records_per_second": round(count / baseline),
        "engine_records_per_second": round(count / engine),
        "ratio_engine_over_heapq": round(engine / baseline, 2),
        "machine": machine(),
    }


def report(result: dict[str, Any]) -> str:
    return (
        f"{result['records']} records, {result['partitions']} partitions: "
        f"heapq.merge {result['heapq_records_per_second']:,} rec/s, "
        f"engine {result['engine_records_per_second']:,} rec/s, "
        f"engine/heapq time ratio {result['ratio_engine_over_heapq']}x"
    )


@pytest.mark.bench
def test_bench_engine() -> None:
    result = measure(int(os.environ.get("STREAMPROC_BENCH_RECORDS", RECORDS)))
    print(report(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--buffer", type=int, default=1000)
    parser.add_argument("--record", action="store_true", help="write bench/results/engine.json")
    args = parser.parse_args()
    result = measure(args.records, args.partitions, args.buffer)
    print(report(result))
    if args.record:
        path = ROOT / "bench" / "results" / "engine.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
