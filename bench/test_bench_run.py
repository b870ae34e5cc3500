"""``streamproc run`` on 1 M records: wall seconds per step (plan, fetch, process, hand-off), as the command prints.

A new application's first run, as a user would start it: ``STREAMPROC_BENCH_RUN_RECORDS`` (default 1 000 000)
records over ``STREAMPROC_BENCH_PARTITIONS`` (default 8) partitions, 10 000 keys (the process benchmark's data set,
on topics of its own), the count topology (RocksDB, logged, every count sent on), at_least_once, Spark
``local[2]``, ``--create-internal-topics`` (the changelog does not exist), ``--state-dir`` and ``--yes``. The step
times are the line ``streamproc run`` prints; the fetch and hand-off figures also give records per second. The
process benchmark (``test_bench_process.py``) says how the process step compares with the engine run directly.
Results: ``bench/results/run.json`` and ``bench/results/<date>-<machine>-run.md``.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

from bench import process_topologies
from bench.conftest import RESULTS, machine, record
from bench.test_bench_process import PARTITIONS, seed
from streamproc.cli import main
from streamproc.cli.run import StepTimes
from tests.integration.conftest import create_topic

RECORDS = int(os.environ.get("STREAMPROC_BENCH_RUN_RECORDS", "1000000"))
STEP = re.compile(r"(plan|fetch|process|hand-off) (\d+\.\d) s")


def markdown(results: dict[str, Any]) -> str:
    m, s = results["machine"], results["seconds"]
    total = sum(s.values())
    lines = [
        f"# `streamproc run`, {results['date']}",
        "",
        f"{results['records']:,} records over {results['partitions']} partitions, count topology (RocksDB, logged), "
        f"at_least_once, Spark local[2], a first run (--create-internal-topics). Machine: {m['cpu_model']}, "
        f"{m['cpus']} CPUs, Python {m['python']}; load average (1 min) at the end {m['load_average_1m']} (shared: "
        "wall figures are disturbed by other work).",
        "",
        "| step | seconds | share | records/s |",
        "|---|---:|---:|---:|",
    ]
    for step, seconds in s.items():
        rate = f"{results['records'] / seconds:,.0f}" if step != "plan" else ""
        lines.append(f"| {step} | {seconds:.1f} | {seconds / total:.0%} | {rate} |")
    lines += [f"| total | {total:.1f} | | {results['records'] / total:,.0f} |", ""]
    return "\n".join(lines)


@pytest.mark.bench
@pytest.mark.timeout(3600)
def test_run_time_per_step(kafka_broker: str, admin: AdminClient, tmp_path: Path) -> None:
    create_topic(admin, process_topologies.RUN_INPUT, partitions=PARTITIONS)
    create_topic(admin, process_topologies.RUN_OUTPUT, partitions=PARTITIONS)
    seed(kafka_broker, 0, RECORDS, topic=process_topologies.RUN_INPUT)
    app = f"bench-run-{RECORDS}"
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app, "--topology",
            "bench.process_topologies:run_count", "--store", str(tmp_path / "staging"), "--work-dir",
            str(tmp_path / "work"), "--state-dir", str(tmp_path / "state"), "--master", "local[2]",
            "--create-internal-topics", "--streams-setting", "replication.factor=1", "--yes"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{PARTITIONS} task(s), {RECORDS} records" in result.output  # the process step's total
    assert f"published {PARTITIONS} task(s), wrote {PARTITIONS} checkpoint(s)" in result.output
    [line] = [x for x in result.output.splitlines() if x.startswith(StepTimes.PREFIX)]
    seconds = {step: float(value) for step, value in STEP.findall(line)}
    assert list(seconds) == ["plan", "fetch", "process", "hand-off"], line
    stamp = datetime.now(UTC).strftime("%Y-%m-%d") + "-" + os.uname().nodename
    results = {"date": stamp[:10], "records": RECORDS, "partitions": PARTITIONS, "seconds": seconds,
               "machine": machine()}  # fmt: skip
    print(f"\n{line}", flush=True)
    record("run", results)
    (RESULTS / f"{stamp}-run.md").write_text(markdown(results))
