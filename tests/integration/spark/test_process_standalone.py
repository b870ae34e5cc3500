"""``streamproc process`` on a real Spark standalone cluster: a master and two workers from the pyspark package.

Started with ``bin/spark-class`` on 127.0.0.1 (``SPARK_HOME`` is the pyspark package directory), each in its own
session with its own work and local directories, and stopped by PID at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import process
from tests.integration.spark import topologies
from tests.integration.spark.test_process import (
    PARTITIONS,
    RECORDS,
    TOPOLOGY,
    engine_run,
    fresh_copy,
    outputs_of,
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own arguments
            args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:P`` with two live workers of one core each."""
    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("spark-cluster")
    port, ui = _free_port(), _free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(work)}
    spark_class = str(home / "bin" / "spark-class")
    master_url = f"spark://127.0.0.1:{port}"
    procs = [
        _start(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            work / "master.log",
            env,
        )  # fmt: skip
    ]
    try:
        for n in (1, 2):
            (work / f"worker{n}").mkdir()
            procs.append(
                _start(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(_free_port()),
                        "--work-dir",
                        str(work / f"worker{n}"),
                        "--cores",
                        "1",
                        "--memory",
                        "1g",
                        master_url,
                    ],
                    work / f"worker{n}.log",
                    env,
                )  # fmt: skip
            )
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as answer:  # noqa: S310
                    if json.load(answer).get("aliveworkers") == 2:
                        break
            except OSError:
                pass
            assert all(p.poll() is None for p in procs), (work / "master.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the standalone cluster did not start with two workers"
            time.sleep(0.5)
        yield master_url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_process_on_a_standalone_cluster_equals_the_engine_run_directly(
    staged: dict[str, Any],
    spark_cluster: str,
    tmp_path: Path,
) -> None:
    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    reports = process(
        plan,
        store_uri=str(store_dir),
        topology=TOPOLOGY,
        master=spark_cluster,
        conf={"spark.executor.memory": "512m", "spark.cores.max": "2"},
        partitions={topologies.COUNT_OUTPUT: PARTITIONS},
    )
    assert sum(r["records_processed"] for r in reports) == RECORDS
    expected = engine_run(staged)
    for report in reports:
        assert outputs_of(store_dir, plan, report) == expected[report["task_id"]]["outputs"]
