"""``bench.measure`` counts the CPU of every process a run starts — also a child whose parent ignores ``SIGCHLD``
(PySpark's forking daemon does: its Python workers are reaped by the kernel, and ``getrusage(RUSAGE_CHILDREN)``
never sees their CPU). A real parent and child on this machine; no timing is asserted, only what is counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[1]

# a parent that ignores SIGCHLD (as pyspark.daemon does), a child that burns 0.5 CPU-s and exits first, reporting
# its own CPU; the parent waits until the child is gone, then exits
_PARENT = r"""
import os, resource, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    started = time.process_time()
    while time.process_time() - started < 0.5:
        pass
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(usage.ru_utime + usage.ru_stime, flush=True)
    os._exit(0)
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.02)
"""

_MEASURE = """
import json, sys, tempfile
from pathlib import Path
import bench.measure
from bench.measure import _CpuAccount, become_subreaper, run_measured
if sys.argv[2] == "v2":  # leave cgroup v1 out: the v2 hierarchy's cpu.stat counts
    bench.measure._CPUACCT = Path("/nonexistent")
become_subreaper()
log = Path(tempfile.mkdtemp()) / "log"
m = run_measured([[sys.executable, "-c", sys.argv[1]]], env={}, cwd=Path("."), log=log, broker_pid=-1)
print(json.dumps({"cpu_s": m.cpu_s, "cpu_s_rusage": m.cpu_s_rusage, "child_cpu_s": float(m.stdout[0]),
                  "cgroup": _CpuAccount.available()}))
"""


@pytest.mark.parametrize("hierarchy", ["v1-first", "v2"])
def test_a_child_reaped_by_the_kernel_is_counted(hierarchy: str) -> None:
    out = subprocess.run([sys.executable, "-c", _MEASURE, _PARENT, hierarchy], capture_output=True, text=True,
                         check=True, cwd=ROOT)  # fmt: skip
    figures = json.loads(out.stdout)
    if not figures["cgroup"]:
        pytest.skip(f"no writable cgroup ({hierarchy}) here: the run's CPU is getrusage's")
    assert figures["cpu_s"] >= figures["child_cpu_s"]  # the child's CPU is in the run's
    assert figures["cpu_s_rusage"] < figures["child_cpu_s"]  # and getrusage alone would have missed it
