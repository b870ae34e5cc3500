"""A real S3-compatible server for tests: MinIO, built from source with ``go install`` into the cache.

MinIO serves the S3 API that boto3 speaks, so the S3 path of streamproc's object store is tested against a real
server (multipart uploads, conditional writes, listing) rather than a mock. The binary is built once into
``~/.cache/streamproc/minio-<version>/`` and started on a free loopback port with a temporary data directory. Its
root user (the S3 access key) is fixed; its password (the secret key) is random per server and kept in the handle.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
import urllib.request
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.go_build import go_install
from streamproc_dev.service_process import ServiceHandle
from streamproc_dev.versions import MINIO_MODULE, MINIO_VERSION, cache_dir

log = logging.getLogger(__name__)

NAME = "minio"
ACCESS_KEY = "streamproc"
REGION = "us-east-1"


def binary_path(version: str = MINIO_VERSION) -> Path:
    return cache_dir() / f"minio-{version}" / "minio"


def fetch(version: str = MINIO_VERSION) -> Path:
    """Build MinIO with ``go install`` once (:func:`streamproc_dev.go_build.go_install`); a cached binary is reused."""
    return go_install(MINIO_MODULE, version, binary_path(version), what="MinIO")


def _live(endpoint: str) -> bool:
    with urllib.request.urlopen(f"{endpoint}/minio/health/live", timeout=2) as response:  # noqa: S310 - loopback
        return bool(response.status == 200)


def _secret_key(previous: ServiceHandle | None) -> str:
    """The root password (the S3 secret key): random for each new server, so that a test planting it as a secret
    (the Airflow tests search every log line and ledger row for it) plants a string nothing else contains; a server
    restarted on its old data directory keeps the password it was started with."""
    if previous is not None and previous.extra.get("secret_key"):
        return str(previous.extra["secret_key"])
    return f"minio-{secrets.token_urlsafe(24)}"


def start(workdir: Path | None = None, *, version: str = MINIO_VERSION, timeout_s: float = 60) -> ServiceHandle:
    """Start MinIO on a free 127.0.0.1 port with a data directory under ``workdir``; wait until it is live."""
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-minio-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(f"MinIO is already running from {workdir} (pid {previous.pid}, {previous.address})")
    binary = fetch(version)
    secret_key = _secret_key(previous)
    port, console_port = service_process.free_port(), service_process.free_port()
    log_path = workdir / "minio.log"
    env = {
        "MINIO_ROOT_USER": ACCESS_KEY,
        "MINIO_ROOT_PASSWORD": secret_key,
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
        "MINIO_CI_CD": "1",
    }
    args = [str(binary), "server", str(workdir / "data"), "--address", f"127.0.0.1:{port}",
            "--console-address", f"127.0.0.1:{console_port}", "--quiet"]  # fmt: skip
    pid = service_process.spawn(args, log_path=log_path, env=env, cwd=workdir)
    endpoint = f"http://127.0.0.1:{port}"
    service_process.wait_until(lambda: _live(endpoint), pid=pid, name=NAME, log_path=log_path, timeout_s=timeout_s)
    handle = ServiceHandle(
        name=NAME,
        pid=pid,
        address=endpoint,
        workdir=str(workdir),
        log_path=str(log_path),
        extra={"access_key": ACCESS_KEY, "secret_key": secret_key, "region": REGION, "version": version},
    )
    handle.save()
    log.info("MinIO ready at %s (pid %d)", endpoint, pid)
    return handle


def stop(workdir: Path) -> bool:
    """Stop the MinIO started from ``workdir`` by its recorded PID; False when none was running."""
    return service_process.stop_recorded(workdir, name=NAME)


def status(workdir: Path) -> str:
    return service_process.recorded_status(workdir, what="MinIO", running=_running)


def _running(handle: ServiceHandle) -> str:
    live = service_process.answers(lambda: _live(handle.address))
    return f"running: pid {handle.pid}, endpoint {handle.address}, {'live' if live else 'not live'}"
