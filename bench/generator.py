"""The comparison's records: produced once to a broker kept under ``~/.cache/streamproc/bench-broker`` and reused.

A data set is N records over P partitions of topic ``bench-in-<N>-<P>p``: keys ``user-NNNNNN`` drawn from 100 000
users with a Zipf skew (s = 1.1: the hottest user has ~6 % of the records, half of the users almost none), values
of 200 bytes ``IIIII,AAAAAA,<text>`` (item 0–999 uniform, amount 0–999 999, text from a fixed pseudo-random
pool), timestamps 10 ms apart from 2026-01-01 moved back by up to 5 s at random (out of order within a partition),
all from one seeded RNG, so a data set is the same bytes every time. They are produced with librdkafka's
``murmur2_random``, Java's default partitioner for keyed records, lz4-compressed, to topics with infinite retention
(the timestamps are in the past).

The broker's work directory keeps a manifest (``bench-manifest.json``): the generator version, the broker's version,
and per data set its parameters, topic id and end offsets. A data set is reused when the manifest, the topic's id
and its end offsets agree; otherwise the topic is deleted and produced again. A new generator version or broker
version wipes the work directory.
"""

from __future__ import annotations

import fcntl
import json
import random
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamproc_dev import broker
from streamproc_dev.service_process import ServiceHandle, is_alive
from streamproc_dev.versions import KAFKA_VERSION, cache_dir

#: bump when the records a data set holds change: cached data sets are then produced again
GENERATOR_VERSION = 1
USERS = 100_000
ZIPF_S = 1.1
ITEMS = 1_000
VALUE_BYTES = 200
BASE_TIMESTAMP_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP_MS = 10
JITTER_MS = 5_000


@dataclass(frozen=True, slots=True)
class DataSet:
    records: int
    partitions: int

    @property
    def topic(self) -> str:
        return f"bench-in-{self.records}-{self.partitions}p"


def workdir() -> Path:
    return cache_dir() / "bench-broker"


_users: list[Any] = []  # this process's open lock file while it uses the broker (a shared flock on it)


def _lock_file() -> Any:
    """Beside the work directory, not in it: a restart of another version's broker wipes that directory, and a lock
    file wiped under its holder would let the next user take the lock and restart the broker under it."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    return open(cache_dir() / "bench-broker.lock", "a")  # noqa: SIM115 - held open while the broker is in use


def start_broker() -> ServiceHandle:
    """The cached broker, restarted from its work directory (wiped first when made by another version) — unless
    another process (another worktree's ``bench.compare``, a second invocation) is using it: then this one attaches
    to it as it runs. Users hold a shared ``flock`` on ``bench-broker.lock``; restarting needs it exclusively, so one
    invocation never restarts the broker under another's runs."""
    lock = _lock_file()
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fcntl.flock(lock, fcntl.LOCK_SH)
        _users.append(lock)
        return running_broker()
    try:
        return _restart()
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)  # from here on a user like the others
        _users.append(lock)


def _restart() -> ServiceHandle:
    directory = workdir()
    manifest = _read_manifest()
    if manifest.get("generator_version") != GENERATOR_VERSION or manifest.get("broker_version") != KAFKA_VERSION:
        broker.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
    previous = ServiceHandle.load(directory)
    if previous is not None and is_alive(previous.pid):
        broker.stop(directory)  # left running by an interrupted run
    return broker.start(directory, heap="1g")


def attach_broker() -> ServiceHandle:
    """The cached broker as another invocation left it running (``compare --attach``): not restarted, not stopped;
    this process counts as one of its users until it exits."""
    lock = _lock_file()
    fcntl.flock(lock, fcntl.LOCK_SH)
    _users.append(lock)
    return running_broker()


def running_broker() -> ServiceHandle:
    handle = ServiceHandle.load(workdir())
    if handle is None or not is_alive(handle.pid):
        raise SystemExit(f"no bench broker is running in {workdir()}: start one (python -m bench.generator start)")
    return handle


def stop_broker() -> None:
    """Stop the cached broker unless another process still uses it (the last user stops it)."""
    lock = _users.pop() if _users else _lock_file()
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()  # releases this process's shared lock: the others go on using the broker
        return
    try:
        broker.stop(workdir())
    finally:
        lock.close()


