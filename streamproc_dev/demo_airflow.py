"""The demo's Airflow: a private ``AIRFLOW_HOME`` (SQLite metadata, the run ledger beside it, connections as
``AIRFLOW_CONN_*`` variables), one ``airflow dags test streamproc_backfill`` run, and the user who answers its approval
gate (:class:`Approver`, which the DAG tests use too).

``airflow dags test`` runs the DAG in a process of its own, as a user types it; the gate (``approve_handoff``) parks
that run in ``awaiting_input`` until someone answers. In the UI that is "Required Actions" → Approve; here the demo
writes the same answer the REST API's hitlDetails PATCH writes, after printing the preview it approves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamproc_dev.conformance.oracle import PROJECT_ROOT

BACKFILL_DAG = "streamproc_backfill"


@dataclass(frozen=True, slots=True)
class DemoAirflow:
    """Where the demo's Airflow keeps everything, and the environment its commands run with."""

    home: Path
    bootstrap: str

    @property
    def ledger_url(self) -> str:
        return f"sqlite:///{self.home / 'streamproc-ledger.sqlite'}"

    @property
    def work_dir(self) -> Path:
        return self.home / "streamproc-runs"

    def environment(self) -> dict[str, str]:
        """The variables every Airflow command of the demo needs: its home, the repository's DAGs, the ledger, and
        the providers' connections (a local broker, Spark ``local[2]``)."""
        return {
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(PROJECT_ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "STREAMPROC_LEDGER_URL": self.ledger_url,
            "STREAMPROC_WORK_DIR": str(self.work_dir),
            "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
                {"conn_type": "kafka", "extra": {"bootstrap.servers": self.bootstrap}}
            ),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        }

    def command(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``airflow ARGS`` with the demo's environment, run from its home (not the repository root, whose
        ``streamproc.egg-info`` would register the plugin's entry point twice)."""
        airflow = Path(sys.executable).parent / "airflow"
        return subprocess.run(
            [str(airflow), *args], capture_output=True, text=True, cwd=self.home, timeout=timeout, check=False,
            env={**os.environ, **self.environment()},
        )  # fmt: skip

    def migrate(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        result = self.command("db", "migrate")
        if result.returncode != 0:
            output = (result.stdout + result.stderr)[-3000:]
            raise RuntimeError(f"`airflow db migrate` in {self.home} failed:\n{output}")


class Approver(threading.Thread):
    """A user answering the approval gate: waits until ``approve_handoff`` awaits input, then writes the response
    the way the REST API's hitlDetails PATCH does (the response row, then the task resumed). ``before`` sees the
    request (its subject and body: the hand-off preview) first.

    Runs in the process that started ``airflow dags test``, on the same metadata DB: ``AIRFLOW_HOME`` must be set
    in this process before Airflow is first imported.
    """

    def __init__(self, dag_id: str, choice: str, before: Callable[[Any], None] | None = None) -> None:
        super().__init__(daemon=True)
        self.dag_id, self.choice, self.before = dag_id, choice, before
        self.stop = threading.Event()
        self.answered: str | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._answer()
        except BaseException as exc:  # surfaced by the caller
            self.error = exc

    def _answer(self) -> None:
        from airflow import settings
        from airflow._shared.timezones import timezone
        from airflow.models.hitl import HITLDetail, HITLUser
        from airflow.models.taskinstance import TaskInstance
        from airflow.models.trigger import handle_event_submit
        from airflow.triggers.base import TriggerEvent
        from airflow.utils.state import TaskInstanceState
        from sqlalchemy import select

        while not self.stop.wait(0.5):
            session = settings.Session()  # type: ignore[misc]  # set once Airflow is configured
            try:
                ti = session.scalars(
                    select(TaskInstance).where(
                        TaskInstance.dag_id == self.dag_id,
                        TaskInstance.task_id == "approve_handoff",
                        TaskInstance.state == TaskInstanceState.AWAITING_INPUT,
                    )
                ).first()
                if ti is None:
                    continue
                detail = session.scalars(select(HITLDetail).where(HITLDetail.ti_id == ti.id)).one()
                if self.before is not None:
                    self.before(detail)
                detail.responded_by = HITLUser(id="tester", name="tester")
                detail.responded_at = timezone.utcnow()
                detail.chosen_options = [self.choice]
                detail.params_input = {}
                session.add(detail)
                event = TriggerEvent(detail.as_resume_event_payload())  # type: ignore[no-untyped-call]
                handle_event_submit(event, task_instance=ti, session=session)
                session.commit()
                self.answered = ti.run_id
                return
            finally:
                session.close()


@dataclass(frozen=True, slots=True)
class DagRunOutcome:
    """One ``airflow dags test`` run: its DAG run id, each task's state, and what the command printed."""

    run_id: str
    states: dict[str, str]
    output: str

    @property
    def succeeded(self) -> bool:
        return bool(self.states) and all(s in ("success", "skipped") for s in self.states.values())


def run_backfill(airflow: DemoAirflow, conf: Mapping[str, Any], on_approval: Callable[[Any], None]) -> DagRunOutcome:
    """``airflow dags test streamproc_backfill --conf CONF`` with the gate approved (``on_approval`` sees the
    request first); the run's task states from the metadata DB."""
    from airflow import settings
    from airflow.models.dagrun import DagRun

    if Path(os.environ.get("AIRFLOW_HOME", "")).resolve() != airflow.home.resolve():
        raise RuntimeError(f"AIRFLOW_HOME must be {airflow.home} in this process before Airflow is imported")
    before = {r.run_id for r in DagRun.find(dag_id=BACKFILL_DAG)}
    approver = Approver(BACKFILL_DAG, "Approve", on_approval)
    approver.start()
    try:
        result = airflow.command("dags", "test", BACKFILL_DAG, "--conf", json.dumps(dict(conf)))
    finally:
        approver.stop.set()
        approver.join(10)
    if approver.error is not None:
        raise approver.error
    runs = [r for r in DagRun.find(dag_id=BACKFILL_DAG) if r.run_id not in before]
    output = result.stdout + result.stderr
    if len(runs) != 1:
        raise RuntimeError(f"`airflow dags test {BACKFILL_DAG}` made {len(runs)} run(s):\n{output[-4000:]}")
    session = settings.Session()  # type: ignore[misc]  # set once Airflow is configured
    try:
        states = {
            (ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"): str(
                getattr(ti.state, "value", ti.state)
            )
            for ti in runs[0].get_task_instances(session=session)
        }
    finally:
        session.close()
    return DagRunOutcome(str(runs[0].run_id), states, output)
