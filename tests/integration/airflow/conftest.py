"""Airflow for the DAG tests: a migrated metadata DB (SQLite) per session, the providers' connections pointing at
the session's real broker, MinIO and Spark ``local[2]``, the repository's ``dags/``, and a user's approval.

Connections are the providers' own (``kafka_default``, ``aws_default``, ``spark_default``) as ``AIRFLOW_CONN_*``
JSON. Each carries a recognisable secret (a SASL password the PLAINTEXT broker ignores; MinIO's secret key) that
the secrets test looks for in every task log line and ledger row.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.handoff.kill_points import PAUSE_AT_ENV, PAUSE_DIR_ENV
from streamproc_dev.demo_airflow import Approver
from tests.conftest import PROJECT_ROOT, S3Server
from tests.integration.airflow import topologies
from tests.integration.conftest import create_topic
from tests.integration.spark.conftest import wait_for_leaders

#: planted in kafka_default's extra as sasl.password: must never show in a log line or the ledger
SASL_SECRET = "sasl-planted-7f3a9c1e-do-not-log"
PARTITIONS = 2
RECORDS = 400
BACKFILL = "streamproc_backfill"
INCREMENTAL = "streamproc_incremental"


@dataclass(frozen=True, slots=True)
class AirflowSetup:
    bootstrap: str
    ledger_url: str
    work_dir: Path
    bucket: str
    s3_secret: str
    environment: dict[str, str]

    def store(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"


@pytest.fixture(scope="session")
def airflow_setup(
    kafka_broker: str, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AirflowSetup]:
    """Connections, the ledger URL and the work directory (set per test by ``_airflow_environment``); ``airflow db
    migrate`` once."""
    base = tmp_path_factory.mktemp("airflow")
    bucket = "airflow-dags-" + os.urandom(4).hex()
    s3_server.client().create_bucket(Bucket=bucket)
    settings = {
        "STREAMPROC_WORK_DIR": str(base / "work"),
        "STREAMPROC_LEDGER_URL": f"sqlite:///{base / 'ledger.sqlite'}",
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka_broker, "sasl.password": SASL_SECRET}}
        ),
        "AIRFLOW_CONN_AWS_DEFAULT": json.dumps(
            {
                "conn_type": "aws",
                "login": s3_server.access_key,
                "password": s3_server.secret_key,
                "extra": {"endpoint_url": s3_server.endpoint, "region_name": s3_server.region},
            }
        ),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    airflow = Path(sys.executable).parent / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, cwd=PROJECT_ROOT,
                   env={**os.environ, **settings})  # fmt: skip
    yield AirflowSetup(
        kafka_broker, settings["STREAMPROC_LEDGER_URL"], base / "work", bucket, s3_server.secret_key, settings
    )


@pytest.fixture(autouse=True)
def _airflow_environment(airflow_setup: AirflowSetup, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connections, the ledger URL and the work directory in the environment of each Airflow test only: set for
    the whole session they leaked into later tests (``streamproc run``/``handoff`` then wrote the Airflow ledger)."""
    for key, value in airflow_setup.environment.items():
        monkeypatch.setenv(key, value)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)  # only the connection may supply them


@pytest.fixture(scope="session")
def dagbag(airflow_setup: AirflowSetup) -> Any:
    """The repository's DAGs as Airflow's DAG processor parses them."""
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(PROJECT_ROOT / "dags"))


def produce(bootstrap: str, topic: str, count: int, *, seed: int, first_timestamp: int = 1_000_000) -> None:
    """``count`` keyed records with slightly out-of-order timestamps, Java's partitioner."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5})
    rng = random.Random(seed)
    for i in range(count):
        timestamp = first_timestamp + i * 10 + rng.randint(-50, 50)
        producer.produce(topic, key=f"k{rng.randint(0, 20)}".encode(), value=b"x", timestamp=timestamp)
    producer.flush(60)


def prepare_application(
    admin: AdminClient, bootstrap: str, name: str, app_id: str, *, records: int = RECORDS, partitions: int = PARTITIONS
) -> None:
    """The test's input and output topics (created once, with ``records`` records) and the app's changelog."""
    existing = admin.list_topics(timeout=10).topics
    if topologies.input_topic(name) not in existing:
        create_topic(admin, topologies.input_topic(name), partitions=partitions)
        create_topic(admin, topologies.output_topic(name), partitions=partitions)
        wait_for_leaders(admin, topologies.input_topic(name), topologies.output_topic(name))
        produce(bootstrap, topologies.input_topic(name), records, seed=len(name))
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, changelog, partitions=partitions, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, changelog)


def backfill_conf(setup: AirflowSetup, name: str, app_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "application_id": app_id,
        "topology": topologies.reference(name),
        "store": setup.store(app_id),
        **overrides,
    }


@functools.cache
def _importable_tests() -> str:
    """A directory holding only ``tests`` (a link): the DAG run's tasks import the tests' topologies by name. Not the
    project root: its ``streamproc.egg-info`` would register the plugin's entry point a second time."""
    directory = Path(tempfile.mkdtemp(prefix="streamproc-importable-"))
    (directory / "tests").symlink_to(PROJECT_ROOT / "tests")
    return str(directory)


