"""A Docker engine for the deployment's tests: the one that answers, else ``dockerd`` started here and stopped again.

No engine runs on a fresh machine of this kind, but Debian's ``docker.io`` (installed by ``tools/prereq.sh`` as root)
starts as root in a few seconds (``/work/shared/notes/docker-engine.md``). Its data root lives in the cache
(``~/.cache/streamproc/docker``) so that a later run on the same machine reuses the image layers built before: the
images take minutes to build and seconds to reuse. It changes nothing on the host beyond its own files, because it runs
beside ``make test``'s other services: ``--iptables=false`` (no NAT or filter rules; containers have no route out here
anyway, and published ports still work through docker-proxy), ``--ip-forward=false`` (the host's sysctl left as it is:
containers of one compose network talk over their bridge, the host reaches them through docker-proxy) and
``--bridge=none`` (no ``docker0`` on the host: compose makes, and ``down`` removes, its own network). Started like the
other dev services (:mod:`streamproc_dev.service_process`): its own session, its PID recorded in the work directory,
stopped by that PID only; an engine that was already answering is never stopped by us.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle
from streamproc_dev.versions import cache_dir

log = logging.getLogger(__name__)

NAME = "dockerd"
#: The socket every docker client looks at when DOCKER_HOST is unset.
DEFAULT_HOST = "unix:///var/run/docker.sock"
START_TIMEOUT_S = 90.0


def data_root() -> Path:
    """The engine's images, layers and volumes: in the cache, kept between runs."""
    return cache_dir() / "docker"


def docker_cli() -> str:
    """The docker client: the one on PATH (28.x negotiates down to the 20.10 engine's API 1.41)."""
    docker = shutil.which("docker")
    if docker is None:
        raise DevServiceError("the docker CLI is not on PATH; run `make prereq` as root (it installs docker.io)")
    return docker


def dockerd_path() -> str | None:
    """The installed ``dockerd`` (Debian puts it in /usr/sbin, which a non-root PATH may lack), or None."""
    return shutil.which("dockerd") or next(
        (p for p in ("/usr/sbin/dockerd", "/usr/bin/dockerd") if os.access(p, os.X_OK)), None
    )


def engine_version(timeout_s: float = 10, host: str | None = None) -> str | None:
    """The server version of the engine the docker CLI reaches (at ``host``, else its default), or None when none
    answers."""
    address = () if host is None else ("--host", host)
    try:
        result = subprocess.run(  # noqa: S603
            [docker_cli(), *address, "version", "--format", "{{.Server.Version}}"],
            capture_output=True, text=True, check=False, timeout=timeout_s,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    version = result.stdout.strip()
    return version if result.returncode == 0 and version else None


def start(workdir: Path, host: str | None = None) -> ServiceHandle | None:
    """Start ``dockerd`` unless an engine answers already (where the docker CLI looks, or at ``host``; a started one
    listens there, or on the default socket); returns the started engine's handle, None if one ran.

    Raises ``DevServiceError`` with the cause (no dockerd, not root, the daemon's own last log lines) otherwise.
    """
    version = engine_version(host=host)
    if version is not None:
        log.info("Docker engine %s already answers; using it", version)
        return None
    dockerd = dockerd_path()
    if dockerd is None:
        raise DevServiceError("no Docker engine answers and dockerd is not installed; run `make prereq` as root")
    if os.geteuid() != 0:
        raise DevServiceError(f"no Docker engine answers and {dockerd} needs root; start one, or run as root")
    workdir.mkdir(parents=True, exist_ok=True)
    data_root().mkdir(parents=True, exist_ok=True)
    log_path = workdir / "dockerd.log"
    args = [
        dockerd,
        "--data-root", str(data_root()),
        "--exec-root", str(workdir / "exec"),
        "--pidfile", str(workdir / "dockerd.pid"),
        "--host", host or DEFAULT_HOST,
        "--iptables=false",
        "--ip-forward=false",
        "--bridge=none",
    ]  # fmt: skip
    pid = service_process.spawn(args, log_path=log_path, cwd=workdir)
    address = host or DEFAULT_HOST
    handle = ServiceHandle(NAME, pid, address, str(workdir), str(log_path), {"data_root": str(data_root())})
    handle.save()
    try:
        service_process.wait_until(
            lambda: engine_version(timeout_s=5, host=host) is not None,
            pid=pid, name=NAME, log_path=log_path, timeout_s=START_TIMEOUT_S, interval_s=1.0,
        )  # fmt: skip
    except DevServiceError as exc:
        log_text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
        raise DevServiceError(f"dockerd did not start: {start_failure(log_text)} (log: {log_path})") from exc
    log.info("Started dockerd (pid %s), data root %s", pid, data_root())
    return handle


_FATAL = re.compile(r'^(?:failed to start daemon: .*|.*level=(?:fatal|error) msg="(?P<msg>(?:[^"\\]|\\.)*)".*)$', re.M)


def start_failure(log_text: str) -> str:
    """Why dockerd did not start, from its log: its last ``failed to start daemon: …`` (or fatal/error) line."""
    found = list(_FATAL.finditer(log_text))
    if not found:
        lines = log_text.strip().splitlines()
        return lines[-1] if lines else "it exited without a log line"
    last = found[-1]
    return last["msg"] if last["msg"] is not None else last.group(0)


def prune_dangling(timeout_s: float = 300) -> None:
    """Remove the engine's dangling images and build cache: each deployment test re-tags ``streamproc-*`` images
    built from changed sources and leaves the old layers untagged, so the data root (kept between runs under the
    cache, for the layers' reuse) grew by gigabytes a run. Tagged images and the cache they use stay. Best effort:
    a prune that fails or outlasts ``timeout_s`` is logged, never raised (the tests' own result stands)."""
    for command in (("image", "prune", "--force"), ("builder", "prune", "--force")):
        try:
            result = subprocess.run(  # noqa: S603
                [docker_cli(), *command], capture_output=True, text=True, check=False, timeout=timeout_s
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            log.warning("docker %s did not finish: %s", " ".join(command), exc)
            continue
        lines = (result.stdout or result.stderr).strip().splitlines()
        log.info("docker %s: %s", " ".join(command), lines[-1] if lines else f"exit {result.returncode}")


def stop(workdir: Path) -> bool:
    """Stop the dockerd started from ``workdir`` (by its PID); False when we started none."""
    return service_process.stop_recorded(workdir, name=NAME)


def status(workdir: Path) -> str:
    """One line: the engine that answers, and whether we started it."""
    version = engine_version()
    ours = service_process.recorded_status(
        workdir, what="dockerd", running=lambda h: f"dockerd pid {h.pid} (started here)"
    )
    return f"engine {version} answers; {ours}" if version else f"no engine answers; {ours}"
