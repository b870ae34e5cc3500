"""Pandera validation of a source's values on Spark: KIP-1034 dead letter queue records when the processing handler
continues, a failed task naming the record when it fails (real broker, plan → fetch → process on ``local[2]``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.engine.dead_letter_queue import ERROR_HEADERS
from streamproc.engine.task_id import TaskId
from streamproc.errors import StreamsError
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import error_text, partition_counts, plan_id, process, task_work
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.spark import topologies
from tests.integration.spark.conftest import run, wait_for_leaders
from tests.integration.spark.test_process import consume, fresh_copy

PARTITIONS = 3
RECORDS = 1_500
CONTINUE = "tests.integration.spark.topologies:validated_orders_continue"
FAIL = "tests.integration.spark.topologies:validated_orders_fail"


def _value(rng: random.Random, i: int) -> dict[str, Any]:
    if i % 97 == 5:
        return {"customer": f"c{i % 40}", "amount": "lots"}  # a string where an int belongs: a dtype failure
    return {"customer": f"c{i % 40}", "amount": -rng.randint(1, 50) if i % 13 == 0 else rng.randint(0, 500)}


@pytest.fixture(scope="module")
def orders(kafka_broker: str, admin: AdminClient, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Orders on the broker (some with a negative or non-numeric amount), planned and fetched."""
    create_topic(admin, topologies.ORDERS_INPUT, partitions=PARTITIONS)
    create_topic(admin, topologies.ORDERS_OUTPUT, partitions=PARTITIONS)
    wait_for_leaders(admin, topologies.ORDERS_INPUT, topologies.ORDERS_OUTPUT)
    producer = Producer({"bootstrap.servers": kafka_broker, "partitioner": "murmur2_random", "linger.ms": 5})
    rng = random.Random(34)
    for i in range(RECORDS):
        value = json.dumps(_value(rng, i), separators=(",", ":")).encode()
        producer.produce(topologies.ORDERS_INPUT, key=f"c{i % 40}".encode(), value=value, timestamp=2_000_000 + i)
    producer.flush(60)
    work = tmp_path_factory.mktemp("spark-validated")
    describe = work / "topology.txt"
    describe.write_text(str(topologies.validated_orders().describe()))
    plan_file, store = work / "plan.json", work / "staging"
    run("plan", "--bootstrap", kafka_broker, "--application-id", "spark-validated-app", "--topology", str(describe),
        "--out", str(plan_file))  # fmt: skip
    run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
    return {"plan": RunPlan.read(plan_file), "store": store, "bootstrap": kafka_broker}


def _bad(value: bytes | None) -> str | None:
    """Why the test's own rule rejects an order (independent of pandera): the check pandera should name."""
    amount = json.loads(value or b"{}")["amount"]
    if not isinstance(amount, int):
        return "dtype('Int64')"
    return "greater_than_or_equal_to(0)" if amount < 0 else None


def test_values_failing_the_schema_go_to_the_dead_letter_queue_with_kip_1034_headers(
    orders: dict[str, Any], tmp_path: Path
) -> None:
    plan: RunPlan = orders["plan"]
    store_dir = fresh_copy(orders, tmp_path / "store")
    reports = process(plan, store_uri=str(store_dir), topology=CONTINUE, master="local[2]",
                      partitions={topologies.ORDERS_OUTPUT: PARTITIONS})  # fmt: skip
    assert sum(r["records_processed"] for r in reports) == RECORDS
    total_bad = 0
    for report in reports:
        objects = TaskObjects(plan_id(plan), TaskId.parse(report["task_id"]))
        [rng] = [r for r in plan.ranges if f"{r.topic}-{r.partition}" in report["inputs"]]
        records = consume(orders["bootstrap"], rng.topic, rng.partition, rng.end)
        bad = [(r, _bad(r.value)) for r in records if _bad(r.value) is not None]
        total_bad += len(bad)
        dlq = pq.read_table(store_dir / objects.dead_letter_queue).to_pylist()
        assert [(d["key"], d["value"], d["timestamp"]) for d in dlq] == [(r.key, r.value, r.timestamp) for r, _ in bad]
        for row, (record, check) in zip(dlq, bad, strict=True):
            assert row["topic"] == topologies.ORDERS_DLQ and row["partition"] == -1
            assert row["processor_node_id"] == "orders"
            headers = {h["key"]: h["value"] for h in row["headers"]}
            assert [h["key"] for h in row["headers"]] == list(ERROR_HEADERS)  # the source records had no headers
            assert headers["__streams.errors.exception"] == b"streamproc.errors.RecordValidationError"
            assert check in headers["__streams.errors.message"].decode()
            assert b"RecordValidationError" in headers["__streams.errors.stacktrace"]
            assert headers["__streams.errors.topic"] == rng.topic.encode()
            assert headers["__streams.errors.partition"] == str(rng.partition).encode()
            assert headers["__streams.errors.offset"] == str(record.offset).encode()
        assert report["dropped"] == ({"validation": len(bad)} if bad else {})
        assert report["dead_letter_queue"] == ({topologies.ORDERS_DLQ: len(bad)} if bad else {})
        drops = pq.read_table(store_dir / objects.drops).to_pylist()
        assert [(d["offset"], d["reason"]) for d in drops] == [(r.offset, "validation") for r, _ in bad]
        sent = sum(report["outputs"].values())
        assert sent == len(records) - len(bad)  # only valid orders reach the processor and the sink
    assert total_bad > 0


def test_a_value_failing_the_schema_under_a_fail_handler_fails_the_task_naming_the_record(
    orders: dict[str, Any], tmp_path: Path
) -> None:
    plan: RunPlan = orders["plan"]
    store_dir = fresh_copy(orders, tmp_path / "store")
    work = task_work(plan, topology=FAIL, store_uri=str(store_dir),
                     counts=partition_counts(plan, {topologies.ORDERS_OUTPUT: PARTITIONS}))[0]  # fmt: skip
    [rng] = [r for r in plan.ranges if (r.topic, r.partition) == (work.inputs[0].topic, work.inputs[0].partition)]
    first_bad = next(r for r in consume(orders["bootstrap"], rng.topic, rng.partition, rng.end) if _bad(r.value))
    with pytest.raises(StreamsError) as failure:
        run_task(work)
    message = str(failure.value)
    assert message.startswith(f"task [{work.task_id}] Exception caught in process. taskId={work.task_id}, "
                              "processor=orders")  # fmt: skip
    assert f"topic=[{rng.topic}] partition=[{rng.partition}] offset=[{first_bad.offset}]" in message
    assert "failed its schema" in str(failure.value.__cause__)
    assert "caused by streamproc.errors.RecordValidationError: the value failed its schema" in error_text(failure.value)
    assert not (store_dir / TaskObjects(plan_id(plan), TaskId.parse(work.task_id)).report).exists()
