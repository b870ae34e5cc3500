"""Every side-by-side DSL program gives Kafka Streams' results: for each program of
``streamproc_dev/conformance/dsl_programs.py`` (``PROGRAMS`` and ``GOLDEN``) and each seed, the records streamproc's
``TopologyTestDriver`` writes to each output topic of the Python twin equal, byte for byte (key, value, timestamp, in
order), those Kafka's own ``TopologyTestDriver`` writes for the Java twin (oracle mode ``dsl-run``,
``DslRunRunner.java``), both drop the same number of records, and every store of the program ends with the same
contents: the raw entries (key bytes, value bytes, in the store's own layout: ``timestamp ‖ value`` for timestamped
stores, the segmented key schema for window and session stores, Kafka's ``TimestampedKeyAndJoinSide`` /
``ListValueStore`` bytes for the outer-join store) of the innermost bytes store on both sides, compared as sets. The
suppress buffer (Kafka's ``InMemoryTimeOrderedKeyValueChangeBuffer`` is no key-value store; streamproc's suppress
processor keeps its buffer itself) is compared by name only.

Kafka's record cache is off (``statestore.cache.max.bytes=0``): with a cache, which of a key's updates reach the
output depends on flush timing, which no replay can reproduce; without it every update is forwarded, as in streamproc.

Inputs come from fixed seeds: a few repeated keys, values starting with ``a``/``b``/``c`` (the split programs
branch on the first letter), timestamps mostly rising with out-of-order records and records late by minutes (past
every program's grace), tombstones and null keys only on topics a program reads as a table (the Java
lambdas of the stream programs would throw on a null value, or on a null key turned into a value).
One JVM answers every program and seed.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.processor_topology import SinkNode
from streamproc.engine.records import ConsumerRecord
from streamproc.engine.serdes import SERDES
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_processor_topology, store_builders
from streamproc.engine.topology_description import Sink, Source
from streamproc.intervals import to_intervals
from streamproc.spark.shard_merge import merge_shards
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, TaskWork, run_task
from streamproc.spark.task_split import split_refusals
from streamproc.state import store_encoding
from streamproc.state.processor_state_manager import StoreDefinition
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_builders import store_definitions
from streamproc.state.store_type import StoreType
from streamproc.state.stores import KeyValueBytesStore, SegmentedBytesStore, SessionStore, WindowStore
from streamproc.storage import LocalObjectStore
from streamproc.storage.manifest import SegmentProof
from streamproc.storage.staging import SegmentLimits, stage_range
from streamproc.testing import TestRecord, TopologyTestDriver
from streamproc_dev.conformance.dsl_programs import GOLDEN, PROGRAMS
from streamproc_dev.conformance.oracle import JVM_OPTIONS, ensure_oracle_jar

SEEDS = (7, 1234, 99991)
RECORDS_PER_TOPIC = 40
STRING = SERDES["String"]()
BYTES = SERDES["ByteArray"]()

REGISTRIES: dict[str, dict[str, Callable[[], Topology]]] = {"dsl": PROGRAMS, "golden": GOLDEN}

#: Where streamproc's results differ from Kafka's: run id ``registry/program/seed`` -> the exact difference.
KNOWN_DIFFERENCES: dict[str, str] = {}


#: Where streamproc's final store contents differ from Kafka's: run id -> the exact difference (none known).
KNOWN_STORE_DIFFERENCES: dict[str, str] = {}


def _topics(topology: Topology) -> tuple[list[str], set[str], list[str]]:
    """The program's input topics (sources that no sink of it writes: not repartition topics; global-store topics
    last), those of them it reads as a table (the source's successor is a KTable source; every global-store topic),
    and its output topics (sinks that no source reads)."""
    sources: dict[str, bool] = {}
    sinks: list[str] = []
    description = topology.describe()
    for sub in description.subtopologies:
        for node in sub.nodes:
            if isinstance(node, Source):
                for topic in node.topics:
                    sources[topic] = any(s.startswith("KTABLE-SOURCE") for s in node.successors)
            elif isinstance(node, Sink) and node.topic is not None and node.topic not in sinks:
                sinks.append(node.topic)
    for global_store in description.global_stores:
        sources.update(dict.fromkeys(global_store.source.topics, True))
    inputs = [t for t in sources if t not in sinks]
    return inputs, {t for t in inputs if sources[t]}, [t for t in sinks if t not in sources]


def _records(seed: int, name: str, inputs: list[str], tables: set[str], keyed_values: bool = False) -> list[list[Any]]:
    """Seeded input records ``[topic, key, value, timestamp]`` for one program, topics interleaved.

    ``keyed_values``: half the values are keys (``k<n>``), for programs that join a global table by a key selector
    reading the value, which would otherwise never find a row."""
    rng = random.Random(f"{seed}/{name}")
    records: list[list[Any]] = []
    now = 1_000_000
    for i in range(RECORDS_PER_TOPIC * len(inputs)):
        topic = rng.choice(inputs)
        now += rng.randrange(0, 20_000)
        roll = rng.random()
        timestamp = (
            now - rng.randrange(1, 30_000)
            if roll < 0.15
            else now - rng.randrange(120_000, 600_000)
            if (roll < 0.2)
            else now
        )
        key = None if topic in tables and rng.random() < 0.05 else f"k{rng.randrange(4)}"
        value = None if topic in tables and rng.random() < 0.15 else f"{rng.choice('abc')}{i}"
        if keyed_values and value is not None and rng.random() < 0.5:
            value = f"k{rng.randrange(4)}"
        records.append([topic, key, value, max(timestamp, 0)])
    return records


def _cases(known_differences: dict[str, str]) -> list[Any]:
    cases = []
    for registry, programs in REGISTRIES.items():
        for name in programs:
            for seed in SEEDS:
                known = known_differences.get(f"{registry}/{name}/{seed}")
                xfail = [pytest.mark.xfail(strict=True, reason=known)] if known else []
                cases.append(pytest.param(registry, name, seed, marks=xfail, id=f"{registry}-{name}-{seed}"))
    return cases


def _request() -> dict[str, Any]:
    runs = []
    for registry, programs in REGISTRIES.items():
        for name, program in programs.items():
            topology = program()
            inputs, tables, outputs = _topics(topology)
            for seed in SEEDS:
                runs.append(
                    {
                        "id": f"{registry}/{name}/{seed}",
                        "registry": registry,
                        "program": name,
                        "records": _records(seed, name, inputs, tables, bool(topology.global_node_groups())),
                        "outputs": outputs,
                    }
                )
    return {"runs": runs}


@pytest.fixture(scope="module")
def kafka_runs() -> dict[str, Any]:
    """Kafka's answers for every program and seed: one oracle JVM."""
    java = shutil.which("java")
    assert java is not None, "java is not on PATH; install a JDK 17"
    jar = ensure_oracle_jar()
    request = _request()
    with tempfile.TemporaryDirectory(prefix="streamproc-dsl-run-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(request), encoding="utf-8")
        proc = subprocess.run(
            [java, *JVM_OPTIONS, "-jar", str(jar), "dsl-run", str(path)],
            capture_output=True,
            text=True,
            timeout=900,  # guards a hung JVM; 41 programs × 3 seeds took over 300 s at load 25 on 2 cores
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs: dict[str, Any] = json.loads(proc.stdout)["runs"]
    runs["_request"] = {run["id"]: run for run in request["runs"]}
    return runs


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def _run_streamproc(topology: Topology, run: dict[str, Any]) -> dict[str, Any]:
    with TopologyTestDriver(
        topology, TaskConfig(application_id="dsl-run"), default_key_serde=STRING, default_value_serde=STRING
    ) as driver:
        inputs: dict[str, Any] = {}
        for topic, key, value, timestamp in run["records"]:
            if topic not in inputs:
                inputs[topic] = driver.create_input_topic(topic, STRING, STRING)
            inputs[topic].pipe_record(TestRecord(key, value, timestamp=timestamp))
        outputs = {
            topic: [
                [_hex(r.key), _hex(r.value), r.timestamp]
                for r in driver.create_output_topic(topic, BYTES, BYTES).read_records_to_list()
            ]
            for topic in run["outputs"]
        }
        stores = {name: _store_entries(store) for name, store in driver.get_all_state_stores().items()}
        return {"outputs": outputs, "dropped": len(driver.dropped_records()), "stores": stores}


def _store_entries(store: object) -> list[list[str]] | None:
    """The raw entries of the bytes store under a typed store, sorted; ``None`` for a store with neither (Kafka's
    answer has no entries for such a store either). A window or session store's entries are those of every segment
    from ``observedStreamTime - retention + 1`` on (what ``all()`` of Kafka's segmented bytes store returns: an
    expired window can still sit in a live segment)."""
    if isinstance(store, WindowStore | SessionStore):
        segments: SegmentedBytesStore = store.segments
        live = segments.min_live_time()
        entries = [
            [key.hex(), value.hex()]
            for part in segments.all_segments()
            for key, value in part.range(None, None)
            if _segment_time(store, key) >= live
        ]
        return sorted(entries)
    bytes_store: KeyValueBytesStore | None = getattr(store, "bytes_store", None)
    if bytes_store is None:
        return None
    return sorted([key.hex(), value.hex()] for key, value in bytes_store.range(None, None))


def _segment_time(store: WindowStore[Any, Any] | SessionStore[Any, Any], key: bytes) -> int:
    """The time a window or session store segments an entry by: the window start, the session end."""
    if isinstance(store, SessionStore):
        return store_encoding.parse_session_store_key(key).session_end
    return store_encoding.parse_window_store_key(key).window_start


@pytest.mark.parametrize(("registry", "name", "seed"), _cases(KNOWN_DIFFERENCES))
def test_program_results_equal_kafkas(kafka_runs: dict[str, Any], registry: str, name: str, seed: int) -> None:
    run_id = f"{registry}/{name}/{seed}"
    kafka = kafka_runs[run_id]
    assert "error" not in kafka, f"Kafka Streams failed to run {run_id}: {kafka['error']}"
    ours = _run_streamproc(REGISTRIES[registry][name](), kafka_runs["_request"][run_id])
    assert ours["outputs"].keys() == kafka["outputs"].keys()
    assert any(kafka["outputs"].values()), "the inputs produced no output at all: they test nothing"
    for topic, expected in kafka["outputs"].items():
        assert ours["outputs"][topic] == expected, topic
    assert ours["dropped"] == kafka["dropped"], "dropped-records-total"


@pytest.mark.parametrize(("registry", "name", "seed"), _cases(KNOWN_STORE_DIFFERENCES))
def test_program_stores_equal_kafkas(kafka_runs: dict[str, Any], registry: str, name: str, seed: int) -> None:
    run_id = f"{registry}/{name}/{seed}"
    kafka = kafka_runs[run_id]
    assert "error" not in kafka, f"Kafka Streams failed to run {run_id}: {kafka['error']}"
    ours = _run_streamproc(REGISTRIES[registry][name](), kafka_runs["_request"][run_id])["stores"]
    assert sorted(ours) == sorted(kafka["stores"]), "store names"
    for store, theirs in kafka["stores"].items():
        if "entries" not in theirs:  # the suppress buffer: no key-value bytes store to read on Kafka's side
            continue
        assert ours[store] is not None, f"{store}: Kafka's {theirs['bytes_store']} has entries, ours has no bytes store"
        expected = sorted(theirs["entries"])
        missing = [e for e in expected if e not in ours[store]]
        extra = [e for e in ours[store] if e not in expected]
        assert not missing and not extra, f"{store} ({theirs['bytes_store']}): missing {missing[:5]}, extra {extra[:5]}"


#: The program a split run's task runner loads (``split_program``): ``(registry, name)``, set per case (the runs are
#: inline, in this process).
_SPLIT_PROGRAM: list[str] = ["", ""]


def split_program() -> Topology:
    return REGISTRIES[_SPLIT_PROGRAM[0]][_SPLIT_PROGRAM[1]]()


def _split_cases() -> list[Any]:
    """The programs of one input topic whose every sub-topology the executor may split (``split_refusals`` none):
    each task of one partition runs exactly what the matching Kafka Streams task runs, and a sub-topology reading a
    repartition topic reads it in the order the one before it wrote it, so a split run's outputs are comparable with
    Kafka's answer record for record."""
    cases: list[Any] = []
    for registry, programs in REGISTRIES.items():
        for name, program in programs.items():
            topology = program()
            inputs = _topics(topology)[0]
            refusals = split_refusals(topology)
            if len(inputs) == 1 and set(refusals.values()) == {None} and not topology.global_node_groups():
                cases.extend(
                    pytest.param(registry, name, seed, shards, id=f"{registry}-{name}-{seed}-{shards}")
                    for seed in SEEDS
                    for shards in (2, 3)
                )
    return cases


@pytest.mark.parametrize(("registry", "name", "seed", "shards"), _split_cases())
def test_a_program_run_as_key_shards_gives_kafkas_results(
    kafka_runs: dict[str, Any], tmp_path: Path, registry: str, name: str, seed: int, shards: int
) -> None:
    """Issue #29's oracle: each sub-topology's task (partition 0, as in Kafka's driver) run by the executor as
    ``shards`` key shards and merged (``spark/shard_merge.py``), in sub-topology order: a repartition topic's
    records, as the task writing it published them, are the next task's input (as the executor's stages stage them).
    Together they write, per output topic in production order (``sequence`` across its partitions' files), Kafka's
    records, drop as many, and end with Kafka's store entries."""
    run_id = f"{registry}/{name}/{seed}"
    kafka = kafka_runs[run_id]
    assert "error" not in kafka, f"Kafka Streams failed to run {run_id}: {kafka['error']}"
    _SPLIT_PROGRAM[:] = [registry, name]
    records = kafka_runs["_request"][run_id]["records"]
    topology = split_program()
    store = LocalObjectStore(tmp_path / "store")
    staged = {records[0][0]: [ConsumerRecord.raw(t, 0, i, ts, _utf8(k), _utf8(v)) for i, (t, k, v, ts) in
                              enumerate(records)]}  # fmt: skip
    outputs: dict[str, list[list[Any]]] = {out: [] for out in kafka["outputs"]}
    dropped = 0
    entries: dict[str, list[list[str]]] = {}
    subtopologies = sorted(split_refusals(topology))
    for subtopology in subtopologies:
        graph = build_processor_topology(topology, subtopology, application_id="dsl-run")
        missing = [t for t in graph.source_topics if t not in staged]
        assert not missing, f"sub-topology {subtopology} reads {missing}, which no earlier one wrote"
        for topic in graph.source_topics:
            raw = staged[topic]
            stage_range(store, topic, 0, 0, len(raw), raw, SegmentProof(to_intervals(range(len(raw))), {}),
                        SegmentLimits(max_segment_records=16))  # fmt: skip
        sinks = {n.topic for n in graph.nodes if isinstance(n, SinkNode)}
        work = TaskWork(
            plan_id=f"{subtopology:015x}1",
            application_id="dsl-run",
            task_id=f"{subtopology}_0",
            subtopology=subtopology,
            topology=f"{__name__}:split_program",
            store_uri=str(tmp_path / "store"),
            inputs=tuple(InputRange(t, 0, 0, len(staged[t]), -1) for t in graph.source_topics),
            partition_counts={t: 3 if t in outputs else 1 for t in sinks},  # a repartition topic: Kafka's driver's one
            local_dir=str(tmp_path),
        )
        for index in range(shards):
            shard = run_task(dataclasses.replace(work, shard=ShardSpec(index, shards)))
            assert shard["shard"] == f"{index}-of-{shards}"
        report = merge_shards(work, shards)
        assert report["shards"] == shards
        dropped += sum(report["dropped"].values())
        objects = TaskObjects(work.plan_id, TaskId(subtopology, 0))
        rows = sorted(
            (row for path in sorted((tmp_path / "store" / objects.prefix / "outputs").glob("*.parquet"))
             for row in pq.read_table(path).to_pylist()),
            key=lambda r: r["sequence"],
        )  # fmt: skip
        for topic in sorted(sinks - outputs.keys()):
            assert topic not in staged, f"{topic} is written by two sub-topologies"
            written = [r for r in rows if r["topic"] == topic]
            staged[topic] = [ConsumerRecord.raw(topic, 0, i, r["timestamp"], r["key"], r["value"],
                                                headers=tuple((h["key"], h["value"]) for h in r["headers"]))
                             for i, r in enumerate(written)]  # fmt: skip
        for row in rows:
            if row["topic"] in outputs:
                outputs[row["topic"]].append([_hex(row["key"]), _hex(row["value"]), row["timestamp"]])
        definitions = [d for d in store_definitions(store_builders(topology, subtopology)) if d.persistent]
        for definition in definitions:
            bundle = tmp_path / "store" / objects.stores
            entries[definition.name] = _bundle_entries(bundle, tmp_path / f"bundle-{subtopology}", definition)
    assert any(kafka["outputs"].values()), "the inputs produced no output at all: they test nothing"
    assert outputs == kafka["outputs"]
    assert dropped == kafka["dropped"], "dropped-records-total"
    assert sorted(entries) == sorted(n for n, t in kafka["stores"].items() if "entries" in t)
    for store_name, ours in entries.items():
        assert ours == sorted(kafka["stores"][store_name]["entries"]), store_name


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _bundle_entries(bundle: Path, target: Path, definition: StoreDefinition) -> list[list[str]]:
    """The raw entries of a store in the task's published store bundle ``bundle`` (extracted to ``target`` once; a
    split task's: shard 0's stores with the other shards' last writes applied, a window or session store's expired
    segments settled). A segmented store's are those of its segments from ``observedStreamTime - retention + 1`` on,
    as ``_store_entries`` reads a whole run's: the latest time a windowed or session aggregate segmented a put by is
    still there (a window is never deleted; a session only when merged into one that ends no earlier) to give
    ``observedStreamTime``."""
    if not target.exists():
        with tarfile.open(bundle) as tar:
            tar.extractall(target, filter="data")
    name, kind = definition.name, definition.store_type
    if not kind.segmented:
        return sorted(
            [key.hex(), value.hex()] for key, value in _rocksdb_entries(name, target / "rocksdb" / name, kind)
        )
    entries = [e for segment in sorted((target / name).iterdir()) for e in _rocksdb_entries(name, segment, kind)]
    if kind is StoreType.SESSION:
        times = [store_encoding.parse_session_store_key(key).session_end for key, _ in entries]
    else:
        times = [store_encoding.parse_window_store_key(key).window_start for key, _ in entries]
    assert definition.retention_ms is not None
    live = max(times, default=0) - definition.retention_ms + 1
    return sorted([key.hex(), value.hex()] for (key, value), time in zip(entries, times, strict=True) if time >= live)


def _rocksdb_entries(name: str, path: Path, kind: StoreType) -> list[tuple[bytes, bytes]]:
    db = RocksDBKeyValueBytesStore(name, path, kind)
    try:
        return list(db.range(None, None))
    finally:
        db.close()
