"""The hand-off on the real broker: plan → fetch → process (the task runner, as a Spark executor runs it) → hand-off.

Checks what Kafka and the state directory hold afterwards, a re-run that skips every recorded step, a re-run
after a stop at a step boundary, and the refusals (offsets moved, an unfinished process step).
"""

from __future__ import annotations

import json
import logging
import shutil
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.engine.records import TopicPartition
from streamproc.errors import HandoffError
from streamproc.handoff.guard import parse_partition
from streamproc.handoff.procedure import handoff
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import plan_id, task_work
from streamproc.spark.task_runner import run_task
from streamproc.state.commit_metadata import TopicPartitionMetadata, handoff_mark
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.storage import load_store
from streamproc_dev.conformance.oracle import ORACLE_JAR, ensure_oracle_jar
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.conftest import PARTITIONS, RECORDS
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

TOPOLOGY = "tests.integration.handoff.topologies:count"
COMMITTED_METADATA = Path(__file__).resolve().parent / "java" / "CommittedMetadata.java"


@pytest.fixture(scope="module")
def committed_metadata_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``java/CommittedMetadata.java`` compiled against a private copy of the oracle jar (Kafka Streams 4.2.2)."""
    work = tmp_path_factory.mktemp("committed-metadata")
    jar = work / "oracle.jar"
    shutil.copyfile(ORACLE_JAR if ORACLE_JAR.is_file() else ensure_oracle_jar(), jar)
    proc = subprocess.run(["javac", "-cp", str(jar), "-d", str(work / "classes"), str(COMMITTED_METADATA)],
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return f"{work / 'classes'}:{jar}"


def kafka_streams_partition_times(classpath: str, bootstrap: str, group: str) -> dict[str, tuple[int, int]]:
    """Per committed partition: the metadata's length in chars and the partition time Kafka Streams decodes."""
    proc = subprocess.run(["java", "-cp", classpath, "CommittedMetadata", bootstrap, group],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = (line.split() for line in proc.stdout.splitlines() if line.strip())
    return {name: (int(chars), int(time_)) for name, _offset, chars, time_ in rows}


def run(*args: str, ok: bool = True) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def answer_list_offsets(bootstrap: str, topics: list[str], partitions: int) -> None:
    """New partitions answer ListOffsets through the planner's own (shared) Admin client: its metadata can lag the
    test's client's, which NOT_LEADER_FOR_PARTITION showed right after creation."""
    from confluent_kafka.admin import OffsetSpec

    from streamproc.kafka import clients

    admin = clients.admin({"bootstrap.servers": bootstrap})
    wanted = {KafkaTopicPartition(t, p): OffsetSpec.earliest() for t in topics for p in range(partitions)}
    deadline = time.monotonic() + 30
    while True:
        try:
            for future in admin.list_offsets(wanted).values():
                future.result(timeout=10)
            return
        except Exception:
            assert time.monotonic() < deadline, f"{topics} do not answer ListOffsets after 30 s"
            time.sleep(0.2)


def processed(
    kafka_broker: str,
    admin: AdminClient,
    app_id: str,
    work: Path,
    changelog_config: dict[str, str] | None = None,
    plan_args: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A plan for ``app_id`` (no committed offsets: every input record), fetched and processed."""
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, changelog, partitions=PARTITIONS, config=changelog_config or {"cleanup.policy": "compact"})
    wait_for_leaders(admin, changelog)
    answer_list_offsets(kafka_broker, [changelog, topologies.INPUT], PARTITIONS)
    describe = work / "topology.txt"
    describe.write_text(str(topologies.count().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
        "--out", str(plan_file), *plan_args)  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    plan = RunPlan.read(plan_file)
    reports = [
        run_task(w)
        for w in task_work(
            plan, topology=TOPOLOGY, store_uri=str(store), counts={topologies.INPUT: PARTITIONS, topologies.OUTPUT: 2}
        )
    ]
    return {"plan": plan, "plan_file": plan_file, "store": store, "reports": reports, "changelog": changelog}


def log_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark: where the records a test is about to publish will start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "handoff-reader"})
    try:
        return {
            p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1] for p in range(partitions)
        }
    finally:
        consumer.close()


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed", start: dict[int, int] | None = None
) -> list[Any]:
    """Every record (read_committed: every committed record) of ``topic`` from ``start`` (default 0) to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "handoff-reader",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,  # the end is where the consumer says so: past any trailing marker
        }  # fmt: skip
    )
    try:
        tps = [KafkaTopicPartition(topic, p, (start or {}).get(p, 0)) for p in range(partitions)]
        consumer.assign(tps)
        records: list[Any] = []
        done: set[int] = set()
        while len(done) < partitions:
            message = consumer.poll(5)
            assert message is not None, f"{topic}: no record within 5 s, read {len(records)}"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                done.add(message.partition())
                continue
            records.append(message)
        return records
    finally:
        consumer.close()


