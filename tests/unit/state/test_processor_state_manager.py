"""``ProcessorStateManager``: stores inside a task, changelog records, restoration, checkpoint, bad input."""

from __future__ import annotations

import logging
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, Record, TopicPartition
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.changelog import ChangelogRecord
from streamproc.state.changelog_collector import ChangelogCollector, CollectedChangelogRecord
from streamproc.state.offset_checkpoint import CheckpointCorrupt, OffsetCheckpoint
from streamproc.state.processor_state_manager import MissingSourceTopicChangelog, ProcessorStateManager, StoreDefinition
from streamproc.state.restore_plan import ChangelogState, CheckpointOutOfRange, ProcessingGuarantee
from streamproc.state.rocksdb_store import IncompatibleStore, RocksDBKeyValueBytesStore, list_column_families
from streamproc.state.state_directory import PROCESS_FILE_NAME, StateDirectory, StateDirLocked
from streamproc.state.store_type import StoreType
from streamproc.state.stores import KeyValueStore, TimestampedKeyValueStore, ValueAndTimestamp

APP = "app"
TASK = TaskId(0, 1)
CHANGELOG = TopicPartition("app-counts-changelog", 1)
ALOS = ProcessingGuarantee.AT_LEAST_ONCE
EOS = ProcessingGuarantee.EXACTLY_ONCE_V2
COUNTS = StoreDefinition("counts", StoreType.TIMESTAMPED_KEY_VALUE, serde_for("String"), serde_for("Long"))


def long_be(value: int) -> bytes:
    return struct.pack(">q", value)


def changelog_record(
    offset: int, key: str | None, count: int | None, timestamp: int = 1_000
) -> ConsumerRecord[bytes | None, bytes | None]:
    return ConsumerRecord.raw(
        CHANGELOG.topic,
        CHANGELOG.partition,
        offset,
        timestamp + offset,
        None if key is None else key.encode(),
        None if count is None else long_be(count),
    )


def manager(
    state_dir: Path,
    guarantee: ProcessingGuarantee = ALOS,
    definitions: list[StoreDefinition] | None = None,
    collector: ChangelogCollector | None = None,
) -> ProcessorStateManager:
    return ProcessorStateManager(
        TASK,
        definitions or [COUNTS],
        application_id=APP,
        state_directory=StateDirectory(state_dir, APP),
        guarantee=guarantee,
        collector=collector,
    )


def task_dir(state_dir: Path) -> Path:
    return state_dir / APP / "0_1"


@dataclass
class FakeContext:
    record_context: ProcessorRecordContext


class Counter(Processor):
    """Counts values per key in the timestamped store ``counts`` (what ``groupByKey().count()`` stores)."""

    store: TimestampedKeyValueStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        store = context.get_state_store("counts")
        assert isinstance(store, TimestampedKeyValueStore)
        self.store = store

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        self.store.put(record.key, ValueAndTimestamp((old.value if old else 0) + 1, record.timestamp))


def run_counter(state_manager: ProcessorStateManager, records: list[tuple[str, int]]) -> StreamTask:
    source = SourceNode("source", ["words"], lambda _t, d: d.decode() if d else None, lambda _t, d: d)
    node = ProcessorNode("count", Counter())
    source.add_child(node)
    partition = TopicPartition("words", 1)
    task = StreamTask(TASK, ProcessorTopology([source, node]), [partition], stores=state_manager.stores)
    state_manager.attach(task.context)
    task.initialize_topology()
    task.add_records(
        partition, [ConsumerRecord.raw("words", 1, i, ts, key.encode(), b"x") for i, (key, ts) in enumerate(records)]
    )
    while task.process():
        pass
    return task


