"""Issue #29's end-to-end figure: ``streamproc run`` over a one-partition topic, ``--split off`` against ``auto``.

``python -m bench.split_run [--records N] [--workloads string_session_count,string_window_count] [--cores 2]
[--repeats 1] [--master M] [--attach] [--log FILE]`` puts the bench's data set of N records on one partition of the
bench broker (``bench/generator.py``, produced once and reused), then runs, per workload of
``bench/split_curve.py``'s String ones (``--split auto`` splits those with a store that run per record: the
default ``string_session_count``; ``string_window_count``, ``string_count`` and ``string_aggregate`` run whole over
columns, and split only with ``STREAMPROC_PER_RECORD_COUNT=1`` in the environment, which the runs inherit) and per
repeat,
``streamproc run`` as a user runs it on ``--cores`` cores (no ``--master``: worker processes by the window, one per
million records, inline below two million) with ``--split off``, then with ``--split auto``, each a new application
from the earliest offset (plan, fetch, process, hand-off to the broker). Measured as ``bench.compare`` measures a
run (``bench/measure.py``: wall seconds, CPU seconds of every process but the broker's); prints each run's steps and
the ratio of ``auto`` over ``off`` in wall and CPU, then one JSON line; ``--log`` keeps the runs' own log (each step's
lines).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import generator
from bench.compare import Bench
from bench.measure import become_subreaper


def measure(
    bench: Bench, data: generator.DataSet, workload: str, cores: int, split: str, master: str
) -> dict[str, Any]:
    factory = f"bench.split_curve:{workload}"
    row = bench.streamproc(data, workload, cores, "dsl", master, split=split, factory=factory)
    return {"workload": workload, "split": split, **row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.split_run", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--workloads", default="string_session_count,string_window_count")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--master", default="default", help="streamproc run's --master ('default': none given)")
    parser.add_argument("--attach", action="store_true", help="use the bench broker `bench.generator start` started")
    parser.add_argument("--log", type=Path, help="keep the runs' log (every step's lines) at this path")
    args = parser.parse_args(argv)
    become_subreaper()
    handle = generator.attach_broker() if args.attach else generator.start_broker()
    work = Path(tempfile.mkdtemp(prefix="streamproc-split-run-"))
    rows: list[dict[str, Any]] = []
    bench: Bench | None = None
    try:
        bench = Bench(handle.address, handle.pid, work, work / "split-run.log")
        data = generator.DataSet(args.records, 1)
        generator.ensure(handle.address, data)
        for _ in range(args.repeats):
            for workload in args.workloads.split(","):
                for split in ("off", "auto"):
                    rows.append(measure(bench, data, workload, args.cores, split, args.master))
                    row = rows[-1]
                    print(f"{workload} --split {split}: {row['wall_s']} s wall, {row['cpu_s']} CPU-s, steps "  # noqa: T201
                          f"{row['steps_s']}", flush=True)  # fmt: skip
    finally:
        del bench  # its admin client must not outlive the broker
        if args.log and (work / "split-run.log").exists():
            shutil.copyfile(work / "split-run.log", args.log)
        shutil.rmtree(work, ignore_errors=True)
        if not args.attach:
            generator.stop_broker()
    print(f"{args.records} records, one partition, {args.cores} cores, load {os.getloadavg()[0]:.1f}")  # noqa: T201
    for workload in args.workloads.split(","):
        off = [r for r in rows if r["workload"] == workload and r["split"] == "off"]
        auto = [r for r in rows if r["workload"] == workload and r["split"] == "auto"]
        for a, b in zip(off, auto, strict=True):
            print(f"{workload:<18} off {a['wall_s']:>6.2f} s  auto {b['wall_s']:>6.2f} s  "  # noqa: T201
                  f"wall {a['wall_s'] / b['wall_s']:.2f}×  CPU {b['cpu_s'] / a['cpu_s']:.2f}×  "
                  f"process {a['steps_s'].get('process')} → {b['steps_s'].get('process')} s")  # fmt: skip
    print(json.dumps({"records": args.records, "cores": args.cores, "runs": rows}))  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
