"""``streamproc process`` on a real Spark standalone cluster: a master and two workers from the pyspark package.

Started by :mod:`streamproc_dev.spark_cluster` (``bin/spark-class`` of the pyspark package on 127.0.0.1, each process
in its own session with its own work directory, stopped by PID at the end).
"""

from __future__ import annotations

import random
import re
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.engine.task_id import TaskId
from streamproc.plan.run_plan import RunPlan
from streamproc.spark import task_split
from streamproc.spark.columnar.count import PER_RECORD_ENV
from streamproc.spark.job import plan_id, process
from streamproc.spark.task_output import TaskObjects
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_type import StoreType
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


#: The one-partition programs split on the cluster: each planned under its own application id, its one logged
#: store, and that store's type.
SPLIT_PROGRAMS = {
    "split_count": ("spark-split-app", "counts", StoreType.TIMESTAMPED_KEY_VALUE),
    "split_window_count": ("spark-split-window-app", "window-counts", StoreType.TIMESTAMPED_WINDOW),
}
SPLIT_RECORDS = 20_000


@pytest.fixture(scope="module")
def staged_one_partition(
    kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """The split programs' input: one partition (one task) of 20 000 records over 200 keys, out of order, planned
    and fetched for each program."""
    changelogs = [f"{app}-{store}-changelog" for app, store, _kind in SPLIT_PROGRAMS.values()]
    create_topic(admin, topologies.SPLIT_INPUT, partitions=1)
    create_topic(admin, topologies.SPLIT_OUTPUT, partitions=1)
    for changelog in changelogs:
        create_topic(admin, changelog, partitions=1, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.SPLIT_INPUT, topologies.SPLIT_OUTPUT, *changelogs)
    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
    rng = random.Random(29)
    for i in range(SPLIT_RECORDS):
        key, timestamp = f"k{rng.randint(0, 199)}", 2_000_000 + i * 10 + rng.randint(-1_500, 500)
        producer.produce(topologies.SPLIT_INPUT, key=key.encode(), value=b"x", partition=0, timestamp=timestamp)
    producer.flush(60)
    staged = {}
    for program, (app, _store, _kind) in SPLIT_PROGRAMS.items():
        work = tmp_path_factory.mktemp(program)
        describe = work / "topology.txt"
        describe.write_text(str(getattr(topologies, program)().describe()))
        plan_file, store = work / "plan.json", work / "staging"
        run("plan", "--bootstrap", kafka_broker, "--application-id", app, "--topology", str(describe),
            "--out", str(plan_file))  # fmt: skip
        run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
        staged[program] = {"plan": RunPlan.read(plan_file), "store": store}
    return staged


def tasks_run(worker_dir: Path, app: str) -> list[str]:
    """The Spark tasks (``"<task>.<attempt> in stage <stage>.<attempt>"``) the worker's executors of ``app`` ran,
    from the executors' own log (``<work dir>/<app>/<executor>/stderr``)."""
    return [
        m.group(1)
        for log in sorted((worker_dir / app).glob("*/stderr"))
        for m in re.finditer(r"Executor: Running task (\S+ in stage \S+)", log.read_text())
    ]


def bundle_entries(store_dir: Path, plan: RunPlan, program: str, target: Path) -> dict[str, list[tuple[bytes, bytes]]]:
    """The raw entries of the program's store in the task's store bundle, by RocksDB directory (a key-value store's
    one, each segment of a window store's), opened as the store it is."""
    _app, store, kind = SPLIT_PROGRAMS[program]
    bundle = store_dir / TaskObjects(plan_id(plan), TaskId(0, 0)).stores
    with tarfile.open(bundle) as tar:
        tar.extractall(target, filter="data")
    entries = {}
    for current in sorted(target.rglob("CURRENT")):
        db = RocksDBKeyValueBytesStore(store, current.parent, kind)
        try:
            entries[str(current.parent.relative_to(target))] = list(db.range(None, None))
        finally:
            db.close()
    return entries


@pytest.mark.parametrize(("program", "split"), [("split_count", 2), ("split_window_count", "auto")])
def test_a_one_partition_task_split_in_two_runs_a_shard_on_each_worker_and_publishes_the_unsplit_bytes(
    staged_one_partition: dict[str, dict[str, Any]], spark_cluster: ServiceHandle, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, program: str, split: int | str,
) -> None:  # fmt: skip
    """Issue #29: Kafka Streams runs a one-partition application on one thread; split in two on the cluster, its
    one task runs as two key shards at once, one on each worker (the shards' Spark stage, the run's first), then
    the merge. What it publishes is byte for byte the unsplit task's, and its stores hold the same entries.

    A count splits on request (``--split 2``); a windowed count (late records dropped) under ``--split auto``,
    which splits it on the cluster's two cores (the records-per-shard floor lowered to the test's records). Both
    run per record, in the driver and the executors (``spark.executorEnv``), as the columnar path, which reads their
    String serdes too, would run them whole under ``auto``: the split's own path is what is tested here."""
    monkeypatch.setattr(task_split, "AUTO_RECORDS_PER_SHARD", 1_000)
    monkeypatch.setenv(PER_RECORD_ENV, "1")
    per_record = {**CLUSTER_CONF, f"spark.executorEnv.{PER_RECORD_ENV}": "1"}
    staged = staged_one_partition[program]
    plan: RunPlan = staged["plan"]
    assert [t.task_id for t in plan.tasks] == ["0_0"]
    options: dict[str, Any] = {
        "topology": f"tests.integration.spark.topologies:{program}",
        "partitions": {topologies.SPLIT_OUTPUT: 1},
    }
    whole_dir, split_dir = tmp_path / "whole", tmp_path / "split"
    shutil.copytree(staged["store"], whole_dir)
    shutil.copytree(staged["store"], split_dir)
    [whole] = process(plan, store_uri=str(whole_dir), master="inline", split="off", **options)
    before = {p.name for p in Path(spark_cluster.workdir).glob("worker-*/app-*")}
    [shards] = process(
        plan, store_uri=str(split_dir), master=spark_cluster.address, conf=per_record, split=split, **options
    )

    assert shards["shards"] == 2 and shards["records_processed"] == whole["records_processed"] == SPLIT_RECORDS
    assert shards["dropped"] == whole["dropped"]
    assert (sum(whole["dropped"].values()) > 0) == (program == "split_window_count")  # the late records
    assert output_bytes(split_dir, plan) == output_bytes(whole_dir, plan)
    entries = bundle_entries(split_dir, plan, program, tmp_path / "s")
    assert entries and entries == bundle_entries(whole_dir, plan, program, tmp_path / "w")
    [app] = {p.name for p in Path(spark_cluster.workdir).glob("worker-*/app-*")} - before
    ran = {w: tasks_run(Path(spark_cluster.workdir) / w, app) for w in ("worker-1", "worker-2")}
    shards_stage = {w: [t for t in tasks if t.endswith("in stage 0.0")] for w, tasks in ran.items()}
    assert sorted(len(tasks) for tasks in shards_stage.values()) == [1, 1], ran
