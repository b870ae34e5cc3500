"""Issue #29's curve over K: one task of one partition run whole, then as K key shards in parallel and merged.

``python -m bench.split_curve [--records N] [--shards 2,3,4] [--workloads count,filter_count] [--per-record]``
stages the bench's records (``generator.values``: 100 000 users, Zipf keys, 200-byte values) as one partition of a
local store (not measured), then, for each DSL workload (``workloads.DSL_WORKLOADS``, or :data:`STRING_WORKLOADS`,
the same logic over String serdes; since the columnar path reads String serdes too, those of its shapes (the count,
the aggregate, the windowed counts) run whole over columns as ``--split auto`` leaves them, and ``--per-record``
measures their per-record split, the one ``auto`` splits in any other shape with a store):

- the task whole, as ``streamproc process`` runs it (over columns where the columnar path takes it, else per
  record; ``--per-record`` forces per record for both, ``STREAMPROC_PER_RECORD_COUNT``);
- for each K: the K shards at once in K worker processes (``TaskWork.shard``, the executor's shard work items), then
  the merge (``shard_merge.merge_shards``) — the two waves the process step runs.

Each step runs in a worker process started and warmed (imports) before it is measured; the figures are the wall
seconds the driver saw and the CPU seconds the workers spent (``time.process_time`` inside each; the JSON line also
gives the merge's own, ``merge_cpu_s``). Prints a table
(whole, then per K: shards' wall, merge wall, total wall, speed-up over whole, CPU per record against whole) and one
JSON line. The merged task's report equals the whole one's in records processed and outputs (checked: a split that
computed something else reports no speed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

#: The input and output topics of the staged partition (the workloads read them from the environment).
INPUT, OUTPUT = "split-in", "split-out"
#: The sink's partition count (the bench's data sets have 8).
SINK_PARTITIONS = 8

os.environ.setdefault("STREAMPROC_BENCH_INPUT", INPUT)
os.environ.setdefault("STREAMPROC_BENCH_OUTPUT", OUTPUT)


def program() -> Any:
    """The workload the environment names (``STREAMPROC_SPLIT_WORKLOAD``), for the task runner to load by name."""
    from bench.workloads import DSL_WORKLOADS

    name = os.environ["STREAMPROC_SPLIT_WORKLOAD"]
    return STRING_WORKLOADS[name]() if name in STRING_WORKLOADS else DSL_WORKLOADS[name]()


def _string_grouped() -> tuple[Any, Any, str]:
    """A builder, the bench's input topic read with String serdes and grouped by key, and the sink topic."""
    from bench.workloads import _topics
    from streamproc.dsl import Consumed, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    source, sink = _topics()
    text = serde_for("String")
    b = StreamsBuilder()
    return b, b.stream(source, Consumed.with_(text, text)).group_by_key(), sink


def _string_long() -> Any:
    from streamproc.dsl import Produced
    from streamproc.engine.serdes import serde_for

    return Produced.with_(serde_for("String"), serde_for("Long"))


def string_count() -> Any:
    """``groupByKey().count()`` with String serdes: over columns (``--split auto`` leaves it whole), or per record
    (``--per-record``), each shard reading only its own records."""
    b, grouped, sink = _string_grouped()
    grouped.count().to_stream().to(sink, _string_long())
    return b.build()


def string_aggregate() -> Any:
    """``groupByKey().aggregate(0, sum + amount)`` with String serdes: a Python aggregator per record."""
    from streamproc.dsl import Materialized
    from streamproc.engine.serdes import serde_for

    b, grouped, sink = _string_grouped()
    stored = Materialized.with_(serde_for("String"), serde_for("Long"))
    sums = grouped.aggregate(lambda: 0, lambda k, v, total: total + int(v[6:12]), materialized=stored)
    sums.to_stream().to(sink, _string_long())
    return b.build()


def string_filter_map_values() -> Any:
    """``filter`` (four records in five) then ``mapValues`` (the value's first 20 characters) to the sink, String
    serdes, per record: a stateless task, whose shards take the records round-robin by position (no store to keep
    a key's records together)."""
    from bench.workloads import _topics
    from streamproc.dsl import Consumed, Produced, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    source, sink = _topics()
    text = serde_for("String")
    b = StreamsBuilder()
    kept = b.stream(source, Consumed.with_(text, text)).filter(lambda k, v: v[6] >= "2")
    kept.map_values(lambda v: v[:20]).to(sink, Produced.with_(text, text))
    return b.build()


def string_window_count() -> Any:
    """``groupByKey().windowedBy(60 s tumbling).count()`` with String serdes (the bench's ``window_count`` per
    record): each shard is given the windowed processor's stream time over every key's records, and the merge
    settles the window store's expired segments."""
    from bench.workloads import GRACE_MS, WINDOW_MS
    from streamproc.dsl import TimeWindows

    b, grouped, sink = _string_grouped()
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS)).count()
    counts.to_stream().select_key(lambda windowed, count: windowed.key).to(sink, _string_long())
    return b.build()


