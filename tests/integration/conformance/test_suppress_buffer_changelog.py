"""The suppress buffer's changelog and restore against Kafka Streams 4.2.2's own (oracle mode ``suppress-run``).

Kafka's ``TopologyTestDriver`` commits after every input record, so the buffer logs its dirty keys after each one;
streamproc's task here does the same (``ProcessorStateManager.flush`` after each record). For each program
(``SuppressRunner.java``: until window closes, until a time limit, ``maxBytes`` emitting early) and seeded inputs with
headers:

1. one streamproc run over all records: its outputs and the key, value and headers of every changelog record (the
   buffer's V3 values and tombstones, the upstream store's records) equal Kafka's, in order;
2. the restore: streamproc restores every store from the changelog records Kafka wrote for the first part of the
   input (what a streamproc run after a live app does), processes the rest, and its outputs and changelog records
   equal Kafka's for that rest; so the buffer Kafka left is the buffer streamproc resumes with;
3. ``maxBytes(n).shutDownWhenFull()``: the task stops at the same record with Kafka's message.

Changelog record timestamps are not compared: Kafka's buffer leaves them to the producer's clock.
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from streamproc.dsl import BufferConfig, Consumed, Materialized, Produced, StreamsBuilder, Suppressed, TimeWindows
from streamproc.engine.processor_topology import RecordCollector
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import SERDES
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_processor_topology, store_builders
from streamproc.errors import ProcessingError
from streamproc.state.changelog_collector import ChangelogCollector
from streamproc.state.processor_state_manager import ProcessorStateManager
from streamproc.state.restore_plan import ChangelogState
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_builders import store_definitions
from streamproc.state.time_ordered_buffer import InMemoryTimeOrderedKeyValueChangeBuffer
from streamproc_dev.conformance.oracle import JVM_OPTIONS, ensure_oracle_jar

pytestmark = pytest.mark.integration

APP = "suppress-run"
TASK = TaskId(0, 0)
SECOND = 1000
STRING, LONG = SERDES["String"](), SERDES["Long"]()
SEEDS = range(1, 7)
PROGRAMS = ("window-close", "time-limit", "max-bytes")
MAX_BYTES = 160


def topology(program: str, max_bytes: int = MAX_BYTES) -> Topology:
    """The Python twins of ``SuppressRunner.program``."""
    b = StreamsBuilder()
    grouped = b.stream("in", Consumed.with_(STRING, STRING)).group_by_key()
    out = Produced.with_(STRING, LONG)
    if program == "window-close":
        (
            grouped.windowed_by(TimeWindows.of_size_and_grace(10 * SECOND, 2 * SECOND))
            .count()
            .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
            .to_stream()
            .select_key(lambda w, v: w.key)
            .to("out", out)
        )
    elif program == "time-limit":
        (
            grouped.count(materialized=Materialized.as_("counts"))
            .suppress(Suppressed.until_time_limit(5 * SECOND, BufferConfig.max_records_(100)).with_name("hold"))
            .to_stream()
            .to("out", out)
        )
    else:
        config = BufferConfig.max_bytes_(max_bytes)
        if program == "max-bytes-shutdown":
            config = config.shut_down_when_full()
        grouped.count().suppress(Suppressed.until_time_limit(60 * SECOND, config)).to_stream().to("out", out)
    return b.build({"default.key.serde": "String", "default.value.serde": "String"})


def records(seed: int) -> list[list[Any]]:
    """Keys k0-k5, times mostly rising with some late ones, every fifth record with headers."""
    rng = random.Random(seed)
    out: list[list[Any]] = []
    now = 0
    for i in range(40):
        now += rng.choice((0, 300, 900, 2500, 4000))
        ts = max(0, now - rng.choice((0, 0, 0, 3000, 11000)))
        headers = [["trace", f"t{i}"], ["n", None]] if i % 5 == 0 else []
        out.append([f"k{rng.randrange(6)}", f"v{i}", ts, headers])
    return out


def split_of(seed: int) -> int:
    """Where the first part ends: from record 10 + 3 * seed on, the first record not earlier than every record before
    it. The suppress processor's stream time lives in memory only: Kafka Streams restarts it unknown (it is the
    next record's time), so a restart before a late record evicts less than one run over everything would; at this
    split both runs reach the same stream time with the first record of the rest."""
    inputs = records(seed)
    split = 10 + 3 * seed
    while inputs[split][2] < max(r[2] for r in inputs[:split]):
        split += 1
    return split


def _run_oracle(runs: list[dict[str, Any]]) -> dict[str, Any]:
    jar = ensure_oracle_jar()
    with tempfile.TemporaryDirectory(prefix="streamproc-suppress-run-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps({"runs": runs}))
        proc = subprocess.run(
            ["java", *JVM_OPTIONS, "-jar", str(jar), "suppress-run", str(path)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(proc.stdout)["runs"]
    return result


@pytest.fixture(scope="module")
def kafka_runs() -> dict[str, Any]:
    runs = [
        {
            "id": f"{program}/{seed}",
            "program": program,
            "max_bytes": MAX_BYTES,
            "split": split_of(seed),
            "records": records(seed),
        }
        for program in PROGRAMS
        for seed in SEEDS
    ]
    runs.append(
        {"id": "shutdown", "program": "max-bytes-shutdown", "max_bytes": MAX_BYTES, "split": 40, "records": records(1)}
    )
    return _run_oracle(runs)


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


class _Task:
    """One streamproc task over the program, committing (flushing its stores) after every record as Kafka's
    ``TopologyTestDriver`` does."""

    def __init__(self, program: str, state_dir: Path, restore: dict[str, list[list[Any]]] | None = None) -> None:
        built = topology(program)
        self.collector = ChangelogCollector(TASK)
        self.state = ProcessorStateManager(
            TASK,
            store_definitions(store_builders(built, None)),
            application_id=APP,
            state_directory=StateDirectory(state_dir, APP),
            collector=self.collector,
        )
        restore = restore or {}
        self.state.initialize(
            {TopicPartition(topic, 0): ChangelogState(0, len(rows)) for topic, rows in restore.items()}
        )
        for meta in self.state.registered.stores:
            tp = meta.changelog_partition
            if tp is not None and tp.topic in restore:
                self.state.restore(meta.name, _changelog_records(tp.topic, restore[tp.topic]))
        graph = build_processor_topology(
            built, None, application_id=APP, default_key_serde=STRING, default_value_serde=STRING
        )
        self.output = RecordCollector({"out": 1})
        self.task = StreamTask(
            TASK,
            graph,
            (TopicPartition("in", 0),),
            config=TaskConfig(application_id=APP),
            stores=self.state.stores,
            collector=self.output,
        )
        self.state.attach(self.task.context)
        self.task.initialize_topology()

    def process(self, offset: int, record: list[Any]) -> None:
        key, value, timestamp, headers = record
        raw = ConsumerRecord.raw(
            "in",
            0,
            offset,
            timestamp,
            key.encode(),
            value.encode(),
            headers=tuple((h, None if v is None else v.encode()) for h, v in headers),
        )
        self.task.add_records(TopicPartition("in", 0), (raw,))
        self.task.process(0)
        self.task.maybe_punctuate_stream_time()
        self.state.flush()

    def part(self) -> dict[str, Any]:
        """What Kafka's part holds: outputs and changelog records (key, value, headers) since the last part."""
        outputs = [[_hex(r.key), _hex(r.value), r.timestamp] for r in self.output.records]
        changelogs: dict[str, list[list[Any]]] = {}
        for r in self.collector:
            changelogs.setdefault(r.topic, []).append(
                [_hex(r.key), _hex(r.value), [[k, _hex(v)] for k, v in r.headers]]
            )
        self.output.records.clear()
        self.collector.clear()
        return {"outputs": outputs, "changelogs": changelogs}


