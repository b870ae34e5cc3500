"""Airflow's retry finishes a backfill whose hand-off task process was killed mid hand-off (issue 27).

The session's running Airflow (``airflow standalone``: scheduler, LocalExecutor, API server) runs the backfill DAG,
triggered and approved through the REST API. While the hand-off publishes its tasks one transaction after another,
the test SIGKILLs the task's process inside one task's transaction (held there by the hand-off's pause point: the
running Airflow's hand-offs pause in task 0_3's, which only this test's application has), the process the Task SDK
titles ``airflow worker -- <task instance id>``: what a lost worker or an OOM kill does. Airflow's supervisor sees
the process die and the scheduler retries the task; the retry carries the same ledger run on, fences the dead
attempt's open transaction and skips what the ledger holds as done. Nobody touches the ledger or Kafka by hand. Then
the final state is checked on its own: the DAG run and the ledger run succeeded, every task published once, the
group's offsets at the input's ends, each key's counts in the output exactly 1..n read_committed (exactly-once), a
``.checkpoint`` per task.
"""

from __future__ import annotations

import os
import signal
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psutil
import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from streamproc_dev.service_process import tail
from tests.integration.airflow import topologies
from tests.integration.airflow.conftest import (
    BACKFILL,
    RECOVERY_PAUSED_TASK,
    AirflowUI,
    admin_client,
    api,
    backfill_conf,
    prepare_application,
    run_state,
    task_state,
    wait_for,
    wait_for_the_gate_to_park,
)
from tests.integration.handoff.test_handoff import log_ends, read_all

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: tasks the hand-off publishes one after another; the Airflow fixture's hand-offs pause inside 0_3's transaction
PARTITIONS = 6
RECORDS = 1_200


@pytest.fixture(autouse=True)
def _airflow_log_on_failure(airflow_ui: AirflowUI) -> Iterator[None]:
    """Printed after the test; pytest shows it only when it failed."""
    yield
    print(f"--- last lines of {airflow_ui.log_path}:\n{tail(airflow_ui.log_path, 200)}")


def _task_instance(airflow_ui: AirflowUI, dag_run_id: str, task_id: str) -> dict[str, object]:
    with api(airflow_ui) as client:
        response = client.get(f"/api/v2/dags/{BACKFILL}/dagRuns/{quote(dag_run_id, safe='')}/taskInstances/{task_id}")
    response.raise_for_status()
    found: dict[str, object] = response.json()
    return found


def _approve(airflow_ui: AirflowUI, dag_run_id: str) -> None:
    """A user approves the hand-off (the REST API the Required Actions page uses) once the gate has parked."""
    wait_for_the_gate_to_park(airflow_ui, dag_run_id)
    gate = f"/api/v2/dags/{BACKFILL}/dagRuns/{quote(dag_run_id, safe='')}/taskInstances/approve_handoff/-1"
    with api(airflow_ui) as client:
        response = client.patch(f"{gate}/hitlDetails", json={"chosen_options": ["Approve"], "params_input": {}})
    assert response.status_code == 200, response.text


def _kill_the_paused_handoff(airflow_ui: AirflowUI, task_instance_id: str) -> None:
    """SIGKILL the hand-off's process paused inside task ``RECOVERY_PAUSED_TASK``'s transaction (the Task SDK's
    process of the task instance, titled ``airflow worker -- <id>``), then let any later attempt pass the pause."""
    paused = airflow_ui.pause_dir / "paused"
    wait_for(lambda: paused.exists() and paused.read_text("ascii"), "the hand-off to pause in its transaction")
    process = psutil.Process(int(paused.read_text("ascii")))
    assert f"airflow worker -- {task_instance_id}" in " ".join(process.cmdline()), process.cmdline()
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)
    (airflow_ui.pause_dir / "resume").touch()


def test_a_handoff_task_killed_mid_handoff_is_retried_by_airflow_and_the_run_ends_exactly_once(
    airflow_ui: AirflowUI, admin: AdminClient, tmp_path: Path
) -> None:
    setup = airflow_ui.setup
    app_id = f"recovery-{os.urandom(3).hex()}"
    prepare_application(admin, setup.bootstrap, "recovery", app_id, records=RECORDS, partitions=PARTITIONS)
    source, sink, state = topologies.input_topic("recovery"), topologies.output_topic("recovery"), tmp_path / "state"
    state.mkdir()
    conf = backfill_conf(setup, "recovery", app_id, dry_run=False, processing_guarantee="exactly_once_v2",
                         state_dir=str(state))  # fmt: skip
    with api(airflow_ui) as client:
        client.patch(f"/api/v2/dags/{BACKFILL}", json={"is_paused": False}).raise_for_status()
        triggered = client.post(f"/api/v2/dags/{BACKFILL}/dagRuns", json={"logical_date": None, "conf": conf})
    assert triggered.status_code == 200, triggered.text
    dag_run_id = str(triggered.json()["dag_run_id"])

    _approve(airflow_ui, dag_run_id)
    first_attempt = wait_for(lambda: task_state(airflow_ui, dag_run_id, "handoff") == "running" and
                             _task_instance(airflow_ui, dag_run_id, "handoff"), "the hand-off to start")  # fmt: skip
    _kill_the_paused_handoff(airflow_ui, str(first_attempt["id"]))
    with Ledger(setup.ledger_url) as ledger:
        killed = ledger.run_for_dag_run(BACKFILL, dag_run_id)
    assert killed is not None
    published_at_kill = [s.subject for s in killed.steps if s.kind == "publish"]
    assert published_at_kill == [f"0_{p}" for p in range(int(RECOVERY_PAUSED_TASK[2:]))], killed.steps

    final = wait_for(lambda: run_state(airflow_ui, dag_run_id) in ("success", "failed") and
                     run_state(airflow_ui, dag_run_id), "the run to finish")  # fmt: skip
    assert final == "success"
    handoff = _task_instance(airflow_ui, dag_run_id, "handoff")
    assert handoff["state"] == "success" and handoff["try_number"] == 2, handoff  # Airflow's retry finished it

    with Ledger(setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, dag_run_id)
    assert detail is not None and detail.summary.status == "succeeded", detail
    published = [s.subject for s in detail.steps if s.kind == "publish"]
    assert sorted(published) == [f"0_{p}" for p in range(PARTITIONS)]  # each task's transaction recorded once
    assert published[: len(published_at_kill)] == published_at_kill
    ends = log_ends(setup.bootstrap, source, PARTITIONS)
    assert {lag.partition: lag.lag_after for lag in detail.lag} == {f"{source}-{p}": 0 for p in range(PARTITIONS)}
    committed, unstable = read_committed_offsets(admin_client(setup), app_id)
    assert not unstable
    assert {(tp.topic, tp.partition): c.offset for tp, c in committed.items()} == {(source, p): e for p, e in
                                                                                  ends.items()}  # fmt: skip

    per_key = Counter(m.key().decode() for m in read_all(setup.bootstrap, source, PARTITIONS))
    counts: dict[str, list[int]] = defaultdict(list)
    for message in read_all(setup.bootstrap, sink, PARTITIONS):
        counts[message.key().decode()].append(int.from_bytes(message.value(), "big", signed=True))
    # exactly once: the killed attempt's open transaction was aborted, nothing committed twice or skipped
    assert {key: sorted(values) for key, values in counts.items()} == {k: list(range(1, n + 1)) for k, n in
                                                                      per_key.items()}  # fmt: skip
    for p in range(PARTITIONS):
        assert (state / app_id / f"0_{p}" / ".checkpoint").is_file()
