"""A real Kafka Streams 4.2.2 application resumes on the RocksDB store and ``.checkpoint`` streamproc wrote.

The issue's proof, end to end on the session broker:

1. the Kafka Streams app (``conformance/.../StateResumeApp.java``: per-key counts in a persistent timestamped store)
   processes the first records and stops cleanly (its own checkpoint on disk);
2. streamproc opens that task directory with ``ProcessorStateManager`` (checkpoint trusted, 0 records to restore),
   processes the next records with the same counting logic in a ``StreamTask``, publishes the changelog records,
   commits the group offset with Kafka Streams' commit metadata, then writes the store and ``.checkpoint``;
3. the Kafka Streams app starts again on that state directory: it restores **0** records, its store holds the counts
   of every record (those streamproc processed included), and it goes on with the records produced after.

Cases: a timestamped key-value store under at_least_once, a timestamped window store (segments ``<store>.<start>``)
under at_least_once, the key-value store under exactly_once_v2 (changelog with transaction markers; Kafka
Streams deletes the checkpoint at start-up and still restores nothing), and a plain (non-timestamped) key-value store
(``StateResumeAppPlainKv``) under at_least_once.

Each case runs twice: step 3 on Kafka Streams 4.2.2 (the oracle jar) and on 4.3.1 (jars from
``conformance/ks43/pom.xml``, cached in ``~/.cache/streamproc``), an upgraded application meeting the 4.2 layout
streamproc writes. 4.3 (KIP-1035) migrates the legacy ``.checkpoint`` into an ``offsets`` column family in each store
(segment) on its first start, deletes the file and restores 0 records; step 1 stays on 4.2.2 because streamproc reads
only the 4.2 layout (a store 4.3 opened is refused, which the 4.3 runs check too).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from rocksdict import AccessType, Options, Rdict

from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.kafka.librdkafka import alter_committed_offsets
from streamproc.kafka.range_reader import READ_COMMITTED, RangeReader
from streamproc.state.changelog_collector import ChangelogCollector
from streamproc.state.commit_metadata import ProcessorMetadata, TopicPartitionMetadata
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.offsets_column_family import (
    OFFSETS_COLUMN_FAMILY_NAME,
    STATUS_CLOSED,
    StoreOffsets,
    decode_offsets_column_family,
)
from streamproc.state.processor_state_manager import ProcessorStateManager, StoreDefinition
from streamproc.state.restore_plan import ChangelogState, ProcessingGuarantee
from streamproc.state.rocksdb_store import IncompatibleStore, inspect_rocksdb
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import column_families
from streamproc.state.store_registration import KS_VERSION_4_3
from streamproc.state.store_type import StoreType
from streamproc.state.stores import KeyValueStore, TimestampedKeyValueStore, TimestampedWindowStore, ValueAndTimestamp
from streamproc_dev.conformance.oracle import CONFORMANCE_DIR, ORACLE_JAR, ensure_oracle_jar
from tests.integration.conftest import create_topic

APP_SOURCE_DIR = CONFORMANCE_DIR / "src" / "main" / "java" / "dev" / "streamproc" / "oracle"
#: ``StateResumeApp`` (timestamped stores) and ``StateResumeAppPlainKv`` (a plain key-value store), compiled together.
APP_SOURCES = (APP_SOURCE_DIR / "StateResumeApp.java", APP_SOURCE_DIR / "StateResumeAppPlainKv.java")
#: The Kafka Streams the oracle jar holds (phase 1 always runs on it: streamproc reads only the 4.2 layout).
KS_42 = "4.2.2"
#: The latest 4.3 patch on Maven Central (``conformance/ks43/pom.xml``); phase 3 runs on it as an upgraded app.
KS_43 = "4.3.1"
KS43_POM = CONFORMANCE_DIR / "ks43" / "pom.xml"
KS43_CACHE = Path.home() / ".cache" / "streamproc" / f"kafka-streams-{KS_43}"
TASK = TaskId(0, 0)
COUNTS = StoreDefinition("counts", StoreType.TIMESTAMPED_KEY_VALUE, serde_for("String"), serde_for("Long"))
#: ``StateResumeAppPlainKv``'s store: ``Stores.persistentKeyValueStore("counts")``, value = the count only.
PLAIN_COUNTS = StoreDefinition("counts", StoreType.KEY_VALUE, serde_for("String"), serde_for("Long"))
#: ``StateResumeApp``'s window store: one-minute windows, 10 minutes retention (so 5-minute segments).
WINDOW_MS = 60_000
WCOUNTS = StoreDefinition(
    "wcounts",
    StoreType.TIMESTAMPED_WINDOW,
    serde_for("String"),
    serde_for("Long"),
    retention_ms=600_000,
    window_size_ms=WINDOW_MS,
)
KEYS = ("apple", "banana", "cherry", "date")


@pytest.fixture(scope="module")
def app_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A private copy of the oracle jar (Kafka Streams 4.2.2 and its dependencies) plus ``StateResumeApp``.

    The copy keeps the test independent of a concurrent rebuild of ``conformance/target``; a copy taken while the
    jar is being rewritten fails to compile against, so it is retried.
    """
    work = tmp_path_factory.mktemp("state-resume-app")
    failure = ""
    for attempt in range(3):
        jar = ORACLE_JAR if ORACLE_JAR.is_file() else ensure_oracle_jar()
        copy = work / f"oracle-{attempt}.jar"
        shutil.copyfile(jar, copy)
        classes = work / f"classes-{attempt}"
        proc = compile_apps(str(copy), classes)
        if proc.returncode == 0:
            return f"{classes}:{copy}"
        failure = proc.stderr[-4000:]
        time.sleep(15)
    raise AssertionError(f"StateResumeApp does not compile against {ORACLE_JAR}:\n{failure}")