def _read_manifest() -> dict[str, Any]:
    path = workdir() / "bench-manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _write_manifest(manifest: dict[str, Any]) -> None:
    (workdir() / "bench-manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _topic_state(bootstrap: str, admin: AdminClient, topic: str) -> tuple[str, list[int]] | None:
    """(topic id, end offsets) of ``topic``, None when it does not exist."""
    if topic not in admin.list_topics(timeout=30).topics:
        return None
    [future] = admin.describe_topics(TopicCollection([topic])).values()
    description = future.result(timeout=30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-generator", "enable.auto.commit": False})
    try:
        ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(len(description.partitions))]  # fmt: skip
    finally:
        consumer.close()
    return str(description.topic_id), ends


def values(records: int, seed: int) -> list[tuple[bytes, bytes, int]]:
    """The data set's (key, value, timestamp) in production order."""
    rng = random.Random(seed)
    weights = [1.0 / (rank**ZIPF_S) for rank in range(1, USERS + 1)]
    users = rng.sample(range(USERS), USERS)  # which user holds which rank
    ranks = rng.choices(range(USERS), cum_weights=_cumulative(weights), k=records)
    pool = bytes(rng.randrange(97, 123) for _ in range(4096))
    text = VALUE_BYTES - 13
    out = []
    for i, rank in enumerate(ranks):
        item, amount = rng.randrange(ITEMS), rng.randrange(1_000_000)
        start = rng.randrange(len(pool) - text)
        value = b"%05d,%06d," % (item, amount) + pool[start : start + text]
        timestamp = BASE_TIMESTAMP_MS + i * STEP_MS - rng.randrange(JITTER_MS)
        out.append((b"user-%06d" % users[rank], value, timestamp))
    return out


def _cumulative(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for w in weights:
        total += w
        out.append(total)
    return out


def produce(bootstrap: str, data: DataSet) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "lz4", "partitioner": "murmur2_random", "acks": "all"})  # fmt: skip
    chunk = 1_000_000
    for first in range(0, data.records, chunk):
        for key, value, timestamp in values(min(chunk, data.records - first), seed=first):
            while True:
                try:
                    producer.produce(data.topic, key=key, value=value, timestamp=timestamp + first * STEP_MS)
                    break
                except BufferError:
                    producer.poll(0.05)
    if producer.flush(600) != 0:
        raise RuntimeError(f"producing {data.topic}: records still unsent after 600 s")


def ensure(bootstrap: str, data: DataSet) -> dict[str, Any]:
    """The data set on the broker, produced unless the manifest says it is there; returns its manifest entry."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    manifest = _read_manifest()
    manifest.update(generator_version=GENERATOR_VERSION, broker_version=KAFKA_VERSION)
    entry = manifest.setdefault("data_sets", {}).get(data.topic)
    state = _topic_state(bootstrap, admin, data.topic)
    if entry is not None and state is not None and [entry["topic_id"], entry["end_offsets"]] == list(state):
        return {**entry, "reused": True}
    if state is not None:
        admin.delete_topics([data.topic])[data.topic].result(timeout=60)
        while data.topic in admin.list_topics(timeout=30).topics:
            time.sleep(0.5)
    config = {"retention.ms": "-1", "retention.bytes": "-1"}
    new = NewTopic(data.topic, num_partitions=data.partitions, replication_factor=1, config=config)
    for attempt in range(20):  # a topic just deleted may still be "marked for deletion"
        try:
            admin.create_topics([new])[data.topic].result(timeout=60)
            break
        except Exception:
            if attempt == 19:
                raise
            time.sleep(1)
    started = time.perf_counter()
    produce(bootstrap, data)
    produced_s = time.perf_counter() - started
    state = _topic_state(bootstrap, admin, data.topic)
    assert state is not None and sum(state[1]) == data.records, (data, state)
    entry = {**asdict(data), "topic": data.topic, "topic_id": state[0], "end_offsets": state[1],
             "users": USERS, "zipf_s": ZIPF_S, "items": ITEMS, "value_bytes": VALUE_BYTES,
             "produced_s": round(produced_s, 1)}  # fmt: skip
    manifest["data_sets"][data.topic] = entry
    _write_manifest(manifest)
    return {**entry, "reused": False}


if __name__ == "__main__":  # python -m bench.generator start|stop: one broker shared by `compare --attach` runs
    import sys

    if sys.argv[1:] == ["start"]:
        print(start_broker().address)
    elif sys.argv[1:] == ["stop"]:
        stop_broker()
    else:
        raise SystemExit("usage: python -m bench.generator start|stop")
