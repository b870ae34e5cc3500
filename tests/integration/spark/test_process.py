"""plan → fetch → process on Spark ``local[2]`` against the real broker, checked against the engine run directly."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTP
from confluent_kafka.admin import AdminClient

from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor_topology import RecordCollector
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import build_processor_topology, build_stores
from streamproc.errors import ConfigError, ProcessingError
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import FAIL_FIRST_ATTEMPT_CONF, INLINE_MASTER, plan_id, process, processes_of
from streamproc.spark.task_output import TaskObjects
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_type import StoreType
from tests.integration.conftest import create_topic
from tests.integration.spark import topologies
from tests.integration.spark.conftest import PARTITIONS, RECORDS, run, wait_for_leaders

TOPOLOGY = "tests.integration.spark.topologies:count"


def consume(bootstrap: str, topic: str, partition: int, end: int) -> list[ConsumerRecord[bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-test-reader", "enable.auto.commit": False})
    consumer.assign([KafkaTP(topic, partition, 0)])
    records: list[ConsumerRecord[bytes | None, bytes | None]] = []
    while len(records) < end:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        records.append(
            ConsumerRecord.raw(
                topic, partition, message.offset(), message.timestamp()[1], message.key(), message.value()
            )
        )
    consumer.close()
    return records


def engine_run(staged: dict[str, Any], plan: RunPlan | None = None) -> dict[str, Any]:
    """Each planned task run by the engine directly, from the broker's records, with in-memory stores restored from
    the plan's changelog ranges (read from the broker too)."""
    topology = topologies.count()
    plan = plan if plan is not None else staged["plan"]
    expected: dict[str, Any] = {}
    for planned in plan.tasks:
        task_id = TaskId.parse(planned.task_id)
        [name] = planned.source_partitions
        [rng] = [r for r in plan.ranges if r.name == name]
        stores = build_stores(topology, 0)
        collector = RecordCollector({topologies.COUNT_OUTPUT: PARTITIONS})
        graph = build_processor_topology(topology, 0, application_id=plan.application_id)
        partition = TopicPartition(rng.topic, rng.partition)
        task = StreamTask(
            task_id, graph, [partition], config=TaskConfig(application_id=plan.application_id), stores=stores,
            collector=collector,
        )  # fmt: skip
        store: Any = stores["counts"]
        store.context.record_timestamp = lambda task=task: task.context.record_context.timestamp
        for restore in (r for r in plan.restores if r.task_id == planned.task_id and r.end > r.start):
            store.restore_batch(
                consume(staged["bootstrap"], restore.changelog_topic, restore.changelog_partition, restore.end)
            )
        records = consume(staged["bootstrap"], rng.topic, rng.partition, rng.end)
        result = replay(task, [PartitionInput(partition, records, rng.partition_time)])
        outputs: dict[str, list[tuple[Any, ...]]] = {}
        for sent in collector.records:
            outputs.setdefault(f"{sent.topic}+{sent.partition}", []).append((sent.key, sent.value, sent.timestamp))
        expected[planned.task_id] = {
            "records_processed": result.records_processed,
            "stream_time": result.stream_time,
            "outputs": outputs,
            "store": list(store.bytes_store.range(None, None)),
        }
    return expected


