"""The fixed cost of ``streamproc run`` on an idle application, and of a run with a little new data (issue #28).

An hourly scheduled run of an application that received nothing since its last hand-off must cost next to nothing
(goal: ≤ 5 CPU-seconds, ≤ 10 s wall); a run with a little new data should cost in proportion to it. The application
(the count topology over ``STREAMPROC_BENCH_PARTITIONS``, default 8, partitions) is handed off once; then
``streamproc run`` runs ``IDLE_RUNS`` times with nothing new, then once after ``LITTLE`` new records. Each run is a
process of its own, as cron or Airflow starts it; its CPU is that of every process it started
(``bench.measure.run_measured``: a processing run's Spark JVM and Python workers included). Figures are recorded,
never asserted. Results: ``bench/results/idle.json`` and ``bench/results/<date>-<machine>-idle.md``.
"""

from __future__ import annotations

import os
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench.conftest import RESULTS, machine, record
from bench.measure import become_subreaper, run_measured
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import create_topic
from tests.integration.spark.conftest import wait_for_leaders

PARTITIONS = int(os.environ.get("STREAMPROC_BENCH_PARTITIONS", "8"))
FIRST = 20_000
LITTLE = 1_000
IDLE_RUNS = 3
STREAMPROC = str(Path(sys.executable).parent / "streamproc")


def _produce(bootstrap: str, topic: str, count: int, offset: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(offset, offset + count):
        producer.produce(topic, key=f"k{i % 997}".encode(), value=b"x", timestamp=1_000_000 + i)
    producer.flush(60)


def _timed_run(args: list[str], broker_pid: int, log: Path) -> dict[str, Any]:
    """One ``streamproc run`` process: its wall seconds, CPU seconds of every process it started (``bench.measure``:
    the Spark JVM and the Python workers included) and its output."""
    measured = run_measured([[STREAMPROC, *args]], env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
                            cwd=PROJECT_ROOT, log=log, broker_pid=broker_pid)  # fmt: skip
    output = "".join(measured.stdout) + "".join(measured.stderr)
    steps = [line for line in output.splitlines() if line.startswith("streamproc run: ")]
    return {"wall_s": round(measured.wall_s, 2), "cpu_s": round(measured.cpu_s, 2),
            "steps": steps[-1] if steps else "", "output": output}  # fmt: skip


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    idle, little = results["idle"], results["little"]
    return "\n".join([
        f"# `streamproc run`: an idle application, {results['date']}",
        "",
        f"The count topology over {results['partitions']} partitions, handed off once ({FIRST:,} records); then "
        f"{len(idle)} runs with nothing new, then one after {LITTLE:,} new records. Each run a process of its own; "
        f"CPU is that of every process it started. Machine: {m['cpu_model']}, {m['cpus']} CPUs, Python "
        f"{m['python']}; load average (1 min) at the end {m['load_average_1m']}.",
        "",
        "| run | wall s | CPU s | goal | steps (wall) |",
        "|---|---:|---:|---|---|",
        *(f"| idle #{i + 1} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | ≤ 10 s wall, ≤ 5 CPU-s | {r['steps']} |"
          for i, r in enumerate(idle)),
        f"| {LITTLE:,} new records | {little['wall_s']:.1f} | {little['cpu_s']:.1f} | in proportion | "
        f"{little['steps']} |",
        "",
        f"Median idle run: {results['idle_median_wall_s']:.1f} s wall, {results['idle_median_cpu_s']:.1f} CPU-s.",
        "",
    ])  # fmt: skip


@pytest.mark.bench
@pytest.mark.timeout(1800)
def test_an_idle_applications_run_costs_next_to_nothing(
    kafka_broker: str, kafka_broker_handle: Any, admin: AdminClient, tmp_path: Path
) -> None:
    become_subreaper()
    measure = {"broker_pid": kafka_broker_handle.pid, "log": tmp_path / "runs.log"}
    app = f"bench-idle-{os.urandom(3).hex()}"
    source, sink = f"{app}-in", f"{app}-out"
    for topic in (source, sink):
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, source, sink)
    _produce(kafka_broker, source, FIRST, 0)
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app,
            "--topology", "tests.integration.ledger.topologies:count_on",
            "--streams-setting", f"test.input={source}", "--streams-setting", f"test.output={sink}",
            "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"),
            "--state-dir", str(tmp_path / "state"), "--create-internal-topics",
            "--streams-setting", "replication.factor=1", "--yes"]  # fmt: skip
    first = _timed_run(args, **measure)
    assert "published" in first["output"], first["output"]

    idle = [_timed_run(args, **measure) for _ in range(IDLE_RUNS)]
    for run in idle:
        assert "nothing new for application" in run["output"], run["output"]
    _produce(kafka_broker, source, LITTLE, FIRST)
    little = _timed_run(args, **measure)
    assert "published" in little["output"], little["output"]

    stamp = datetime.now(UTC).strftime("%Y-%m-%d") + "-" + os.uname().nodename
    strip = ("output",)
    results = {
        "date": stamp[:10],
        "partitions": PARTITIONS,
        "first": {k: v for k, v in first.items() if k not in strip},
        "idle": [{k: v for k, v in r.items() if k not in strip} for r in idle],
        "little": {k: v for k, v in little.items() if k not in strip},
        "idle_median_wall_s": statistics.median(r["wall_s"] for r in idle),
        "idle_median_cpu_s": statistics.median(r["cpu_s"] for r in idle),
        "machine": machine(),
    }
    print(f"\nidle runs: {results['idle']}; {LITTLE} new records: {results['little']}", flush=True)
    record("idle", results)
    (RESULTS / f"{stamp}-idle.md").write_text(markdown(results))