def run_dag(dagbag: Any, dag_id: str, conf: Mapping[str, Any], *, answer: str | None = None, before: Any = None,
            log: TaskLog | None = None, mark_success_pattern: str | None = None) -> Any:  # fmt: skip
    """One DAG run with ``airflow dags test`` (``dag.test()`` in a process of its own, as a user runs it), its
    output appended to ``log``; with ``answer`` a user approves or rejects the gate meanwhile. Returns the DagRun.

    A process per run gives each run's task log to its test alone (Airflow configures its logging once per
    process) and each Spark driver a fresh JVM.
    """
    del dagbag  # the DAG files are parsed by the command, as Airflow parses them
    from airflow.models.dagrun import DagRun

    before_runs = {r.run_id for r in DagRun.find(dag_id=dag_id)}
    approver = Approver(dag_id, answer, before) if answer is not None else None
    if approver is not None:
        approver.start()
    command = [str(Path(sys.executable).parent / "airflow"), "dags", "test", dag_id, "--conf", json.dumps(dict(conf))]
    if mark_success_pattern is not None:
        command += ["--mark-success-pattern", mark_success_pattern]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_importable_tests(), os.environ.get("PYTHONPATH", "")])}
    try:
        result = subprocess.run(command, capture_output=True, text=True, cwd=_importable_tests(), env=env, timeout=600)
    finally:
        if approver is not None:
            approver.stop.set()
            approver.join(10)
    if log is not None:
        log.append(result.stdout + result.stderr)
    assert_no_secret(result.stdout + result.stderr, f"the log of `airflow dags test {dag_id}`")
    if approver is not None and approver.error is not None:
        raise approver.error
    runs = [r for r in DagRun.find(dag_id=dag_id) if r.run_id not in before_runs]
    assert len(runs) == 1, f"`airflow dags test {dag_id}` made {len(runs)} run(s):\n{result.stdout[-3000:]}"
    return runs[0]


def task_states(run: Any) -> dict[str, str]:
    """``task_id`` (``task_id[i]`` for mapped ones) → state of the DAG run's task instances."""
    from airflow import settings

    session = settings.Session()
    try:
        states = {}
        for ti in run.get_task_instances(session=session):
            name = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
            states[name] = str(ti.state.value if hasattr(ti.state, "value") else ti.state)
        return states
    finally:
        session.close()