def test_task_writes_store_changelog_and_checkpoint(tmp_path: Path) -> None:
    collector = ChangelogCollector(TASK)
    state = manager(tmp_path, collector=collector)
    plan = state.initialize({CHANGELOG: ChangelogState(0, 0)})
    assert plan.total_records_restored == 0
    run_counter(state, [("a", 100), ("b", 200), ("a", 300)])
    assert collector.records == [
        CollectedChangelogRecord("counts", CHANGELOG.topic, 1, b"a", long_be(1), 100),
        CollectedChangelogRecord("counts", CHANGELOG.topic, 1, b"b", long_be(1), 200),
        CollectedChangelogRecord("counts", CHANGELOG.topic, 1, b"a", long_be(2), 300),
    ]
    assert collector.counts() == {CHANGELOG: 3}
    with pytest.raises(StateError, match="was written in this run"):
        state.checkpoint()
    entries = state.checkpoint({CHANGELOG: 3}, changelogs={CHANGELOG: ChangelogState(0, 3)})
    assert entries == {CHANGELOG: 2}
    directory = task_dir(tmp_path)
    assert (directory / ".checkpoint").read_bytes() == b"0\n1\napp-counts-changelog 1 2\n"
    assert sorted(p.name for p in directory.iterdir()) == [".checkpoint", "rocksdb"]
    db = directory / "rocksdb" / "counts"
    assert list_column_families(db) == ["default", "keyValueWithTimestamp"]
    assert (tmp_path / APP / ".lock").exists()
    assert not (tmp_path / APP / PROCESS_FILE_NAME).exists()
    assert state.state_directory is not None
    state.state_directory.unlock()

    again = manager(tmp_path)
    plan = again.initialize({CHANGELOG: ChangelogState(0, 3)})
    assert plan.total_records_restored == 0
    assert again.restore_bounds("counts") == (3, 3)
    assert again.restore("counts", [changelog_record(i, "z", 9) for i in range(3)]) == 0
    store = again.store("counts")
    assert isinstance(store, TimestampedKeyValueStore)
    assert list(store.all()) == [("a", ValueAndTimestamp(2, 300)), ("b", ValueAndTimestamp(1, 200))]
    again.close()


def test_restore_from_records_then_checkpoint_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    state = manager(tmp_path)
    plan = state.initialize({CHANGELOG: ChangelogState(0, 42)})
    assert plan.restore_for("counts") is not None
    records = [changelog_record(i, f"k{i % 5}", i) for i in range(40)] + [changelog_record(40, None, 1)]
    records.append(changelog_record(41, "k0", None))
    assert state.restore("counts", iter(records), batch_size=7) == 41
    assert state.changelog_offsets() == {"counts": 41}
    store = state.store("counts")
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("k0") is None
    assert store.get("k4") == ValueAndTimestamp(39, 1_039)
    assert state.checkpoint() == {CHANGELOG: 41}
    assert (task_dir(tmp_path) / ".checkpoint").read_bytes() == b"0\n1\napp-counts-changelog 1 41\n"
    assert "stream-task [0_1] Finished restoring changelog app-counts-changelog-1 to store counts" in caplog.text
    assert "Skipped 1 changelog records with null key" in caplog.text


def test_checkpoint_behind_restores_the_rest(tmp_path: Path) -> None:
    directory = task_dir(tmp_path)
    directory.mkdir(parents=True)
    OffsetCheckpoint(directory / ".checkpoint").write({CHANGELOG: 4})
    state = manager(tmp_path)
    state.initialize({CHANGELOG: ChangelogState(0, 8)})
    assert state.restore_bounds("counts") == (5, 8)
    assert state.restore("counts", [changelog_record(i, "k", i) for i in range(10)]) == 3
    assert state.changelog_offsets() == {"counts": 7}
    state.close()


def test_in_memory_store_restores_from_log_start_and_has_no_checkpoint_entry(tmp_path: Path) -> None:
    memory = StoreDefinition("counts", StoreType.KEY_VALUE, serde_for("String"), serde_for("Long"), persistent=False)
    state = ProcessorStateManager(TASK, [memory], application_id=APP, state_directory=None)
    state.initialize({CHANGELOG: ChangelogState(2, 6)})
    assert state.restore_bounds("counts") == (2, 6)
    assert state.restore("counts", [changelog_record(i, "k", i) for i in range(2, 6)]) == 4
    store = state.store("counts")
    assert isinstance(store, KeyValueStore)
    assert store.get("k") == 5
    assert state.checkpoint() == {}
    assert not (tmp_path / APP).exists()


