"""A real PostgreSQL server for tests and local use: Debian's ``postgresql`` binaries, a throwaway cluster.

``start`` runs ``initdb`` into a fresh data directory and starts ``postgres`` on a free 127.0.0.1 port with its
Unix socket in that directory (never the system's ``/var/run/postgresql``), so that it collides with no other
server on the machine. PostgreSQL refuses to run as root: when we are root the cluster belongs to the ``postgres``
system user (which Debian's package creates) and lives in a directory of its own under the system temp directory,
since a root-only test directory is not reachable for that user. Clients log in over TCP as ``USER`` with a
password (``scram-sha-256``), as they would on a real server. Stopping is by the recorded PID: a fast shutdown
(SIGINT), never a name-based kill.
"""

from __future__ import annotations

import glob
import logging
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from streamproc.errors import DevServiceError
from streamproc_dev import service_process
from streamproc_dev.service_process import ServiceHandle

log = logging.getLogger(__name__)

NAME = "postgresql"
USER = "streamproc"
PASSWORD = "streamproc-secret"  # a loopback-only test server's password, not a credential
#: The system user a root process runs the server as (Debian's ``postgresql`` package creates it).
SYSTEM_USER = "postgres"

_INSTALL_HINT = (
    "install PostgreSQL's server (Debian: `apt-get install postgresql`) or put the directory holding initdb and "
    "postgres on PATH"
)


def bindir() -> Path:
    """Where ``initdb`` and ``postgres`` are: ``STREAMPROC_PG_BINDIR`` (what ``tools/prereq.sh`` found), on PATH,
    else ``pg_config --bindir``, else the newest ``/usr/lib/postgresql/*/bin`` (Debian keeps them off PATH)."""
    if chosen := os.environ.get("STREAMPROC_PG_BINDIR"):
        return Path(chosen)
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("postgres") is not None:
        return Path(on_path).parent
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        answer = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)  # noqa: S603
        if answer.returncode == 0 and answer.stdout.strip():
            candidates.append(Path(answer.stdout.strip()))

    def version(path: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path))

    candidates.extend(Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True))
    for candidate in candidates:
        if (candidate / "initdb").exists() and (candidate / "postgres").exists():
            return candidate
    raise DevServiceError(f"PostgreSQL's initdb and postgres were not found; {_INSTALL_HINT}")


