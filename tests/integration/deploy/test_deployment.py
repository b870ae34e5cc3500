"""docker-compose.yml's topology without Docker: the scheduled DAG runs for real on the same services and variables.

The services are the real ones, each on 127.0.0.1: the Kafka broker (KRaft), MinIO (its bucket made by the
compose file's own ``docker/create_bucket.py``), PostgreSQL with two databases (Airflow's metadata, ``airflow db
migrate``-ed, and the run ledger), a Spark standalone cluster (a master and the compose file's two workers, of its
cores and memory) and Airflow's api-server, scheduler, DAG processor and triggerer as separate processes. Every
Airflow process gets the compose file's environment for ``airflow-scheduler``, each address, mount point and
credential swapped for the local service's (:class:`~tests.integration.deploy.compose_file.LocalEquivalent`).

Records are produced; ``streamproc_incremental`` is unpaused and triggered through the REST API; the run reaches
Spark through ``spark_default`` = the standalone master. Asserted: the run succeeded, the ledger on PostgreSQL holds
its figures, Airflow's own metadata is on PostgreSQL, the group's committed offsets moved to the end, the outputs
are on the broker, the state directory holds the tasks' checkpoints, and the Spark master ran the application.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka import clients
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.ledger import Ledger
from streamproc_dev import airflow_server, spark_cluster
from tests.conftest import PROJECT_ROOT, PostgresServer, S3Server
from tests.integration.airflow.conftest import produce
from tests.integration.airflow.test_backfill_refusals import commit_offsets
from tests.integration.conftest import create_topic
from tests.integration.deploy import compose_file, topologies
from tests.integration.deploy.airflow_api import Api, wait_for
from tests.integration.deploy.compose_file import LocalEquivalent
from tests.integration.handoff.test_handoff import log_ends, read_all
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration

DAG = "streamproc_incremental"
PARTITIONS = 2
BEFORE, ARRIVED = 200, 150
#: what ``airflow_server.start`` sets from its own arguments (home, port, users): present in the compose file too
SET_BY_THE_SERVER = (
    "AIRFLOW_HOME",
    "AIRFLOW__CORE__DAGS_FOLDER",
    "AIRFLOW__API__HOST",
    "AIRFLOW__API__PORT",
    "AIRFLOW__API__BASE_URL",
    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS",
    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
)


@pytest.fixture
def deployment_dirs(tmp_path: Path) -> Iterator[dict[str, Path]]:
    dirs = {name: tmp_path / name for name in ("airflow", "spark", "work", "state", "topologies")}
    for path in dirs.values():
        path.mkdir()
    # The compose file mounts the user's topologies; here the tests' package is what the tasks import.
    (dirs["topologies"] / "tests").symlink_to(PROJECT_ROOT / "tests")
    yield dirs


def test_the_compose_topology_runs_the_scheduled_dag_without_docker(
    kafka_broker: str,
    admin: AdminClient,
    s3_server: S3Server,
    postgres_server: PostgresServer,
    deployment_dirs: dict[str, Path],
    unique: Callable[[str], str],
) -> None:
    compose = compose_file.load()
    settings = compose_file.env_example()
    app_id = unique("deploy")
    bucket = unique("deploy")

    # PostgreSQL: the compose file's two databases (names from .env.example), each a new one on the local server
    databases = {settings[key]: postgres_server.create_database(settings[key])
                 for key in ("AIRFLOW_DB", "STREAMPROC_LEDGER_DB")}  # fmt: skip
    local = LocalEquivalent(
        compose,
        addresses={"kafka": kafka_broker, "minio": s3_server.endpoint.removeprefix("http://")},
        paths={
            "/opt/streamproc/topologies": deployment_dirs["topologies"],
            "/var/lib/streamproc/work": deployment_dirs["work"],
            "/var/lib/streamproc/state": deployment_dirs["state"],
        },  # fmt: skip
        databases=databases,
        s3_keys=(s3_server.access_key, s3_server.secret_key),
    )

    # MinIO: the bucket, by the compose file's one-shot service's script and environment
    minio_init = local.environment("minio-init") | {"STREAMPROC_BUCKET": bucket}
    script = PROJECT_ROOT / compose_file.service(compose, "minio-init")["command"][1].removeprefix("/opt/streamproc/")
    made = subprocess.run([sys.executable, str(script)], env={**os.environ, **minio_init}, capture_output=True,
                          text=True, check=False, timeout=60)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"bucket {bucket} created" in made.stdout

    # Spark: a master and the compose file's workers, of its cores and memory, with the workers' environment
    worker = compose_file.service(compose, "spark-worker")
    cluster = spark_cluster.start(
        deployment_dirs["spark"],
        workers=int(worker["deploy"]["replicas"]),
        cores=int(compose_file.option(worker["command"], "--cores")),
        memory=compose_file.option(worker["command"], "--memory"),
        env=local.environment("spark-worker"),
    )
    try:
        local.addresses["spark-master"] = cluster.address.removeprefix("spark://")
        _run_the_dag(compose, local, settings, deployment_dirs, cluster, kafka_broker, admin, app_id, bucket)
    finally:
        spark_cluster.stop(deployment_dirs["spark"])


def _run_the_dag(
    compose: dict[str, Any],
    local: LocalEquivalent,
    settings: dict[str, str],
    dirs: dict[str, Path],
    cluster: Any,
    bootstrap: str,
    admin: AdminClient,
    app_id: str,
    bucket: str,
) -> None:
    # The application: input records the group has committed, then ARRIVED new ones for the scheduled run
    source, sink = topologies.input_topic(), topologies.output_topic()
    for topic, config in ((source, None), (sink, None), (f"{app_id}-counts-changelog", {"cleanup.policy": "compact"})):
        if topic not in admin.list_topics(timeout=10).topics:
            create_topic(admin, topic, partitions=PARTITIONS, config=config)
    wait_for_leaders(admin, source, sink, f"{app_id}-counts-changelog")
    produce(bootstrap, source, BEFORE, seed=5)
    caught_up = log_ends(bootstrap, source, PARTITIONS)
    commit_offsets(bootstrap, app_id, {(source, p): o for p, o in caught_up.items()})
    sink_before = log_ends(bootstrap, sink, PARTITIONS)
    produce(bootstrap, source, ARRIVED, seed=6, first_timestamp=5_000_000)
    ends = log_ends(bootstrap, source, PARTITIONS)

    # Airflow: the scheduler's environment from the compose file; this application in its Variable
    env = local.environment("airflow-scheduler", drop=SET_BY_THE_SERVER)
    env["AIRFLOW_VAR_STREAMPROC_INCREMENTAL"] = json.dumps(
        json.loads(env["AIRFLOW_VAR_STREAMPROC_INCREMENTAL"])
        | {"application_id": app_id, "topology": topologies.REFERENCE, "store": f"s3://{bucket}/staging"}
    )
    state_dir = json.loads(env["AIRFLOW_VAR_STREAMPROC_INCREMENTAL"])["state_dir"]
    assert state_dir == str(dirs["state"])
    user = compose_file.environment(compose, "airflow-apiserver")["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"]
    name, role = user.split(":")
    services = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
    components = [compose_file.service(compose, s)["command"][1] for s in services]
    handle = airflow_server.start(
        dirs["airflow"],
        dags_folder=PROJECT_ROOT / "dags",
        users=[airflow_server.UiUser(name, settings["AIRFLOW_ADMIN_PASSWORD"], role)],
        env=env,
        components=components,
    )
    try:
        api = Api(handle.address, airflow_server.token(handle.address, name, settings["AIRFLOW_ADMIN_PASSWORD"]))
        wait_for("the DAG processor to parse the DAG", lambda: api.call("GET", f"/dags/{DAG}"), 180, dirs["airflow"])
        api.call("PATCH", f"/dags/{DAG}", {"is_paused": False})
        triggered = api.call("POST", f"/dags/{DAG}/dagRuns", {"logical_date": None})["dag_run_id"]

        def finished() -> list[dict[str, Any]] | None:
            runs = api.call("GET", f"/dags/{DAG}/dagRuns")["dag_runs"]
            done = all(r["state"] in ("success", "failed") for r in runs)
            return runs if done and any(r["dag_run_id"] == triggered for r in runs) else None

        runs = wait_for("the DAG runs to finish", finished, 420, dirs["airflow"])
        # the compose file's healthchecks of the components pass against the running ones
        for service in services:
            check = compose_file.service(compose, service)["healthcheck"]["test"]
            if check[1] == "python":  # docker/healthcheck.py, asking this API server's monitor
                script = PROJECT_ROOT / check[2].removeprefix("/opt/streamproc/")
                health = {"AIRFLOW_HEALTH_URL": f"{handle.address}/api/v2/monitor/health"}
                done = subprocess.run([sys.executable, str(script), *check[3:]], env={**os.environ, **health},
                                      capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
                assert done.returncode == 0, f"{service}'s healthcheck {check[1:]}: {done.stdout}{done.stderr}"
            else:
                url = check[-1].replace(f"localhost:{compose_file.exposed_port(compose, service)}",
                                        handle.address.removeprefix("http://"))  # fmt: skip
                with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
                    assert answer.status == 200
    finally:
        airflow_server.stop(dirs["airflow"])

    # Every run succeeded; exactly one (the triggered one, or a scheduled one the scheduler made first) processed
    # what arrived, any other found nothing new
    assert {r["dag_run_id"]: r["state"] for r in runs} == {r["dag_run_id"]: "success" for r in runs}
    with Ledger(local.databases[settings["STREAMPROC_LEDGER_DB"]]) as ledger:
        recorded = [ledger.run_for_dag_run(DAG, r["dag_run_id"]) for r in runs]
    statuses = sorted(d.summary.status for d in recorded if d is not None)
    assert statuses == sorted(["succeeded"] + ["skipped"] * (len(runs) - 1))
    [processed] = [d for d in recorded if d is not None and d.summary.status == "succeeded"]
    summary = processed.summary
    assert (summary.trigger, summary.records_planned, summary.records_processed) == ("scheduled", ARRIVED, ARRIVED)
    assert {row.partition: (row.committed_before, row.committed_after) for row in processed.lag} == {
        f"{source}-{p}": (caught_up[p], ends[p]) for p in range(PARTITIONS)
    }

    # the group's committed offsets moved to the end; the outputs are on the broker
    committed, _ = read_committed_offsets(clients.admin({"bootstrap.servers": bootstrap}), app_id)
    assert {tp.partition: c.offset for tp, c in committed.items() if tp.topic == source} == ends
    outputs = read_all(bootstrap, sink, PARTITIONS, start=sink_before)
    assert len(outputs) == ARRIVED

    # the state directory (the compose file's volume) holds each task's checkpoint
    checkpoints = sorted(p.parent.name for p in (dirs["state"] / app_id).glob("*/.checkpoint"))
    assert checkpoints == [f"0_{p}" for p in range(PARTITIONS)]

    # Airflow's own metadata is on PostgreSQL: the runs are rows there
    import sqlalchemy

    engine = sqlalchemy.create_engine(local.databases[settings["AIRFLOW_DB"]])
    try:
        with engine.connect() as db:
            query = sqlalchemy.text("SELECT run_id, run_type FROM dag_run WHERE dag_id = :d")
            rows = dict(db.execute(query, {"d": DAG}).all())  # each row a (run_id, run_type) pair
    finally:
        engine.dispose()
    sampled = {r["dag_run_id"] for r in runs}
    assert sampled <= set(rows)
    # A run listed later than the runs above can only be the hourly schedule's, made after they were listed and
    # before the scheduler stopped (the test crossed the hour: the failure of one CI run)
    later = {run_id: kind for run_id, kind in rows.items() if run_id not in sampled}
    assert set(later.values()) <= {"scheduled"}, later

    # the process step ran on the standalone cluster, not in local mode
    with urllib.request.urlopen(f"{cluster.extra['ui']}/json/", timeout=5) as answer:  # noqa: S310 - loopback
        master = json.load(answer)
    assert [a["name"] for a in master["completedapps"]] == ["streamproc process"]
    assert master["aliveworkers"] == 2
