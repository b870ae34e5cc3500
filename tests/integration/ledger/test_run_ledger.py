"""``streamproc run`` writes the run ledger: a dry run, a run whose hand-off is not confirmed and a full run on the
real broker and Spark, recorded in a real PostgreSQL database (``--ledger postgresql+psycopg://…``) and by default
in ``<work-dir>/ledger.sqlite``; a run refused because another run of the application is active; failed runs say
why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.cli import main
from streamproc.fetch import FETCH_LIMITS
from streamproc.ledger import Ledger
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import plan_id
from tests.conftest import PROJECT_ROOT
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import answer_list_offsets, run
from tests.integration.ledger import topologies
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

TOPOLOGY = "tests.integration.ledger.topologies:count"
PARTITIONS = 2
RECORDS = 240


@pytest.fixture(scope="module")
def words(kafka_broker: str, admin: AdminClient) -> dict[int, int]:
    """The input, produced once: records per partition."""
    create_topic(admin, topologies.INPUT, partitions=PARTITIONS)
    create_topic(admin, topologies.OUTPUT, partitions=PARTITIONS)
    wait_for_leaders(admin, topologies.INPUT, topologies.OUTPUT)
    producer = Producer({"bootstrap.servers": kafka_broker})
    for i in range(RECORDS):
        producer.produce(topologies.INPUT, key=f"k{i % 17}".encode(), value=b"x", partition=i % 3 % PARTITIONS,
                         timestamp=1_000_000 + i)  # fmt: skip
    producer.flush(60)
    return dict(Counter(i % 3 % PARTITIONS for i in range(RECORDS)))


def _changelog(kafka_broker: str, admin: AdminClient, app_id: str) -> None:
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, changelog)
    answer_list_offsets(kafka_broker, [changelog, topologies.INPUT], PARTITIONS)


def test_streamproc_run_records_its_run_in_postgresql(
    kafka_broker: str,
    admin: AdminClient,
    words: dict[int, int],
    postgres_server: Any,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    app_id = unique("ledger-run")
    _changelog(kafka_broker, admin, app_id)
    work = tmp_path / "work"
    url = postgres_server.create_database("cli_run")
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", TOPOLOGY, "--store",
            str(tmp_path / "staging"), "--work-dir", str(work), "--master", "local[1]"]  # fmt: skip

    run(*args, "--dry-run")  # the default ledger: <work-dir>/ledger.sqlite
    with Ledger(work / "ledger.sqlite") as default:
        [dry] = default.runs()
    assert (dry.application_id, dry.trigger, dry.status, dry.stage) == (app_id, "cli", "dry_run", "plan")
    assert (dry.records_planned, dry.records_processed) == (RECORDS, 0)

    # the hand-off is not confirmed at the prompt: the run is rejected after processing
    rejected = CliRunner().invoke(main, [*args, "--ledger", url], input="n\n", catch_exceptions=False)
    assert rejected.exit_code == 1 and "error: hand-off not confirmed: nothing was done" in rejected.output
    run(*args, "--ledger", url, "--state-dir", str(tmp_path / "state"), "--yes")
    plan = RunPlan.read(work / "plan.json")
    with Ledger(url) as ledger:
        summary, first = ledger.runs(app_id)
        detail = ledger.run(summary.run_id)
        first_detail = ledger.run(first.run_id)
    assert detail is not None and first_detail is not None
    for recorded in (first, summary):
        assert (recorded.trigger, recorded.stage, recorded.plan_id) == ("cli", "handoff", plan_id(plan))
        assert (recorded.records_planned, recorded.records_processed, recorded.records_dropped) == (RECORDS, RECORDS, 0)
    assert (first.status, first.error) == ("rejected", "hand-off not confirmed: nothing was done")
    assert (summary.status, summary.error) == ("succeeded", None)

    # the rejected run fetched and processed: every range copied, every task run
    assert [(r.kind, r.topic, r.partition, r.start, r.end, r.records_staged) for r in first_detail.ranges] == [
        ("input", topologies.INPUT, p, 0, words[p], words[p]) for p in range(PARTITIONS)
    ]  # the changelogs were empty: nothing to restore
    assert all(r.segments_written and r.bytes and r.segments_already_staged == 0 for r in first_detail.ranges)
    assert [(t.task_id, t.records_processed, t.dropped, t.skipped) for t in first_detail.tasks] == [
        (f"0_{p}", words[p], {}, False) for p in range(PARTITIONS)
    ]
    assert [(lag.committed_after, lag.lag_after) for lag in first_detail.lag] == [(None, None)] * PARTITIONS
    assert first_detail.steps == []
    # the next run made the same plan (nothing new arrived): it found the ranges staged (the ledger holds what is
    # staged for each, though nothing was copied now) and the tasks done
    assert [(r.records_planned, r.records_staged, r.segments_written) for r in detail.ranges] == [
        (words[p], words[p], 0) for p in range(PARTITIONS)
    ]
    assert all(r.segments_already_staged for r in detail.ranges)
    assert [(t.task_id, t.records_processed, t.skipped) for t in detail.tasks] == [
        (f"0_{p}", words[p], True) for p in range(PARTITIONS)
    ]
    assert [(lag.partition, lag.committed_before, lag.end_offset, lag.lag_before) for lag in detail.lag] == [
        (f"{topologies.INPUT}-{p}", None, words[p], words[p]) for p in range(PARTITIONS)
    ]
    assert [(lag.committed_after, lag.end_offset_after, lag.lag_after) for lag in detail.lag] == [
        (words[p], words[p], 0) for p in range(PARTITIONS)
    ]
    assert sorted((s.kind, s.subject) for s in detail.steps) == sorted(
        (kind, f"0_{p}") for kind in ("publish", "checkpoint") for p in range(PARTITIONS)
    )

    # another run of the application is active (an Airflow backfill, say): the CLI's run is refused, not recorded
    with Ledger(url) as ledger:
        active = ledger.begin_run(application_id=app_id, trigger="manual", dag_id="streamproc_backfill",
                                  dag_run_id="manual__1")  # fmt: skip
    refused = run(*args, "--ledger", url, "--yes", ok=False)
    assert refused.exit_code == 1
    assert f"application {app_id!r} is busy: run {active} (DAG streamproc_backfill, DAG run manual__1)" in (
        refused.output
    )
    with Ledger(url) as ledger:
        assert [r.run_id for r in ledger.runs(app_id)] == [active, summary.run_id, first.run_id]
        ledger.finish_run(active, "rejected")

    # the idle application's next run: nothing new since the hand-off, so it stops after planning (no Spark)
    idle = run(*args, "--ledger", url, "--state-dir", str(tmp_path / "state"), "--yes")
    assert f"nothing new for application '{app_id}' since its committed offsets" in idle.output
    [times] = [line for line in idle.output.splitlines() if line.startswith("streamproc run: ")]
    assert times.startswith("streamproc run: plan ") and "fetch" not in times and "process" not in times, times
    with Ledger(url) as ledger:
        latest = ledger.runs(app_id)[0]
    assert (latest.status, latest.stage, latest.records_planned, latest.records_processed) == ("skipped", "plan", 0, 0)


def test_a_failed_run_is_recorded_with_the_error_it_printed(
    kafka_broker: str, postgres_server: Any, unique: Callable[[str], str], tmp_path: Path
) -> None:
    url = postgres_server.create_database("cli_failed")
    app_id = unique("ledger-failed")
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--store", str(tmp_path / "staging"),
            "--work-dir", str(tmp_path / "work"), "--ledger", url, "--yes"]  # fmt: skip
    # the plan step refuses (the input topic does not exist): its command prints the error and exits
    missing = run(*args, "--topology", "tests.integration.ledger.topologies:count_of_a_missing_topic", ok=False)
    # an error of the run command itself: the topology cannot be loaded
    unloadable = run(*args, "--topology", "tests.integration.ledger.topologies:nothing", ok=False)
    with Ledger(url) as ledger:
        second, first = ledger.runs(app_id)
    for recorded, result in ((first, missing), (second, unloadable)):
        assert result.exit_code == 1
        assert (recorded.status, recorded.stage) == ("failed", "plan"), (recorded, result.output)
        assert recorded.error is not None and f"error: {recorded.error}" in result.output
    assert "ledger-no-such-topic" in str(first.error)
    assert "has no function nothing" in str(second.error)


RESUMED_RECORDS = FETCH_LIMITS.max_segment_records * 2 + 50_000  # three segments of one range
STREAMPROC = str(Path(sys.executable).parent / "streamproc")


def test_a_run_that_resumes_an_interrupted_fetch_records_the_ranges_staged_total(
    kafka_broker: str, admin: AdminClient, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """``streamproc run`` is killed while fetching, after the first of its range's three segments was staged; the
    same command run again takes the run over, fetches only the rest and records the range's every staged record,
    not only those it copied."""
    app_id = unique("ledger-resumed")
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, topologies.RESUMED_INPUT)
    create_topic(admin, topologies.RESUMED_OUTPUT)
    create_topic(admin, changelog, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, topologies.RESUMED_INPUT, topologies.RESUMED_OUTPUT, changelog)
    answer_list_offsets(kafka_broker, [changelog, topologies.RESUMED_INPUT], 1)
    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 20, "batch.num.messages": 10_000})
    for i in range(RESUMED_RECORDS):
        while True:
            try:
                producer.produce(topologies.RESUMED_INPUT, key=b"k", value=b"x", partition=0, timestamp=1_000 + i)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0
    staging, work = tmp_path / "staging", tmp_path / "work"
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
            "tests.integration.ledger.topologies:count_resumed", "--store", str(staging), "--work-dir", str(work),
            "--master", "local[1]", "--no-handoff"]  # fmt: skip

    with (tmp_path / "killed-run.log").open("wb") as output:
        killed = subprocess.Popen(  # noqa: S603 - the project's own entry point; the test topology importable
            [STREAMPROC, *args],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        )
        try:
            while not (staged_when_killed := len(list(staging.rglob("*.manifest.json")))):
                assert killed.poll() is None, (tmp_path / "killed-run.log").read_text()
                time.sleep(0.02)
        finally:
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait()
    assert 1 <= staged_when_killed < 3, "the fetch finished before it could be killed"
    ledger_file = work / "ledger.sqlite"
    with Ledger(ledger_file) as ledger:
        [dead] = ledger.runs(app_id)
    assert (dead.status, dead.stage) == ("running", "fetch")  # it died holding the application's lock

    resumed_output = run(*args).output  # the same command: it takes the dead run over, no `ledger finish`
    assert f"resuming interrupted run {dead.run_id} at its fetch step with its plan" in resumed_output
    with Ledger(ledger_file) as ledger:
        [resumed] = ledger.runs(app_id)
        detail = ledger.run(resumed.run_id)
    assert detail is not None and (resumed.run_id, resumed.status) == (dead.run_id, "succeeded")
    [staged] = detail.ranges
    assert (staged.topic, staged.start, staged.end) == (topologies.RESUMED_INPUT, 0, RESUMED_RECORDS)
    assert (staged.records_planned, staged.records_staged) == (RESUMED_RECORDS, RESUMED_RECORDS)
    assert staged.segments_already_staged is not None and staged.segments_already_staged >= staged_when_killed
    assert staged.segments_already_staged + (staged.segments_written or 0) == 3
    assert [(t.task_id, t.records_processed) for t in detail.tasks] == [("0_0", RESUMED_RECORDS)]
