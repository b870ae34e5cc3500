"""Fetch against the real broker and both real stores: proved segments, resumption, identical bytes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.errors import FetchError
from streamproc.fetch import FetchRange, fetch_range, fetch_ranges
from streamproc.plan.cluster_snapshot import IsolationLevel
from streamproc.storage import load_store
from streamproc.storage.manifest import read_manifest
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.staging import SegmentLimits, read_range, split_range
from streamproc.storage.verify import verify
from tests.conftest import PROJECT_ROOT, S3Server
from tests.integration.conftest import create_topic


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, key=f"k{i % 7}".encode(), value=f"value-{i}".encode(), partition=partition,
                                 timestamp=1_000 + i)  # fmt: skip
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
    assert producer.flush(60) == 0


def objects(store: ObjectStore) -> dict[str, bytes]:
    return {name: store.get(name) for name in store.list("topics/")}


def test_a_transactional_range_is_staged_with_every_offset_explained(
    kafka_broker: str,
    txn_topic: str,
    tmp_path: Path,
) -> None:
    store = load_store(str(tmp_path / "staging"))
    result = fetch_range({"bootstrap.servers": kafka_broker}, store, FetchRange(txn_topic, 0, 0, 9))

    assert (result.segments_written, result.records) == (1, 4)
    [manifest_name] = [n for n in store.list("topics/") if n.endswith(".manifest.json")]
    proof = json.loads(store.get(manifest_name))["proof"]
    assert proof["delivered"] == [[0, 2], [7, 7]]
    assert proof["explained"] == {"aborted": [[4, 5]], "control": [[3, 3], [6, 6], [8, 8]]}
    assert [r.value for r in read_range(store, txn_topic, 0, 0, 9)] == [b"a", b"b", b"c", b"d"]
    assert verify(store).ok


def test_read_uncommitted_stages_aborted_records_as_kafka_streams_at_least_once_sees_them(
    kafka_broker: str,
    txn_topic: str,
    tmp_path: Path,
) -> None:
    store = load_store(str(tmp_path / "staging"))
    fetch_range(
        {"bootstrap.servers": kafka_broker}, store, FetchRange(txn_topic, 0, 0, 9),
        isolation=IsolationLevel.READ_UNCOMMITTED,
    )  # fmt: skip

    assert [r.offset for r in read_range(store, txn_topic, 0, 0, 9)] == [0, 1, 2, 4, 5, 7]


@pytest.mark.parametrize("piece_offsets", [1, 2, 3])
def test_a_range_read_as_pieces_in_parallel_is_proved_piece_by_piece_as_one_reading_proves_it(
    kafka_broker: str, txn_topic: str, tmp_path: Path, piece_offsets: int
) -> None:
    """Issue #29's fetch split: pieces start and end on markers and aborted records; every offset is still delivered
    or explained once, and the pieces' segments are the same however many threads read them."""
    client = {"bootstrap.servers": kafka_broker}
    limits = SegmentLimits(piece_offsets=piece_offsets)
    rng = FetchRange(txn_topic, 0, 0, 9)
    parallel, sequential, whole = (load_store(str(tmp_path / name)) for name in ("parallel", "sequential", "whole"))

    [result] = fetch_ranges(client, parallel, [rng], limits=limits, parallelism=4)
    fetch_range(client, sequential, rng, limits=limits, threads=1)
    fetch_range(client, whole, rng)

    def proofs(store: ObjectStore) -> tuple[list[list[int]], dict[str, list[list[int]]]]:
        delivered: list[list[int]] = []
        explained: dict[str, list[list[int]]] = {}
        for name in sorted(n for n in store.list("topics/") if n.endswith(".manifest.json")):
            proof = json.loads(store.get(name))["proof"]
            delivered += proof["delivered"]
            for reason, runs in proof["explained"].items():
                explained.setdefault(reason, []).extend(runs)
        return delivered, explained

    def offsets(runs: list[list[int]]) -> list[int]:
        return [o for first, last in runs for o in range(first, last + 1)]

    assert result.segments_written == len(limits.pieces(0, 9))
    assert objects(parallel) == objects(sequential)
    for store in (parallel, whole):
        assert verify(store).ok
        assert [r.value for r in read_range(store, txn_topic, 0, 0, 9)] == [b"a", b"b", b"c", b"d"]
    (d_pieces, e_pieces), (d_whole, e_whole) = proofs(parallel), proofs(whole)
    assert offsets(d_pieces) == offsets(d_whole) == [0, 1, 2, 7]
    assert {r: offsets(runs) for r, runs in e_pieces.items()} == {r: offsets(runs) for r, runs in e_whole.items()}


