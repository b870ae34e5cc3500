"""Which process holds an application's lock, and whether it is gone: what lets a re-run take over a killed run.

A run killed with ``kill -9`` (or with its machine) never releases the lock it took. The lock row therefore carries
its owner: the host, the process id and the process's start time, so that a process id reused by an unrelated
process is not taken for the owner. Only a process on the same host can be seen to be gone; a lock owned from
another host, or one without an owner (an Airflow DAG run, whose tasks are separate processes and retry by run
id), is never taken over.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ProcessOwner:
    """One process, named so that it can be recognised again (``host:pid:start``)."""

    host: str
    pid: int
    #: the process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22); 0 where unknown
    start: int

    @classmethod
    def current(cls) -> ProcessOwner:
        return cls(socket.gethostname(), os.getpid(), _start_ticks(os.getpid()) or 0)

    @classmethod
    def parse(cls, text: str | None) -> ProcessOwner | None:
        """The owner a lock row recorded, ``None`` when it has none (or one this version cannot read)."""
        if not text:
            return None
        host, sep, rest = text.rpartition("@")
        pid, _, start = rest.partition(":")
        if not sep or not pid.isdigit() or not start.isdigit():
            return None
        return cls(host, int(pid), int(start))

    def __str__(self) -> str:
        return f"{self.host}@{self.pid}:{self.start}"

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"

    def is_gone(self) -> bool:
        """True only when this host can tell the process has ended: same host, and no process with that id, or
        one that started at another time (the id was reused). Another host's process is never "gone"."""
        if self.host != socket.gethostname():
            return False
        if self.pid == os.getpid():
            return False
        start = _start_ticks(self.pid)
        if start is None:  # with /proc: no such process, or a zombie; without it, ask the kernel
            return Path("/proc/self/stat").exists() or not _exists(self.pid)
        return self.start != 0 and start != self.start


def _start_ticks(pid: int) -> int | None:
    """The process's start time from ``/proc`` (Linux); ``None`` without ``/proc`` or without the process, and
    for a zombie (killed, not yet reaped by its parent: it runs nothing any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: count fields after its closing one
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return None if fields[0] in ("Z", "X") else int(fields[19])  # fields 3 and 22 of the whole line
    except (IndexError, ValueError):
        return None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
