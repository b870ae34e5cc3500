"""Side-by-side DSL programs handed off to their real Java twins, multi-partition, end to end (issue #16).

For each program (a re-key → group_by_key → count/reduce through one repartition topic, a windowed aggregate, a
stream–stream outer join with its shared outer store, a stream–table left join, a KTable group_by count/reduce/
aggregate, a re-key join with ``topology.optimization=all`` whose table uses its source topic as changelog, and the
shapes streamproc runs over columns: a Bytes count, the bench's re-keyed windowed sum and a hopping windowed count,
see :data:`EXECUTION`): seeded records in three parts go to 3-partition input topics on the real broker. The Java
program (``DslPrograms.java``, oracle mode ``dsl-app``: a real Kafka Streams 4.2.2 app) processes the first part and
stops; ``streamproc run`` (plan, fetch, process on Spark local, hand-off into the app's state dir) processes the
second with the Python twin (``streamproc_dev/conformance/dsl_programs.py``); the app resumes and processes the
third. A second app processes everything alone (for a re-key joined with a table: restarted after each part, as the
hand-off path is, see :data:`RESTARTED_REFERENCE`). The resumed app restores nothing, its final stores (every store
of the topology, by interactive query) equal the lone app's, and the output topics hold the same records per
partition (last value per key, and the same multiset of records where that does not depend on timing: not for a
KTable group_by, whose intermediate aggregates depend on the order the upstream tasks wrote in). The input topics
keep every record (none is purged or written by the hand-off, not even the one a table restores from).

The programs' topics have fixed names (the describe() twins), so the programs run one after the other, each on
freshly created topics deleted afterwards; both apps of a program write to the same output topics, the hand-off
run's records before the lone app's (split at the offsets between).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.engine.topology_description import Sink, Source
from streamproc_dev.conformance.oracle import JVM_OPTIONS, ensure_oracle_jar
from tests.integration.conftest import delete_topics, recreate_topics
from tests.integration.handoff import dsl_handoff_programs
from tests.integration.handoff.test_handoff import run

pytestmark = pytest.mark.integration

PARTITIONS = 3
PARTS = 3
RECORDS_PER_PART = 24  # per input topic
KEYS = [f"k{i}" for i in range(6)]
USERS = [f"u{i}" for i in range(5)]

#: program -> input topic -> (keys, values): values the program re-keys by come from a small set (its new keys).
DATA: dict[str, dict[str, tuple[list[str], list[str]]]] = {
    "two_aggregates_one_repartition_optimized": {"in": (KEYS, ["apple", "pear", "fig", "plum"])},
    "windowed_aggregate_materialized": {"in": (KEYS, list("abc"))},
    "stream_stream_outer_join_named": {"left": (KEYS, list("ab")), "right": (KEYS, list("xy"))},
    "stream_stream_inner_join_named": {"left": (KEYS, list("ab")), "right": (KEYS, list("xy"))},
    "stream_table_left_join_named": {"customers": (KEYS, ["ann", "bob", "cy"]), "orders": (KEYS, list("pq"))},
    "table_group_by": {"in": (KEYS, ["red", "green", "blue"])},
    "rekey_join_optimized": {"users": (USERS, ["ann", "bob", "cy"]), "clicks": (KEYS, USERS)},
    "bytes_count": {"in": (KEYS, ["apple", "pear"])},
    "bytes_window_sum": {"in": (KEYS, ["apple", "banana", "cherry", "fig"])},
    "bytes_window_count": {"in": (KEYS, ["apple", "pear"])},
    "session_aggregate": {"in": (KEYS, list("abc"))},
}

#: Programs whose values are the listed words as they are (no ``<part>.<i>`` suffix): a re-key by the value gives
#: few keys, and where updates are running totals of the re-keyed records their order in the repartition topic
#: (which upstream task wrote first: a live app's timing) does not change them (a sum of one length per key).
PLAIN_VALUES = frozenset({"two_aggregates_one_repartition_optimized", "table_group_by", "rekey_join_optimized",
                          "bytes_window_sum"})  # fmt: skip

#: Programs whose late records are not before the previous part's latest record: the restored window store's stream
#: time is then not after the hand-off input's earliest timestamp, which the columnar windowed aggregate requires
#: (``spark/columnar/window.py``; else the task runs per record).
NOT_BEFORE_PREVIOUS_PART = frozenset({"bytes_window_sum", "bytes_window_count"})

#: How streamproc runs each sub-topology's tasks (their reports' ``execution``) where not one record at a time: over
#: columns (``spark/columnar/count.py``, a re-key to a repartition sink too, with String serdes as with ByteArray
#: ones; ``spark/columnar/window.py`` for the windowed aggregate, here over the re-keyed records sub-topology 0
#: appended to the repartition topic in the run, and for the windowed count over the input topic, by its count fold).
EXECUTION: dict[str, dict[int, str]] = {
    "bytes_count": {0: "columnar"},
    "bytes_window_sum": {0: "columnar", 1: "columnar"},
    "bytes_window_count": {0: "columnar"},
    "two_aggregates_one_repartition_optimized": {0: "columnar"},  # the String re-key to the repartition topic
    "rekey_join_optimized": {1: "columnar"},  # the String re-key of the clicks
}


@pytest.fixture(scope="module")
def oracle_jar() -> Path:
    return ensure_oracle_jar()


def _topics(factory: str) -> tuple[list[str], list[str]]:
    """The program's input topics (sources no sink of it writes) and output topics (sinks no source reads)."""
    sources: list[str] = []
    sinks: list[str] = []
    topology = getattr(dsl_handoff_programs, factory)()
    for sub in topology.describe().subtopologies:
        for node in sub.nodes:
            if isinstance(node, Source):
                sources.extend(node.topics)
            elif isinstance(node, Sink) and node.topic is not None:
                sinks.append(node.topic)
    return [t for t in dict.fromkeys(sources) if t not in sinks], [t for t in dict.fromkeys(sinks) if t not in sources]