def test_eos_checkpoint_deleted_at_init_and_rewritten(tmp_path: Path) -> None:
    directory = task_dir(tmp_path)
    directory.mkdir(parents=True)
    OffsetCheckpoint(directory / ".checkpoint").write({CHANGELOG: 9})
    state = manager(tmp_path, EOS)
    plan = state.initialize({CHANGELOG: ChangelogState(0, 11)})
    assert plan.checkpoint_deleted_at_init
    assert not (directory / ".checkpoint").exists()
    assert state.restore_bounds("counts") == (10, 11)
    state.checkpoint({CHANGELOG: 11})
    assert (directory / ".checkpoint").read_bytes() == b"0\n1\napp-counts-changelog 1 10\n"


def make_nonempty_store(state_dir: Path) -> None:
    store = RocksDBKeyValueBytesStore(
        "counts", task_dir(state_dir) / "rocksdb" / "counts", StoreType.TIMESTAMPED_KEY_VALUE
    )
    store.put(b"stale", long_be(0) + long_be(1))
    store.close()


def test_eos_without_checkpoint_wipes_the_task(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    make_nonempty_store(tmp_path)
    state = manager(tmp_path, EOS)
    plan = state.initialize({CHANGELOG: ChangelogState(0, 2)})
    assert plan.local_state_wiped
    assert "Wiping state stores for active task 0_1" in caplog.text
    store = state.store("counts")
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("stale") is None
    assert state.restore_bounds("counts") == (0, 2)
    state.close()


def test_alos_without_checkpoint_restores_over_existing_state(tmp_path: Path) -> None:
    make_nonempty_store(tmp_path)
    state = manager(tmp_path, ALOS)
    plan = state.initialize({CHANGELOG: ChangelogState(0, 2)})
    assert not plan.local_state_wiped
    store = state.store("counts")
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("stale") == ValueAndTimestamp(1, 0)
    state.close()


@pytest.mark.parametrize(
    ("checkpointed", "changelog"),
    [(10, ChangelogState(0, 10)), (3, ChangelogState(5, 10))],
    ids=["beyond-log-end", "below-log-start"],
)
def test_out_of_range_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, checkpointed: int, changelog: ChangelogState
) -> None:
    make_nonempty_store(tmp_path)
    OffsetCheckpoint(task_dir(tmp_path) / ".checkpoint").write({CHANGELOG: checkpointed})
    alos = manager(tmp_path, ALOS)
    plan = alos.initialize({CHANGELOG: changelog})
    assert plan.task_corrupted and not plan.local_state_wiped
    assert alos.restore_bounds("counts") == (changelog.log_start_offset, 10)
    assert alos.changelog_offsets() == {"counts": None}
    assert "out of range" in caplog.text
    alos.close()
    assert alos.state_directory is not None
    alos.state_directory.unlock()

    eos = manager(tmp_path, EOS)
    plan = eos.initialize({CHANGELOG: changelog})
    assert plan.local_state_wiped
    store = eos.store("counts")
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("stale") is None
    eos.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"0\n", "File ended prematurely."), (b"0\n2\napp-counts-changelog 1 5\n", "Expected 2 entries but found only 1")],
    ids=["truncated", "count-mismatch"],
)
def test_corrupt_checkpoint_is_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, message: str
) -> None:
    directory = task_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / ".checkpoint").write_bytes(content)
    with pytest.raises(CheckpointCorrupt, match=message):
        manager(tmp_path).initialize({CHANGELOG: ChangelogState(0, 10)})
    assert "stream-task [0_1] Error loading and deleting checkpoint file when creating the state manager" in caplog.text
    assert (directory / ".checkpoint").read_bytes() == content