def test_split_segments_and_a_retry_fetches_only_what_is_missing_with_identical_bytes(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic = create_topic(admin, unique("split"), partitions=2)
    produce(kafka_broker, topic, 10, partition=0)
    produce(kafka_broker, topic, 4, partition=1)
    store = load_store(str(tmp_path / "staging"))
    limits = SegmentLimits(max_segment_records=3)
    ranges = [FetchRange(topic, 0, 0, 10), FetchRange(topic, 1, 1, 4)]

    first = fetch_ranges({"bootstrap.servers": kafka_broker}, store, ranges, limits=limits, parallelism=2)
    before = objects(store)
    lost = next(n for n in before if "+00000000000000000003+" in n and n.endswith(".parquet"))
    store.delete(lost)
    again = fetch_ranges({"bootstrap.servers": kafka_broker}, store, ranges, limits=limits)

    assert [r.segments_written for r in first] == [4, 1]
    assert sorted(n.rsplit("+", 2)[-2:][0] for n in before if n.endswith(".parquet") and "partition=0" in n) == [
        "00000000000000000000", "00000000000000000003", "00000000000000000006", "00000000000000000009",
    ]  # fmt: skip
    assert [(r.segments_written, r.segments_already_complete, r.records) for r in again] == [(1, 3, 3), (0, 1, 0)]
    assert objects(store) == before


def test_worker_processes_stage_the_same_objects_as_threads(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic = create_topic(admin, unique("procs"), partitions=3)
    for p in range(3):
        produce(kafka_broker, topic, 700, partition=p)
    ranges = [FetchRange(topic, p, 0, 700) for p in range(3)]
    limits = SegmentLimits(max_segment_records=300)
    threads, processes = load_store(str(tmp_path / "threads")), load_store(str(tmp_path / "processes"))

    fetch_ranges({"bootstrap.servers": kafka_broker}, threads, ranges, limits=limits)
    results = fetch_ranges({"bootstrap.servers": kafka_broker}, processes, ranges, limits=limits, processes=2)

    assert [r.records for r in results] == [700, 700, 700]
    assert objects(processes) == objects(threads)
    assert len(objects(processes)) == 18


_MAIN_THAT_MUST_NOT_RUN_TWICE = """
import sys
if __name__ != "__main__":  # what the airflow command does in a task's child: it cannot start there
    raise RuntimeError("the parent's main module ran again in a fetch worker")
from streamproc.fetch import FetchRange, fetch_ranges
from streamproc.storage import load_store
ranges = [FetchRange(sys.argv[3], p, 0, 40) for p in range(2)]
print(sum(r.records for r in fetch_ranges({"bootstrap.servers": sys.argv[1]}, load_store(sys.argv[2]), ranges,
                                           processes=2)))
"""


def test_worker_processes_do_not_run_the_parents_main_module_again(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """Under an Airflow task the parent's main module is the ``airflow`` command, whose import fails in a worker."""
    topic = create_topic(admin, unique("main"), partitions=2)
    for p in range(2):
        produce(kafka_broker, topic, 40, partition=p)
    script = tmp_path / "task_main.py"
    script.write_text(_MAIN_THAT_MUST_NOT_RUN_TWICE, encoding="utf-8")
    done = subprocess.run(  # noqa: S603
        [sys.executable, str(script), kafka_broker, str(tmp_path / "store"), topic],
        capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "80"


_KILLABLE_FETCH = """
import sys
from streamproc.fetch import FetchRange, fetch_range
from streamproc.storage import load_store
from streamproc.storage.staging import SegmentLimits
fetch_range({"bootstrap.servers": sys.argv[1]}, load_store(sys.argv[2]), FetchRange(sys.argv[3], 0, 0, 3000),
            limits=SegmentLimits(max_segment_records=50))
"""


def test_a_fetch_killed_mid_range_resumes_to_the_same_segments(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic = create_topic(admin, unique("kill"))
    produce(kafka_broker, topic, 3000)
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE_FETCH, kafka_broker, str(killed_dir), topic], cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )  # fmt: skip
    killed_store = load_store(str(killed_dir))
    deadline = time.monotonic() + 120
    while len([n for n in killed_store.list("topics/") if n.endswith(".manifest.json")]) < 5:
        assert proc.poll() is None, "the fetch finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    staged_when_killed = len([n for n in killed_store.list("topics/") if n.endswith(".manifest.json")])
    limits = SegmentLimits(max_segment_records=50)

    resumed = fetch_range(
        {"bootstrap.servers": kafka_broker}, killed_store, FetchRange(topic, 0, 0, 3000), limits=limits
    )
    fetch_range(
        {"bootstrap.servers": kafka_broker}, load_store(str(clean_dir)), FetchRange(topic, 0, 0, 3000), limits=limits
    )

    assert 5 <= staged_when_killed < 60
    assert resumed.segments_already_complete == staged_when_killed
    assert resumed.segments_written == 60 - staged_when_killed
    assert objects(killed_store) == objects(load_store(str(clean_dir)))
    assert verify(killed_store).ok


def test_fetch_to_s3_is_verified_and_identical_to_local(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], s3_server: S3Server, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    topic = create_topic(admin, unique("s3"))
    produce(kafka_broker, topic, 500)
    bucket = unique("stage")
    s3_server.client().create_bucket(Bucket=bucket)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", s3_server.region)
    s3 = load_store(f"s3://{bucket}/runs/r1", endpoint_url=s3_server.endpoint)
    local = load_store(str(tmp_path / "local"))
    limits = SegmentLimits(max_segment_records=200)

    fetch_range({"bootstrap.servers": kafka_broker}, s3, FetchRange(topic, 0, 0, 500), limits=limits)
    fetch_range({"bootstrap.servers": kafka_broker}, local, FetchRange(topic, 0, 0, 500), limits=limits)

    assert verify(s3).ok
    assert objects(s3) == objects(local)
    assert len(objects(s3)) == 6
    manifest = read_manifest(s3, next(n for n in s3.list("topics/") if n.endswith(".manifest.json")))
    assert manifest.record_count == 200


def test_a_broker_that_goes_away_mid_fetch_and_comes_back_costs_nothing(tmp_path: Path) -> None:
    from streamproc_dev import broker

    workdir = tmp_path / "kafka"
    handle = broker.start(workdir)
    try:
        create_topic(AdminClient({"bootstrap.servers": handle.address}), "bounced")  # gone before the crash
        produce(handle.address, "bounced", 200_000)
        store = load_store(str(tmp_path / "staging"))
        limits = SegmentLimits(max_segment_records=5_000)
        with ThreadPoolExecutor(1) as pool:
            fetching = pool.submit(
                fetch_range, {"bootstrap.servers": handle.address}, store, FetchRange("bounced", 0, 0, 200_000),
                limits=limits,
            )  # fmt: skip
            deadline = time.monotonic() + 60
            while not [n for n in store.list("topics/") if n.endswith(".manifest.json")]:
                assert time.monotonic() < deadline and not fetching.done()
                time.sleep(0.01)
            os.killpg(handle.pid, signal.SIGKILL)  # the broker crashes: no controlled shutdown
            killed_mid_fetch = not fetching.done()
            time.sleep(2)
            broker.start(workdir)
            result = fetching.result(timeout=120)
    finally:
        broker.stop(workdir)

    assert killed_mid_fetch
    assert result.records == 200_000
    assert result.segments_written == 40
    report = verify(store)
    assert report.ok and report.segments_checked == 40
    assert [r.offset for r in read_range(store, "bounced", 0, 0, 200_000)] == list(range(200_000))


def test_a_re_created_topic_is_never_served_from_its_predecessors_segments(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    from streamproc.kafka.cluster import topic_ids

    name = unique("reborn")
    create_topic(admin, name)
    produce(kafka_broker, name, 5)
    client = {"bootstrap.servers": kafka_broker}
    old_id = topic_ids(client, [name])[name]
    store = load_store(str(tmp_path / "staging"))
    fetch_range(client, store, FetchRange(name, 0, 0, 5, topic_id=old_id))
    for future in admin.delete_topics([name]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 60
    while True:  # deletion is asynchronous
        try:
            create_topic(admin, name)
            break
        except Exception:
            assert time.monotonic() < deadline
            time.sleep(0.5)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(5):
        producer.produce(name, value=f"new-{i}".encode(), partition=0)
    producer.flush(30)
    new_id = topic_ids(client, [name])[name]

    # Topic ids are base64 ('+', '/'): quoted, not read as a pattern.
    with pytest.raises(
        FetchError, match=re.escape(f"was deleted and re-created since the plan (topic id {old_id} then")
    ):
        fetch_range(client, store, FetchRange(name, 0, 0, 5, topic_id=old_id))
    again = fetch_range(client, store, FetchRange(name, 0, 0, 5, topic_id=new_id))

    assert new_id != old_id
    assert (again.segments_written, again.segments_already_complete) == (1, 0)
    assert [r.value for r in read_range(store, name, 0, 0, 5)] == [f"new-{i}".encode() for i in range(5)]


def test_segments_close_by_bytes_where_split_range_closes_them(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """The fetch's per-batch loop (``SegmentColumns.fill``) cuts by size, headers included, as ``split_range`` does."""
    topic = create_topic(admin, unique("bytes"))
    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
    for i in range(400):
        headers = [("trace", b"x" * (i % 13)), ("n", None)] if i % 3 == 0 else None
        producer.produce(topic, key=None if i % 11 == 0 else f"k{i}".encode(), value=b"v" * (i % 97),
                         headers=headers, partition=0, timestamp=1_000 + i)  # fmt: skip
    assert producer.flush(60) == 0
    store = load_store(str(tmp_path / "staging"))
    limits = SegmentLimits(max_segment_bytes=2_000, max_segment_records=1_000)

    fetch_range({"bootstrap.servers": kafka_broker}, store, FetchRange(topic, 0, 0, 400), limits=limits)

    staged = sorted(
        (m.start, m.end)
        for m in (read_manifest(store, n) for n in store.list("topics/") if n.endswith(".manifest.json"))
    )
    expected = [(c.start, c.end) for c in split_range(0, 400, read_range(store, topic, 0, 0, 400), limits)]
    assert len(staged) > 10
    assert staged == expected
