"""``streamproc process --state-dir``: tasks start from an existing state directory's stores and ``.checkpoint`` and
restore only the rest of the changelog (the plan's range), against the real broker on Spark ``local[2]``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import store_builders
from streamproc.errors import ConfigError, StateError
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import partition_counts, plan_id, process, task_work
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import run_task
from streamproc.state.changelog import ChangelogRecord
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.processor_state_manager import ProcessorStateManager
from streamproc.state.restore_plan import ChangelogState
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_builders import store_definitions
from streamproc.state.stores import ValueAndTimestamp
from tests.integration.conftest import create_topic
from tests.integration.spark import topologies
from tests.integration.spark.conftest import PARTITIONS, run, wait_for_leaders
from tests.integration.spark.test_process import consume, fresh_copy

APP = "spark-count-state-app"
CHANGELOG = f"{APP}-counts-changelog"
TOPOLOGY = "tests.integration.spark.topologies:count"


class Changelog:
    """The changelog records a live app's store writes would produce (what it sends to the broker)."""

    def __init__(self) -> None:
        self.records: list[ChangelogRecord] = []

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None:
        self.records.append(record)


def write_store(state_dir: Path, entries: dict[str, int], *, checkpoint_end: int | None) -> list[ChangelogRecord]:
    """Task 0_1's ``counts`` store written as the live app would (ProcessorStateManager); with ``checkpoint_end``
    the ``.checkpoint`` says the store reflects the changelog up to that end offset. Returns the changelog records."""
    changelog = Changelog()
    directory = StateDirectory(state_dir, APP)
    state = ProcessorStateManager(TaskId(0, 1), store_definitions(store_builders(topologies.count(), 0)),
                                  application_id=APP, state_directory=directory, collector=changelog)  # fmt: skip
    tp = TopicPartition(CHANGELOG, 1)
    state.initialize({tp: ChangelogState(0, 0)})
    state.attach(SimpleNamespace(record_context=SimpleNamespace(timestamp=5)))
    store: Any = state.store("counts")
    for key, count in entries.items():
        store.put(key, ValueAndTimestamp(count, 5))
    if checkpoint_end is not None:
        state.checkpoint({tp: checkpoint_end})
    else:
        state.close()
    directory.unlock()
    return changelog.records


def last_counts(store_dir: Path, plan: RunPlan, task_id: str) -> dict[bytes, int]:
    """The last count the task sent per key (its final count)."""
    root = store_dir / TaskObjects(plan_id(plan), TaskId.parse(task_id)).prefix / "outputs"
    counts: dict[bytes, int] = {}
    for path in sorted(root.glob("*.parquet")):
        for row in sorted(pq.read_table(path).to_pylist(), key=lambda r: r["sequence"]):
            counts[row["key"]] = int.from_bytes(row["value"], "big", signed=True)
    return counts


def test_tasks_start_from_the_state_dirs_stores_and_restore_the_rest_of_the_changelog(
    staged: dict[str, Any], kafka_broker: str, admin: AdminClient, tmp_path: Path
) -> None:
    create_topic(admin, CHANGELOG, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, CHANGELOG)
    a, b, c = [k for k in (f"k{i}" for i in range(61)) if partition_for_key(k.encode(), PARTITIONS) == 1][:3]
    state_dir = tmp_path / "state"
    # The live app counted a and b, checkpointed (changelog offsets 0, 1), then wrote c (offset 2) and stopped.
    checkpointed = write_store(state_dir, {a: 1000, b: 2000}, checkpoint_end=2)
    later = write_store(tmp_path / "elsewhere", {c: 3000}, checkpoint_end=None)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for record in (*checkpointed, *later):
        producer.produce(CHANGELOG, partition=1, key=record.key, value=record.value, timestamp=record.timestamp)
    producer.flush(30)

    describe = tmp_path / "topology.txt"
    describe.write_text(str(topologies.count().describe()))
    plan_file = tmp_path / "plan.json"
    run("plan", "--bootstrap", kafka_broker, "--application-id", APP, "--topology", str(describe),
        "--state-dir", str(state_dir), "--out", str(plan_file))  # fmt: skip
    plan = RunPlan.read(plan_file)
    [restore] = [r for r in plan.restores if r.task_id == "0_1"]
    assert (restore.checkpoint_offset, restore.start, restore.end) == (1, 2, 3)  # L = 1 checkpointed: only c is left
    store_dir = fresh_copy(staged, tmp_path / "store")
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store_dir))
    counts = {topologies.COUNT_OUTPUT: PARTITIONS}

    with pytest.raises(ConfigError, match=r"task \[0_1\] store counts: .*checkpoint offset 1.*pass --state-dir"):
        process(plan, store_uri=str(store_dir), topology=TOPOLOGY, master="local[2]", partitions=counts)

    run("process", "--plan", str(plan_file), "--store", str(store_dir), "--topology", TOPOLOGY, "--master", "local[2]",
        "--partitions", f"{topologies.COUNT_OUTPUT}={PARTITIONS}", "--state-dir", str(state_dir))  # fmt: skip
    reports = {
        task.task_id: json.loads(
            (store_dir / TaskObjects(plan_id(plan), TaskId.parse(task.task_id)).report).read_text()
        )
        for task in plan.tasks
    }
    assert reports["0_1"]["restored_from_state_dir"] and reports["0_1"]["restored"] == {"counts": 1}
    assert not any(r["restored_from_state_dir"] for task, r in reports.items() if task != "0_1")
    [rng] = [r for r in plan.ranges if r.partition == 1]
    seen: dict[bytes, int] = {}
    for record in consume(staged["bootstrap"], rng.topic, rng.partition, rng.end):
        assert record.key is not None
        seen[record.key] = seen.get(record.key, 0) + 1
    base = {a.encode(): 1000, b.encode(): 2000, c.encode(): 3000}
    assert last_counts(store_dir, plan, "0_1") == {key: base.get(key, 0) + n for key, n in seen.items()}
    assert (state_dir / APP / "0_1" / ".checkpoint").exists()  # the state directory itself is only read

    # The state directory moved on after planning (here: an older checkpoint): the task refuses to guess.
    OffsetCheckpoint(state_dir / APP / "0_1" / ".checkpoint").write({TopicPartition(CHANGELOG, 1): 0})
    again = fresh_copy({"store": store_dir}, tmp_path / "again")
    [work] = [w for w in task_work(plan, topology=TOPOLOGY, store_uri=str(again), counts=partition_counts(plan, counts),
                                   state_dir=str(state_dir)) if w.task_id == "0_1"]  # fmt: skip
    changed = rf"task \[0_1\] store counts: the checkpoint in .* has offset 0 for changelog {CHANGELOG}-1, the plan"
    with pytest.raises(StateError, match=changed + r" was made with 1; the state directory changed"):
        run_task(work)
