"""The real ``streamproc`` executable against a Kafka cluster it cannot reach, and against one it can: one line
naming the address and the cause, never librdkafka's connection log or a traceback; nothing stray on success."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.kafka import clients
from tests.integration.cli.test_plan_fetch_verify import COUNT_TOPOLOGY
from tests.integration.conftest import create_topic

STREAMPROC = str(Path(sys.executable).with_name("streamproc"))


def streamproc(*args: str) -> subprocess.CompletedProcess[str]:
    # the timeout only stops a hung run from hanging the suite; nothing asserts on how long a run took
    return subprocess.run([STREAMPROC, *args], capture_output=True, text=True, timeout=300, check=False)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    return line


@pytest.fixture
def refused_address() -> str:
    """A loopback port nothing listens on: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.fixture
def stopped_broker(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real broker that held a topic and a plan for it, then was stopped: its address and the plan file."""
    from streamproc_dev import broker

    workdir = tmp_path / "kafka"
    handle = broker.start(workdir)
    try:
        create_topic(AdminClient({"bootstrap.servers": handle.address}), "orders", partitions=2)
        producer = Producer({"bootstrap.servers": handle.address})
        for i in range(10):
            producer.produce("orders", key=str(i).encode(), value=b"v")
        assert producer.flush(30) == 0
        del producer  # else alive while the broker is stopped (this generator's frame): librdkafka's errors
        plan = tmp_path / "plan.json"
        made = streamproc("plan", "--bootstrap", handle.address, "--application-id", "app", "--input-topic",
                          "orders", "--out", str(plan))  # fmt: skip
        assert made.returncode == 0, made.stderr
    finally:
        broker.stop(workdir)
    yield handle.address, plan


def test_a_wrong_address_is_one_line_naming_it_and_the_refusal(refused_address: str) -> None:
    result = streamproc("plan", "--bootstrap", refused_address, "--application-id", "app", "--input-topic", "t")
    line = one_error_line(result)
    assert line.startswith(f"error: cannot reach the Kafka cluster at {refused_address}: ")
    assert "Connection refused" in line

    result = streamproc("--output", "json", "plan", "--bootstrap", refused_address, "--application-id", "app",
                        "--input-topic", "t")  # fmt: skip
    assert result.returncode == 1 and result.stderr == ""
    error = json.loads(result.stdout)
    assert error["error"] == "KafkaUnavailableError"
    assert f"at {refused_address}: " in error["message"] and "Connection refused" in error["message"]


def test_verbose_shows_librdkafkas_log_through_python_logging(refused_address: str) -> None:
    result = streamproc("-v", "plan", "--bootstrap", refused_address, "--application-id", "app", "--input-topic", "t")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(" streamproc.librdkafka: " in line and "Connection refused" in line for line in lines)
    assert not any(line.startswith("%") for line in lines)  # nothing printed by librdkafka itself
    assert lines[-1].startswith(f"error: cannot reach the Kafka cluster at {refused_address}: ")


def test_a_broker_that_is_down_is_one_line_for_plan_and_fetch(stopped_broker: tuple[str, Path], tmp_path: Path) -> None:
    address, plan = stopped_broker

    line = one_error_line(streamproc("plan", "--bootstrap", address, "--application-id", "app", "--input-topic",
                                     "orders"))  # fmt: skip
    assert line.startswith(f"error: cannot reach the Kafka cluster at {address}: ") and "Connection refused" in line

    fetched = streamproc("fetch", "--bootstrap", address, "--plan", str(plan), "--store", str(tmp_path / "staging"))
    line = one_error_line(fetched)
    assert line.startswith(f"error: cannot reach the Kafka cluster at {address}: ") and "Connection refused" in line


def test_plan_and_fetch_print_their_result_and_nothing_else(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    words = create_topic(admin, unique("words"), partitions=2)
    counts = create_topic(admin, unique("counts"), partitions=2)
    app_id = unique("wordcount")
    producer = Producer({"bootstrap.servers": kafka_broker})
    for p in (0, 1):
        for i in range(5):
            producer.produce(words, key=f"w{i}".encode(), value=b"hello", partition=p)
    assert producer.flush(30) == 0
    create_topic(admin, f"{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog", partitions=2)
    topology = tmp_path / "topology.txt"
    topology.write_text(COUNT_TOPOLOGY.format(words=words, counts=counts))
    plan = tmp_path / "plan.json"

    planned = streamproc("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                         str(topology), "--out", str(plan))  # fmt: skip
    assert planned.returncode == 0 and planned.stderr == ""
    fetched = streamproc("fetch", "--bootstrap", kafka_broker, "--plan", str(plan), "--store", str(tmp_path / "s"))
    assert fetched.returncode == 0 and fetched.stderr == ""
    assert f"{words}-0" in fetched.stdout and f"{words}-1" in fetched.stdout


def test_dry_run_with_out_writes_the_plan_and_the_table_stays_aligned_for_long_names(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("a-dsl-application")
    # the length of a DSL app's internal topic names, which used to push the table's columns apart
    long_topic = create_topic(admin, f"{app_id}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition", partitions=2)
    short_topic = create_topic(admin, unique("t"))
    producer = Producer({"bootstrap.servers": kafka_broker})
    producer.produce(long_topic, value=b"v", partition=1)
    assert producer.flush(30) == 0
    plan = tmp_path / "plan.json"

    result = streamproc("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--input-topic", long_topic,
                        "--input-topic", short_topic, "--dry-run", "--out", str(plan))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(plan.read_text())["application_id"] == app_id
    assert result.stdout.rstrip().endswith(f"Plan written to {plan}")
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("PARTITION"))
    rows = [line for line in lines if re.match(rf"({re.escape(long_topic)}|{re.escape(short_topic)})-\d ", line)]
    assert len(rows) == 3
    for column in ("START", "END", "MAX-RECORDS"):
        right_edge = header.index(column) + len(column)
        assert {row[right_edge - 1] for row in rows} <= set("0123456789")  # a number ends under each header
        assert {row[right_edge] for row in rows} == {" "}


def test_a_plan_that_cannot_be_written_is_one_line(kafka_broker: str, admin: AdminClient,
                                                   unique: Callable[[str], str], tmp_path: Path) -> None:  # fmt: skip
    topic = create_topic(admin, unique("t"))
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    result = streamproc("plan", "--bootstrap", kafka_broker, "--application-id", unique("app"), "--input-topic",
                        topic, "--out", str(not_a_dir / "plan.json"))  # fmt: skip
    line = one_error_line(result)
    assert line.startswith("error: Not a directory: ") and str(not_a_dir) in line


def test_one_admin_client_per_cluster_in_a_process(kafka_broker: str) -> None:
    # a new Admin client per call, destroyed right after its answer, raced librdkafka's background queue ("BGQUEUE
    # Purging 1 unserved events" on most plans); the shared one is destroyed once, at exit
    config = {"bootstrap.servers": kafka_broker}
    assert clients.admin(config) is clients.admin(dict(config))
    assert clients.admin({**config, "client.id": "other"}) is not clients.admin(config)