def _parts(factory: str, seed: int) -> list[list[tuple[str, str, str, int]]]:
    """Three parts of ``(topic, key, value, timestamp)``, topics interleaved, timestamps rising by about a second
    with one record in eight up to 8 s late (within the joins' windows, past the one-minute windows' no grace)."""
    rng = random.Random(f"{seed}/{factory}")
    topics = DATA[factory]
    now = int(time.time() * 1000) - 3_600_000
    parts = []
    floor = 0
    for part in range(PARTS):
        records = []
        for i in range(RECORDS_PER_PART * len(topics)):
            topic = rng.choice(sorted(topics))
            keys, values = topics[topic]
            now += rng.randrange(200, 2_000)
            late = rng.random() < 0.125 and factory not in TABLE_UPDATES_FIRST  # parts' times must not overlap
            timestamp = now - rng.randrange(1_000, 8_000) if late else now
            if factory in NOT_BEFORE_PREVIOUS_PART:
                timestamp = max(timestamp, floor)
            records.append((topic, rng.choice(keys), f"{rng.choice(values)}", timestamp))
            if factory in PLAIN_VALUES:
                continue
            records[-1] = (topic, records[-1][1], f"{records[-1][2]}{part}.{i}", timestamp)
        if factory in TABLE_UPDATES_FIRST:
            records = _table_updates_first(records, TABLE_UPDATES_FIRST[factory])
        parts.append(records)
        floor = max(r[3] for r in records)
    return parts


#: Programs that join a re-keyed stream with a table: per part, the table's updates come before the stream's records
#: (in offsets and timestamps). A live app reads the table's records at once but the re-keyed ones only once its
#: upstream sub-topology wrote them to the repartition topic, so which table value a record joins would otherwise
#: depend on that timing (two real runs differed); in this order the timestamp order (a batch's, and the live app's
#: with ``max.task.idle.ms``) and the arrival order agree.
TABLE_UPDATES_FIRST = {"rekey_join_optimized": "users"}