def _changelog_records(topic: str, rows: list[list[Any]]) -> list[ConsumerRecord[bytes | None, bytes | None]]:
    return [
        ConsumerRecord.raw(
            topic,
            0,
            offset,
            0 if row[3] is None else row[3],
            bytes.fromhex(row[0]),
            None if row[1] is None else bytes.fromhex(row[1]),
            headers=tuple((k, None if v is None else bytes.fromhex(v)) for k, v in row[2]),
        )
        for offset, row in enumerate(rows)
    ]


def _kafka_part(part: dict[str, Any]) -> dict[str, Any]:
    changelogs = {topic: [row[:3] for row in rows] for topic, rows in part["changelogs"].items() if rows}
    return {"outputs": part["outputs"], "changelogs": changelogs}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_changelog_records_equal_kafkas(kafka_runs: dict[str, Any], program: str, seed: int, tmp_path: Path) -> None:
    kafka = kafka_runs[f"{program}/{seed}"]
    assert "error" not in kafka, kafka.get("error")
    split = split_of(seed)
    task = _Task(program, tmp_path)
    inputs = records(seed)
    for offset, record in enumerate(inputs[:split]):
        task.process(offset, record)
    first = task.part()
    for offset, record in enumerate(inputs[split:], start=split):
        task.process(offset, record)
    second = task.part()
    expected_first, expected_second = (_kafka_part(p) for p in kafka["parts"])
    buffer_topics = [t for t in expected_first["changelogs"] if "SUPPRESS" in t or "hold" in t]
    assert buffer_topics, "Kafka logged no buffer records: the inputs test nothing"
    assert first == expected_first
    assert second == expected_second
    assert any(p["outputs"] for p in kafka["parts"]), "no output at all"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_restoring_kafkas_buffer_then_processing_the_rest_equals_kafka(
    kafka_runs: dict[str, Any], program: str, seed: int, tmp_path: Path
) -> None:
    kafka = kafka_runs[f"{program}/{seed}"]
    split = split_of(seed)
    first, second = kafka["parts"]
    task = _Task(program, tmp_path, restore=first["changelogs"])
    buffers = [s for s in task.state.stores.values() if isinstance(s, InMemoryTimeOrderedKeyValueChangeBuffer)]
    assert len(buffers) == 1 and buffers[0].num_records() > 0, "Kafka left nothing buffered: the split tests nothing"
    for offset, record in enumerate(records(seed)[split:], start=split):
        task.process(offset, record)
    assert task.part() == _kafka_part(second)


def test_max_bytes_shut_down_when_full_stops_where_kafka_does(kafka_runs: dict[str, Any], tmp_path: Path) -> None:
    kafka = kafka_runs["shutdown"]
    assert "error" in kafka, "Kafka did not shut down: the input does not fill the buffer"
    task = _Task("max-bytes-shutdown", tmp_path)
    with pytest.raises(ProcessingError) as failure:
        for offset, record in enumerate(records(1)):
            task.process(offset, record)
    causes = [failure.value]
    while causes[-1].__cause__ is not None:
        causes.append(causes[-1].__cause__)  # type: ignore[arg-type]
    assert any(kafka["error"] in str(cause) for cause in causes), causes
    expected = _kafka_part(kafka["parts"][0])
    assert task.part()["outputs"] == expected["outputs"]
