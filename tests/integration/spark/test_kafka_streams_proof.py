"""The process step against real Kafka Streams 4.2 (issue 12): four Processor API programs, the same records.

100 000 keyed records over 8 partitions (Java's partitioner; out-of-order timestamps; values the Long deserializer
refuses; one negative timestamp) and a table topic of customers go once onto the broker. The oracle
(``java -jar streamproc-oracle.jar proof``, ``ProofApps``) runs count per key, a tumbling-window count with grace,
re-key → repartition → sum and a stream–table join as real ``KafkaStreams`` apps (two at a time) to the end offsets;
meanwhile streamproc plans, fetches and processes the same four programs (``proof_topologies``) on Spark
``local[2]``. Then, per program:

- the outputs: per output partition, the records (key, value, timestamp, headers) the app wrote, read
  ``read_committed``, equal streamproc's in order, where Kafka Streams is deterministic (one stage: each output
  partition is written by one task, which reads its input in an order fixed by the data). For re-key → repartition
  → sum, the order in which a downstream task reads records of several upstream tasks is producer timing live
  (docs/semantics.md), so what is compared is what that order cannot change: per key, the records (origin,
  timestamp), the order of the records of each upstream task, the number of sums and the last one;
- the changelogs of the one-stage programs: per changelog partition the app's records (``read_committed``) equal
  the ones streamproc's tasks wrote, in order (what the hand-off publishes);
- the final stores (interactive queries against the RocksDB bundles streamproc wrote), key → (value, timestamp);
- the records each task dropped (Kafka's ``dropped-records-total`` per task against the report);
- both programs' ``describe()``, so that the two are the same program.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import tarfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTP
from confluent_kafka.admin import AdminClient

from streamproc.engine.task_id import TaskId
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import plan_id, process
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import load_topology
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_type import StoreType
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from tests.integration.conftest import create_topic
from tests.integration.spark import proof_topologies as programs
from tests.integration.spark.conftest import run, wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 8
WORDS = 100_000
CUSTOMER_UPDATES = 3_000
KEYS = 1_000
#: Words' timestamps are even and customers' odd: no timestamp ties between a join task's two partitions (a tie's
#: order live depends on which fetch came first).
BASE_TS = 1_700_000_000_000
CORRUPT = b"\xff\x01\x02"  # 3 bytes: LongDeserializer refuses it
NEGATIVE_TS = -2
ORACLE_TIMEOUT_S = 600

Row = tuple[bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]


def _produce(bootstrap: str) -> dict[str, int]:
    """The input, seeded; returns how many corrupt and negative-timestamp records went in."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 20, "batch.size": 262_144}
    )
    rng = random.Random(20261124)
    corrupt = set(rng.sample(range(WORDS), 25))
    negative = rng.randrange(WORDS)
    for i in range(WORDS):
        key = f"k{rng.randrange(KEYS)}".encode()
        value = CORRUPT if i in corrupt else rng.randrange(1, 10_000).to_bytes(8, "big", signed=True)
        # ±5 s around 10 ms a record: windows of 10 s with 2 s grace drop some as late
        timestamp = NEGATIVE_TS if i == negative else BASE_TS + 2 * (i * 5 + rng.randint(-2_500, 2_500))
        producer.produce(programs.WORDS, key=key, value=value, timestamp=timestamp)
        if i % 10_000 == 0:
            producer.poll(0)
    corrupt_customers = set(rng.sample(range(CUSTOMER_UPDATES), 3))
    for j in range(CUSTOMER_UPDATES):
        key = f"k{rng.randrange(KEYS)}".encode()
        value = CORRUPT if j in corrupt_customers else rng.randrange(100).to_bytes(8, "big", signed=True)
        timestamp = BASE_TS + 2 * rng.randrange(-5_000, WORDS * 5) + 1
        producer.produce(programs.CUSTOMERS, key=key, value=value, timestamp=timestamp)
    assert producer.flush(60) == 0
    return {"corrupt_words": len(corrupt), "corrupt_customers": len(corrupt_customers), "negative": 1}