def _table_updates_first(records: list[tuple[str, str, str, int]], table: str) -> list[tuple[str, str, str, int]]:
    """``records`` with the ``table`` topic's first, then the rest, each group in its order, timestamps rising."""
    ordered = [r for r in records if r[0] == table] + [r for r in records if r[0] != table]
    times = sorted(r[3] for r in records)
    return [(topic, key, value, times[i]) for i, (topic, key, value, _t) in enumerate(ordered)]


def _produce(bootstrap: str, records: list[tuple[str, str, str, int]]) -> None:
    """Keyed records partitioned as Java's producer does (murmur2), so that a stream and a table are co-partitioned."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for topic, key, value, timestamp in records:
        producer.produce(topic, key=key.encode(), value=value.encode(), timestamp=timestamp)
    assert producer.flush(60) == 0


def _app(jar: Path, bootstrap: str, app_id: str, state_dir: Path, program: str) -> dict[str, Any]:
    """The Java program as a real app over everything its inputs hold (``DslAppRunner``): its result line."""
    proc = subprocess.Popen(
        ["java", *JVM_OPTIONS, "-jar", str(jar), "dsl-app", bootstrap, app_id, str(state_dir), program],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        threads = subprocess.run(["jcmd", str(proc.pid), "Thread.print"], capture_output=True, text=True, check=False)
        proc.kill()
        stdout, stderr = proc.communicate()
        detail = f"{stdout}\n{stderr[-3000:]}\n{threads.stdout}"
        raise AssertionError(f"{program} did not finish in 240 s: {detail}") from None
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    results = [e for e in events if e["event"] == "result"]
    assert proc.returncode == 0 and results, f"Kafka Streams app {program} failed: {events}\n{stderr[-6000:]}"
    result: dict[str, Any] = results[0]
    result["events"] = events
    return result


def _watermarks(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], tuple[int, int]]:
    """``(log start, log end)`` per partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dsl-handoff-ends"})
    try:
        return {
            (t, p): consumer.get_watermark_offsets(KafkaTopicPartition(t, p), timeout=10)
            for t in topics
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def _ends(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    return {tp: end for tp, (_start, end) in _watermarks(bootstrap, topics).items()}


def _read(bootstrap: str, topics: list[str]) -> list[tuple[str, int, int, str | None, str | None]]:
    """Every committed record of ``topics``: ``(topic, partition, offset, key hex, value hex)``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "dsl-handoff-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }  # fmt: skip
    )
    ends = _ends(bootstrap, topics)
    out = []
    try:
        consumer.assign([KafkaTopicPartition(t, p, 0) for t, p in ends])
        positions = dict.fromkeys(ends, 0)
        idle = 0
        while any(positions[tp] < ends[tp] for tp in ends) and idle < 3:
            message = consumer.poll(1)
            if message is None:
                idle += 1  # the rest is a trailing transaction marker
                continue
            idle = 0
            assert message.error() is None, message.error()
            key, value = message.key(), message.value()
            out.append(
                (
                    message.topic(),
                    message.partition(),
                    message.offset(),
                    None if key is None else key.hex(),
                    None if value is None else value.hex(),
                )
            )
            positions[(message.topic(), message.partition())] = message.offset() + 1
    finally:
        consumer.close()
    return out


def _summary(records: list[tuple[str, int, int, str | None, str | None]]) -> dict[str, Any]:
    """Per output partition: each key's last value, and the multiset of records."""
    last: dict[tuple[str, int, str | None], str | None] = {}
    for topic, partition, _offset, key, value in sorted(records, key=lambda r: (r[0], r[1], r[2])):
        last[(topic, partition, key)] = value
    return {"last": last, "records": Counter((t, p, k, v) for t, p, _o, k, v in records)}


#: A KTable ``groupBy``'s subtract/add pairs reach the re-grouped key from several upstream tasks in an order that
#: depends on when each task wrote (a live app's timing, streamproc's stages): every run ends with the same values,
#: but how often an intermediate aggregate is emitted differs between two real runs as much as after a hand-off.
ORDER_DEPENDENT_INTERMEDIATES = frozenset({"table_group_by"})

#: Programs whose output key is a window's key (``toStream().selectKey(windowed.key())``) behind a repartition topic
#: that several upstream tasks write: the last update per key is that of the window the last-written record fell in,
#: which depends on which upstream task wrote last (a live app's timing, not the input). The multiset of the
#: updates does not (each re-keyed value has one length, so a window's running sums do not depend on that order).
LAST_UPDATE_ORDER_DEPENDENT = frozenset({"bytes_window_sum"})

#: Where the hand-off fails: factory -> the exact failure.
KNOWN_FAILURES: dict[str, str] = {}


#: Programs also run with ``--split 2`` (issue #29): every task of every sub-topology the executor splits runs as two
#: key shards and a merge; the real app must resume from the merged stores, checkpoints and offsets as from a whole run.
SPLIT = (
    "two_aggregates_one_repartition_optimized",
    "windowed_aggregate_materialized",
    "session_aggregate",
    "stream_stream_inner_join_named",
)


def _cases() -> list[Any]:
    return [
        pytest.param(
            factory,
            split,
            id=factory if split == "off" else f"{factory}-split{split}",
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[factory])] if factory in KNOWN_FAILURES else [],
        )
        for factory in dsl_handoff_programs.NAMES
        for split in ("off", *(("2",) if factory in SPLIT else ()))
    ]


