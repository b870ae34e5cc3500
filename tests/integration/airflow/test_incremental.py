"""The scheduled DAG: committed offsets → latest; skips cleanly when nothing is new, processes what arrived."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from tests.integration.airflow import topologies
from tests.integration.airflow.conftest import (
    INCREMENTAL,
    PARTITIONS,
    AirflowSetup,
    TaskLog,
    admin_client,
    prepare_application,
    produce,
    run_dag,
    task_states,
)
from tests.integration.airflow.test_backfill_refusals import commit_offsets
from tests.integration.handoff.test_handoff import log_ends, read_all

pytestmark = pytest.mark.integration

ARRIVED = 120


def test_the_incremental_dag_skips_when_nothing_is_new_and_processes_what_arrived(
    airflow_setup: AirflowSetup,
    dagbag: Any,
    admin: AdminClient,
    unique: Callable[[str], str],
    task_log: TaskLog,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app_id = unique("incremental")
    topic = topologies.input_topic("incremental")
    prepare_application(admin, airflow_setup.bootstrap, "incremental", app_id)
    # the application is up to date: its group committed every partition's end
    caught_up = log_ends(airflow_setup.bootstrap, topic, PARTITIONS)
    commit_offsets(airflow_setup.bootstrap, app_id, {(topic, p): o for p, o in caught_up.items()})
    # its settings come from the Airflow Variable (the scheduled DAG's params default to empty)
    settings = {"application_id": app_id, "topology": topologies.reference("incremental"),
                "store": airflow_setup.store(app_id)}  # fmt: skip
    monkeypatch.setenv("AIRFLOW_VAR_STREAMPROC_INCREMENTAL", json.dumps(settings))

    quiet = run_dag(dagbag, INCREMENTAL, {}, log=task_log)

    assert set(task_states(quiet).values()) == {"skipped"}
    assert f"nothing new for application '{app_id}' since its committed offsets" in task_log.text
    with Ledger(airflow_setup.ledger_url) as ledger:
        skipped = ledger.run_for_dag_run(INCREMENTAL, quiet.run_id)
    assert skipped is not None
    summary = skipped.summary
    assert (summary.status, summary.trigger, summary.records_planned) == ("skipped", "scheduled", 0)

    produce(airflow_setup.bootstrap, topic, ARRIVED, seed=99, first_timestamp=2_000_000)
    ends = log_ends(airflow_setup.bootstrap, topic, PARTITIONS)

    busy = run_dag(dagbag, INCREMENTAL, {}, log=task_log)

    states = task_states(busy)
    assert states == dict.fromkeys(states, "success"), states
    committed, _ = read_committed_offsets(admin_client(airflow_setup), app_id)
    assert {tp.partition: c.offset for tp, c in committed.items()} == ends
    outputs = read_all(airflow_setup.bootstrap, topologies.output_topic("incremental"), PARTITIONS)
    assert len(outputs) == ARRIVED  # only what arrived was processed
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(INCREMENTAL, busy.run_id)
    assert detail is not None
    assert (detail.summary.status, detail.summary.records_planned, detail.summary.records_processed) == (
        "succeeded", ARRIVED, ARRIVED
    )  # fmt: skip
    assert {row.partition: (row.committed_before, row.committed_after) for row in detail.lag} == {
        f"{topic}-{p}": (caught_up[p], ends[p]) for p in range(PARTITIONS)
    }
