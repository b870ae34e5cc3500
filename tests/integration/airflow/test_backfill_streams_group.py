"""The manual DAG's whole path into a KIP-1071 streams group (issue #31): a real Kafka Streams 4.2.2 app with
``group.protocol=streams`` processes the first part and leaves its streams group empty; an approved ``airflow dags
test`` run of the backfill DAG with ``group_protocol=streams`` plans from the group's committed offsets (the broker
asked for the protocol, the group's topology compared with the Python module's), fetches, processes on Spark and hands
off the second part, committing the streams group's offsets in the outputs' transaction and writing the app's state
directory; the app resumes on the third part with 0 restored and its stores equal an app that processed everything.
The same helpers as ``tests/integration/handoff/test_dsl_programs_streams_group.py`` (the count program, its parts,
the oracle's ``dsl-app``). And the scheduled DAG's same path, its settings from its Airflow Variable: a run with
nothing new skips, the next one hands off what arrived, and the app resumes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets, read_group
from streamproc.ledger import Ledger
from streamproc.plan.cluster_snapshot import GroupState
from tests.integration.airflow.conftest import (
    BACKFILL,
    INCREMENTAL,
    AirflowSetup,
    TaskLog,
    admin_client,
    plan_of,
    run_dag,
    task_states,
)
from tests.integration.conftest import delete_topics, recreate_topics
from tests.integration.handoff.test_dsl_programs_handoff import (
    PARTITIONS,
    _app,
    _parts,
    _produce,
    _topics,
    assert_resumed_stores_equal,
)
from tests.integration.handoff.test_dsl_programs_handoff import oracle_jar as oracle_jar

pytestmark = pytest.mark.integration

PROGRAM = "bytes_count"


def test_an_approved_backfill_hands_off_into_a_streams_group_and_the_app_resumes(
    airflow_setup: AirflowSetup,
    dagbag: Any,
    admin: AdminClient,
    unique: Callable[[str], str],
    task_log: TaskLog,
    tmp_path: Path,
    oracle_jar: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app_id, state_dir = unique("sg-dag"), tmp_path / "state"
    program, parts, topics, empty = _first_run(
        admin, airflow_setup, oracle_jar, app_id, state_dir, monkeypatch, seed=3131
    )
    client_config = {"bootstrap.servers": airflow_setup.bootstrap}

    _produce(airflow_setup.bootstrap, parts[1])
    conf = {
        "application_id": app_id,
        "topology": f"tests.integration.handoff.dsl_handoff_programs:{PROGRAM}",
        "store": airflow_setup.store(app_id),
        "group_protocol": "streams",
        "state_dir": str(state_dir),
        "dry_run": False,
    }
    run = run_dag(dagbag, BACKFILL, conf, answer="Approve", log=task_log)

    states = task_states(run)
    assert states == dict.fromkeys(states, "success"), f"{states}\n{task_log.text[-6000:]}"
    plan = plan_of(run)
    assert plan.streams_group_epoch == empty.epoch is not None  # the guard checked it before each commit
    assert sum(r.end - r.start for r in plan.ranges if not r.internal) == len(parts[1])
    committed, _ = read_committed_offsets(admin_client(airflow_setup), app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and (group.protocol, group.state, group.epoch) == ("streams", "Empty", empty.epoch)
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, run.run_id)
    assert detail is not None
    assert (detail.summary.status, detail.summary.stage, detail.summary.error) == ("succeeded", "handoff", None)
    assert detail.summary.records_processed == len(parts[1])
    assert {s.subject for s in detail.steps if s.kind == "publish"} == {f"0_{p}" for p in range(PARTITIONS)}

    _produce(airflow_setup.bootstrap, parts[2])
    resumed = _app(oracle_jar, airflow_setup.bootstrap, app_id, state_dir, program)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the DAG's hand-off: {restores}"

    alone = _app(oracle_jar, airflow_setup.bootstrap, unique("sg-dag-alone"), tmp_path / "alone", program)
    delete_topics(admin, topics)
    assert_resumed_stores_equal(resumed, alone)


def test_the_incremental_dag_skips_then_hands_off_into_a_streams_group_and_the_app_resumes(
    airflow_setup: AirflowSetup,
    dagbag: Any,
    admin: AdminClient,
    unique: Callable[[str], str],
    task_log: TaskLog,
    tmp_path: Path,
    oracle_jar: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``streamproc_incremental`` with ``group_protocol=streams`` and ``state_dir`` in its Variable: with the app's
    streams group caught up it skips (nothing new since the group's committed offsets); after more input it plans
    from the streams group (its epoch recorded), processes and hands off without an approval, and the app resumes
    with 0 restored, equal to an app that processed everything."""
    app_id, state_dir = unique("sg-incr"), tmp_path / "state"
    program, parts, topics, empty = _first_run(
        admin, airflow_setup, oracle_jar, app_id, state_dir, monkeypatch, seed=3132
    )
    client_config = {"bootstrap.servers": airflow_setup.bootstrap}
    settings = {
        "application_id": app_id,
        "topology": f"tests.integration.handoff.dsl_handoff_programs:{PROGRAM}",
        "store": airflow_setup.store(app_id),
        "group_protocol": "streams",
        "state_dir": str(state_dir),
    }
    monkeypatch.setenv("AIRFLOW_VAR_STREAMPROC_INCREMENTAL", json.dumps(settings))

    quiet = run_dag(dagbag, INCREMENTAL, {}, log=task_log)
    assert set(task_states(quiet).values()) == {"skipped"}, task_log.text[-6000:]
    assert f"nothing new for application '{app_id}' since its committed offsets" in task_log.text

    _produce(airflow_setup.bootstrap, parts[1])
    busy = run_dag(dagbag, INCREMENTAL, {}, log=task_log)

    states = task_states(busy)
    assert states == dict.fromkeys(states, "success"), f"{states}\n{task_log.text[-6000:]}"
    plan = plan_of(busy)
    assert plan.streams_group_epoch == empty.epoch is not None
    assert sum(r.end - r.start for r in plan.ranges if not r.internal) == len(parts[1])
    committed, _ = read_committed_offsets(admin_client(airflow_setup), app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    group = read_group(admin, app_id, client_config=client_config)
    assert group is not None and (group.protocol, group.state, group.epoch) == ("streams", "Empty", empty.epoch)
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(INCREMENTAL, busy.run_id)
    assert detail is not None
    summary = detail.summary
    assert (summary.status, summary.trigger, summary.stage, summary.error) == ("succeeded", "scheduled", "handoff",
                                                                               None)  # fmt: skip
    assert summary.records_processed == len(parts[1])

    _produce(airflow_setup.bootstrap, parts[2])
    resumed = _app(oracle_jar, airflow_setup.bootstrap, app_id, state_dir, program)
    restores = [e for e in resumed["events"] if e["event"].startswith("restore")]
    assert resumed["restored"] == 0, f"the resumed app restored records after the DAG's hand-off: {restores}"

    alone = _app(oracle_jar, airflow_setup.bootstrap, unique("sg-incr-alone"), tmp_path / "alone", program)
    delete_topics(admin, topics)
    assert_resumed_stores_equal(resumed, alone)


def _first_run(
    admin: AdminClient, airflow_setup: AirflowSetup, oracle_jar: Path, app_id: str, state_dir: Path,
    monkeypatch: pytest.MonkeyPatch, *, seed: int,
) -> tuple[Any, list[Any], list[str], GroupState]:  # fmt: skip
    """The count app's first part processed by the real app in a streams group, which it leaves ``Empty`` with its
    commits: the program, the parts of its input (``parts[0]`` produced), its topics and the empty group."""
    from tests.integration.handoff import dsl_handoff_programs

    monkeypatch.setenv("STREAMPROC_ORACLE_GROUP_PROTOCOL", "streams")
    program = dsl_handoff_programs.NAMES[PROGRAM]
    inputs, outputs = _topics(PROGRAM)
    recreate_topics(admin, inputs + outputs, PARTITIONS)
    parts = _parts(PROGRAM, seed=seed)
    _produce(airflow_setup.bootstrap, parts[0])
    first = _app(oracle_jar, airflow_setup.bootstrap, app_id, state_dir, program)
    assert first["restored"] == 0
    empty = read_group(admin, app_id, client_config={"bootstrap.servers": airflow_setup.bootstrap})
    assert empty is not None and (empty.protocol, empty.state, empty.members) == ("streams", "Empty", ()), empty
    return program, parts, inputs + outputs, empty
