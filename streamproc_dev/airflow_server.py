"""A local Airflow 3 on a free loopback port: ``airflow standalone`` for the browser test and the local demo, or
its components as separate processes (api-server, scheduler, DAG processor, triggerer) as the deployment runs them.

``airflow standalone`` runs the API server, scheduler, DAG processor and triggerer as children of one process; it is
started in its own session and stopped by that PID's process group, like the broker and MinIO. It gets its own
``AIRFLOW_HOME`` (metadata DB, logs, plugins folder) under the work directory, the DAGs folder it is given, and the
simple auth manager with the users and passwords it is given. Ready when ``/api/v2/monitor/health`` reports the
metadata DB, scheduler, DAG processor and triggerer healthy.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle

log = logging.getLogger(__name__)

NAME = "airflow"
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
#: The components whose health the API server reports; all must be healthy before the server counts as ready.
COMPONENTS = ("metadatabase", "scheduler", "dag_processor", "triggerer")


@dataclass(frozen=True, slots=True)
class UiUser:
    """A simple-auth-manager user: name, password and role (``viewer``, ``user``, ``op`` or ``admin``)."""

    name: str
    password: str
    role: str = "admin"


def airflow_executable() -> Path:
    """The ``airflow`` command of the interpreter running streamproc (the venv's ``bin``)."""
    return Path(sys.executable).parent / "airflow"


def health(url: str) -> dict[str, str]:
    """Each component's status from ``/api/v2/monitor/health`` (an unauthenticated route)."""
    with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:  # noqa: S310 - loopback
        body = json.load(response)
    return {name: str(body.get(name, {}).get("status")) for name in COMPONENTS}


def _healthy(url: str) -> bool:
    return all(status == "healthy" for status in health(url).values())


#: The long-running components of a deployment, as ``airflow <component>`` commands (``airflow standalone`` runs
#: them all in one process; the deployment runs each as a service of its own).
DEPLOYMENT_COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")


def start(
    workdir: Path | None = None,
    *,
    dags_folder: Path,
    users: Sequence[UiUser] = (),
    env: Mapping[str, str] | None = None,
    components: Sequence[str] | None = None,
    port: int | None = None,
    timeout_s: float = 240,
) -> ServiceHandle:
    """Start Airflow on 127.0.0.1 (``port``, or a fresh one); wait until every component is healthy.

    Without ``components``: ``airflow standalone`` (one process group). With ``components`` (e.g.
    :data:`DEPLOYMENT_COMPONENTS`): ``airflow db migrate``, then each ``airflow <component>`` as a process of its own,
    as a multi-node deployment runs them; ``env`` then usually names the metadata DB
    (``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN``) and the secrets every component must share.

    ``users`` log in with the simple auth manager; by default one ``admin`` with a random password (the handle's
    ``extra["users"]`` lists them, passwords included: a loopback-only development server's). ``env`` adds to the
    processes' environment (the ledger URL, ``AIRFLOW_CONN_*`` connections, Spark settings) and wins over the
    defaults here.
    """
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-airflow-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(f"Airflow is already running from {workdir} (pid {previous.pid}, {previous.address})")
    users = list(users) or [UiUser("admin", secrets.token_urlsafe(12))]
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    passwords = home / "simple_auth_manager_passwords.json"
    passwords.write_text(json.dumps({u.name: u.password for u in users}), encoding="utf-8")
    passwords.chmod(0o600)
    port = port or service_process.free_port()
    url = f"http://127.0.0.1:{port}"
    settings = {
        # standalone starts its components as `airflow ...` from PATH: the venv's, whatever the caller's PATH says
        "PATH": os.pathsep.join([str(airflow_executable().parent), os.environ.get("PATH", "")]),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(Path(dags_folder).resolve()),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(f"{u.name}:{u.role}" for u in users),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(64),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__CORE__PARALLELISM": "4",
        **(env or {}),
    }
    if components is None:
        log_path = workdir / "airflow.log"
        pid = service_process.spawn([str(airflow_executable()), "standalone"], log_path=log_path, env=settings,
                                    cwd=workdir)  # fmt: skip
        pids: dict[str, int] = {}
        service_process.wait_until(lambda: _healthy(url), pid=pid, name=NAME, log_path=log_path, timeout_s=timeout_s)
    else:
        pid, pids, log_path = _start_components(workdir, components, settings, url, timeout_s)
    handle = ServiceHandle(
        name=NAME,
        pid=pid,
        address=url,
        workdir=str(workdir),
        log_path=str(log_path),
        extra={
            "home": str(home),
            "users": json.dumps([asdict(u) for u in users]),
            "components": json.dumps(pids),
        },
    )
    handle.save()
    log.info("Airflow ready at %s (pid %d, AIRFLOW_HOME %s)", url, pid, home)
    return handle


def _start_components(
    workdir: Path, components: Sequence[str], settings: Mapping[str, str], url: str, timeout_s: float
) -> tuple[int, dict[str, int], Path]:
    """``airflow db migrate``, then one process per component; returns the first's PID, all PIDs, its log."""
    unknown = sorted(set(components) - set(DEPLOYMENT_COMPONENTS))
    if unknown or "api-server" not in components:
        raise DevServiceError(
            f"Airflow components {list(components)}: each must be one of {list(DEPLOYMENT_COMPONENTS)}, "
            "and the api-server must be among them (its health route tells when the others are up)"
        )
    airflow = str(airflow_executable())
    migrate_log = workdir / "db-migrate.log"
    with migrate_log.open("wb") as out:
        done = subprocess.run(  # noqa: S603 - arguments are ours
            [airflow, "db", "migrate"], env={**os.environ, **settings}, cwd=workdir, stdout=out,
            stderr=subprocess.STDOUT, check=False, timeout=timeout_s,
        )  # fmt: skip
    if done.returncode != 0:
        raise DevServiceError(
            f"airflow db migrate failed; last lines of {migrate_log}:\n{service_process.tail(migrate_log)}"
        )
    pids: dict[str, int] = {}
    try:
        for component in components:
            pids[component] = service_process.spawn(
                [airflow, component], log_path=workdir / f"{component}.log", env=settings, cwd=workdir
            )
        api_log = workdir / "api-server.log"

        def ready() -> bool:
            dead = [name for name, pid in pids.items() if not service_process.is_alive(pid)]
            if dead:
                raise _ComponentExited(dead[0])
            return _healthy(url)

        _wait_components(ready, pids, workdir, timeout_s)
    except BaseException:
        for name, pid in pids.items():
            service_process.stop_pid(pid, name=f"airflow {name}")
        raise
    return pids["api-server"], pids, api_log


class _ComponentExited(Exception):
    pass


def _wait_components(ready: Callable[[], bool], pids: Mapping[str, int], workdir: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if ready():
                return
        except _ComponentExited as exc:
            name = str(exc)
            log_path = workdir / f"{name}.log"
            raise DevServiceError(
                f"airflow {name} (pid {pids[name]}) exited during start; last lines of {log_path}:\n"
                f"{service_process.tail(log_path)}"
            ) from None
        except Exception as error:  # noqa: BLE001 - not answering yet
            log.debug("Airflow not ready yet: %s", error)
        if time.monotonic() > deadline:
            raise DevServiceError(
                f"Airflow's components {list(pids)} did not all become healthy within {timeout_s:.0f}s; "
                f"their logs are in {workdir}"
            )
        time.sleep(0.5)


def stop(workdir: Path) -> bool:
    """Stop the Airflow started from ``workdir`` (each component's process group), by PID."""
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return False
    running = service_process.is_alive(handle.pid)
    components: dict[str, int] = json.loads(handle.extra.get("components") or "{}")
    for name, pid in components.items():
        if pid != handle.pid:
            service_process.stop_pid(pid, name=f"airflow {name}", timeout_s=60)
    service_process.stop_pid(handle.pid, name=NAME, timeout_s=60)
    return running


def status(workdir: Path) -> str:
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return f"no Airflow was started from {workdir}"
    if not service_process.is_alive(handle.pid):
        return f"stopped (last ran as pid {handle.pid} on {handle.address})"
    try:
        components = ", ".join(f"{k} {v}" for k, v in health(handle.address).items())
    except Exception as exc:  # noqa: BLE001 - any failure to answer is reported, not raised
        components = f"health check failed: {exc}"
    return f"running: pid {handle.pid}, UI {handle.address}, {components}"


def token(url: str, username: str, password: str) -> str:
    """A JWT from the simple auth manager (``POST /auth/token``), for ``Authorization: Bearer`` or the cookie."""
    request = urllib.request.Request(
        f"{url}/auth/token",
        data=json.dumps({"username": username, "password": password}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        access_token: str = json.load(response)["access_token"]
    return access_token


def connections_env(broker_workdir: Path, s3_workdir: Path) -> dict[str, str]:
    """The providers' connections (``AIRFLOW_CONN_*``) for the local services that run from these work directories.

    ``kafka_default`` points at the dev broker, ``aws_default`` at the dev MinIO (when it runs), ``spark_default``
    at Spark ``local[2]``: what the DAGs use unless the form names other connections.
    """
    env = {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})}
    kafka = ServiceHandle.load(broker_workdir)
    if kafka is not None and service_process.is_alive(kafka.pid):
        env["AIRFLOW_CONN_KAFKA_DEFAULT"] = json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": kafka.address}}
        )
    minio = ServiceHandle.load(s3_workdir)
    if minio is not None and service_process.is_alive(minio.pid):
        env["AIRFLOW_CONN_AWS_DEFAULT"] = json.dumps(
            {
                "conn_type": "aws",
                "login": minio.extra["access_key"],
                "password": minio.extra["secret_key"],
                "extra": {"endpoint_url": minio.address, "region_name": minio.extra["region"]},
            }
        )
    return env
