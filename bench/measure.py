"""What one system's run costs: wall, CPU of every process it started, peak RSS, disk bytes; the broker's share apart.

The commands of a run (for Kafka Streams: the reset tool's JVM, then the app's JVM) are started from this process,
which is a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): a grandchild its parent does not wait for (Spark's
JVM after ``streamproc run`` exits, Python workers) is re-parented here and reaped here. So after the run
``getrusage(RUSAGE_CHILDREN)`` holds the CPU of *every* process the run started, exactly, and this process's
``/proc/self/io`` the disk bytes they read and wrote (the kernel adds a reaped child's I/O counters to its parent's).
Peak RSS comes from :class:`bench.resources.DescendantSampler`-style sampling of ``VmHWM`` (every 0.2 s): the largest
process's peak and the sum of every process's peak (an upper bound of the run's footprint). The broker is a
separate process shared by every system: its CPU and disk bytes in the window are reported apart.

``getrusage(RUSAGE_CHILDREN)`` misses one kind of process: a child of a parent that ignores ``SIGCHLD`` is reaped by
the kernel, and its CPU is added to nobody's children's total. PySpark's forking daemon does that
(``signal(SIGCHLD, SIG_IGN)``), so every Python worker that exits before the daemon — all of a ``streamproc run``'s
task processing, or part of it — was left out of the figure. Each run's commands therefore start in a cgroup of
their own (:class:`_CpuAccount`), which charges every process and thread of the run as it runs, reaped by anyone or
not; that is the run's CPU: the cgroup-v1 ``cpuacct`` controller's ``cpuacct.usage`` where it is mounted
(``/sys/fs/cgroup/cpuacct``), else a cgroup-v2 hierarchy's ``cpu.stat`` ``usage_usec`` (``/sys/fs/cgroup`` or a
hybrid's ``/sys/fs/cgroup/unified``; v2 counts CPU in every cgroup). Where neither can be written the figure falls
back to ``getrusage`` and a warning says that ``streamproc run``'s figures then miss its Python workers. The
``getrusage`` figure is kept beside it (``cpu_s_rusage``) to show what it left out.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bench.resources import peak_rss_mb

_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
#: cgroup-v2 hierarchies, in the order tried: a v2-only machine's root, a hybrid machine's unified mount.
_CGROUP2 = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))

_TICKS = os.sysconf("SC_CLK_TCK")
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphaned descendants of this process's children are re-parented here (Linux ≥ 3.4)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _io(pid: int | str = "self") -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split(": ") for line in lines)}


def _cpu(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_table() -> dict[int, int]:
    """pid → parent pid of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            table[int(entry)] = int(text[text.rindex(")") + 2 :].split()[1])
    return table


@dataclass
class _PeakSampler:
    exclude: frozenset[int]
    interval: float = 0.2
    peaks: dict[int, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def _descendants(self) -> list[int]:
        table = _process_table()
        children: dict[int, list[int]] = {}
        for pid, parent in table.items():
            children.setdefault(parent, []).append(pid)
        out, pending = [], [p for p in children.get(os.getpid(), []) if p not in self.exclude]
        while pending:
            pid = pending.pop()
            out.append(pid)
            pending.extend(children.get(pid, []))
        return out

    def sample(self) -> None:
        for pid in self._descendants():
            rss = peak_rss_mb(pid)
            if rss is not None:
                self.peaks[pid] = max(self.peaks.get(pid, 0.0), rss)

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()


class _CpuAccount:
    """A cgroup for one run's processes (module doc): every command joins it before ``exec``; its usage is the CPU
    of every process the run started. Absent (None figures) where no cgroup can be made here."""

    #: The fallback to getrusage is said once per process.
    _warned = False

    @staticmethod
    def hierarchy() -> tuple[Path, str] | None:
        """Where a run's cgroup goes and the file that holds its usage: v1 ``cpuacct`` first, then v2."""
        if (_CPUACCT / "cpuacct.usage").exists() and os.access(_CPUACCT, os.W_OK):
            return _CPUACCT, "cpuacct.usage"
        for root in _CGROUP2:
            if (root / "cgroup.controllers").exists() and os.access(root, os.W_OK):
                return root, "cpu.stat"
        return None

    @classmethod
    def available(cls) -> bool:
        return cls.hierarchy() is not None

    def __init__(self) -> None:
        self.path: Path | None = None
        self._usage_file = ""
        found = self.hierarchy()
        if found is not None:
            root, self._usage_file = found
            path = root / f"streamproc-bench-{os.getpid()}-{time.monotonic_ns()}"
            try:
                path.mkdir()
                self.path = path
            except OSError:
                self.path = None
        if self.path is None and not _CpuAccount._warned:
            _CpuAccount._warned = True
            print(
                "bench.measure: no writable cgroup (v1 cpuacct or v2) here: CPU figures are getrusage's, which miss "
                "processes reaped by the kernel (streamproc run's Spark Python workers): its rec/CPU-s are too high",
                file=sys.stderr,
            )

    def wrap(self, command: Sequence[str]) -> list[str]:
        """``command`` started by a shell that joins the cgroup and then ``exec``s it: the command, and so all it
        starts, runs in the cgroup (the same process tree: the shell becomes the command)."""
        if self.path is None:
            return list(command)
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path), *command]

    def join(self, pid: int) -> None:
        """Move ``pid`` (and so whatever it starts from now on) into the cgroup."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(pid))

    def leave(self, pid: int) -> None:
        """Move ``pid`` back to the hierarchy's root, so that the cgroup can be removed."""
        if self.path is not None:
            (self.path.parent / "cgroup.procs").write_text(str(pid))

    def cpu_s(self) -> float | None:
        if self.path is None:
            return None
        text = (self.path / self._usage_file).read_text()
        if self._usage_file == "cpuacct.usage":
            return int(text) / 1e9
        usage = dict(line.split() for line in text.splitlines() if line.strip())
        return int(usage["usage_usec"]) / 1e6

    def close(self) -> None:
        """Remove the cgroup (possible once its processes are gone: after :func:`_reap_orphans`)."""
        if self.path is not None:
            try:
                self.path.rmdir()
            except OSError:
                pass


