"""``streamproc.Stores``: a user's topology gets Kafka Streams' stores, on disk in its layout, with changelogs."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from streamproc import Processor, ProcessorContext, Record, Stores, Topology, TopologyTestDriver, serde_for
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import build_processor_topology, changelog_topics, store_builders
from streamproc.errors import ConfigError, TopologyError
from streamproc.state.changelog_collector import ChangelogCollector
from streamproc.state.processor_state_manager import ProcessorStateManager, StoreDefinition
from streamproc.state.restore_plan import ChangelogState
from streamproc.state.rocksdb_store import list_column_families
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_builders import StoreBuilder, store_definitions
from streamproc.state.store_type import StoreType
from streamproc.state.stores import (
    KeyValueStore,
    SessionStore,
    TimestampedKeyValueStore,
    ValueAndTimestamp,
    WindowStore,
)

APP = "app"
STRING = serde_for("String")
LONG = serde_for("Long")


class CountAndWindow(Processor):
    """Counts per key (timestamped store) and per key and 10 ms window (window store)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.counts: Any = context.get_state_store("counts")
        self.windows: Any = context.get_state_store("windows")

    def process(self, record: Record[Any, Any]) -> None:
        old = self.counts.get(record.key)
        count = 1 if old is None else old.value + 1
        self.counts.put(record.key, ValueAndTimestamp(count, record.timestamp))
        start = record.timestamp - record.timestamp % 10
        self.windows.put(record.key, (self.windows.fetch_at(record.key, start) or 0) + 1, start)
        self.context.forward(Record(record.key, count, record.timestamp))


def topology(*, logged: bool = True) -> Topology:
    counts = Stores.timestamped_key_value_store_builder(
        Stores.persistent_timestamped_key_value_store("counts"), STRING, LONG
    )
    if not logged:
        counts.with_logging_disabled()
    windows = Stores.window_store_builder(Stores.persistent_window_store("windows", 600_000, 10), STRING, LONG)
    t = Topology()
    t.add_source("src", "words", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("count", CountAndWindow, "src")
    t.add_state_store(counts, "count")
    t.add_state_store(windows, "count")
    t.add_sink("sink", "counted", "count", key_serializer=STRING.serializer, value_serializer=LONG.serializer)
    return t


WORDS = [("a", 100), ("b", 105), ("a", 112), ("c", 90), ("a", 113)]


def test_suppliers_and_builders_carry_kafkas_settings() -> None:
    builder = Stores.key_value_store_builder(Stores.persistent_key_value_store("kv"), STRING, LONG)
    assert builder.name == "kv"
    assert builder.logging_enabled
    assert builder.with_logging_disabled() is builder
    assert not builder.logging_enabled
    assert builder.with_logging_enabled({"retention.ms": "1"}).log_config == {"retention.ms": "1"}
    assert builder.definition() == StoreDefinition("kv", StoreType.KEY_VALUE, STRING, LONG)

    window = Stores.persistent_timestamped_window_store("w", 3_600_000, 60_000, True)
    assert (window.segment_interval_ms, window.retain_duplicates, window.metrics_scope) == (
        1_800_000,
        True,
        "rocksdb-window",
    )
    session = Stores.in_memory_session_store("s", 1_000)
    assert session.segment_interval_ms == 60_000  # max(retention / 2, 60 s)
    definition = Stores.session_store_builder(session, STRING, LONG).definition()
    assert (definition.store_type, definition.persistent, definition.retention_ms) == (StoreType.SESSION, False, 1_000)


def test_bad_store_declarations_get_kafkas_messages() -> None:
    with pytest.raises(
        ConfigError, match=r"must be no smaller than its window size. Got size=\[20\], retention=\[10\]"
    ):
        Stores.persistent_window_store("w", 10, 20)
    with pytest.raises(ConfigError, match="retentionPeriod cannot be negative"):
        Stores.persistent_session_store("s", -1)
    with pytest.raises(TopologyError, match="needs a timestamped supplier"):
        Stores.timestamped_key_value_store_builder(Stores.persistent_key_value_store("kv"), STRING, LONG)
    with pytest.raises(TopologyError, match="needs a WindowBytesStoreSupplier"):
        Stores.window_store_builder(Stores.persistent_key_value_store("kv"), STRING, LONG)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="record caching"):
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), STRING, LONG).with_caching_enabled()
    with pytest.raises(TopologyError, match="build it with streamproc.Stores"):
        store_definitions({"odd": object()})