def _read_topic(bootstrap: str, topic: str) -> dict[int, list[Row]]:
    """Every record of ``topic`` per partition, ``read_committed``, in offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ksproof-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "error",
        }
    )
    try:
        marks = {p: consumer.get_watermark_offsets(KafkaTP(topic, p), timeout=10) for p in range(PARTITIONS)}
        assert all(low == 0 for low, _high in marks.values()), f"{topic}: records deleted before reading: {marks}"
        ends = {p: high for p, (_low, high) in marks.items()}
        deadline = time.monotonic() + 120
        consumer.assign([KafkaTP(topic, p, 0) for p in range(PARTITIONS) if ends[p] > 0])
        rows: dict[int, list[Row]] = {p: [] for p in range(PARTITIONS)}
        positions = dict.fromkeys(range(PARTITIONS), 0)
        while any(positions[p] < ends[p] for p in range(PARTITIONS)):
            assert time.monotonic() < deadline, f"{topic}: read {positions} of {ends} after 120 s"
            for message in consumer.consume(10_000, timeout=10):
                assert message.error() is None, message.error()
                headers = tuple((k, v) for k, v in (message.headers() or ()))
                rows[message.partition()].append((message.key(), message.value(), message.timestamp()[1], headers))
                positions[message.partition()] = message.offset() + 1
        return rows
    finally:
        consumer.close()


def _streamproc_outputs(store: Path, plan: RunPlan, reports: list[dict[str, Any]], topic: str) -> dict[int, Any]:
    """Per partition of ``topic``: the writing task → its rows in production order."""
    by_partition: dict[int, dict[str, list[Row]]] = {}
    for report in reports:
        objects = TaskObjects(plan_id(plan), TaskId.parse(report["task_id"]))
        for name in report["outputs"]:
            out_topic, _, partition = name.rpartition("+")
            if out_topic != topic:
                continue
            table = pq.read_table(store / objects.output(out_topic, int(partition))).to_pylist()
            by_partition.setdefault(int(partition), {})[report["task_id"]] = [
                (r["key"], r["value"], r["timestamp"], tuple((h["key"], h["value"]) for h in r["headers"]))
                for r in table
            ]
    return by_partition


def _streamproc_changelogs(store: Path, plan: RunPlan, reports: list[dict[str, Any]]) -> dict[tuple[str, int], Any]:
    """Per (store, changelog partition): the changelog records the tasks wrote, in write order."""
    result: dict[tuple[str, int], list[Row]] = {}
    for report in reports:
        objects = TaskObjects(plan_id(plan), TaskId.parse(report["task_id"]))
        for name in report["changelogs"]:
            topic, _, partition = name.rpartition("+")
            rows = pq.read_table(store / objects.changelog(topic, int(partition))).to_pylist()
            for r in rows:
                headers = tuple((h["key"], h["value"]) for h in r["headers"])
                result.setdefault((r["store"], int(partition)), []).append(
                    (r["key"], r["value"], r["timestamp"], headers)
                )
    return result


def _streamproc_store(store: Path, plan: RunPlan, reports: list[dict[str, Any]], name: str, work: Path) -> set[Any]:
    """A store's final entries over every task's bundle: (key, value, timestamp) or (key, start, value, timestamp)."""
    entries: set[Any] = set()
    for report in reports:
        objects = TaskObjects(plan_id(plan), TaskId.parse(report["task_id"]))
        if objects.stores not in report["objects"]:
            continue
        target = work / f"bundle-{name}-{report['task_id']}"
        with tarfile.open(fileobj=io.BytesIO((store / objects.stores).read_bytes())) as tar:
            tar.extractall(target, filter="data")
        # Kafka Streams' layout: key-value stores in rocksdb/<store>, window segments in <store>/<store>.<start>
        windowed = (target / name).is_dir()
        if windowed:
            paths = sorted(p for p in (target / name).iterdir() if p.is_dir() and p.name.startswith(f"{name}."))
        elif (target / "rocksdb" / name).is_dir():
            paths = [target / "rocksdb" / name]
        else:
            continue
        kind = StoreType.TIMESTAMPED_WINDOW if windowed else StoreType.TIMESTAMPED_KEY_VALUE
        for path in paths:
            db = RocksDBKeyValueBytesStore(name, path, kind)
            try:
                for key, value in db.range(None, None):
                    timestamp = int.from_bytes(value[:8], "big", signed=True)
                    stored = int.from_bytes(value[8:], "big", signed=True)
                    if windowed:
                        start = int.from_bytes(key[-12:-4], "big", signed=True)
                        entries.add((key[:-12].decode(), start, stored, timestamp))
                    else:
                        entries.add((key.decode(), stored, timestamp))
            finally:
                db.close()
    return entries


@pytest.fixture(scope="module")
def proof(kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both sides run over the same records; returns Kafka Streams' and streamproc's results per program."""
    work = tmp_path_factory.mktemp("ksproof")
    jar = ensure_oracle_jar()
    run_id = uuid.uuid4().hex[:8]
    topics = [programs.WORDS, programs.CUSTOMERS, *programs.OUTPUTS.values()]
    sp_apps = {name: f"ksproof-sp-{name}-{run_id}" for name in programs.FACTORIES}
    for topic in topics:
        create_topic(admin, topic, partitions=PARTITIONS)
    internal = [f"{sp_apps['rekey']}-{programs.REPARTITION}"]
    stores = {"count": ["counts"], "window": ["window-counts"], "rekey": ["sums"], "join": ["customer-store"]}
    for name, names in stores.items():
        internal += [f"{sp_apps[name]}-{s}-changelog" for s in names]
    for topic in internal:
        create_topic(admin, topic, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, *topics, *internal)
    started = time.monotonic()
    sent = _produce(kafka_broker)
    seconds = {"produce": time.monotonic() - started}

    spec = {
        "words": programs.WORDS,
        "customers": programs.CUSTOMERS,
        "repartition": programs.REPARTITION,
        "window_size_ms": programs.WINDOW_SIZE_MS,
        "window_grace_ms": programs.WINDOW_GRACE_MS,
        "window_retention_ms": programs.WINDOW_RETENTION_MS,
        "rekey_customers": programs.REKEY_CUSTOMERS,
        "parallel": 2,
        "apps": [
            {
                "topology": name,
                "application_id": f"ksproof-ks-{name}-{run_id}",
                "output": programs.OUTPUTS[name],
                "inputs": programs.INPUTS[name],
            }
            for name in programs.FACTORIES
        ],
    }
    spec_file = work / "spec.json"
    spec_file.write_text(json.dumps(spec))
    oracle = subprocess.Popen(
        ["java", "-XX:+UseSerialGC", "-jar", str(jar), "proof", kafka_broker, str(spec_file)],
        stdout=subprocess.PIPE,
        stderr=(work / "oracle.log").open("w"),
        text=True,
    )
    try:
        ours: dict[str, Any] = {}
        for name in programs.FACTORIES:
            started = time.monotonic()
            topology, _config = load_topology(f"tests.integration.spark.proof_topologies:{name}")
            describe = work / f"{name}.txt"
            describe.write_text(str(topology.describe()))
            plan_file, store = work / f"{name}-plan.json", work / f"{name}-store"
            run("plan", "--bootstrap", kafka_broker, "--application-id", sp_apps[name], "--topology", str(describe),
                "--out", str(plan_file))  # fmt: skip
            run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
            plan = RunPlan.read(plan_file)
            reports = process(
                plan,
                store_uri=str(store),
                topology=f"tests.integration.spark.proof_topologies:{name}",
                master="local[2]",
                partitions={programs.OUTPUTS[name]: PARTITIONS},
            )
            ours[name] = {
                "describe": str(topology.describe()),
                "plan": plan,
                "reports": reports,
                "outputs": _streamproc_outputs(store, plan, reports, programs.OUTPUTS[name]),
                "stores": {s: _streamproc_store(store, plan, reports, s, work) for s in stores[name]},
                "changelogs": _streamproc_changelogs(store, plan, reports),
            }
            seconds[f"streamproc {name}"] = time.monotonic() - started
        out, _ = oracle.communicate(timeout=ORACLE_TIMEOUT_S)
    finally:
        if oracle.poll() is None:
            oracle.kill()
            oracle.wait()
    assert oracle.returncode == 0, (work / "oracle.log").read_text()[-4000:]
    theirs: dict[str, Any] = {}
    for line in out.splitlines():
        answer = json.loads(line)
        assert "oracle_error" not in answer, f"{answer}\n{(work / 'oracle.log').read_text()[-4000:]}"
        answer["outputs"] = _read_topic(kafka_broker, programs.OUTPUTS[answer["topology"]])
        answer["changelogs"] = {
            (s, partition): rows
            for s in stores[answer["topology"]]
            for partition, rows in _read_topic(kafka_broker, f"{answer['application_id']}-{s}-changelog").items()
            if rows
        }
        theirs[answer["topology"]] = answer
        seconds[f"kafka streams {answer['topology']}"] = answer["elapsed_ms"] / 1000
    print("proof seconds (plan + fetch + process; Kafka Streams apps two at a time, concurrently):", seconds)
    return {"ours": ours, "theirs": theirs, "sent": sent}