def wait_until(predicate: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def plan_of(run: Any) -> Any:
    """The plan the DAG run's plan task kept in its work directory."""
    from streamproc.airflow.steps import PLAN_FILE, DagRunRef
    from streamproc.plan.run_plan import RunPlan

    return RunPlan.read(DagRunRef(run.dag_id, run.run_id).work_dir() / PLAN_FILE)


def admin_client(setup: AirflowSetup) -> Any:
    """streamproc's shared Admin client on the session's broker."""
    from streamproc.kafka import clients

    return clients.admin({"bootstrap.servers": setup.bootstrap})


def map_index_labels(run: Any) -> list[str]:
    """The rendered ``map_index_template`` labels of the run's mapped task instances."""
    from airflow import settings

    session = settings.Session()
    try:
        return [ti.rendered_map_index for ti in run.get_task_instances(session=session) if ti.map_index >= 0]
    finally:
        session.close()


class TaskLog:
    """Everything the DAG runs of one test printed: the tasks' log lines and every log record of the runs'
    processes (streamproc's, librdkafka's, Airflow's), as Airflow's logging and its secrets masker wrote them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, text: str) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(text)

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8") if self.path.exists() else ""


@pytest.fixture
def task_log(tmp_path: Path) -> TaskLog:
    return TaskLog(tmp_path / "task.log")


def secrets() -> list[str]:
    """The values planted in the connections: kafka_default's SASL password, aws_default's secret key."""
    return [SASL_SECRET, json.loads(os.environ["AIRFLOW_CONN_AWS_DEFAULT"])["password"]]


def assert_no_secret(text: str, where: str) -> None:
    for secret in secrets():
        assert secret not in text, f"a connection's secret appears in {where}"


def ledger_dump(ledger_url: str) -> str:
    """Every row of every table of the ledger, as text."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(ledger_url)
    try:
        metadata = sqlalchemy.MetaData()
        metadata.reflect(engine)
        with engine.connect() as db:
            return "\n".join(
                f"{table.name}: {tuple(row)}" for table in metadata.sorted_tables for row in db.execute(table.select())
            )
    finally:
        engine.dispose()


AIRFLOW_VALUE_TABLES = ("xcom", "rendered_task_instance_fields", "hitl_detail", "dag_run")


def airflow_db_dump(tables: tuple[str, ...] = AIRFLOW_VALUE_TABLES) -> str:
    """The rows of Airflow's metadata tables where a task's values land (XCom, rendered templates, the approval,
    the run's conf), as text."""
    import sqlalchemy
    from airflow import settings

    metadata = sqlalchemy.MetaData()
    metadata.reflect(settings.engine, only=list(tables))
    with settings.engine.connect() as db:
        return "\n".join(f"{t.name}: {tuple(row)}" for t in metadata.sorted_tables for row in db.execute(t.select()))


# ------------------------------------------------------------------------------- a running Airflow (h-ui's tests)
#: The task whose hand-off pauses inside its transaction on the running Airflow, until the test lets it go on:
#: the recovery test's application has more partitions than that, every other test's (``PARTITIONS``) fewer.
RECOVERY_PAUSED_TASK = "0_3"
assert int(RECOVERY_PAUSED_TASK.split("_")[1]) >= PARTITIONS


@dataclass(frozen=True, slots=True)
class AirflowUI:
    """``airflow standalone`` serving the repository's DAGs and the streamproc plugin; users ``admin``, ``viewer``."""

    url: str
    passwords: dict[str, str]
    log_path: Path
    setup: AirflowSetup
    #: where a hand-off of task ``RECOVERY_PAUSED_TASK`` pauses inside its transaction (``handoff/kill_points.py``)
    pause_dir: Path

    def token(self, user: str = "admin") -> str:
        from streamproc_dev import airflow_server

        return airflow_server.token(self.url, user, self.passwords[user])


@pytest.fixture(scope="session")
def airflow_ui(airflow_setup: AirflowSetup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowUI]:
    """The session's running Airflow: the same connections, ledger and work directory as ``airflow_setup``."""
    from streamproc_dev import airflow_server

    workdir = tmp_path_factory.mktemp("airflow-ui")
    users = [airflow_server.UiUser("admin", "admin-" + os.urandom(6).hex()),
             airflow_server.UiUser("viewer", "viewer-" + os.urandom(6).hex(), role="viewer")]  # fmt: skip
    # The tasks import the tests' topologies by name (tests.integration.airflow.topologies:...). Not the project
    # root itself on the path: its streamproc.egg-info (left by the editable install) would register the plugin's
    # entry point a second time.
    importable = workdir / "importable"
    importable.mkdir()
    (importable / "tests").symlink_to(PROJECT_ROOT / "tests")
    pause_dir = workdir / "handoff-pause"
    pause_dir.mkdir()
    pausing = {PAUSE_AT_ENV: f"in-transaction:{RECOVERY_PAUSED_TASK}", PAUSE_DIR_ENV: str(pause_dir)}
    environment = {**airflow_setup.environment, "PYTHONPATH": str(importable), **pausing}
    handle = airflow_server.start(workdir, dags_folder=PROJECT_ROOT / "dags", users=users, env=environment)
    try:
        yield AirflowUI(handle.address, {u.name: u.password for u in users}, Path(handle.log_path), airflow_setup,
                        pause_dir)  # fmt: skip
    finally:
        airflow_server.stop(workdir)


#: guards against a hung run, not a speed requirement: a run on a loaded 2-core machine takes a few minutes
RUN_GUARD_S = 900


def api(airflow_ui: AirflowUI) -> httpx.Client:
    return httpx.Client(base_url=airflow_ui.url, headers={"Authorization": f"Bearer {airflow_ui.token()}"}, timeout=30)


def wait_for(check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after the guard time.

    An API call that times out counts as "not yet": the API server answers late, not wrongly, while the scheduler,
    Spark and the broker share a loaded machine (seen at load 27 on 2 cores).
    """
    deadline = time.monotonic() + RUN_GUARD_S
    while True:
        try:
            if result := check():
                return result
        except httpx.TimeoutException:
            pass
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(2)


def task_state(airflow_ui: AirflowUI, dag_run_id: str, task_id: str) -> str | None:
    with api(airflow_ui) as client:
        response = client.get(f"/api/v2/dags/{BACKFILL}/dagRuns/{quote(dag_run_id, safe='')}/taskInstances/{task_id}")
    state: str | None = response.json().get("state") if response.status_code == 200 else None
    return state


def run_state(airflow_ui: AirflowUI, dag_run_id: str) -> str:
    with api(airflow_ui) as client:
        state: str = client.get(f"/api/v2/dags/{BACKFILL}/dagRuns/{quote(dag_run_id, safe='')}").json()["state"]
    return state


def wait_for_the_gate_to_park(airflow_ui: AirflowUI, dag_run_id: str) -> None:
    """Wait until the run's approval gate awaits input and the scheduler has taken the parked task's process exit.

    Approve only then: Airflow 3.1 marks the gate FAILED when that (stale) executor event arrives after the approval
    has already resumed the same try ("finished with state success, but the task instance's state attribute is
    running"), seen on a loaded machine. A person never approves that fast; a test would.
    """
    wait_for(lambda: task_state(airflow_ui, dag_run_id, "approve_handoff") == "awaiting_input" or
             run_state(airflow_ui, dag_run_id) == "failed", "the approval gate")  # fmt: skip
    assert run_state(airflow_ui, dag_run_id) == "running", "the run failed before the approval gate"
    parked = (f"Received executor event with state success for task instance TaskInstanceKey(dag_id='{BACKFILL}', "
              f"task_id='approve_handoff', run_id='{dag_run_id}'")  # fmt: skip
    wait_for(lambda: parked in airflow_ui.log_path.read_text("utf-8", "replace"), "the scheduler to see the gate park")
