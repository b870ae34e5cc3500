"""CPU seconds and peak RSS of this process and its descendants, read from ``/proc`` (psutil is not a dependency).

The machine is shared, so wall time alone says little: a :class:`DescendantSampler` walks ``/proc`` every
``interval`` seconds while a Spark job runs and keeps, per descendant process (the JVM, the ``pyspark.daemon`` and
its forked Python workers), the CPU seconds it used inside the window (``utime + stime`` of ``/proc/<pid>/stat``)
and ``VmHWM`` (the kernel's peak resident set) of the Python workers. A worker that exits between two samples loses
at most ``interval`` seconds of CPU from the total; the driver's own CPU comes from ``getrusage(RUSAGE_SELF)``.
"""

from __future__ import annotations

import os
import resource
import threading
from dataclasses import dataclass, field
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def self_cpu_seconds() -> float:
    """User + system CPU seconds of this process (all threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def reset_peak_rss() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (``/proc/self/clear_refs`` ← 5, Linux ≥ 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """``VmHWM`` of ``pid`` in MiB, or None when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _stat(pid: int) -> tuple[int, int, float] | None:
    """(parent pid, start time in ticks, CPU seconds) of ``pid``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may contain spaces and parentheses
    return int(fields[1]), int(fields[19]), (int(fields[11]) + int(fields[12])) / _TICKS


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class _Seen:
    command: str
    first_cpu: float
    last_cpu: float
    peak_rss_mb: float = 0.0


@dataclass
class DescendantSampler:
    """Samples this process's descendants between ``start()`` and ``stop()`` (see the module doc)."""

    interval: float = 0.2
    _root: int = field(default_factory=os.getpid)
    _seen: dict[tuple[int, int], _Seen] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def sample(self) -> None:
        parents: dict[int, list[int]] = {}
        stats: dict[int, tuple[int, int, float]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                stat = _stat(int(entry))
                if stat is not None:
                    stats[int(entry)] = stat
                    parents.setdefault(stat[0], []).append(int(entry))
        pending = list(parents.get(self._root, []))
        while pending:
            pid = pending.pop()
            pending.extend(parents.get(pid, []))
            _, started, cpu = stats[pid]
            seen = self._seen.get((pid, started))
            if seen is None:
                # A process alive before the window counts from here; one born inside it from zero.
                before = cpu if not self._thread else 0.0
                seen = self._seen[(pid, started)] = _Seen(_cmdline(pid), before, cpu)
            seen.last_cpu = cpu
            if "pyspark" in seen.command:
                rss = peak_rss_mb(pid)
                if rss is not None:
                    seen.peak_rss_mb = max(seen.peak_rss_mb, rss)

    def start(self) -> None:
        self.sample()  # the JVM gateway may outlive one job: its CPU so far is not this window's
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    @property
    def cpu_seconds(self) -> float:
        return sum(s.last_cpu - s.first_cpu for s in self._seen.values())

    @property
    def python_worker_peak_rss_mb(self) -> float:
        return max((s.peak_rss_mb for s in self._seen.values() if "pyspark" in s.command), default=0.0)