def test_build_gives_in_memory_stores_of_the_right_kind() -> None:
    assert isinstance(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("a"), STRING, LONG).build(), KeyValueStore
    )
    assert isinstance(
        Stores.timestamped_key_value_store_builder(Stores.in_memory_key_value_store("b"), STRING, LONG).build(),
        TimestampedKeyValueStore,
    )
    assert isinstance(
        Stores.window_store_builder(Stores.in_memory_window_store("c", 100, 10), STRING, LONG).build(), WindowStore
    )
    session = Stores.session_store_builder(Stores.persistent_session_store("d", 100), STRING, LONG).build()
    assert isinstance(session, SessionStore)
    assert not session.persistent  # no task directory: in memory


def test_the_test_driver_runs_a_topology_with_stores_from_the_factory() -> None:
    with TopologyTestDriver(topology()) as driver:
        words = driver.create_input_topic("words", STRING, STRING)
        for key, timestamp in WORDS:
            words.pipe_input(key, "x", timestamp)
        counted = driver.create_output_topic("counted", STRING, LONG).read_key_values_to_list()
        assert counted == [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("a", 3)]
        store: Any = driver.get_state_store("counts")
        assert store.get("a") == ValueAndTimestamp(3, 113)


def test_a_task_opens_the_factory_stores_in_rocksdb_in_kafka_streams_layout_with_changelogs(tmp_path: Path) -> None:
    t = topology()
    task_id = TaskId(0, 2)
    definitions = store_definitions(store_builders(t, 0))
    assert [(d.name, d.store_type, d.persistent, d.logged) for d in definitions] == [
        ("counts", StoreType.TIMESTAMPED_KEY_VALUE, True, True),
        ("windows", StoreType.WINDOW, True, True),
    ]
    assert changelog_topics(t, 0, APP) == {"counts": "app-counts-changelog", "windows": "app-windows-changelog"}
    collector = ChangelogCollector(task_id)
    state = ProcessorStateManager(
        task_id, definitions, application_id=APP, state_directory=StateDirectory(tmp_path, APP), collector=collector
    )
    counts_changelog = TopicPartition("app-counts-changelog", 2)
    windows_changelog = TopicPartition("app-windows-changelog", 2)
    state.initialize({counts_changelog: ChangelogState(0, 0), windows_changelog: ChangelogState(0, 0)})
    partition = TopicPartition("words", 2)
    task = StreamTask(task_id, build_processor_topology(t, 0, application_id=APP), [partition], stores=state.stores)
    state.attach(task.context)
    records = [ConsumerRecord.raw("words", 2, i, ts, k.encode(), b"x") for i, (k, ts) in enumerate(WORDS)]
    result = replay(task, [PartitionInput(partition, records)])
    assert result.records_processed == 5

    assert collector.counts() == {counts_changelog: 5, windows_changelog: 5}
    first = collector.for_partition(counts_changelog)[0]
    assert (first.key, first.value, first.timestamp) == (b"a", struct.pack(">q", 1), 100)
    state.checkpoint({counts_changelog: 5, windows_changelog: 5})
    task_dir = tmp_path / APP / "0_2"
    assert sorted(p.name for p in task_dir.iterdir()) == [".checkpoint", "rocksdb", "windows"]
    assert list_column_families(task_dir / "rocksdb" / "counts") == ["default", "keyValueWithTimestamp"]
    # segments of 300 000 ms (max(retention / 2, 60 s)): every window here is in segment 0
    assert sorted(p.name for p in (task_dir / "windows").iterdir()) == ["windows.0"]
    assert list_column_families(task_dir / "windows" / "windows.0") == ["default"]
    # entries in Java HashMap order
    assert (task_dir / ".checkpoint").read_text() == "0\n2\napp-windows-changelog 2 4\napp-counts-changelog 2 4\n"
    assert state.state_directory is not None
    state.state_directory.unlock()


def test_a_store_with_logging_disabled_has_no_changelog(tmp_path: Path) -> None:
    t = topology(logged=False)
    assert changelog_topics(t, 0, APP) == {"windows": "app-windows-changelog"}
    builder = t.store("counts")
    assert isinstance(builder, StoreBuilder)
    assert not builder.definition().logged
