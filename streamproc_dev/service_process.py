"""Start, watch and stop a local service process (the Kafka broker, MinIO) by its own PID.

Services run in their own session (process group) so that a crashed test run cannot leave them attached to the
terminal, and are stopped by the PID recorded at start, never by name: other brokers on the machine are not ours.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from streamproc.errors import DevServiceError

log = logging.getLogger(__name__)

STATE_FILE = "service.json"


@dataclass(frozen=True, slots=True)
class ServiceHandle:
    """A running service: what clients need (``address``) and what stopping it needs (``pid``)."""

    name: str
    pid: int
    address: str
    workdir: str
    log_path: str
    extra: Mapping[str, str]

    def save(self) -> None:
        Path(self.workdir, STATE_FILE).write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def load(cls, workdir: Path) -> ServiceHandle | None:
        path = workdir / STATE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**data)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(host: str, port: int) -> bool:
    """True when something accepts TCP connections there; a cheap check before a real client connects."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def is_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def tail(path: Path, lines: int = 40) -> str:
    """The last lines of a log file, for error messages."""
    try:
        content = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(content[-lines:])


def spawn(
    args: Sequence[str], *, log_path: Path, env: Mapping[str, str] | None = None, cwd: Path, user: str | None = None
) -> int:
    """Start ``args`` detached in its own session, stdout and stderr appended to ``log_path``; returns the PID.
    ``user``: run it as that system user (a server that refuses root, started by root)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(  # noqa: S603 - arguments are ours, never a shell
            list(args),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            start_new_session=True,
            user=user,
        )
    return proc.pid


def wait_until(
    ready: Callable[[], bool],
    *,
    pid: int,
    name: str,
    log_path: Path,
    timeout_s: float,
    interval_s: float = 0.25,
) -> None:
    """Poll ``ready`` until it answers True; fail fast with the log's tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not is_alive(pid):
            raise DevServiceError(
                f"{name} (pid {pid}) exited during start; last lines of {log_path}:\n{tail(log_path)}"
            )
        try:
            if ready():
                return
        except Exception as exc:  # noqa: BLE001 - any failure to answer means "not ready yet"
            log.debug("%s not ready yet: %s", name, exc)
        if time.monotonic() > deadline:
            stop_pid(pid, name=name)
            raise DevServiceError(
                f"{name} (pid {pid}) did not become ready within {timeout_s:.0f}s; "
                f"last lines of {log_path}:\n{tail(log_path)}"
            )
        time.sleep(interval_s)


def stop_pid(pid: int, *, name: str, timeout_s: float = 30.0) -> None:
    """SIGTERM the process's group, wait, then SIGKILL: a clean shutdown when possible, never a leftover."""
    if not is_alive(pid):
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(pid):
            _reap(pid)
            log.info("Stopped %s (pid %s)", name, pid)
            return
        _reap(pid)
        time.sleep(0.1)
    log.warning("%s (pid %s) ignored SIGTERM for %.0fs; killing it", name, pid, timeout_s)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _reap(pid)


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our child, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop_recorded(workdir: Path, *, name: str) -> bool:
    """Stop the service started from ``workdir`` by its recorded PID; False when none was running."""
    handle = ServiceHandle.load(Path(workdir))
    if handle is None or not is_alive(handle.pid):
        return False
    stop_pid(handle.pid, name=name)
    return True


def recorded_status(workdir: Path, *, what: str, running: Callable[[ServiceHandle], str]) -> str:
    """One line on the service started from ``workdir``: never started, stopped, or ``running(handle)``'s words for
    a live process (which say whether it answers, :func:`answers`)."""
    handle = ServiceHandle.load(Path(workdir))
    if handle is None:
        return f"no {what} was started from {workdir}"
    if not is_alive(handle.pid):
        return f"stopped (last ran as pid {handle.pid} on {handle.address})"
    return running(handle)


def answers(check: Callable[[], bool]) -> bool:
    """``check()``, with any failure of it as "does not answer" (a status line never raises)."""
    try:
        return check()
    except Exception:  # noqa: BLE001
        return False