def test_store_directory_of_another_kind_is_refused(tmp_path: Path) -> None:
    store = RocksDBKeyValueBytesStore("counts", task_dir(tmp_path) / "rocksdb" / "counts", StoreType.KEY_VALUE)
    store.put(b"k", b"v")
    store.close()
    OffsetCheckpoint(task_dir(tmp_path) / ".checkpoint").write({CHANGELOG: 0})
    with pytest.raises(IncompatibleStore, match="task \\[0_1\\] store counts"):
        manager(tmp_path).initialize({CHANGELOG: ChangelogState(0, 1)})


def test_missing_changelog_topic_is_an_empty_changelog(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = task_dir(tmp_path)
    directory.mkdir(parents=True)
    OffsetCheckpoint(directory / ".checkpoint").write({CHANGELOG: 5})
    state = manager(tmp_path)
    plan = state.initialize({})
    assert "Changelog topic app-counts-changelog-1 of store counts does not exist" in caplog.text
    assert plan.task_corrupted
    assert state.restore_bounds("counts") == (0, 0)
    assert state.checkpoint() == {CHANGELOG: -4}


def test_missing_source_topic_changelog_is_fatal(tmp_path: Path) -> None:
    table = StoreDefinition(
        "table", StoreType.TIMESTAMPED_KEY_VALUE, serde_for("String"), serde_for("String"), changelog_topic="orders"
    )
    with pytest.raises(MissingSourceTopicChangelog, match="source topic orders"):
        manager(tmp_path, definitions=[table]).initialize({})


def test_a_source_topic_changelog_restores_up_to_the_committed_offset_and_logs_nothing(tmp_path: Path) -> None:
    """A reused table source store (its builder unlogged, ``topology.optimization=all``): registered as logged with
    the source partition as changelog, restored up to the group's committed offset, never written to the topic."""
    source = TopicPartition("users", 1)
    table = StoreDefinition(
        "table", StoreType.TIMESTAMPED_KEY_VALUE, serde_for("String"), serde_for("String"), logged=False,
        changelog_topic="users",
    )  # fmt: skip
    collector = ChangelogCollector(TASK)
    state = manager(tmp_path, definitions=[table], collector=collector)
    plan = state.initialize({source: ChangelogState(0, 5, group_committed_offset=3)})
    assert state.registered.changelog_partitions == {"table": source}
    assert state.restore_bounds("table") == (0, 3)
    records = [ConsumerRecord.raw("users", 1, i, 100 + i, f"u{i % 2}".encode(), f"v{i}".encode()) for i in range(5)]
    assert state.restore("table", records) == plan.total_records_restored == 3  # not the records after the commit
    store = state.store("table")
    assert isinstance(store, TimestampedKeyValueStore)
    assert store.get("u0") == ValueAndTimestamp("v2", 102) and store.get("u1") == ValueAndTimestamp("v1", 101)
    state.attach(FakeContext(ProcessorRecordContext(200, 5, 1, "users")))
    store.put("u2", ValueAndTimestamp.make("v9", 200))  # what the table source does with the run's input
    assert collector.records == []
    assert state.checkpoint({source: 5}) == {source: 4}  # the committed offset after the hand-off, minus one


def test_checkpoint_out_of_range_is_refused(tmp_path: Path) -> None:
    state = manager(tmp_path)
    state.initialize({CHANGELOG: ChangelogState(0, 5)})
    with pytest.raises(CheckpointOutOfRange):
        state.checkpoint({CHANGELOG: 7}, changelogs={CHANGELOG: ChangelogState(0, 5)})
    assert not (task_dir(tmp_path) / ".checkpoint").exists()
    state.close()


def test_state_dir_locked_by_another_process(tmp_path: Path) -> None:
    app_dir = tmp_path / APP
    app_dir.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'a+b'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', "
            "flush=True); sys.stdin.read()",
            str(app_dir / ".lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"locked"
        directory = StateDirectory(tmp_path, APP)
        assert directory.is_locked_elsewhere()
        with pytest.raises(StateDirLocked, match="multiple instances of Kafka Streams"):
            manager(tmp_path).initialize({CHANGELOG: ChangelogState(0, 0)})
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    state = manager(tmp_path)
    state.initialize({CHANGELOG: ChangelogState(0, 0)})
    state.close()


def test_process_id_is_read_not_written(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, APP)
    assert directory.process_id() is None
    directory.ensure_app_dir()
    (tmp_path / APP / PROCESS_FILE_NAME).write_text('{"processId":"5c3e8a5e-0d0b-4b8c-9f55-1b1d1e2a3b4c"}')
    assert directory.process_id() == "5c3e8a5e-0d0b-4b8c-9f55-1b1d1e2a3b4c"
    (tmp_path / APP / PROCESS_FILE_NAME).write_text("{not json")
    assert directory.process_id() is None
    assert oct((tmp_path / APP).stat().st_mode & 0o777) == "0o750"


def test_task_ids_and_file_in_place_of_task_dir(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, APP)
    directory.task_dir(TaskId(1, 2))
    directory.task_dir(TaskId(0, 3))
    (tmp_path / APP / "foo_bar").mkdir()
    (tmp_path / APP / "2_0").write_text("")
    assert directory.task_ids() == [TaskId(0, 3), TaskId(1, 2)]
    with pytest.raises(StateError, match="existing file with the same name"):
        directory.task_dir(TaskId(2, 0))


def test_window_store_through_the_manager(tmp_path: Path) -> None:
    collector = ChangelogCollector(TASK)
    window = StoreDefinition(
        "win",
        StoreType.TIMESTAMPED_WINDOW,
        serde_for("String"),
        serde_for("Long"),
        retention_ms=120_000,
        window_size_ms=60_000,
    )
    state = manager(tmp_path, definitions=[window], collector=collector)
    changelog = TopicPartition("app-win-changelog", 1)
    state.initialize({changelog: ChangelogState(0, 0)})
    state.attach(FakeContext(ProcessorRecordContext(77, 0, 1, "in")))
    store = state.store("win")
    store.put("k", ValueAndTimestamp(3, 61_000), 60_000)  # type: ignore[attr-defined]
    assert collector.records[0].topic == "app-win-changelog"
    assert collector.records[0].timestamp == 61_000
    state.checkpoint({changelog: 1})
    assert sorted(p.name for p in (task_dir(tmp_path) / "win").iterdir()) == ["win.60000"]
    assert (task_dir(tmp_path) / ".checkpoint").read_bytes() == b"0\n1\napp-win-changelog 1 0\n"


def test_collector_refuses_another_partition() -> None:
    collector = ChangelogCollector(TASK)
    with pytest.raises(StateError, match="always its own partition 1"):
        collector.send("counts", TopicPartition("app-counts-changelog", 0), ChangelogRecord(b"k", None, 1))
    collector.send("counts", CHANGELOG, ChangelogRecord(b"k", None, 1))
    assert collector.partitions() == [CHANGELOG]
    assert collector.for_partition(CHANGELOG)[0].value is None


def test_unknown_store_and_uninitialized_manager(tmp_path: Path) -> None:
    state = manager(tmp_path)
    with pytest.raises(StateError, match="call it first"):
        state.store("counts")
    state.initialize({CHANGELOG: ChangelogState(0, 0)})
    with pytest.raises(StateError, match="has no store 'nope'"):
        state.store("nope")
    with pytest.raises(StateError, match="not from its changelog"):
        state.restore("counts", [ConsumerRecord.raw("other", 1, 0, 0, b"k", b"v")])
    with pytest.raises(StateError, match="initialized twice"):
        state.initialize({CHANGELOG: ChangelogState(0, 0)})
    state.close()
