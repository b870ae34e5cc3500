"""docker-compose.yml for real: what a user does, on a Docker engine, with the images built from the repository.

``docker compose --parallel 1 build`` then ``up -d --wait`` the whole file (Kafka, MinIO, PostgreSQL, Airflow's four
components, a Spark master and two workers); the demo's real Kafka Streams app (``DemoOrdersApp``) runs in a container
on the compose network over week one, its state.dir on the compose file's state volume; the backlog arrives; the
backfill DAG is triggered and its hand-off approved through Airflow's REST API; then the checks the demo makes (the
resumed app restores 0 records and equals an app that processed everything), plus: the Spark tasks ran on both worker
containers, the ledger's rows are in the compose PostgreSQL, and ``docker compose down -v`` leaves no container,
volume or network. Bad input: a host port already taken gives one line naming the service, and nothing is left.

``make test`` runs it beside pytest's workers, in a process of its own (``python -m streamproc_dev.deploy_test``, log
``tests/results/deploy.log``); ``make deploy-test`` runs it alone. It needs a Docker engine: the one that answers, or
``dockerd`` started here as root (:mod:`streamproc_dev.docker_engine`; a developer who is not root and has no engine
gets one line saying it was skipped, from that runner, not from here). It builds the stand-in base images once
(:mod:`streamproc_dev.images`; no image registry is reachable here); the engine's data root in the cache keeps them
and every layer for the next run. The Docker-less topology test (``test_deployment.py``) stays the fast check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from streamproc.errors import DevServiceError
from streamproc_dev import airflow_server, demo, docker_engine, images
from streamproc_dev.conformance.oracle import ensure_oracle_jar
from streamproc_dev.deployment import Deployment, host_port, write_env_file
from streamproc_dev.versions import cache_dir
from tests.conftest import PROJECT_ROOT
from tests.integration.deploy import compose_file
from tests.integration.deploy.airflow_api import Api, wait_for

pytestmark = [
    pytest.mark.integration,
    # a cold run builds every image (minutes on two cores) before the first test; a warm one reuses them
    pytest.mark.timeout(5400),
]

BACKFILL = "streamproc_backfill"
SIZE = demo.DemoSize(orders=3_000, new_orders=60, customers=200, partitions=4)
STATE_DIR = "/var/lib/streamproc/state"
APP_JAR = "/opt/streamproc/oracle.jar"


#: every compose project this module creates, removed at the end whatever became of its own ``down``
PROJECTS: list[str] = []


def _project() -> str:
    project = f"streamproc-test-{uuid.uuid4().hex[:6]}"
    PROJECTS.append(project)
    return project


@pytest.fixture(scope="module")
def engine() -> Iterator[None]:
    """A Docker engine: the running one, else dockerd started here and stopped afterwards, whatever happened.

    Before that, anything left of this module's projects is removed: after an interrupt (``make test``'s trap,
    ``streamproc_dev.deploy_test``) the ``down`` that was running may have been cut short.
    """
    workdir = cache_dir() / "run" / "docker"
    started = docker_engine.start(workdir)
    try:
        yield
    finally:
        try:
            for project in PROJECTS:
                Deployment(project, Path(os.devnull)).remove_leftovers()
        finally:
            if started is not None:
                docker_engine.prune_dangling()  # the engine's data root is kept between runs: not its dead layers
                docker_engine.stop(workdir)


@pytest.fixture(scope="module")
def settings(engine: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``.env.example`` with the stand-in base images, free host ports, and the demo's topology mounted.

    The host ports are below the ephemeral range (``host_port``): the tests beside this one take ``free_port()``
    ports while the images build, before these are bound.
    """
    root = tmp_path_factory.mktemp("compose")
    topologies = root / "topologies"
    (topologies / "streamproc_dev").mkdir(parents=True)
    (topologies / "streamproc_dev" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(PROJECT_ROOT / "streamproc_dev" / "demo_topology.py", topologies / "streamproc_dev")
    topologies.chmod(0o755)
    ui_port = host_port()
    values = {
        **images.build_standins(),
        "AIRFLOW_UI_PORT": str(ui_port),
        "AIRFLOW_BASE_URL": f"http://localhost:{ui_port}",
        "SPARK_UI_PORT": str(host_port()),
        "KAFKA_HOST_PORT": str(host_port()),
        "SPARK_WORKER_CORES": "1",
        "SPARK_WORKER_MEMORY": "1g",
        "STREAMPROC_TOPOLOGIES_DIR": str(topologies),
        "ENV_FILE": str(root / "env"),
    }
    write_env_file(root / "env", {k: v for k, v in values.items() if k != "ENV_FILE"})
    return values


@pytest.fixture(scope="module")
def deployment(settings: dict[str, str]) -> Iterator[Deployment]:
    """The compose project, up and healthy; torn down afterwards whatever happened."""
    project = _project()
    deployed = Deployment(project, Path(settings["ENV_FILE"]))
    seconds = deployed.up()
    print(f"docker compose build, then up --wait: {seconds:.0f} s")
    try:
        yield deployed
    finally:
        deployed.down()


def _streams_launcher(deployment: Deployment, image: str) -> list[str]:
    """``docker run`` on the compose network with the state volume: where the user's app would run."""
    return [
        docker_engine.docker_cli(), "run", "--rm", "--network", f"{deployment.project}_default",
        "-v", f"{deployment.project}_streamproc-state:{STATE_DIR}",
        "-v", f"{ensure_oracle_jar()}:{APP_JAR}:ro", "--user", "50000", image,
    ]  # fmt: skip


def test_an_engine_that_does_not_start_is_one_line_and_nothing_is_left(tmp_path: Path) -> None:
    """A dockerd that refuses to start is one line with the daemon's own cause, and no dockerd is left. The fault is
    real: the pid file names a live process, as a dockerd killed without cleaning up leaves it for the next start.
    On a socket of its own, so that an engine answering at the default one changes nothing."""
    workdir = tmp_path / "docker"
    workdir.mkdir()
    host = f"unix://{workdir}/docker.sock"
    (workdir / "dockerd.pid").write_text(str(os.getpid()), encoding="utf-8")
    with pytest.raises(DevServiceError) as refused:
        docker_engine.start(workdir, host)
    message = str(refused.value)
    assert "\n" not in message, message
    assert message.startswith("dockerd did not start: ") and "pid file found" in message, message
    assert docker_engine.engine_version(host=host) is None
    left = subprocess.run(["pgrep", "-f", f"dockerd.*{workdir}"], capture_output=True, check=False)  # noqa: S607
    assert left.returncode == 1, left.stdout


def test_a_user_deploys_runs_a_backfill_with_approval_and_tears_down(
    deployment: Deployment, settings: dict[str, str]
) -> None:
    env = compose_file.env_example()
    bootstrap = f"localhost:{settings['KAFKA_HOST_PORT']}"
    launcher = _streams_launcher(deployment, f"streamproc-spark:{env['STREAMPROC_IMAGE_TAG']}")

    orders = demo.generate(SIZE, int(time.time() * 1000))
    demo.reset_cluster(bootstrap, SIZE.partitions)
    demo.produce(bootstrap, orders.week1)
    first = demo.run_kafka_streams(APP_JAR, "kafka:9092", demo.APPLICATION_ID, Path(STATE_DIR), len(orders.week1),
                                   launcher=launcher)  # fmt: skip
    assert first.restored == 0
    demo.produce(bootstrap, orders.backlog)

    # Airflow's REST API: the backfill DAG over the backlog, the hand-off approved as a user does
    api = Api(f"http://localhost:{settings['AIRFLOW_UI_PORT']}",
              airflow_server.token(f"http://localhost:{settings['AIRFLOW_UI_PORT']}", env["AIRFLOW_ADMIN_USER"],
                                   env["AIRFLOW_ADMIN_PASSWORD"]))  # fmt: skip
    wait_for("the DAG processor to parse the backfill DAG", lambda: api.call("GET", f"/dags/{BACKFILL}"), 300)
    api.call("PATCH", f"/dags/{BACKFILL}", {"is_paused": False})
    conf = {"application_id": demo.APPLICATION_ID, "topology": demo.TOPOLOGY,
            "store": f"s3://{env['STREAMPROC_BUCKET']}/staging", "state_dir": STATE_DIR,
            "start": "committed", "end": "latest", "dry_run": False}  # fmt: skip
    run_id = api.call("POST", f"/dags/{BACKFILL}/dagRuns", {"logical_date": None, "conf": conf})["dag_run_id"]
    run_path = f"/dags/{BACKFILL}/dagRuns/{quote(run_id, safe='')}"

    def gate_or_end() -> str | None:
        state = api.call("GET", run_path)["state"]
        if state in ("success", "failed"):
            return state
        gate = api.call("GET", f"{run_path}/taskInstances/approve_handoff")["state"]
        return "awaiting_input" if gate == "awaiting_input" else None

    assert wait_for("the approval gate", gate_or_end, 1200) == "awaiting_input", _task_states(api, run_path)
    # approve once the scheduler has taken the parked task's exit (tests/integration/airflow/conftest.py says why)
    parked = f"task_id='approve_handoff', run_id='{run_id}'"
    wait_for("the scheduler to see the gate park",
             lambda: parked in deployment.compose("logs", "airflow-scheduler").stdout, 120)  # fmt: skip
    api.call("PATCH", f"{run_path}/taskInstances/approve_handoff/-1/hitlDetails",
             {"chosen_options": ["Approve"], "params_input": {}})  # fmt: skip
    final = wait_for("the run to end", lambda: api.call("GET", run_path)["state"] in ("success", "failed") and
                     api.call("GET", run_path)["state"], 900)  # fmt: skip
    assert final == "success", _task_states(api, run_path)

    # the resumed app restores nothing and equals an app that processed everything from the start
    demo.produce(bootstrap, orders.new)
    resumed = demo.run_kafka_streams(APP_JAR, "kafka:9092", demo.APPLICATION_ID, Path(STATE_DIR), orders.total,
                                     launcher=launcher)  # fmt: skip
    assert resumed.restored == 0
    reference = demo.run_kafka_streams(APP_JAR, "kafka:9092", demo.REFERENCE_ID, Path("/tmp/reference-state"),
                                       orders.total, demo.REFERENCE_SUFFIX, launcher=launcher)  # fmt: skip
    for topic in (demo.CUSTOMER_COUNTS, demo.DAILY_REVENUE):
        ours, theirs = demo.final_values(bootstrap, topic), demo.final_values(bootstrap, topic + demo.REFERENCE_SUFFIX)
        assert ours and ours == theirs, topic
    assert resumed.stores == reference.stores

    # the Spark tasks ran on both worker containers (each keeps the application's executor directory)
    workers = deployment.container_names("spark-worker")
    assert len(workers) == 2
    for worker in workers:
        listing = subprocess.run([docker_engine.docker_cli(), "exec", worker, "ls", "/var/lib/spark/work"],
                                 capture_output=True, text=True, check=True, timeout=60).stdout.split()  # fmt: skip
        assert [d for d in listing if d.startswith("app-")], f"{worker} ran no executor: {listing}"

    # the run ledger's rows are in the compose PostgreSQL (read through streamproc's Ledger in the scheduler): the run
    # succeeded and its ranges of the input topic are exactly the backlog (repartitioned records count as processed)
    read = ("import json, os; from streamproc.ledger import Ledger; "
            f"d = Ledger(os.environ['STREAMPROC_LEDGER_URL']).run_for_dag_run('{BACKFILL}', '{run_id}'); "
            "print(json.dumps([d.summary.status, d.summary.records_planned, d.summary.records_processed, "
            f"sum(r.end - r.start for r in d.ranges if r.topic == '{demo.ORDERS}')]))")  # fmt: skip
    ledger = deployment.compose("exec", "-T", "airflow-scheduler", "python", "-c", read)
    assert ledger.returncode == 0, ledger.stderr
    status, planned, processed, backlog = json.loads(ledger.stdout.strip().splitlines()[-1])
    assert (status, planned, backlog) == ("succeeded", len(orders.backlog), len(orders.backlog))
    assert processed > planned  # the repartition topic's records are processed too

    # down -v leaves nothing
    seconds = deployment.down()
    print(f"docker compose down -v: {seconds:.0f} s")
    assert deployment.leftovers() == {"containers": [], "volumes": [], "networks": []}


def _task_states(api: Api, run_path: str) -> dict[str, Any]:
    return {t["task_id"]: t["state"] for t in api.call("GET", f"{run_path}/taskInstances")["task_instances"]}


def test_a_taken_host_port_is_one_line_naming_the_service_and_nothing_is_left(settings: dict[str, str]) -> None:
    import socket

    project = _project()
    env_file = Path(settings["ENV_FILE"]).with_name("env-taken")
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))  # noqa: S104 - where Docker publishes the port
        taken.listen()
        port = taken.getsockname()[1]
        write_env_file(env_file, {**{k: v for k, v in settings.items() if k != "ENV_FILE"},
                                  "KAFKA_HOST_PORT": str(port)})  # fmt: skip
        deployment = Deployment(project, env_file)
        with pytest.raises(DevServiceError) as refused:
            deployment.up()
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"kafka: host port {port} is already in use"), message
    assert "(the project was torn down; its output and logs: " in message
    assert deployment.leftovers() == {"containers": [], "volumes": [], "networks": []}


def test_a_failed_build_is_one_line_naming_the_service_and_nothing_is_left(settings: dict[str, str]) -> None:
    project = _project()
    env_file = Path(settings["ENV_FILE"]).with_name("env-unbuildable")
    missing = "streamproc-standin/no-such-python:3.11"  # not built here, and no registry to pull it from
    write_env_file(env_file, {**{k: v for k, v in settings.items() if k != "ENV_FILE"}, "PYTHON_IMAGE": missing})
    deployment = Deployment(project, env_file)
    with pytest.raises(DevServiceError) as refused:
        deployment.up()
    message = str(refused.value)
    assert "\n" not in message
    service = message.split(" ", 1)[0]
    assert service in compose_file.load()["services"], message
    assert ": the image build failed: " in message, message
    assert deployment.leftovers() == {"containers": [], "volumes": [], "networks": []}
