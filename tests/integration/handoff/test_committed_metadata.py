"""Committed offsets' metadata, read and written byte for byte on the real broker (``streamproc.kafka.librdkafka``).

confluent-kafka 2.16 reads a listed offset's metadata as a C string although librdkafka's copy has no NUL (stray
bytes after it, now and then) and writes it with a NUL appended. Here Kafka's own Admin client (the one Kafka Streams
commits with) writes metadata of 0, 1, 12 (Kafka Streams' own encoding), 100 characters and non-ASCII text, and
streamproc reads it back exactly, many times over; and what streamproc writes, Kafka reads back exactly.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from streamproc.handoff.publish import verify_committed
from streamproc.handoff.txn_offsets import send_offsets_to_transaction
from streamproc.kafka import clients
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.kafka.librdkafka import alter_committed_offsets
from streamproc.state.commit_metadata import TopicPartitionMetadata
from streamproc_dev.conformance.oracle import ORACLE_JAR, ensure_oracle_jar
from tests.integration.conftest import create_topic

pytestmark = pytest.mark.integration

JAVA = Path(__file__).resolve().parent / "java"
PARTITION_TIME = 1_700_000_000_123
#: Partition → committed metadata; partition 2 carries Kafka Streams' 12 characters (TopicPartitionMetadata.encode).
METADATA = {
    0: "",
    1: "x",
    2: TopicPartitionMetadata(PARTITION_TIME).encode(),
    3: "".join(chr(ord("a") + i % 26) for i in range(100)),
    4: "Zeit é € 𝄞 ✓ ünïcødé",
}
READS = 200


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``java/CommitMetadata.java`` and ``java/CommittedMetadata.java`` compiled against the oracle jar (4.2.2)."""
    work = tmp_path_factory.mktemp("commit-metadata")
    jar = work / "oracle.jar"
    shutil.copyfile(ORACLE_JAR if ORACLE_JAR.is_file() else ensure_oracle_jar(), jar)
    sources = [str(JAVA / "CommitMetadata.java"), str(JAVA / "CommittedMetadata.java")]
    proc = subprocess.run(["javac", "-cp", str(jar), "-d", str(work / "classes"), *sources],
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return f"{work / 'classes'}:{jar}"


def java(classpath: str, *args: str) -> str:
    proc = subprocess.run(["java", "-cp", classpath, *args], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_metadata_kafka_wrote_reads_back_exactly_every_time(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], java_classpath: str
) -> None:
    topic = create_topic(admin, unique("meta"), len(METADATA))
    group = unique("meta-group")
    args = [
        f"{p}:{10 + p}:{'streams=' + str(PARTITION_TIME) if p == 2 else m.encode().hex()}" for p, m in METADATA.items()
    ]
    java(java_classpath, "CommitMetadata", kafka_broker, group, topic, *args)

    for _ in range(READS):
        committed, unstable = read_committed_offsets(admin, group)
        assert not unstable
        assert {tp.partition: (c.offset, c.metadata) for tp, c in committed.items()} == {
            p: (10 + p, m) for p, m in METADATA.items()
        }
    assert TopicPartitionMetadata.decode(committed[next(tp for tp in committed if tp.partition == 2)].metadata) == (
        TopicPartitionMetadata(PARTITION_TIME)
    )


def test_metadata_streamproc_wrote_kafka_reads_back_exactly(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], java_classpath: str
) -> None:
    topic = create_topic(admin, unique("meta"), len(METADATA))
    group = unique("meta-group")
    answers = alter_committed_offsets(admin, group, [(topic, p, 20 + p, m) for p, m in METADATA.items()], timeout_s=30)
    assert sorted((a.partition, a.offset, a.error) for a in answers) == [(p, 20 + p, 0) for p in METADATA]

    # Kafka's Admin client: each metadata's length in Java chars (UTF-16 units), the partition time Kafka Streams
    # decodes (-1 where the metadata is not its own); a NUL appended would show as one char more, and -1 for p2
    rows = (line.split() for line in java(java_classpath, "CommittedMetadata", kafka_broker, group).splitlines())
    assert {name: (int(offset), int(chars), int(time_)) for name, offset, chars, time_ in rows} == {
        f"{topic}-{p}": (20 + p, len(m.encode("utf-16-le")) // 2, PARTITION_TIME if p == 2 else -1)
        for p, m in METADATA.items()
    }
    for _ in range(READS):
        committed, _unstable = read_committed_offsets(admin, group)
        assert {tp.partition: c.metadata for tp, c in committed.items()} == METADATA


def test_a_pending_transactional_commit_is_reported_then_read_exactly(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str]
) -> None:
    """``require_stable``: while a transaction holds offsets for the group's committed partitions, the read says so
    (no offsets); once it commits, the new offsets and their metadata are there, byte for byte. (Partitions with
    only a pending offset are not listed at all: the coordinator's fetch-all lists committed partitions.)"""
    topic = create_topic(admin, unique("meta"), len(METADATA))
    group = unique("meta-group")
    alter_committed_offsets(admin, group, [(topic, p, 10, "before") for p in METADATA], timeout_s=30)
    producer = clients.producer(
        {"bootstrap.servers": kafka_broker}, **{"transactional.id": unique("txn"), "enable.idempotence": True}
    )
    member = Consumer({"bootstrap.servers": kafka_broker, "group.id": group})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        offsets = [KafkaTopicPartition(topic, p, 30 + p, m) for p, m in METADATA.items()]
        send_offsets_to_transaction(producer, offsets, member.consumer_group_metadata(), 30)

        assert read_committed_offsets(admin, group) == ({}, True)

        producer.commit_transaction(30)
        # the coordinator applies the committed transaction's offsets after EndTxn answered: the hand-off's own
        # read-back (verify_committed) waits for them the same way
        verify_committed(admin, group, {f"{topic}-{p}": 30 + p for p in METADATA})
        committed, unstable = read_committed_offsets(admin, group)
        assert not unstable
        assert {tp.partition: (c.offset, c.metadata) for tp, c in committed.items()} == {
            p: (30 + p, m) for p, m in METADATA.items()
        }
    finally:
        member.close()