def last_data_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    return {p: max(m.offset() for m in read_all(bootstrap, topic, partitions) if m.partition() == p)
            for p in range(partitions)}  # fmt: skip


def test_handoff_publishes_commits_checkpoints_and_a_rerun_skips_everything(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    committed_metadata_classpath: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="streamproc.handoff.procedure")
    app_id = unique("handoff-app")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    plan: RunPlan = run_["plan"]
    state_dir = tmp_path / "state"
    before = log_ends(kafka_broker, topologies.OUTPUT, 2)
    out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
              str(run_["store"]), "--state-dir", str(state_dir), "--yes")  # fmt: skip
    assert "published 2 task(s), wrote 2 checkpoint(s)" in out.output

    # Offsets: the plan's "after" with Kafka Streams' commit metadata carrying each partition's time.
    committed, unstable = read_committed_offsets(admin, app_id)
    assert not unstable
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    times = {k: v["partition_time"] for r in run_["reports"] for k, v in r["offsets"].items()}
    assert {str(tp): TopicPartitionMetadata.decode(c.metadata).partition_time for tp, c in committed.items()} == times
    # ... marked as this plan's hand-off of its task (what a re-run after a crash recognises as its own commit) ...
    marks = {str(tp): handoff_mark(c.metadata) for tp, c in committed.items()}
    assert marks == {f"{topologies.INPUT}-{p}": f"{plan_id(plan)}/0_{p}" for p in range(PARTITIONS)}
    # ... as Kafka Streams itself reads it: the partition time, from exactly the characters committed, nothing after
    # them (confluent-kafka's own send_offsets_to_transaction adds a NUL, which Kafka Streams cannot decode: partition
    # time -1); the mark after its fields is ignored
    assert kafka_streams_partition_times(committed_metadata_classpath, kafka_broker, app_id) == {
        name: (len(committed[parse_partition(name)].metadata), partition_time) for name, partition_time in times.items()
    }

    # Outputs: every count the tasks sent, visible to read_committed, nothing else.
    outputs = read_all(kafka_broker, topologies.OUTPUT, 2, start=before)
    assert len(outputs) == sum(sum(r["outputs"].values()) for r in run_["reports"]) == RECORDS

    # Changelog: the last count per key (reduced), equal to the final count of every key.
    changelog = read_all(kafka_broker, run_["changelog"], PARTITIONS)
    final: dict[bytes, int] = {}
    for m in outputs:
        final[m.key()] = struct.unpack(">q", m.value())[0]  # outputs per key are in count order
    assert {m.key(): struct.unpack(">q", m.value()[-8:])[0] for m in changelog} == final
    assert len(changelog) == len(final)

    # Checkpoints: written last, pointing at the last changelog record each task published.
    last = last_data_offsets(kafka_broker, run_["changelog"], PARTITIONS)
    for p in range(PARTITIONS):
        checkpoint = OffsetCheckpoint(state_dir / app_id / f"0_{p}" / ".checkpoint").read()
        assert checkpoint == {TopicPartition(run_["changelog"], p): last[p]}
        assert (state_dir / app_id / f"0_{p}" / "rocksdb" / "counts").is_dir()

    status = run(
        "--output",
        "json",
        "handoff",
        "--plan",
        str(run_["plan_file"]),
        "--status",  # no cluster needed
    )
    # the two tasks of the one stage are published side by side, each recorded, then their state written
    assert [(s["kind"], s["subject"]) for s in json.loads(status.output)["steps"]] == [
        ("publish", "0_0"), ("publish", "0_1"), ("checkpoint", "0_0"), ("checkpoint", "0_1")]  # fmt: skip
    assert "publishing 2 tasks side by side" in caplog.text

    again = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                str(run_["store"]), "--state-dir", str(state_dir), "--yes")  # fmt: skip
    assert "published 0 task(s), wrote 0 checkpoint(s)" in again.output and "4 step(s) already done" in again.output
    assert len(read_all(kafka_broker, topologies.OUTPUT, 2, start=before)) == RECORDS  # nothing published twice

    # The same plan with a fresh (lost) ledger: the ledger is reconciled with Kafka, whose offsets carry this plan's
    # mark: both tasks are recognised as published, recorded, and nothing is published twice (issue #27, 2).
    other = tmp_path / "other.sqlite"
    lost = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
               str(run_["store"]), "--ledger", str(other), "--yes")  # fmt: skip
    assert "published 0 task(s), wrote 0 checkpoint(s)" in lost.output and "2 step(s) already done" in lost.output
    recognised = Ledger(other).steps(plan_id(plan))
    assert [(s.kind, s.subject) for s in recognised] == [("publish", "0_0"), ("publish", "0_1")]
    assert [s.detail["changelog_last"] for s in recognised] == [{f"{run_['changelog']}-{p}": last[p]} for p in (0, 1)]
    assert len(read_all(kafka_broker, topologies.OUTPUT, 2, start=before)) == RECORDS