def string_filtered_window_count() -> Any:
    """``filter`` (an amount of at least 200 000: four records in five), then ``string_window_count``'s windowed
    count: which records reach the aggregate is the filter's, so every shard runs it over the records it does not
    own for the aggregate's stream time (``spark/stream_time_prefix.py``)."""
    from bench.workloads import GRACE_MS, WINDOW_MS, _topics
    from streamproc.dsl import Consumed, StreamsBuilder, TimeWindows
    from streamproc.engine.serdes import serde_for

    source, sink = _topics()
    text = serde_for("String")
    b = StreamsBuilder()
    kept = b.stream(source, Consumed.with_(text, text)).filter(lambda k, v: v[6] >= "2")
    counts = kept.group_by_key().windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS)).count()
    counts.to_stream().select_key(lambda windowed, count: windowed.key).to(sink, _string_long())
    return b.build()


def string_branched_window_count() -> Any:
    """``string_filtered_window_count``'s records, through a ``split`` by amount and a ``merge`` of its branches (the
    low one filtered: four records in five reach the aggregate, as there): every shard walks the split and the merge
    for the records it does not own (``spark/stream_time_prefix.py``), where the filter alone is one call."""
    from bench.workloads import GRACE_MS, WINDOW_MS, _topics
    from streamproc.dsl import Branched, Consumed, Grouped, Named, StreamsBuilder, TimeWindows
    from streamproc.engine.serdes import serde_for

    source, sink = _topics()
    text = serde_for("String")
    b = StreamsBuilder()
    branches = (
        b.stream(source, Consumed.with_(text, text))
        .split(Named.as_("amount-"))
        .branch(lambda k, v: v[6] >= "5", Branched.as_("high"))
        .default_branch(Branched.as_("low"))
    )
    kept = branches["amount-high"].merge(branches["amount-low"].filter(lambda k, v: v[6] >= "2"))
    grouped = kept.group_by_key(Grouped.with_(text, text))
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS)).count()
    counts.to_stream().select_key(lambda windowed, count: windowed.key).to(sink, _string_long())
    return b.build()


def string_session_count() -> Any:
    """``groupByKey().windowedBy(SessionWindows(5 min gap)).count()`` with String serdes, per record: each shard is
    given the processor's and its session store's stream times over every key's records."""
    from bench.workloads import GRACE_MS
    from streamproc.dsl import SessionWindows

    b, grouped, sink = _string_grouped()
    counts = grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(300_000, GRACE_MS)).count()
    counts.to_stream().select_key(lambda windowed, count: windowed.key).to(sink, _string_long())
    return b.build()


def string_self_join() -> Any:
    """The input joined with itself within 100 ms either way, 5 s grace (the data's jitter), String serdes, per
    record: an inner stream-stream join, whose two window stores' stream times and seqnums count every key's puts
    (each shard reads every record and counts the others' puts at its gate; ``--split auto`` leaves it whole)."""
    from bench.workloads import _topics
    from streamproc.dsl import Consumed, JoinWindows, Produced, StreamJoined, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    source, sink = _topics()
    text = serde_for("String")
    b = StreamsBuilder()
    stream = b.stream(source, Consumed.with_(text, text))
    windows = JoinWindows.of_time_difference_and_grace(100, 5_000)
    pair = StreamJoined.with_(text, text, text)
    joined = stream.join(stream, lambda left, right: left[:8] + right[:8], windows, pair)
    joined.to(sink, Produced.with_(text, text))
    return b.build()


#: The workloads over String serdes, whose per-record shards read only their own records (``--split auto`` splits
#: those with a store the columnar path does not take), besides the bench's DSL ones (Bytes).
STRING_WORKLOADS = {
    "string_count": string_count,
    "string_aggregate": string_aggregate,
    "string_filter_map_values": string_filter_map_values,
    "string_window_count": string_window_count,
    "string_filtered_window_count": string_filtered_window_count,
    "string_branched_window_count": string_branched_window_count,
    "string_session_count": string_session_count,
    "string_self_join": string_self_join,
}


def _auto_splits(workload: str) -> bool:
    """Whether ``--split auto`` would split the workload's task where cores idle (``task_split.auto_refusals``)."""
    from streamproc.engine.stream_task import TaskConfig
    from streamproc.spark.task_split import auto_refusals

    os.environ["STREAMPROC_SPLIT_WORKLOAD"] = workload
    topology = program()
    topology, config = topology if isinstance(topology, tuple) else (topology, TaskConfig())
    return auto_refusals(topology, config)[0] is None


def _stage(root: Path, records: int) -> None:
    from bench.generator import values
    from streamproc.engine.records import ConsumerRecord
    from streamproc.intervals import to_intervals
    from streamproc.storage import LocalObjectStore
    from streamproc.storage.manifest import SegmentProof
    from streamproc.storage.staging import SegmentLimits, stage_range

    rows = [ConsumerRecord.raw(INPUT, 0, i, ts, k, v) for i, (k, v, ts) in enumerate(values(records, seed=29))]
    proof = SegmentProof(to_intervals(range(records)), {})
    stage_range(LocalObjectStore(root), INPUT, 0, 0, records, rows, proof, SegmentLimits())