#: Programs whose reference is a real app restarted where the hand-off path switches (after each part), not one run
#: over everything: a re-key joined with a table. One continuous live run joins each re-keyed record with the table
#: value current when it comes up, and the repartition topic holds the upstream tasks' records in the order they
#: were produced (one task's later parts before another's first), so records of a later part meet the table before
#: records of an earlier part do: its result depends on that interleaving, not on the input (FINDINGS.md). Per part,
#: with the table's updates first (:data:`TABLE_UPDATES_FIRST`), a live app's result is the input's.
#: And a windowed aggregate with late records: its processor's stream time lives in memory only
#: (``KStreamWindowAggregateProcessor.observedStreamTime`` starts at -1 on every start), so a late record that comes
#: first after a restart is aggregated into a window a continuous run had closed and dropped it from; whether one
#: does depends on where the minute boundaries fall (the data's timestamps follow the wall clock). An app restarted
#: at the same points keeps it as the hand-off does.
RESTARTED_REFERENCE = frozenset({"rekey_join_optimized", "windowed_aggregate_materialized"})


def assert_resumed_stores_equal(resumed: dict[str, Any], alone: dict[str, Any]) -> None:
    """Every store of the app resumed after the hand-off equals the lone app's, each read by interactive query and
    not empty (else the data tests nothing)."""
    for store, contents in alone["store"].items():
        assert contents, f"{store} is empty after the whole input: the data tests nothing"
        assert "(no interactive query reads this store)" not in contents, store
        assert resumed["store"][store] == contents, f"store {store}: resumed after hand-off != alone"