def outputs_of(store_dir: Path, plan: RunPlan, report: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    objects = TaskObjects(plan_id(plan), TaskId.parse(report["task_id"]))
    result: dict[str, list[tuple[Any, ...]]] = {}
    for name in report["outputs"]:
        topic, _, partition = name.rpartition("+")
        table = pq.read_table(store_dir / objects.output(topic, int(partition)))
        rows = table.to_pylist()
        assert [r["sequence"] for r in rows] == sorted(r["sequence"] for r in rows)  # production order
        result[name] = [(r["key"], r["value"], r["timestamp"]) for r in rows]
    return result


def store_entries(store_dir: Path, plan: RunPlan, task_id: str, tmp_path: Path) -> list[tuple[bytes, bytes]]:
    """The final store from the task's bundle, opened as the RocksDB store it is (Kafka Streams' layout)."""
    bundle = (store_dir / TaskObjects(plan_id(plan), TaskId.parse(task_id)).stores).read_bytes()
    return bundle_counts(bundle, tmp_path / f"bundle-{task_id}")


def bundle_counts(bundle: bytes, target: Path) -> list[tuple[bytes, bytes]]:
    """The raw entries of the ``counts`` store (a timestamped key-value RocksDB store) in a task's store bundle."""
    with tarfile.open(fileobj=io.BytesIO(bundle)) as tar:
        tar.extractall(target, filter="data")
    db = RocksDBKeyValueBytesStore("counts", target / "rocksdb" / "counts", StoreType.TIMESTAMPED_KEY_VALUE)
    try:
        return list(db.range(None, None))
    finally:
        db.close()


def fresh_copy(staged: dict[str, Any], target: Path) -> Path:
    """The staged segments without any process output (a store where no task has run yet)."""
    shutil.copytree(staged["store"], target, ignore=shutil.ignore_patterns("process"))
    return target


def output_bytes(store_dir: Path, plan: RunPlan) -> dict[str, bytes]:
    root = store_dir / "process" / plan_id(plan)
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*.parquet"))
        if "outputs" in p.parts or "changelogs" in p.parts or p.name == "drops.parquet"
    }