@pytest.fixture(scope="module")
def app_classpath_43(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``StateResumeApp`` compiled against Kafka Streams 4.3 (jars copied once by ``conformance/ks43/pom.xml``)."""
    if not (KS43_CACHE / f"kafka-streams-{KS_43}.jar").is_file():
        proc = subprocess.run(
            [
                "mvn",
                "-q",
                "-f",
                str(KS43_POM),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={KS43_CACHE}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert proc.returncode == 0, f"cannot fetch Kafka Streams {KS_43}:\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}"
    jars = ":".join(str(jar) for jar in sorted(KS43_CACHE.glob("*.jar")))
    classes = tmp_path_factory.mktemp("state-resume-app-43") / "classes"
    proc = compile_apps(jars, classes)
    assert proc.returncode == 0, (
        f"StateResumeApp does not compile against Kafka Streams {KS_43}:\n{proc.stderr[-4000:]}"
    )
    return f"{classes}:{jars}"


def compile_apps(classpath: str, classes: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["javac", "-cp", classpath, "-d", str(classes), *map(str, APP_SOURCES)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def compile_beside(app_classpath: str, sources: list[Path], classes: Path) -> str:
    """Java apps compiled beside ``StateResumeApp`` (same package: they reuse its run protocol); their classpath."""
    proc = subprocess.run(
        ["javac", "-cp", app_classpath, "-d", str(classes), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return f"{classes}:{app_classpath}"


def run_java_app(classpath: str, args: list[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run a resume app to its end: its ``result`` event, with every event (``events``) and its ``stderr``.

    ``env`` is added to this process' environment: the run protocol's switches (``StateResumeApp``'s
    ``STREAMPROC_ORACLE_*``)."""
    environment = None if env is None else {**os.environ, **env}
    proc = subprocess.run(
        ["java", "-cp", classpath, *args], capture_output=True, text=True, timeout=300, check=False, env=environment
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    results = [e for e in events if e["event"] == "result"]
    assert proc.returncode == 0 and results, f"Kafka Streams app failed: {events}\n{proc.stderr[-6000:]}"
    result: dict[str, Any] = results[0]
    result["events"] = events
    result["stderr"] = proc.stderr
    return result


def run_app(
    classpath: str, bootstrap: str, app_id: str, state_dir: Path, topic: str, end: int, case: Case
) -> dict[str, Any]:
    return run_java_app(classpath, case.java_args(bootstrap, app_id, state_dir, topic, end))


def store_databases(task_dir: Path, store: StoreDefinition) -> list[Path]:
    """The RocksDB directories of ``store``: ``rocksdb/<name>``, or one ``<name>/<name>.<start>`` per segment."""
    if store.store_type.segmented:
        return sorted((task_dir / store.name).iterdir(), key=lambda p: int(p.name.rpartition(".")[2]))
    return [task_dir / "rocksdb" / store.name]


def read_offsets_column_family(db: Path) -> StoreOffsets:
    """The ``offsets`` column family of a store Kafka Streams 4.3 closed, read through ``rocksdict`` read-only."""
    families = Rdict.list_cf(str(db))
    rdict = Rdict(
        str(db),
        options=Options(raw_mode=True),
        column_families={name: Options(raw_mode=True) for name in families},
        access_type=AccessType.read_only(),
    )
    try:
        entries: list[tuple[bytes, bytes]] = []
        for key, value in rdict.get_column_family(OFFSETS_COLUMN_FAMILY_NAME).items():
            assert isinstance(key, bytes) and isinstance(value, bytes)  # raw mode
            entries.append((key, value))
    finally:
        rdict.close()
    return decode_offsets_column_family(entries, where=str(db))


def produce(bootstrap: str, topic: str, records: list[tuple[str, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, timestamp in records:
        producer.produce(topic, key=key.encode(), value=b"x", partition=0, timestamp=timestamp)
    assert producer.flush(30) == 0


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamproc-watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, 0), timeout=30)
        return int(low), int(high)
    finally:
        consumer.close()


def read_range(
    bootstrap: str, topic: str, start: int, end: int
) -> tuple[list[ConsumerRecord[bytes | None, bytes | None]], frozenset[int]]:
    """Committed records of ``[start, end)`` of partition 0, and the offsets in the range no record came from
    (transaction markers, aborted records): what ``ChangelogState.control_offsets`` needs.

    Read with the fetch step's own ``RangeReader``, which stops on proof of reaching ``end`` (a record at the end,
    or end of log at a position past it), never on a quiet spell.
    """
    reader = RangeReader({"bootstrap.servers": bootstrap}, topic, 0, start, end, isolation_level=READ_COMMITTED)
    out = list(reader.records())
    present = {record.offset for record in out}
    return out, frozenset(offset for offset in range(start, end) if offset not in present)


class Counter(Processor):
    """The Python twin of ``StateResumeApp.Counter``."""

    store: TimestampedKeyValueStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        store = context.get_state_store("counts")
        assert isinstance(store, TimestampedKeyValueStore)
        self.store = store

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        self.store.put(record.key, ValueAndTimestamp((old.value if old else 0) + 1, record.timestamp))


class PlainCounter(Processor):
    """The Python twin of ``StateResumeAppPlainKv.PlainCounter``."""

    store: KeyValueStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        store = context.get_state_store("counts")
        assert isinstance(store, KeyValueStore)
        self.store = store

    def process(self, record: Record[Any, Any]) -> None:
        self.store.put(record.key, (self.store.get(record.key) or 0) + 1)


class WindowCounter(Processor):
    """The Python twin of ``StateResumeApp.WindowCounter``."""

    store: TimestampedWindowStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        store = context.get_state_store("wcounts")
        assert isinstance(store, TimestampedWindowStore)
        self.store = store

    def process(self, record: Record[Any, Any]) -> None:
        window_start = record.timestamp - record.timestamp % WINDOW_MS
        old = self.store.fetch_at(record.key, window_start)
        count = (old.value if old else 0) + 1
        self.store.put(record.key, ValueAndTimestamp(count, record.timestamp), window_start)


def expected_counts(records: list[tuple[str, int]]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = {}
    for key, timestamp in records:
        counts[key] = [counts.get(key, [0, 0])[0] + 1, timestamp]
    return counts


def expected_window_counts(records: list[tuple[str, int]]) -> dict[str, list[int]]:
    return expected_counts([(f"{key}@{ts - ts % WINDOW_MS}", ts) for key, ts in records])


def expected_plain_counts(records: list[tuple[str, int]]) -> dict[str, int]:
    return {key: count for key, (count, _) in expected_counts(records).items()}


@dataclass(frozen=True)
class Case:
    mode: str
    store: StoreDefinition
    processor: Callable[[], Processor]
    expected: Callable[[list[tuple[str, int]]], Mapping[str, object]]
    step_ms: int
    guarantee: ProcessingGuarantee = ProcessingGuarantee.AT_LEAST_ONCE

    @property
    def id(self) -> str:
        return f"{self.mode}-{'eos' if self.guarantee.eos else 'alos'}"

    def java_args(self, bootstrap: str, app_id: str, state_dir: Path, topic: str, end: int) -> list[str]:
        guarantee = "eos" if self.guarantee.eos else "alos"
        common = [bootstrap, app_id, str(state_dir), topic, str(end)]
        if self.mode == "plainkv":
            return ["dev.streamproc.oracle.StateResumeAppPlainKv", *common, guarantee]
        return ["dev.streamproc.oracle.StateResumeApp", *common, self.mode, guarantee]


CASES = [
    Case("kv", COUNTS, Counter, expected_counts, 1),
    Case("window", WCOUNTS, WindowCounter, expected_window_counts, 20_000),
    Case("kv", COUNTS, Counter, expected_counts, 1, ProcessingGuarantee.EXACTLY_ONCE_V2),
    Case("plainkv", PLAIN_COUNTS, PlainCounter, expected_plain_counts, 1),
]


def streamproc_run(
    case: Case, bootstrap: str, admin: AdminClient, app_id: str, state_dir: Path, topic: str, end: int
) -> dict[TopicPartition, int]:
    """Process ``[committed, end)`` of ``topic`` on the state Kafka Streams left, and hand it back."""
    name = case.store.name
    changelog = TopicPartition(f"{app_id}-{name}-changelog", 0)
    low, high = watermarks(bootstrap, changelog.topic)
    _, gaps = read_range(bootstrap, changelog.topic, low, high)
    collector = ChangelogCollector(TASK)
    directory = StateDirectory(state_dir, app_id)
    manager = ProcessorStateManager(
        TASK,
        [case.store],
        application_id=app_id,
        state_directory=directory,
        guarantee=case.guarantee,
        collector=collector,
    )
    plan = manager.initialize({changelog: ChangelogState(low, high, control_offsets=gaps)})
    assert plan.total_records_restored == 0, plan
    assert plan.checkpoint_deleted_at_init == case.guarantee.eos
    start, restore_end = manager.restore_bounds(name)
    records, _ = read_range(bootstrap, changelog.topic, start, restore_end)
    assert manager.restore(name, records) == 0

    # not confluent-kafka's list_consumer_group_offsets: it reads Kafka Streams' metadata past its end now and then
    committed, _unstable = read_committed_offsets(admin, app_id)
    first = committed[TopicPartition(topic, 0)].offset
    source = SourceNode("source", [topic], lambda _t, d: d.decode() if d else None, lambda _t, d: d)
    node = ProcessorNode("count", case.processor())
    source.add_child(node)
    input_tp = TopicPartition(topic, 0)
    task = StreamTask(TASK, ProcessorTopology([source, node]), [input_tp], stores=manager.stores)
    manager.attach(task.context)
    task.initialize_topology()
    task.add_records(input_tp, read_range(bootstrap, topic, first, end)[0])
    while task.process():
        pass
    assert len(collector) == end - first

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for record in collector:
        producer.produce(
            record.topic, key=record.key, value=record.value, partition=record.partition, timestamp=record.timestamp
        )
    assert producer.flush(30) == 0
    new_low, new_high = watermarks(bootstrap, changelog.topic)
    assert new_high == high + len(collector)

    committable = task.committable_offsets()[input_tp]
    metadata = TopicPartitionMetadata(committable.partition_time, ProcessorMetadata()).encode()
    # exactly these 12 characters: confluent-kafka's alter_consumer_group_offsets appends a NUL Kafka Streams rejects
    [answer] = alter_committed_offsets(admin, app_id, [(topic, 0, committable.offset, metadata)], timeout_s=30)
    assert answer.error == 0

    written = manager.checkpoint(
        {changelog: new_high},
        changelogs={changelog: ChangelogState(new_low, new_high, control_offsets=gaps)},
    )
    directory.unlock()
    return written


@pytest.mark.parametrize("resume_version", [KS_42, KS_43], ids=[f"ks{KS_42}", f"ks{KS_43}"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kafka_streams_resumes_on_streamproc_state(
    case: Case,
    resume_version: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    app_classpath: str,
    request: pytest.FixtureRequest,
) -> None:
    app_id = unique("resume")
    topic = create_topic(admin, unique("words"))
    state_dir = tmp_path / "state"
    # An hour ago, on a window boundary. Not a fixed date: Kafka Streams gives a window store's changelog
    # cleanup.policy=compact,delete with retention.ms = store retention + 1 day, so the broker's retention check
    # (every second on the test broker) deletes records stamped years ago, active segment included, and the test
    # read an empty changelog whenever the check ran before the read.
    base = (int(time.time() * 1000) // WINDOW_MS - 60) * WINDOW_MS
    step = case.step_ms
    phase_a = [(KEYS[i % 3], base + i * step) for i in range(12)]
    phase_b = [(KEYS[i % 4], base + (12 + i) * step) for i in range(9)]
    phase_c = [(KEYS[(i + 1) % 4], base + (21 + i) * step) for i in range(5)]
    total = len(phase_a) + len(phase_b) + len(phase_c)

    produce(kafka_broker, topic, phase_a)
    first = run_app(app_classpath, kafka_broker, app_id, state_dir, topic, len(phase_a), case)
    assert first["store"] == case.expected(phase_a)
    task_dir = state_dir / app_id / "0_0"
    changelog = TopicPartition(f"{app_id}-{case.store.name}-changelog", 0)
    ks_records, _ = read_range(kafka_broker, changelog.topic, *watermarks(kafka_broker, changelog.topic))
    assert len(ks_records) == len(phase_a)
    # Kafka Streams checkpoints the offset of the last changelog record it wrote (under EOS: before the marker).
    assert OffsetCheckpoint(task_dir / ".checkpoint").read() == {changelog: ks_records[-1].offset}

    produce(kafka_broker, topic, phase_b)
    end_b = len(phase_a) + len(phase_b)
    written = streamproc_run(case, kafka_broker, admin, app_id, state_dir, topic, end_b)
    log_end = watermarks(kafka_broker, changelog.topic)[1]
    assert written == {changelog: log_end - 1}
    assert (task_dir / ".checkpoint").read_bytes() == f"0\n1\n{changelog.topic} 0 {log_end - 1}\n".encode()
    if case.store.store_type.segmented:
        interval = case.store.segment_interval()
        starts = sorted({(ts // interval) * interval for _, ts in phase_a + phase_b})
        assert [db.name for db in store_databases(task_dir, case.store)] == [
            f"{case.store.name}.{start}" for start in starts
        ]
    for db in store_databases(task_dir, case.store):
        info = inspect_rocksdb(db)
        assert info.column_families == column_families(case.store.store_type)
        assert set(info.comparators.values()) == {"leveldb.BytewiseComparator"}
        assert set(info.merge_operators.values()) == {"nullptr"}
        assert not (db / "rocksdict-config.json").exists()
    assert StateDirectory(state_dir, app_id).process_id() is not None  # Kafka Streams' own file, left untouched

    produce(kafka_broker, topic, phase_c)
    resume_classpath = app_classpath if resume_version == KS_42 else request.getfixturevalue("app_classpath_43")
    second = run_app(resume_classpath, kafka_broker, app_id, state_dir, topic, total, case)
    restore_totals = [e["total"] for e in second["events"] if e["event"] == "restore_end"]
    assert second["restored"] == 0, second["events"]
    assert restore_totals == [0], second["events"]
    assert second["store"] == case.expected(phase_a + phase_b + phase_c)
    assert "TaskCorruptedException" not in second["stderr"]

    last_record = read_range(kafka_broker, changelog.topic, *watermarks(kafka_broker, changelog.topic))[0][-1]
    if resume_version == KS_42:
        assert OffsetCheckpoint(task_dir / ".checkpoint").read() == {changelog: last_record.offset}
        for db in store_databases(task_dir, case.store):
            assert inspect_rocksdb(db).column_families == column_families(case.store.store_type)
        return
    # Kafka Streams 4.3 (KIP-1035) committed the legacy ``.checkpoint`` streamproc wrote into each store's ``offsets``
    # column family on its first start and deleted the file (``LegacyCheckpointingStateStore.migrateLegacyOffsets``);
    # on close it commits there again and, without ``upgrade.from``, writes no ``.checkpoint``.
    assert "Migrating legacy checkpoint file for task 0_0" in second["stderr"]
    assert "Migrated legacy checkpoint file for task 0_0 with offsets migrated for 1 stores" in second["stderr"]
    assert not (task_dir / ".checkpoint").exists()
    for db in store_databases(task_dir, case.store):
        assert inspect_rocksdb(db).column_families == (
            *column_families(case.store.store_type),
            OFFSETS_COLUMN_FAMILY_NAME,
        )
        stored = read_offsets_column_family(db)
        assert stored.offsets == {changelog: last_record.offset}, db
        assert stored.status == STATUS_CLOSED
    # The hand-off is one way for 4.3: streamproc reads only the 4.2 layout, so it refuses (never silently reuses) a
    # store 4.3 has opened (state.md §15.6).
    manager = ProcessorStateManager(
        TASK,
        [case.store],
        application_id=app_id,
        state_directory=StateDirectory(state_dir, app_id),
        ks_version=KS_VERSION_4_3,
    )
    with pytest.raises(IncompatibleStore, match=OFFSETS_COLUMN_FAMILY_NAME):
        manager.initialize({changelog: ChangelogState(*watermarks(kafka_broker, changelog.topic))})
