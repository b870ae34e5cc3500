"""Where one ``streamproc run`` spends its wall and CPU seconds, step by step and process by process.

Runs ``streamproc run`` in this process on a bench data set (``bench/compare.py``'s broker and records) with the
workload of ``bench/workloads.py``, as ``compare.py`` runs it, and prints per step (plan, fetch, process, hand-off)
the wall seconds, this process's CPU seconds (the CLI: plan, fetch, Spark's driver side, hand-off) and its reaped
children's (Spark's JVM; this process is a child subreaper, so a descendant is counted when it ends), and the whole
run's CPU per step from a cgroup this process joins first (``bench.measure._CpuAccount``): Spark's Python workers are
reaped by the kernel (PySpark's daemon ignores ``SIGCHLD``), so their CPU reaches nobody's ``getrusage``; the
``workers`` column is the cgroup's figure less everything else. Without a writable cgroup that column is empty and
the records/CPU-s line leaves the workers out (it says so). ``--profile DIR`` adds
a cProfile of the driver per step (``DIR/driver-<step>.txt``) and Spark's Python worker profiles
(``spark.python.profile``: ``DIR/workers.txt``)::

    python -m bench.profiles.run BOOTSTRAP pass_through --records 1000000 [--profile /tmp/prof]

The broker at BOOTSTRAP must hold ``bench-in-<records>-<partitions>p`` (``python -m bench.compare`` makes it).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench.measure import _CpuAccount, _process_table, become_subreaper


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _descendants_cpu() -> dict[str, float]:
    """CPU seconds of every live descendant by command (java, python, …), and of the children each waited for."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    out: dict[str, float] = {}
    pending = list(children.get(os.getpid(), []))
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        tick = os.sysconf("SC_CLK_TCK")
        out[name] = out.get(name, 0.0) + sum(int(f) for f in fields[11:13]) / tick
        reaped = sum(int(f) for f in fields[13:15]) / tick  # its own ended children (Spark's Python workers)
        if reaped:
            out[f"{name}'s ended children"] = out.get(f"{name}'s ended children", 0.0) + reaped
    return out