def _work(root: Path, plan: str, records: int, shard: tuple[int, int] | None = None) -> Any:
    from streamproc.engine.key_shards import ShardSpec
    from streamproc.spark.task_runner import InputRange, TaskWork

    return TaskWork(
        plan_id=plan,
        application_id="split-curve",
        task_id="0_0",
        subtopology=0,
        topology="bench.split_curve:program",
        store_uri=str(root),
        inputs=(InputRange(INPUT, 0, 0, records, -1),),
        partition_counts={OUTPUT: SINK_PARTITIONS},
        local_dir=str(root.parent),
        shard=None if shard is None else ShardSpec(*shard),
    )


def _warm() -> None:
    import streamproc.spark.shard_merge  # noqa: F401 - imports before the clock starts
    import streamproc.spark.task_runner  # noqa: F401


def _timed(step: str, root: str, plan: str, records: int, shard: tuple[int, int] | None) -> tuple[float, Any]:
    """Run one step in this worker: its CPU seconds and the task's report."""
    from streamproc.spark.shard_merge import merge_shards
    from streamproc.spark.task_runner import run_task

    started = time.process_time()
    work = _work(Path(root), plan, records, None if step == "merge" else shard)
    report = merge_shards(work, shard[1]) if step == "merge" and shard else run_task(work)
    return time.process_time() - started, report


def _summary(report: dict[str, Any]) -> tuple[int, int]:
    return report["records_processed"], sum(report["outputs"].values())


def measure(root: Path, records: int, workload: str, shards: list[int], number: int = 0) -> dict[str, Any]:
    """The whole task, then each K: wall and CPU seconds (see the module doc); ``number`` keeps workloads' plan ids
    apart."""
    os.environ["STREAMPROC_SPLIT_WORKLOAD"] = workload
    widest = max([1, *shards])
    with ProcessPoolExecutor(widest, initializer=_warm) as pool:
        list(pool.map(time.sleep, [0.5] * widest))  # every worker started and warm
        wall = time.monotonic()
        cpu, whole = pool.submit(_timed, "task", str(root), f"{number:08x}{0:08x}", records, None).result()
        result: dict[str, Any] = {
            "workload": workload,
            "execution": whole["execution"],
            "auto_splits": _auto_splits(workload),
            "whole": {"wall_s": round(time.monotonic() - wall, 3), "cpu_s": round(cpu, 3)},
            "split": [],
        }
        for k in shards:
            plan = f"{number:08x}{k:08x}"
            wall = time.monotonic()
            futures = [pool.submit(_timed, "task", str(root), plan, records, (i, k)) for i in range(k)]
            shard_cpu = sum(f.result()[0] for f in futures)
            shards_wall = time.monotonic() - wall
            merge_cpu, merged = pool.submit(_timed, "merge", str(root), plan, records, (0, k)).result()
            total = time.monotonic() - wall
            if _summary(merged) != _summary(whole):
                raise AssertionError(f"{workload} split {k}: {_summary(merged)} != whole {_summary(whole)}")
            result["split"].append({
                "shards": k,
                "shards_wall_s": round(shards_wall, 3),
                "merge_wall_s": round(total - shards_wall, 3),
                "merge_cpu_s": round(merge_cpu, 3),
                "wall_s": round(total, 3),
                "cpu_s": round(shard_cpu + merge_cpu, 3),
                "speedup": round(result["whole"]["wall_s"] / total, 2),
                "cpu_ratio": round((shard_cpu + merge_cpu) / cpu, 2),
            })  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.split_curve", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--shards", default="2,3,4", help="the shard counts K, comma-separated")
    parser.add_argument("--workloads", default="count,filter_count", help="DSL workloads, comma-separated")
    parser.add_argument("--per-record", action="store_true", help="the whole task per record too (not columnar)")
    args = parser.parse_args(argv)
    if args.per_record:
        os.environ["STREAMPROC_PER_RECORD_COUNT"] = "1"
    shards = [int(k) for k in args.shards.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="streamproc-split-curve-"))
    try:
        root = scratch / "store"
        _stage(root, args.records)
        results = [measure(root, args.records, w, shards, n) for n, w in enumerate(args.workloads.split(","))]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.records} records, one partition, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")  # noqa: T201
    width = max(len("workload"), *(len(r["workload"]) for r in results)) + 2
    print(f"{'workload':<{width}}{'whole':<12}{'K':>3}{'shards s':>10}{'merge s':>9}{'wall s':>8}{'speed-up':>10}"  # noqa: T201
          f"{'CPU':>7}  auto splits")  # fmt: skip
    for r in results:
        head = f"{r['workload']:<{width}}{r['whole']['wall_s']:>5.2f} s {r['execution'][:3]:<4}"
        for s in r["split"]:
            print(f"{head}{s['shards']:>3}{s['shards_wall_s']:>10.2f}{s['merge_wall_s']:>9.2f}{s['wall_s']:>8.2f}"  # noqa: T201
                  f"{s['speedup']:>9.2f}×{s['cpu_ratio']:>6.2f}×  {'yes' if r['auto_splits'] else 'no'}")  # fmt: skip
            head = " " * (width + 12)
    print(json.dumps({"records": args.records, "results": results}))  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
