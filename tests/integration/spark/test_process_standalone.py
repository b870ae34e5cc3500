"""``streamproc process`` on a real Spark standalone cluster: a master and two workers from the pyspark package.

Started by :mod:`streamproc_dev.spark_cluster` (``bin/spark-class`` of the pyspark package on 127.0.0.1, each process
in its own session with its own work directory, stopped by PID at the end).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import process
from streamproc_dev import spark_cluster as spark_cluster_service
from tests.integration.spark import topologies
from tests.integration.spark.test_process import (
    PARTITIONS,
    RECORDS,
    TOPOLOGY,
    engine_run,
    fresh_copy,
    outputs_of,
)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:P`` with two live workers of one core each."""
    work = tmp_path_factory.mktemp("spark-cluster")
    handle = spark_cluster_service.start(work, workers=2, cores=1, memory="1g")
    try:
        yield handle.address
    finally:
        spark_cluster_service.stop(work)


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