def _reap() -> None:
    """Wait for every ended descendant handed to this subreaper, so that its CPU is in ``RUSAGE_CHILDREN``."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("bootstrap")
    parser.add_argument("workload", help="pass_through, count, window (dsl_… for the DSL's)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--conf", action="append", default=[], help="extra Spark KEY=VALUE")
    parser.add_argument(
        "--master",
        default=None,
        help="the process step's master (default: local[CORES]); 'default': none given, as a user runs it",
    )
    args = parser.parse_args(argv)
    become_subreaper()
    account = _CpuAccount()
    account.join(os.getpid())
    try:
        return _profile(args, account)
    finally:
        account.leave(os.getpid())
        account.close()


def _profile(args: argparse.Namespace, account: _CpuAccount) -> int:
    from streamproc.cli import main as cli_main
    from streamproc.cli import run as run_cli

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    output = f"bench-out-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(output, num_partitions=args.partitions, replication_factor=1)])[output].result(60)
    os.environ["STREAMPROC_BENCH_INPUT"] = f"bench-in-{args.records}-{args.partitions}p"
    os.environ["STREAMPROC_BENCH_OUTPUT"] = output
    app = f"bench-prof-{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="streamproc-prof-"))
    rows: list[tuple[str, float, float, float, dict[str, float], float | None]] = []
    original = run_cli.StepTimes.step

    @contextlib.contextmanager
    def step(self: Any, name: str) -> Iterator[None]:
        wall, own, children = time.perf_counter(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        live, run0 = _descendants_cpu(), account.cpu_s()
        profiler = cProfile.Profile() if args.profile else None
        try:
            with original(self, name):
                if profiler is not None:
                    profiler.enable()
                try:
                    yield
                finally:
                    if profiler is not None:
                        profiler.disable()
        finally:
            now = _descendants_cpu()
            _reap()
            ended = _cpu(resource.RUSAGE_CHILDREN) - children
            # live descendants: what they used during the step (a process that ended is in `ended` whole)
            used = {k: v - live.get(k, 0.0) for k, v in now.items() if v - live.get(k, 0.0) > 0.05}
            run1 = account.cpu_s()
            run_cpu = None if run0 is None or run1 is None else run1 - run0
            rows.append((name, time.perf_counter() - wall, _cpu(resource.RUSAGE_SELF) - own, ended, used, run_cpu))
            if profiler is not None and args.profile is not None:
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(60)
                (args.profile / f"driver-{name}.txt").write_text(text.getvalue())

    run_cli.StepTimes.step = step  # type: ignore[method-assign]
    conf = list(args.conf)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        conf += ["spark.python.profile=true"]
        from pyspark import SparkContext

        stop = SparkContext.stop

        def dump_then_stop(sc: SparkContext) -> None:  # the workers' profiles, before the context goes
            assert args.profile is not None
            sc.dump_profiles(str(args.profile / "workers"))
            stop(sc)

        SparkContext.stop = dump_then_stop  # type: ignore[method-assign]
    factory = f"bench.workloads:{args.workload}"
    master = [] if args.master == "default" else ["--master", args.master or f"local[{args.cores}]"]
    command = ["run", "--bootstrap", args.bootstrap, "--application-id", app, "--topology", factory,
               "--store", str(work / "staging"), "--work-dir", str(work / "work"), "--state-dir", str(work / "state"),
               *master, "--create-internal-topics", "--streams-setting",
               "replication.factor=1", "--yes"]  # fmt: skip
    for c in conf:
        command += ["--conf", c]
    started, run_started = time.perf_counter(), account.cpu_s()
    try:
        cli_main.main(command, standalone_mode=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        names = [t for t in admin.list_topics(timeout=30).topics if output in t or app in t]
        if names:
            for future in admin.delete_topics(names).values():
                future.result(60)
    _reap()
    total_wall = time.perf_counter() - started
    before_exit = _descendants_cpu()  # Spark's gateway JVM lives until the CLI's process ends
    run_total = None if run_started is None else (account.cpu_s() or 0.0) - run_started
    print(f"{'step':<10} {'wall s':>8} {'CLI CPU s':>10} {'ended CPU s':>12} {'workers':>8}  live descendants' CPU s")
    for name, wall, own, ended, used, run_cpu in rows:
        detail = ", ".join(f"{k} {v:.1f}" for k, v in sorted(used.items()))
        workers = "" if run_cpu is None else f"{run_cpu - own - ended - sum(used.values()):.1f}"
        print(f"{name:<10} {wall:8.1f} {own:10.1f} {ended:12.1f} {workers:>8}  {detail}")
    own_total, ended_total = sum(r[2] for r in rows), sum(r[3] for r in rows)
    live_total = sum(before_exit.values())
    print(f"{'total':<10} {total_wall:8.1f} {own_total:10.1f} {ended_total:12.1f} {'':>8}  still live at the end: "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(before_exit.items())))  # fmt: skip
    if run_total is None:
        cpu = own_total + ended_total + live_total
        print(f"records/CPU-s {args.records / cpu:,.0f} without Spark's Python workers (no writable cgroup here); "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    else:
        print(f"records/CPU-s {args.records / run_total:,.0f} (every process of the run, {run_total:.1f} CPU s from "
              f"its cgroup); load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    if args.profile is not None:
        dump = args.profile / "workers"
        if dump.is_dir():
            stats = None
            for f in sorted(dump.iterdir()):
                stats = pstats.Stats(str(f)) if stats is None else stats.add(str(f))  # type: ignore[func-returns-value]
            if stats is not None:
                text = io.StringIO()
                stats.stream = text  # type: ignore[attr-defined]
                stats.sort_stats("cumulative").print_stats(80)
                (args.profile / "workers.txt").write_text(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