def _server_user() -> str | None:
    """The user the server must run as: ``postgres`` when we are root (PostgreSQL refuses root), else us."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise DevServiceError(
            f"running as root, PostgreSQL needs the system user {SYSTEM_USER!r} to run as, and there is none; "
            f"{_INSTALL_HINT} (Debian's package creates the user), or run as a non-root user"
        ) from None
    return SYSTEM_USER


def _chown(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def _run(args: list[str], *, user: str | None, cwd: Path, what: str) -> None:
    result = subprocess.run(  # noqa: S603 - arguments are ours, never a shell
        args, user=user, cwd=cwd, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise DevServiceError(f"{what} failed ({' '.join(args)}):\n{(result.stdout + result.stderr)[-4000:]}")


def _ready(port: int) -> bool:
    import psycopg

    with psycopg.connect(
        host="127.0.0.1", port=port, user=USER, password=PASSWORD, dbname="postgres", connect_timeout=2
    ) as connection:
        connection.execute("SELECT 1")
    return True


def start(workdir: Path | None = None, *, timeout_s: float = 60) -> ServiceHandle:
    """Make a new cluster and start it on a free 127.0.0.1 port; returns when it accepts a password login.

    ``workdir`` keeps the handle (``service.json``) and the server's log; the data directory is under it, or, when
    we are root, a ``postgres``-owned directory under the system temp directory that ``stop`` removes.
    """
    workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="streamproc-postgres-"))
    workdir.mkdir(parents=True, exist_ok=True)
    previous = ServiceHandle.load(workdir)
    if previous is not None and service_process.is_alive(previous.pid):
        raise DevServiceError(f"PostgreSQL is already running from {workdir} (pid {previous.pid}, {previous.address})")
    binaries = bindir()
    user = _server_user()
    if user is None:
        home = workdir / "cluster"
        home.mkdir(exist_ok=True)
    else:
        home = Path(tempfile.mkdtemp(prefix="streamproc-postgres-cluster-"))
        _chown(home, user)
    data, sockets = home / "data", home / "sockets"
    password_file = home / "password"
    password_file.write_text(PASSWORD + "\n", encoding="utf-8")
    password_file.chmod(0o600)
    if user is not None:
        _chown(password_file, user)
    try:
        _run(
            [str(binaries / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={password_file}",
             "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"],
            user=user, cwd=home, what="initdb",
        )  # fmt: skip
    finally:
        password_file.unlink(missing_ok=True)
    sockets.mkdir(exist_ok=True)
    if user is not None:
        _chown(sockets, user)
    port = service_process.free_port()
    log_path = workdir / "postgresql.log"
    # fsync off: a throwaway test cluster; a crash of the machine loses it anyway
    args = [str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
            "-c", f"unix_socket_directories={sockets}", "-c", "fsync=off", "-c", "max_connections=200"]  # fmt: skip
    pid = service_process.spawn(args, log_path=log_path, cwd=home, user=user)
    service_process.wait_until(lambda: _ready(port), pid=pid, name=NAME, log_path=log_path, timeout_s=timeout_s)
    handle = ServiceHandle(
        name=NAME,
        pid=pid,
        address=f"127.0.0.1:{port}",
        workdir=str(workdir),
        log_path=str(log_path),
        extra={
            "user": USER,
            "password": PASSWORD,
            "port": str(port),
            "home": str(home),
            "temporary_home": "1" if user is not None else "",
            "bindir": str(binaries),
        },
    )
    handle.save()
    log.info("PostgreSQL ready at %s (pid %d, data %s)", handle.address, pid, data)
    return handle


def url(handle: ServiceHandle, database: str = "postgres", *, driver: str = "psycopg") -> str:
    """A SQLAlchemy URL for ``database`` on the server (``postgresql+psycopg://user:password@127.0.0.1:port/db``)."""
    return f"postgresql+{driver}://{handle.extra['user']}:{handle.extra['password']}@{handle.address}/{database}"


def create_database(handle: ServiceHandle, name: str) -> str:
    """Create a new, empty database and return its URL; ``name`` is made a valid unique identifier."""
    import psycopg
    from psycopg import sql

    base = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")[:40] or "db"
    database = f"{base}_{uuid.uuid4().hex[:8]}"
    host, port = handle.address.rsplit(":", 1)
    with psycopg.connect(
        host=host, port=int(port), user=handle.extra["user"], password=handle.extra["password"], dbname="postgres",
        autocommit=True,
    ) as connection:  # fmt: skip
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return url(handle, database)


def stop(workdir: Path, *, timeout_s: float = 30) -> bool:
    """Fast shutdown (SIGINT: active sessions are ended, unlike SIGTERM's wait for them) by the recorded PID; the
    cluster's temporary directory is removed. False when no server was running from ``workdir``."""
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return False
    running = service_process.is_alive(handle.pid)
    if running:
        try:
            os.killpg(handle.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout_s
        while service_process.is_alive(handle.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        service_process.stop_pid(handle.pid, name=NAME)  # reaps it; SIGTERM/SIGKILL only if it is still there
    if handle.extra.get("temporary_home"):
        shutil.rmtree(handle.extra["home"], ignore_errors=True)
    return running


def status(workdir: Path) -> str:
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return f"no PostgreSQL was started from {workdir}"
    if not service_process.is_alive(handle.pid):
        return f"stopped (last ran as pid {handle.pid} on {handle.address})"
    try:
        ready = _ready(int(handle.extra["port"]))
    except Exception:  # noqa: BLE001
        ready = False
    return f"running: pid {handle.pid}, {handle.address}, {'accepting logins' if ready else 'not ready'}"