class _Outputs:
    """Which run wrote which output records: each run's ``[before, after)`` offsets per output partition."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        self.bootstrap, self.topics = bootstrap, topics
        self.spans: list[tuple[str, dict[tuple[str, int], int], dict[tuple[str, int], int]]] = []
        self._last = {(t, p): 0 for t in topics for p in range(PARTITIONS)}  # created empty just before

    def ran(self, owner: str) -> None:
        now = _ends(self.bootstrap, self.topics)
        self.spans.append((owner, self._last, now))
        self._last = now

    def of(self, owner: str, records: list[tuple[str, int, int, str | None, str | None]]) -> list[Any]:
        spans = [(before, after) for o, before, after in self.spans if o == owner]
        return [r for r in records if any(b[(r[0], r[1])] <= r[2] < a[(r[0], r[1])] for b, a in spans)]


@pytest.mark.parametrize(("factory", "split"), _cases())
def test_real_app_resumes_a_dsl_program_after_streamproc_run(
    factory: str,
    split: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    oracle_jar: Path,
) -> None:
    program = dsl_handoff_programs.NAMES[factory]
    inputs, outputs = _topics(factory)
    recreate_topics(admin, inputs + outputs, PARTITIONS)
    parts = _parts(factory, seed=16)
    app_id, state_dir = unique("dsl-handoff"), tmp_path / "state"
    alone_id, restarted = unique("dsl-alone"), factory in RESTARTED_REFERENCE
    written = _Outputs(kafka_broker, outputs)

    def reference() -> dict[str, Any]:
        result = _app(oracle_jar, kafka_broker, alone_id, tmp_path / "alone", program)
        written.ran("alone")
        return result

    _produce(kafka_broker, parts[0])
    first = _app(oracle_jar, kafka_broker, app_id, state_dir, program)
    assert first["restored"] == 0
    written.ran("handoff")
    if restarted:
        reference()

    _produce(kafka_broker, parts[1])
    out = run("run", "--bootstrap", kafka_broker, "--application-id", app_id,
              "--topology", f"tests.integration.handoff.dsl_handoff_programs:{factory}",
              "--store", str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--master", "local[1]",
              "--state-dir", str(state_dir), "--split", split, "--yes")  # fmt: skip
    assert "published" in out.output, out.output
    executions: dict[int, set[str]] = {}
    shards: dict[int, set[int]] = {}
    for path in (tmp_path / "staging").rglob("tasks/*/report.json"):
        report = json.loads(path.read_text())
        executions.setdefault(report["subtopology"], set()).add(report["execution"])
        shards.setdefault(report["subtopology"], set()).add(report.get("shards", 1))
    assert executions == {sub: {EXECUTION.get(factory, {}).get(sub, "per record")} for sub in executions}, executions
    split_into = 1 if split == "off" else int(split)
    assert shards == dict.fromkeys(executions, {split_into}), shards  # every task of the program split (or none)
    leftover = [p for p in (tmp_path / "staging").glob("process/*/shards/**/*") if p.is_file()]
    assert not leftover, f"the shards' objects outlived the merge: {leftover}"
    written.ran("handoff")
    # the input topics are the user's, even the one a table uses as its changelog: nothing purged, nothing written
    produced = Counter(topic for topic, *_ in parts[0] + parts[1])
    watermarks = _watermarks(kafka_broker, inputs)
    assert {t: sum(end for (topic, _), (_, end) in watermarks.items() if topic == t) for t in inputs} == produced
    assert all(start == 0 for start, _ in watermarks.values()), f"an input topic was purged: {watermarks}"
    if restarted:
        reference()

    _produce(kafka_broker, parts[2])
    resumed = _app(oracle_jar, kafka_broker, app_id, state_dir, program)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the hand-off: {restores}"
    written.ran("handoff")

    alone = reference()
    records = _read(kafka_broker, outputs)
    delete_topics(admin, inputs + outputs)

    assert_resumed_stores_equal(resumed, alone)
    handed_off = _summary(written.of("handoff", records))
    by_alone = _summary(written.of("alone", records))
    assert len(written.of("handoff", records)) + len(written.of("alone", records)) == len(records)
    assert by_alone["records"], "the lone app wrote nothing"
    differing = {k: (v, by_alone["last"].get(k)) for k, v in handed_off["last"].items() if v != by_alone["last"].get(k)}
    if factory not in LAST_UPDATE_ORDER_DEPENDENT:
        assert handed_off["last"] == by_alone["last"], f"last value per key differs (hand-off, alone): {differing}"
    if factory not in ORDER_DEPENDENT_INTERMEDIATES:
        assert handed_off["records"] == by_alone["records"]
