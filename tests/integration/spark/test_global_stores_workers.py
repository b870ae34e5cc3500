"""On Spark: a Python worker bootstraps a run's global stores once and its next tasks of the run reuse them.

``local[1]`` has one Python worker, reused for every task (``spark.python.worker.reuse``, Spark's default): of the
run's two tasks, one bootstraps the global store and the other reads it, with the outputs of the engine run directly
(``tests/unit/spark/test_global_stores.py``), and the bootstrap's drop is in the first task's report only, and in the
ledger once, as the global task's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamproc.ledger import Ledger
from streamproc.spark.job import run_tasks, spark_context
from streamproc.storage.object_store import LocalObjectStore
from tests.conftest import PROJECT_ROOT
from tests.unit.spark.test_global_stores import EXPECTED, global_work, stage_amounts_and_orders, task_outputs

pytestmark = pytest.mark.integration


def test_one_worker_bootstraps_the_global_stores_once_for_the_runs_tasks(tmp_path: Path) -> None:
    ranges = stage_amounts_and_orders(LocalObjectStore(tmp_path / "staging"))
    plan = "00000000000000f1"
    sc = spark_context("local[1]", {}, python_path=[str(PROJECT_ROOT)])
    try:
        reports = run_tasks(sc, [global_work(tmp_path, plan, p, ranges) for p in range(2)])
    finally:
        sc.stop()
    assert [(r["task_id"], r["global_bootstrapped"], r["global_dropped"]) for r in reports] == [
        ("1_0", True, {"deserialization": 1}),
        ("1_1", False, {}),
    ]
    assert [task_outputs(tmp_path, plan, p) for p in range(2)] == EXPECTED
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run_id = ledger.begin_run(application_id="app", trigger="cli")
        ledger.record_tasks(run_id, reports)
        detail = ledger.run(run_id)
    assert detail is not None
    assert [(t.task_id, t.dropped) for t in detail.tasks] == [
        ("-1_-1", {"deserialization": 1}),
        ("1_0", {}),
        ("1_1", {}),
    ]
    assert detail.summary.records_dropped == 1
