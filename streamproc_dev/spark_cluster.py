"""A Spark standalone cluster (one master, N workers) on 127.0.0.1 from the pyspark wheel, for tests and local use.

The wheel has no ``sbin/start-master.sh``, but it has ``bin/spark-class`` (``SPARK_HOME`` is the pyspark package
directory), which is what the deployment's Spark image runs too: ``spark-class ...deploy.master.Master`` and
``...deploy.worker.Worker``. Each process runs in its own session and is stopped by its PID (the JVM itself).
Every worker gets ``--work-dir`` under the work directory (the default is inside the venv) and the given
environment (e.g. ``PYTHONPATH`` so that executors import the user's topology module). Ready when the master's
``/json/`` lists every worker alive.
"""

from __future__ import annotations

import json
import logging
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle

log = logging.getLogger(__name__)

NAME = "spark-master"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The pyspark package directory: ``SPARK_HOME`` of a pip-installed Spark (``bin/spark-class`` is there)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def alive_workers(ui_url: str) -> int:
    """How many workers the master lists as alive (``/json/``)."""
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=2) as answer:  # noqa: S310 - loopback
        return int(json.load(answer).get("aliveworkers", 0))


def start(
    workdir: Path | None = None,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120,
) -> ServiceHandle:
    """Start a master and ``workers`` workers (``cores`` cores, ``memory`` each) on free loopback ports.

    The handle's ``address`` is the master URL (``spark://127.0.0.1:P``); ``extra`` has the UI URL and the
    workers' PIDs, which :func:`stop` stops before the master.
    """
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-spark-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(f"a Spark master is already running from {workdir} (pid {previous.pid})")
    home = spark_home()
    spark_class = str(home / "bin" / "spark-class")
    settings = {
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(workdir / "local"),
        "SPARK_LOG_DIR": str(workdir / "logs"),
        **(env or {}),
    }
    port, ui_port = service_process.free_port(), service_process.free_port()
    master_url = f"spark://127.0.0.1:{port}"
    ui_url = f"http://127.0.0.1:{ui_port}"
    master_log = workdir / "master.log"
    args = [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)]
    master = service_process.spawn(args, log_path=master_log, env=settings, cwd=workdir)
    pids: list[int] = []
    try:
        for n in range(1, workers + 1):
            work = workdir / f"worker-{n}"
            work.mkdir(exist_ok=True)
            args = [spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--webui-port", str(service_process.free_port()),
                    "--work-dir", str(work), "--cores", str(cores), "--memory", memory, master_url]  # fmt: skip
            pids.append(service_process.spawn(args, log_path=workdir / f"worker-{n}.log", env=settings, cwd=work))
        service_process.wait_until(
            lambda: all(service_process.is_alive(p) for p in pids) and alive_workers(ui_url) == workers,
            pid=master, name=NAME, log_path=master_log, timeout_s=timeout_s,
        )  # fmt: skip
    except BaseException:
        for pid in [*pids, master]:
            service_process.stop_pid(pid, name="spark")
        raise
    handle = ServiceHandle(
        name=NAME,
        pid=master,
        address=master_url,
        workdir=str(workdir),
        log_path=str(master_log),
        extra={"ui": ui_url, "workers": ",".join(map(str, pids)), "cores": str(cores), "memory": memory},
    )
    handle.save()
    log.info("Spark master %s ready with %d worker(s) of %d core(s), %s (UI %s)", master_url, workers, cores, memory,
             ui_url)  # fmt: skip
    return handle


def stop(workdir: Path) -> bool:
    """Stop the workers, then the master started from ``workdir``, by their PIDs."""
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return False
    running = service_process.is_alive(handle.pid)
    for pid in filter(None, handle.extra.get("workers", "").split(",")):
        service_process.stop_pid(int(pid), name="spark-worker")
    service_process.stop_pid(handle.pid, name=NAME)
    return running


def status(workdir: Path) -> str:
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return f"no Spark cluster was started from {workdir}"
    if not service_process.is_alive(handle.pid):
        return f"stopped (last ran as pid {handle.pid} on {handle.address})"
    try:
        alive = f"{alive_workers(handle.extra['ui'])} worker(s) alive"
    except OSError as exc:
        alive = f"master UI not answering: {exc}"
    return f"running: pid {handle.pid}, {handle.address}, {alive}, UI {handle.extra['ui']}"
