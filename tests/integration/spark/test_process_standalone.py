"""``streamproc process`` on a real Spark standalone cluster: a master and two workers from the pyspark package.

Started by :mod:`streamproc_dev.spark_cluster` (``bin/spark-class`` of the pyspark package on 127.0.0.1, each process
in its own session with its own work directory, stopped by PID at the end).
"""

from __future__ import annotations

import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import process
from streamproc_dev import spark_cluster as spark_cluster_service
from streamproc_dev.service_process import ServiceHandle
from tests.integration.conftest import create_topic, wait_for_leaders
from tests.integration.spark import topologies
from tests.integration.spark.conftest import run
from tests.integration.spark.test_process import (
    PARTITIONS,
    RECORDS,
    TOPOLOGY,
    engine_run,
    fresh_copy,
    output_bytes,
    outputs_of,
    store_entries,
)

#: The executors' settings of these tests: the cluster's two cores, and the driver waiting for both to register.
CLUSTER_CONF = {"spark.executor.memory": "512m", "spark.cores.max": "2"}


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    """A master (``spark://127.0.0.1:P``) with two live workers of one core each, ``worker-1`` and ``worker-2``
    (their work directories, under the handle's ``workdir``, keep each executor's log)."""
    work = tmp_path_factory.mktemp("spark-cluster")
    handle = spark_cluster_service.start(work, workers=2, cores=1, memory="1g")
    try:
        yield handle
    finally:
        spark_cluster_service.stop(work)


def test_process_on_a_standalone_cluster_equals_the_engine_run_directly(
    staged: dict[str, Any],
    spark_cluster: ServiceHandle,
    tmp_path: Path,
) -> None:
    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    reports = process(
        plan,
        store_uri=str(store_dir),
        topology=TOPOLOGY,
        master=spark_cluster.address,
        conf=CLUSTER_CONF,
        partitions={topologies.COUNT_OUTPUT: PARTITIONS},
    )
    assert sum(r["records_processed"] for r in reports) == RECORDS
    expected = engine_run(staged)
    for report in reports:
        assert outputs_of(store_dir, plan, report) == expected[report["task_id"]]["outputs"]


SPLIT_APP = "spark-split-app"
SPLIT_RECORDS = 20_000


@pytest.fixture(scope="module")
def staged_one_partition(
    kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """``topologies.split_count``'s input: one partition (one task) of 20 000 records over 200 keys, out of order,
    planned and fetched."""
    changelog = f"{SPLIT_APP}-counts-changelog"
    create_topic(admin, topologies.SPLIT_INPUT, partitions=1)
    create_topic(admin, topologies.SPLIT_OUTPUT, partitions=1)
    create_topic(admin, changelog, partitions=1, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.SPLIT_INPUT, topologies.SPLIT_OUTPUT, changelog)
    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
    rng = random.Random(29)
    for i in range(SPLIT_RECORDS):
        key, timestamp = f"k{rng.randint(0, 199)}", 2_000_000 + i * 10 + rng.randint(-500, 500)
        producer.produce(topologies.SPLIT_INPUT, key=key.encode(), value=b"x", partition=0, timestamp=timestamp)
    producer.flush(60)
    work = tmp_path_factory.mktemp("spark-split")
    describe = work / "topology.txt"
    describe.write_text(str(topologies.split_count().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", SPLIT_APP, "--topology", str(describe),
        "--out", str(plan_file))  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    return {"plan": RunPlan.read(plan_file), "store": store}


def tasks_run(worker_dir: Path, app: str) -> list[str]:
    """The Spark tasks (``"<task>.<attempt> in stage <stage>.<attempt>"``) the worker's executors of ``app`` ran,
    from the executors' own log (``<work dir>/<app>/<executor>/stderr``)."""
    return [
        m.group(1)
        for log in sorted((worker_dir / app).glob("*/stderr"))
        for m in re.finditer(r"Executor: Running task (\S+ in stage \S+)", log.read_text())
    ]


def test_a_one_partition_task_split_in_two_runs_a_shard_on_each_worker_and_publishes_the_unsplit_bytes(
    staged_one_partition: dict[str, Any], spark_cluster: ServiceHandle, tmp_path: Path
) -> None:
    """Issue #29: Kafka Streams runs a one-partition application on one thread; ``--split 2`` on the cluster runs
    its one task as two key shards at once, one on each worker (the shards' Spark stage, the run's first), then
    the merge. What it publishes is byte for byte the unsplit task's, and the store holds the same entries."""
    plan: RunPlan = staged_one_partition["plan"]
    assert [t.task_id for t in plan.tasks] == ["0_0"]
    options: dict[str, Any] = {
        "topology": "tests.integration.spark.topologies:split_count",
        "partitions": {topologies.SPLIT_OUTPUT: 1},
    }
    whole_dir, split_dir = tmp_path / "whole", tmp_path / "split"
    shutil.copytree(staged_one_partition["store"], whole_dir)
    shutil.copytree(staged_one_partition["store"], split_dir)
    [whole] = process(plan, store_uri=str(whole_dir), master="inline", split="off", **options)
    before = {p.name for p in Path(spark_cluster.workdir).glob("worker-*/app-*")}
    [split] = process(
        plan, store_uri=str(split_dir), master=spark_cluster.address, conf=CLUSTER_CONF, split=2, **options
    )

    assert split["shards"] == 2 and split["records_processed"] == whole["records_processed"] == SPLIT_RECORDS
    assert output_bytes(split_dir, plan) == output_bytes(whole_dir, plan)
    entries = store_entries(split_dir, plan, "0_0", tmp_path / "s")
    assert entries == store_entries(whole_dir, plan, "0_0", tmp_path / "w")
    [app] = {p.name for p in Path(spark_cluster.workdir).glob("worker-*/app-*")} - before
    ran = {w: tasks_run(Path(spark_cluster.workdir) / w, app) for w in ("worker-1", "worker-2")}
    shards_stage = {w: [t for t in tasks if t.endswith("in stage 0.0")] for w, tasks in ran.items()}
    assert sorted(len(tasks) for tasks in shards_stage.values()) == [1, 1], ran