def test_process_on_local_spark_equals_the_engine_run_directly_and_reruns_skip(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    plan: RunPlan = staged["plan"]
    assert len(plan.tasks) == PARTITIONS
    store_dir = fresh_copy(staged, tmp_path / "store")
    progress: list[tuple[int, int]] = []
    reports = process(
        plan,
        store_uri=str(store_dir),
        topology=TOPOLOGY,
        master="local[2]",
        partitions={topologies.COUNT_OUTPUT: PARTITIONS},
        progress=lambda done, total: progress.append((done, total)),
    )
    assert progress[-1] == (PARTITIONS, PARTITIONS)
    expected = engine_run(staged)
    assert sum(r["records_processed"] for r in reports) == RECORDS
    for report in reports:
        want = expected[report["task_id"]]
        assert not report["skipped"]
        assert report["records_processed"] == want["records_processed"]
        assert report["stream_time"] == want["stream_time"]
        assert outputs_of(store_dir, plan, report) == want["outputs"]
        assert store_entries(store_dir, plan, report["task_id"], tmp_path) == want["store"]
        assert sum(report["changelogs"].values()) == report["records_processed"]
        assert (store_dir / TaskObjects(plan_id(plan), TaskId.parse(report["task_id"])).report).exists()
    first = output_bytes(store_dir, plan)

    again = process(
        plan, store_uri=str(store_dir), topology=TOPOLOGY, master="local[2]",
        partitions={topologies.COUNT_OUTPUT: PARTITIONS},
    )  # fmt: skip
    assert all(r["skipped"] for r in again)
    assert [r["records_processed"] for r in again] == [r["records_processed"] for r in reports]
    assert output_bytes(store_dir, plan) == first


def test_inline_and_worker_processes_write_the_same_bytes_and_reports_as_spark(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    """``--master inline`` (a small window's default in ``streamproc run``) and ``--master processes[2]`` (a larger
    one's): the same task runner in this process or in two worker processes, no Spark started; every output,
    changelog, drop and store is the same as on Spark."""
    plan: RunPlan = staged["plan"]
    options = {"topology": TOPOLOGY, "partitions": {topologies.COUNT_OUTPUT: PARTITIONS}}
    spark_dir = fresh_copy(staged, tmp_path / "spark")
    on_spark = process(plan, store_uri=str(spark_dir), master="local[2]", **options)  # type: ignore[arg-type]
    for master in (INLINE_MASTER, "processes[2]"):
        local_dir = fresh_copy(staged, tmp_path / master)
        progress: list[tuple[int, int]] = []
        local = process(plan, store_uri=str(local_dir), master=master,
                        progress=lambda done, total, seen=progress: seen.append((done, total)), **options)  # type: ignore[arg-type]  # fmt: skip
        assert progress[-1] == (PARTITIONS, PARTITIONS)
        assert output_bytes(local_dir, plan) == output_bytes(spark_dir, plan), master
        # the store bundle is a tar of RocksDB's files, whose bytes differ from run to run: its entries are compared
        volatile = ("attempt", "seconds", "timings", "bytes_written", "objects")
        for a, b in zip(local, on_spark, strict=True):
            assert {k for k in a.keys() | b.keys() if k not in volatile and a.get(k) != b.get(k)} == set(), (a, b)
            bundle = TaskObjects(plan_id(plan), TaskId.parse(a["task_id"])).stores
            assert {k: v for k, v in a["objects"].items() if k != bundle} == {
                k: v for k, v in b["objects"].items() if k != bundle
            }
        for report in local:
            assert store_entries(local_dir, plan, report["task_id"], tmp_path / "l") == store_entries(
                spark_dir, plan, report["task_id"], tmp_path / "s"
            )


def test_a_worker_process_that_dies_fails_the_step_and_the_same_call_runs_only_the_tasks_left(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    """``--master processes``: task 0_1's worker dies after writing its outputs, before its report (as when the
    kernel kills it). The step fails naming the tasks without a report; run again, it runs only those, and the
    objects are those of an uninterrupted run."""
    plan: RunPlan = staged["plan"]
    options = {"topology": TOPOLOGY, "partitions": {topologies.COUNT_OUTPUT: PARTITIONS}}
    clean_dir, killed_dir = fresh_copy(staged, tmp_path / "clean"), fresh_copy(staged, tmp_path / "killed")
    process(plan, store_uri=str(clean_dir), master=INLINE_MASTER, **options)  # type: ignore[arg-type]
    died = r"a worker process died .* before task\(s\) (\d_\d, )*0_1(, \d_\d)* reported"
    with pytest.raises(ProcessingError, match=died):
        process(plan, store_uri=str(killed_dir), master="processes[1]", conf={FAIL_FIRST_ATTEMPT_CONF: "0_1:crash"},
                **options)  # type: ignore[arg-type]  # fmt: skip
    reported = {p.parent.name for p in (killed_dir / "process").rglob("report.json")}
    assert "0_1" not in reported
    again = process(plan, store_uri=str(killed_dir), master="processes[2]", **options)  # type: ignore[arg-type]
    assert {r["task_id"] for r in again if r.get("skipped")} == reported
    assert output_bytes(killed_dir, plan) == output_bytes(clean_dir, plan)


def test_processes_masters_are_read_and_others_are_left_to_spark() -> None:
    assert processes_of("processes[3]") == 3
    assert processes_of("processes") == len(os.sched_getaffinity(0))
    assert [processes_of(m) for m in ("processes[0]", "processes[]", "local[2]", "inline", None)] == [None] * 5


def test_stores_are_restored_from_the_plans_changelog_ranges_before_processing(
    staged: dict[str, Any], admin: AdminClient, tmp_path: Path
) -> None:
    app_id = "spark-count-restored"
    changelog = create_topic(
        admin, f"{app_id}-counts-changelog", partitions=PARTITIONS, config={"cleanup.policy": "compact"}
    )
    wait_for_leaders(admin, changelog)
    producer = Producer({"bootstrap.servers": staged["bootstrap"], "partitioner": "murmur2_random"})
    for i in range(0, 61, 3):  # earlier counts of every third key, in its task's changelog partition
        producer.produce(changelog, key=f"k{i}".encode(), value=(100 + i).to_bytes(8, "big"), timestamp=500)
    producer.flush(30)
    describe = tmp_path / "topology.txt"
    describe.write_text(str(topologies.count().describe()))
    plan_file = tmp_path / "plan.json"
    run("plan", "--bootstrap", staged["bootstrap"], "--application-id", app_id, "--topology", str(describe),
        "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    assert sum(r.end - r.start for r in plan.restores) == 21
    store_dir = fresh_copy(staged, tmp_path / "store")
    run("fetch", "--bootstrap", staged["bootstrap"], "--plan", str(plan_file), "--store", str(store_dir))
    reports = process(
        plan, store_uri=str(store_dir), topology=TOPOLOGY, master="local[2]",
        partitions={topologies.COUNT_OUTPUT: PARTITIONS},
    )  # fmt: skip
    expected = engine_run(staged, plan)
    assert sum(r["restored"]["counts"] for r in reports) == 21
    for report in reports:
        want = expected[report["task_id"]]
        assert outputs_of(store_dir, plan, report) == want["outputs"]
        assert store_entries(store_dir, plan, report["task_id"], tmp_path) == want["store"]
    first_k0 = next(row for rows in expected.values() for rows_ in rows["outputs"].values() for row in rows_
                    if row[0] == b"k0")  # fmt: skip
    assert int.from_bytes(first_k0[1], "big") == 101  # counted on from the restored 100


@pytest.mark.parametrize("failure", ["0_1", "0_1:crash"])
def test_a_task_failing_in_attempt_0_is_retried_and_writes_the_same_bytes(
    staged: dict[str, Any], tmp_path: Path, failure: str
) -> None:
    """Attempt 0 of task 0_1 publishes its outputs, then raises (or its Python worker dies, as when an executor is
    lost); attempt 1 rewrites the same objects and the report."""
    plan: RunPlan = staged["plan"]
    clean_dir = fresh_copy(staged, tmp_path / "clean")
    retried_dir = fresh_copy(staged, tmp_path / "retried")
    options = {"topology": TOPOLOGY, "partitions": {topologies.COUNT_OUTPUT: PARTITIONS}}
    process(plan, store_uri=str(clean_dir), master="local[2]", **options)  # type: ignore[arg-type]
    reports = process(
        plan,
        store_uri=str(retried_dir),
        master="local[2,3]",
        conf={FAIL_FIRST_ATTEMPT_CONF: failure},
        **options,  # type: ignore[arg-type]
    )
    attempts = {r["task_id"]: r["attempt"] for r in reports}
    assert attempts == {"0_0": 0, "0_1": 1, "0_2": 0, "0_3": 0}
    assert output_bytes(retried_dir, plan) == output_bytes(clean_dir, plan)


def test_a_topology_that_is_not_the_plans_is_refused_with_the_first_differing_line(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"line 6 of describe\(\) is '--> sink' where the plan has '--> totals'"):
        process(staged["plan"], store_uri=str(tmp_path), topology="tests.integration.spark.topologies:count_renamed")


def test_missing_segments_fail_the_task_naming_the_range_and_nothing_counts_as_done(
    staged: dict[str, Any], tmp_path: Path, unique: Callable[[str], str]
) -> None:
    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    shutil.rmtree(store_dir / "topics" / topologies.COUNT_INPUT / "partition=2")
    with pytest.raises(
        ProcessingError, match=r"task \[0_2\] input spark-count-words-2 \[0, \d+\): offsets \[0, \d+\) are not"
    ):
        process(
            plan, store_uri=str(store_dir), topology=TOPOLOGY, master="local[2]",
            partitions={topologies.COUNT_OUTPUT: PARTITIONS},
        )  # fmt: skip
    reports = sorted(p.parent.name for p in (store_dir / "process").rglob("report.json"))
    assert reports == ["0_0", "0_1", "0_3"]
    assert (
        json.loads((store_dir / "process" / plan_id(plan) / "tasks" / "0_0" / "report.json").read_text())[
            "records_processed"
        ]
        > 0
    )


def test_the_process_command_prints_per_task_counts_and_says_when_tasks_were_already_done(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    store_dir = fresh_copy(staged, tmp_path / "store")
    plan_file = tmp_path / "plan.json"
    staged["plan"].write(plan_file)
    args = ["process", "--plan", str(plan_file), "--store", str(store_dir), "--topology", TOPOLOGY,
            "--master", "local[2]", "--partitions", f"{topologies.COUNT_OUTPUT}={PARTITIONS}"]  # fmt: skip
    rows = json.loads(run("--output", "json", *args))["tasks"]
    assert [r["task_id"] for r in rows] == ["0_0", "0_1", "0_2", "0_3"]
    assert sum(r["records_processed"] for r in rows) == RECORDS
    assert not any(r["skipped"] for r in rows)
    text = run(*args)
    assert text.count("(already done)") == PARTITIONS
    assert f"4 task(s), {RECORDS} records" in text


def test_spark_submit_runs_the_entry_file(staged: dict[str, Any], tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import streamproc.cli.submit

    store_dir = fresh_copy(staged, tmp_path / "store")
    plan_file = tmp_path / "plan.json"
    staged["plan"].write(plan_file)
    submit = Path(sys.executable).parent / "spark-submit"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": os.getcwd()}
    done = subprocess.run(  # noqa: S603 - our own arguments
        [
            str(submit),
            "--master",
            "local[2]",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            f"spark.pyspark.python={sys.executable}",
            str(streamproc.cli.submit.__file__),
            "--output",
            "json",
            "--plan",
            str(plan_file),
            "--store",
            str(store_dir),
            "--topology",
            TOPOLOGY,
            "--partitions",
            f"{topologies.COUNT_OUTPUT}={PARTITIONS}",
        ],  # fmt: skip
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout[done.stdout.index("{") :])["tasks"]
    assert sum(r["records_processed"] for r in rows) == RECORDS


def _work(staged: dict[str, Any], store_dir: Path, topology: str, task_id: str) -> Any:
    from streamproc.spark.job import partition_counts, task_work

    plan: RunPlan = staged["plan"]
    work = task_work(
        plan, topology=topology, store_uri=str(store_dir), counts=partition_counts(plan, {topologies.COUNT_OUTPUT: 4})
    )
    return next(w for w in work if w.task_id == task_id)


def test_a_processor_that_raises_fails_its_task_naming_the_record_and_nothing_counts_as_done(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    from streamproc.errors import StreamsError
    from streamproc.spark.task_runner import run_task

    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    k7 = f"{partition_for_key(b'k7', PARTITIONS)}"
    work = _work(staged, store_dir, "tests.integration.spark.topologies:count_failing", f"0_{k7}")
    with pytest.raises(
        StreamsError, match=rf"task \[0_{k7}\] Exception caught in process. taskId=0_{k7}, processor=count"
    ):
        run_task(work)
    assert not (store_dir / TaskObjects(plan_id(plan), TaskId.parse(f"0_{k7}")).report).exists()
    assert not (store_dir / "process").exists()  # nothing published before the failure


def test_a_processor_that_raises_under_a_continue_handler_drops_the_record(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    from streamproc.spark.task_runner import run_task

    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    k7 = f"{partition_for_key(b'k7', PARTITIONS)}"
    work = _work(staged, store_dir, "tests.integration.spark.topologies:count_failing_continue", f"0_{k7}")
    report = run_task(work)
    [k7_range] = [r for r in plan.ranges if r.partition == int(k7)]
    k7_records = [r for r in consume(staged["bootstrap"], k7_range.topic, k7_range.partition, k7_range.end)
                  if r.key == b"k7"]  # fmt: skip
    assert report["dropped"] == {"processing_exception": len(k7_records)}
    drops = pq.read_table(store_dir / TaskObjects(plan_id(plan), TaskId.parse(f"0_{k7}")).drops).to_pylist()
    assert [d["offset"] for d in drops] == [r.offset for r in k7_records]
    assert report["records_processed"] == k7_range.end - k7_range.start


def _staged_on_minio(staged: dict[str, Any], s3_server: Any, bucket: str) -> tuple[str, Any, dict[str, Any]]:
    """A fresh MinIO bucket holding a copy of the staged segments: the bucket, its store and the store options."""
    from streamproc.storage import load_store

    s3_server.client().create_bucket(Bucket=bucket)
    options = {"endpoint_url": s3_server.endpoint, "access_key_id": s3_server.access_key,
               "secret_access_key": s3_server.secret_key, "region": s3_server.region}  # fmt: skip
    s3 = load_store(f"s3://{bucket}/staging", **options)
    local = load_store(str(staged["store"]))
    for name in local.list("topics/"):
        s3.put(name, local.get(name))
    return bucket, s3, options


def test_process_against_s3_writes_the_same_objects_as_against_a_directory(
    staged: dict[str, Any], s3_server: Any, unique: Callable[[str], str], tmp_path: Path
) -> None:
    from streamproc.storage import load_store

    plan: RunPlan = staged["plan"]
    bucket, s3, options = _staged_on_minio(staged, s3_server, unique("process"))
    local_dir = fresh_copy(staged, tmp_path / "local")
    for uri, extra in ((f"s3://{bucket}/staging", options), (str(local_dir), {})):
        process(plan, store_uri=uri, topology=TOPOLOGY, master="local[2]", store_options=extra,
                partitions={topologies.COUNT_OUTPUT: PARTITIONS})  # fmt: skip
    prefix = f"process/{plan_id(plan)}/"
    on_s3 = {name: s3.get(name) for name in s3.list(prefix) if name.endswith(".parquet")}
    on_disk = {name: load_store(str(local_dir)).get(name) for name in load_store(str(local_dir)).list(prefix)
               if name.endswith(".parquet")}  # fmt: skip
    assert on_s3 == on_disk and len(on_s3) > PARTITIONS
    assert all(s3.exists(f"{prefix}tasks/0_{p}/report.json") for p in range(PARTITIONS))


def test_the_process_command_takes_the_s3_options_and_runs_against_minio(
    staged: dict[str, Any], s3_server: Any, unique: Callable[[str], str], tmp_path: Path
) -> None:

    plan: RunPlan = staged["plan"]
    bucket, s3, options = _staged_on_minio(staged, s3_server, unique("process-cli"))
    plan_file = tmp_path / "plan.json"
    plan.write(plan_file)
    # The executors find the endpoint and keys as boto3 does (environment), the timeouts come from the options.
    env = {"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_ACCESS_KEY_ID": s3_server.access_key,
           "AWS_SECRET_ACCESS_KEY": s3_server.secret_key, "AWS_REGION": s3_server.region}  # fmt: skip
    confs = [arg for key, value in env.items() for arg in ("--conf", f"spark.executorEnv.{key}={value}")]
    rows = json.loads(
        run("--output", "json", "process", "--plan", str(plan_file), "--store", f"s3://{bucket}/staging",
            "--topology", TOPOLOGY, "--master", "local[2]", "--partitions", f"{topologies.COUNT_OUTPUT}={PARTITIONS}",
            "--s3-connect-timeout", "5", "--s3-read-timeout", "30", "--s3-max-attempts", "2", *confs)
    )["tasks"]  # fmt: skip
    assert sum(r["records_processed"] for r in rows) == RECORDS
    prefix = f"process/{plan_id(plan)}/"
    assert all(s3.exists(f"{prefix}tasks/0_{p}/report.json") for p in range(PARTITIONS))


def test_a_segment_that_fails_its_manifest_fails_the_task_naming_the_range(
    staged: dict[str, Any], tmp_path: Path
) -> None:
    from streamproc.errors import ManifestError
    from streamproc.spark.task_runner import run_task

    plan: RunPlan = staged["plan"]
    store_dir = fresh_copy(staged, tmp_path / "store")
    [segment] = sorted((store_dir / "topics" / topologies.COUNT_INPUT / "partition=1").glob("*.parquet"))
    segment.write_bytes(segment.read_bytes()[:-100])  # truncated: its size no longer matches the manifest
    work = _work(staged, store_dir, TOPOLOGY, "0_1")
    with pytest.raises(
        ManifestError, match=r"task \[0_1\] input spark-count-words-1 \[0, \d+\): offsets .* not staged"
    ):
        run_task(work)
    assert not (store_dir / TaskObjects(plan_id(plan), TaskId.parse("0_1")).report).exists()