@dataclass(frozen=True, slots=True)
class Measured:
    """One run: the commands' outputs and what the run cost."""

    stdout: tuple[str, ...]
    stderr: tuple[str, ...]
    command_wall_s: tuple[float, ...]
    wall_s: float
    cpu_s: float  # the run's cgroup's CPU where there is one (module doc), else getrusage's
    cpu_s_rusage: float  # getrusage(RUSAGE_CHILDREN): without the children of a parent ignoring SIGCHLD
    peak_rss_mb_largest: float
    peak_rss_mb_sum: float
    disk_read_bytes: int
    disk_write_bytes: int
    broker_cpu_s: float
    broker_disk_write_bytes: int


def _reap_orphans(exclude: frozenset[int], timeout_s: float = 120) -> None:
    """Wait for every child left (re-parented orphans still shutting down), so that their CPU is counted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        mine = [pid for pid, parent in _process_table().items() if parent == os.getpid() and pid not in exclude]
        if not mine:
            return
        for pid in mine:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done == 0:
                time.sleep(0.1)


def run_measured(
    commands: Sequence[Sequence[str]],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log: Path,
    broker_pid: int,
    timeout_s: float = 4 * 3600,
) -> Measured:
    """Run ``commands`` one after the other (each must exit 0) and measure them together (module doc)."""
    exclude = frozenset({broker_pid})
    _reap_orphans(exclude, timeout_s=5)
    cpu0, io0 = _children_cpu(), _io()
    broker_cpu0, broker_io0 = _cpu(broker_pid), _io(broker_pid)
    account = _CpuAccount()
    sampler = _PeakSampler(exclude)
    thread = threading.Thread(target=sampler.run, name="bench-peaks", daemon=True)
    thread.start()
    outputs, errors, walls = [], [], []
    started = time.perf_counter()
    try:
        with log.open("ab") as err:
            for command in commands:
                err.write(f"\n$ {' '.join(command)}\n".encode())
                err.flush()
                t0 = time.perf_counter()
                proc = subprocess.run(  # noqa: S603 - our own commands
                    account.wrap(command), env=dict(env), cwd=cwd, capture_output=True, timeout=timeout_s, check=False
                )
                walls.append(time.perf_counter() - t0)
                err.write(proc.stderr)
                outputs.append(proc.stdout.decode(errors="replace"))
                errors.append(proc.stderr.decode(errors="replace"))
                if proc.returncode != 0:
                    raise RuntimeError(
                        f"{command[0]} … exited {proc.returncode}; its stderr is in {log}; stdout:\n"
                        + outputs[-1][-2000:]
                    )
    finally:
        wall = time.perf_counter() - started
        sampler.sample()
        sampler.stop()
        thread.join()
        _reap_orphans(exclude)
    cgroup_cpu = account.cpu_s()
    account.close()
    rusage_cpu = _children_cpu() - cpu0
    io1 = _io()
    broker_io1 = _io(broker_pid)
    return Measured(
        stdout=tuple(outputs),
        stderr=tuple(errors),
        command_wall_s=tuple(round(w, 2) for w in walls),
        wall_s=wall,
        cpu_s=rusage_cpu if cgroup_cpu is None else cgroup_cpu,
        cpu_s_rusage=rusage_cpu,
        peak_rss_mb_largest=max(sampler.peaks.values(), default=0.0),
        peak_rss_mb_sum=sum(sampler.peaks.values()),
        disk_read_bytes=io1.get("read_bytes", 0) - io0.get("read_bytes", 0),
        disk_write_bytes=io1.get("write_bytes", 0) - io0.get("write_bytes", 0),
        broker_cpu_s=_cpu(broker_pid) - broker_cpu0,
        broker_disk_write_bytes=broker_io1.get("write_bytes", 0) - broker_io0.get("write_bytes", 0),
    )


T = TypeVar("T")


def measured_here(run: Callable[[], T]) -> tuple[T, float, float]:
    """``run()``'s result, wall seconds and CPU seconds, for work done in this process: every thread of it
    (librdkafka's included) and every child process reaped meanwhile (e.g. a fetch's worker processes, joined
    before it returns). The in-process counterpart of :func:`run_measured`."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = time.process_time(), time.perf_counter()
    result = run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    children_s = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return result, time.perf_counter() - wall, time.process_time() - cpu + children_s