def test_a_rerun_after_a_stop_at_a_step_boundary_finishes_the_rest(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("handoff-resume")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    plan: RunPlan = run_["plan"]
    state_dir = tmp_path / "state"
    config = {"bootstrap.servers": kafka_broker}
    store = load_store(str(run_["store"]))
    pid = plan_id(plan)
    before = log_ends(kafka_broker, topologies.OUTPUT, 2)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = handoff(plan, pid, client_config=config, store=store, ledger=ledger, state_dir=state_dir,
                        stop_after="publish:0_1")  # fmt: skip
        assert first.published == ("0_0", "0_1") and first.checkpointed == ("0_0",)
        assert not (state_dir / app_id / "0_1" / ".checkpoint").exists()  # offsets committed, state not yet
        second = handoff(plan, pid, client_config=config, store=store, ledger=ledger, state_dir=state_dir)
        assert second.published == () and second.checkpointed == ("0_1",)
        assert second.skipped == ("publish 0_0", "publish 0_1", "checkpoint 0_0")
    assert len(read_all(kafka_broker, topologies.OUTPUT, 2, start=before)) == RECORDS
    last = last_data_offsets(kafka_broker, run_["changelog"], PARTITIONS)
    assert OffsetCheckpoint(state_dir / app_id / "0_1" / ".checkpoint").read() == {
        TopicPartition(run_["changelog"], 1): last[1]
    }


def test_an_unfinished_process_step_is_refused_and_nothing_is_committed(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("handoff-unfinished")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    report = next((run_["store"] / "process").glob("*/tasks/0_1/report.json"))
    report.unlink()
    refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                  str(run_["store"]), "--yes", ok=False)  # fmt: skip
    assert refused.exit_code == 1
    assert "the process step did not finish task(s) 0_1" in refused.output
    assert read_committed_offsets(admin, app_id) == ({}, False)


def test_a_plan_that_only_moves_the_group_commits_its_ends(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """``--to-latest``: nothing to process, yet the preview says every partition moves to its end; so it does."""
    app_id = unique("handoff-latest")
    run_ = processed(kafka_broker, admin, app_id, tmp_path, plan_args=("--to-latest",))
    plan: RunPlan = run_["plan"]
    assert plan.commits and all(c.before is None and c.after > 0 for c in plan.commits)
    assert all(r["records_processed"] == 0 for r in run_["reports"])
    run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store", str(run_["store"]),
        "--state-dir", str(tmp_path / "state"), "--yes")  # fmt: skip
    committed, _ = read_committed_offsets(admin, app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}


def output_max_bytes(admin: AdminClient, value: str | None) -> None:
    """Set the output topic's ``max.message.bytes`` (``None``: back to the broker's default)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("max.message.bytes", value or "", incremental_operation=op)
    resource = ConfigResource(ResourceType.TOPIC, topologies.OUTPUT, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def test_an_output_record_the_broker_refuses_fails_the_commit_and_a_rerun_publishes_it(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """Output records are produced without a delivery report each: a record the broker refuses (a batch over the
    output topic's ``max.message.bytes``) must still fail the task's commit, in one line naming the partition and
    the broker's error, with nothing committed; once the topic takes it, the same command publishes everything."""
    app_id = unique("handoff-refused-output")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    before = log_ends(kafka_broker, topologies.OUTPUT, 2)
    args = ("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store", str(run_["store"]),
            "--state-dir", str(tmp_path / "state"), "--yes")  # fmt: skip
    output_max_bytes(admin, "100")
    try:
        refused = run(*args, ok=False)
    finally:
        output_max_bytes(admin, None)
    assert refused.exit_code == 1, refused.output
    assert "Traceback" not in refused.output
    error = [line for line in refused.output.splitlines() if "Message size too large" in line]
    # where the refusal surfaced: at the commit, or (when it reached the client first) at the next record produced
    where = ("committed its transaction", "produced its records")
    assert len(error) == 1 and topologies.OUTPUT in error[0] and any(w in error[0] for w in where), refused.output
    assert read_committed_offsets(admin, app_id) == ({}, False)
    assert read_all(kafka_broker, topologies.OUTPUT, 2, start=before) == []
    run(*args)
    assert len(read_all(kafka_broker, topologies.OUTPUT, 2, start=before)) == RECORDS
    committed, _ = read_committed_offsets(admin, app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in run_["plan"].commits}


def test_an_output_record_refused_while_the_task_still_produces_is_named_not_erroneous_state(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The broker's refusal of an output record can reach librdkafka while the task is still producing: the
    transaction has failed, and the next ``produce`` raises only "Erroneous state". The error must name the cause
    all the same, with nothing committed. Made certain here: the next rows are held back until
    librdkafka has logged the transaction's failure (the changelog's records, produced after the outputs, wait for it;
    the producer, the real one seen through a spy, is polled meanwhile)."""
    from streamproc.handoff import publish
    from streamproc.handoff.task_results import TaskResults, load_results
    from streamproc.kafka import clients

    app_id = unique("handoff-refused-midway")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    plan: RunPlan = run_["plan"]
    before = log_ends(kafka_broker, topologies.OUTPUT, 2)
    results = load_results(plan, plan_id(plan), load_store(str(run_["store"])))
    task = next(r for r in results if r.output_partitions() and r.changelog_partitions())
    producers: list[Any] = []
    real_producer = clients.producer

    def spied_producer(*args: Any, **kwargs: Any) -> Any:
        producers.append(real_producer(*args, **kwargs))
        return producers[-1]

    def failed_logged() -> bool:
        return any("Current transaction failed" in r.getMessage() for r in caplog.records)

    class HeldBack(TaskResults):
        def changelog_table(self, topic: str, partition: int) -> Any:
            deadline = time.monotonic() + 60
            while not failed_logged():
                assert time.monotonic() < deadline, "librdkafka never logged the transaction's failure"
                producers[-1].poll(0.1)
            return super().changelog_table(topic, partition)

    monkeypatch.setattr(clients, "producer", spied_producer)  # the module publish calls it through
    caplog.set_level(logging.DEBUG, logger=clients.LIBRDKAFKA_LOG.name)
    held_back = HeldBack(task.task, task.objects, task.report, task.store)
    output_max_bytes(admin, "100")
    try:
        with pytest.raises(HandoffError) as refused:
            publish.publish_task({"bootstrap.servers": kafka_broker}, app_id, plan_id(plan), held_back)
    finally:
        output_max_bytes(admin, None)
    assert failed_logged()
    message = str(refused.value)
    assert "produced its records failed" in message and "Message size too large" in message, message
    assert topologies.OUTPUT in message and "Erroneous state" not in message, message
    assert read_committed_offsets(admin, app_id) == ({}, False)
    assert read_all(kafka_broker, topologies.OUTPUT, 2, start=before) == []
