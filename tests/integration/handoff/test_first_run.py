"""The issue's first-run proof: streamproc backfills history before the Kafka Streams app ever started.

No app has run on the application id: its repartition and changelog topics do not exist. streamproc plans with
``--create-internal-topics`` (the topics are created as Kafka Streams would create them), processes everything
written so far (both stages of re-key → repartition → count) and hands off into the app's state dir. The real app
(``RekeyResumeApp``, Kafka Streams 4.2.2) then starts for the first time: it accepts the topics, restores 0 records
and processes the records written after the plan. Its outputs (read_committed) and final store equal those of an
app that processed the whole input alone; each repartition partition's log start equals the committed offset.
Under at_least_once through ``streamproc run`` (Spark, store kinds read from the Python topology) and under
exactly_once_v2 through the individual commands (``--store-kind`` given by hand).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.plan.run_plan import RunPlan
from streamproc.spark.job import partition_counts, record_upstream, stages, task_work, with_upstream
from streamproc.spark.task_runner import run_task
from tests.integration.conftest import create_topic
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import run
from tests.integration.handoff.test_handoff_repartition import watermarks
from tests.integration.handoff.test_kafka_streams_resumes_rekey import (
    CUSTOMERS,
    PARTITIONS,
    counts_per_key,
    produce,
    rekey_classpath,
    run_rekey_app,
)
from tests.integration.spark.conftest import wait_for_leaders
from tests.integration.state.test_kafka_streams_opens_state import app_classpath

pytestmark = pytest.mark.integration
__all__ = ["app_classpath", "rekey_classpath"]

FIRST_RUN = ("--create-internal-topics", "--streams-setting", "replication.factor=1")


def process_with_harness(plan_file: Path, store: Path, factory: str, output: str) -> list[dict[str, Any]]:
    plan = RunPlan.read(plan_file)
    work = task_work(
        plan,
        topology=f"tests.integration.handoff.topologies:{factory}",
        store_uri=str(store),
        counts=partition_counts(plan, {output: PARTITIONS}),
    )
    upstream: dict[tuple[str, int], list[str]] = {}
    reports: list[dict[str, Any]] = []
    for stage in stages(plan, work):
        stage_reports = [run_task(with_upstream(w, upstream)) for w in stage]
        record_upstream(stage_reports, upstream, {r.topic for r in plan.ranges})
        reports.extend(stage_reports)
    return reports


@pytest.mark.parametrize("guarantee", ["alos", "eos"], ids=["at_least_once", "exactly_once_v2"])
def test_a_new_application_starts_on_a_first_run_handoff(
    guarantee: str,
    kafka_broker: str,
    admin: AdminClient,
    unique: Callable[[str], str],
    tmp_path: Path,
    rekey_classpath: str,
) -> None:
    eos = guarantee == "eos"
    processing = "exactly_once_v2" if eos else "at_least_once"
    source, output = topologies.FIRST_RUN_INPUT[guarantee], topologies.FIRST_RUN_OUTPUT[guarantee]
    alone_output = f"{output}-alone"
    for topic in (source, output, alone_output):
        create_topic(admin, topic, partitions=PARTITIONS)
    wait_for_leaders(admin, source, output, alone_output)
    app_id = unique("first-run")
    repartition = f"{app_id}-{topologies.REKEYED}"
    state_dir = tmp_path / "state"
    rng = random.Random(17)
    base = int(time.time() * 1000) - 3_600_000
    history = [(f"o{i}", rng.choice(CUSTOMERS), base + i * 11) for i in range(90)]
    later = [(f"o{i}", rng.choice(CUSTOMERS), base + i * 11) for i in range(90, 140)]
    produce(kafka_broker, source, history)
    factory = f"first_run_{guarantee}"
    store, work = tmp_path / "staging", tmp_path / "work"

    if not eos:
        args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology",
                f"tests.integration.handoff.topologies:{factory}", "--store", str(store), "--work-dir", str(work),
                "--master", "local[1]", "--processing-guarantee", processing, *FIRST_RUN]  # fmt: skip
        dry = run(*args, "--dry-run")
        assert "dry run: none created yet" in dry.output and f"{repartition} (repartition" in dry.output
        assert not any(t.startswith(app_id) for t in admin.list_topics(timeout=30).topics)  # created nothing
        out = run(*args, "--state-dir", str(state_dir), "--yes")
        assert "Internal topics created for the application's first run" in out.output, out.output
    else:
        describe = tmp_path / "topology.txt"
        describe.write_text(str(getattr(topologies, factory)().describe()))
        plan_file = tmp_path / "plan.json"
        run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(describe),
            "--processing-guarantee", processing, *FIRST_RUN, "--store-kind", "counts=key_value",
            "--out", str(plan_file))  # fmt: skip
        run("fetch", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store))
        reports = process_with_harness(plan_file, store, factory, output)
        assert sum(r["records_processed"] for r in reports if r["task_id"].startswith("0_")) == len(history)
        out = run("handoff", "--bootstrap", kafka_broker, "--plan", str(plan_file), "--store", str(store),
                  "--state-dir", str(state_dir), "--yes")  # fmt: skip
    assert f"published {2 * PARTITIONS} task(s), wrote {PARTITIONS} checkpoint(s)" in out.output, out.output

    committed, _ = read_committed_offsets(admin, app_id)
    for p in range(PARTITIONS):
        offset = next(c.offset for tp, c in committed.items() if tp.topic == repartition and tp.partition == p)
        low, _high = watermarks(kafka_broker, repartition, p)
        assert low == offset, (p, low, offset)

    produce(kafka_broker, source, later)
    total = len(history) + len(later)
    started = run_rekey_app(rekey_classpath, kafka_broker, app_id, state_dir, source, total, output, eos)
    restore_ends = [e for e in started["events"] if e["event"] == "restore_end"]
    assert started["restored"] == 0 and all(e["total"] == 0 for e in restore_ends), started["events"]

    alone = run_rekey_app(
        rekey_classpath, kafka_broker, unique("first-run-alone"), tmp_path / "alone", source, total, alone_output, eos
    )
    assert started["store"] == alone["store"]
    assert sum(count for count, _ in alone["store"].values()) == total
    started_out, alone_out = counts_per_key(kafka_broker, output), counts_per_key(kafka_broker, alone_output)
    assert started_out == alone_out