def _kafka_store(answer: dict[str, Any], name: str) -> set[Any]:
    return {tuple(row) for row in answer["stores"][name]}


def _dropped(reports: list[dict[str, Any]]) -> dict[str, int]:
    return {r["task_id"]: sum(r["dropped"].values()) for r in reports}


def _check_common(proof: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ours, theirs = proof["ours"][name], proof["theirs"][name]
    assert ours["describe"].strip() == theirs["describe"].strip()
    for store in ours["stores"]:
        kafka = _kafka_store(theirs, store)
        assert kafka, f"{name}: Kafka Streams' store {store} is empty"
        assert ours["stores"][store] == kafka, (
            f"{name}: store {store}: only streamproc {sorted(ours['stores'][store] - kafka)[:5]}, "
            f"only Kafka Streams {sorted(kafka - ours['stores'][store])[:5]}"
        )
    # dropped-records-total of every task (Kafka Streams registers the sensor per task, zeros included)
    assert _dropped(ours["reports"]) == theirs["dropped"]
    return ours, theirs


def _single_stage_outputs_equal(ours: dict[str, Any], theirs: dict[str, Any]) -> int:
    compared = 0
    for partition in range(PARTITIONS):
        writers = ours["outputs"].get(partition, {})
        assert len(writers) <= 1, f"partition {partition} written by {sorted(writers)}"
        mine = next(iter(writers.values()), [])
        kafka = theirs["outputs"][partition]
        assert len(mine) == len(kafka), f"partition {partition}: {len(mine)} records, Kafka Streams {len(kafka)}"
        for index, (a, b) in enumerate(zip(mine, kafka, strict=True)):
            assert a == b, f"partition {partition} record {index}: streamproc {a}, Kafka Streams {b}"
        compared += len(mine)
    return compared


@pytest.mark.parametrize("name", ["count", "window", "join"])
def test_single_stage_programs_equal_kafka_streams_record_for_record(proof: dict[str, Any], name: str) -> None:
    ours, theirs = _check_common(proof, name)
    compared = _single_stage_outputs_equal(ours, theirs)
    # what the hand-off publishes to the changelogs: the same records in the same order per changelog partition
    assert sorted(ours["changelogs"]) == sorted(theirs["changelogs"])
    for where, rows in ours["changelogs"].items():
        kafka = theirs["changelogs"][where]
        assert len(rows) == len(kafka), where
        for index, (a, b) in enumerate(zip(rows, kafka, strict=True)):
            assert a == b, f"changelog {where} record {index}: streamproc {a}, Kafka Streams {b}"
    assert compared > 0
    sent = proof["sent"]
    reasons: Counter[str] = Counter()
    for report in ours["reports"]:
        reasons.update(report["dropped"])
    corrupt = sent["corrupt_words"] + (sent["corrupt_customers"] if name == "join" else 0)
    # the negative timestamp reached the broker as written (librdkafka writes it; Java's ProducerRecord would not)
    assert reasons == {"deserialization": corrupt, "negative_timestamp": sent["negative"]}
    if name == "count":
        assert compared == WORDS - sent["corrupt_words"] - sent["negative"]
    if name == "window":
        late = WORDS - sent["corrupt_words"] - sent["negative"] - compared
        assert late > 0, "no record came after its window's grace: the data does not test grace"


def test_rekey_repartition_sum_equals_kafka_streams_where_kafka_streams_is_determined(proof: dict[str, Any]) -> None:
    ours, theirs = _check_common(proof, "rekey")
    valid = WORDS - proof["sent"]["corrupt_words"] - proof["sent"]["negative"]
    final = {key: value for key, value, _ts in ours["stores"]["sums"]}

    def per_key(rows: list[Row]) -> dict[str, list[tuple[int, int, int, int]]]:
        """key → (origin partition, origin offset, timestamp, sum) in output order."""
        result: dict[str, list[tuple[int, int, int, int]]] = {}
        for key, value, timestamp, headers in rows:
            assert key is not None and value is not None
            [origin] = [v for k, v in headers if k == "origin"]
            assert origin is not None
            partition, offset = (int(x) for x in origin.decode().split(":"))
            result.setdefault(key.decode(), []).append(
                (partition, offset, timestamp, int.from_bytes(value, "big", signed=True))
            )
        return result

    same_order = 0
    total = 0
    for partition in range(PARTITIONS):
        writers = ours["outputs"].get(partition, {})
        assert len(writers) <= 1
        mine = per_key(next(iter(writers.values()), []))
        kafka = per_key(theirs["outputs"][partition])
        assert sorted(mine) == sorted(kafka)
        for key in mine:
            a, b = mine[key], kafka[key]
            # what no interleaving changes: the records, their count, the last sum (= the store's), and the order of
            # the records of each upstream task (one producer per task keeps its order in the partition)
            assert Counter(r[:3] for r in a) == Counter(r[:3] for r in b), key
            assert a[-1][3] == b[-1][3] == final[key], key
            for upstream in {r[0] for r in a}:
                assert [r[1] for r in a if r[0] == upstream] == [r[1] for r in b if r[0] == upstream], (key, upstream)
            same_order += a == b
            total += len(a)
    assert total == valid
    print(f"rekey: {same_order} of {len(final)} keys have the same sequence of sums as Kafka Streams")
