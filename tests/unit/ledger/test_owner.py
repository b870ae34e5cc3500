"""The lock's owner process: recognised again by host, pid and start time; gone only when this host can tell."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

from streamproc.ledger.owner import ProcessOwner, _start_ticks


def _child() -> tuple[subprocess.Popen[bytes], ProcessOwner]:
    child = subprocess.Popen(["sleep", "30"])  # noqa: S607 - coreutils
    start = _start_ticks(child.pid)
    assert start is not None
    return child, ProcessOwner(socket.gethostname(), child.pid, start)


def test_the_text_a_lock_records_reads_back_and_anything_else_is_no_owner() -> None:
    owner = ProcessOwner.current()
    assert ProcessOwner.parse(str(owner)) == owner
    assert ProcessOwner.parse("host.with@at@1234:99") == ProcessOwner("host.with@at", 1234, 99)
    for text in (None, "", "no-pid", "host@x:1", "host@12"):
        assert ProcessOwner.parse(text) is None


def test_a_live_process_is_not_gone_a_killed_one_is_even_before_it_is_reaped() -> None:
    assert not ProcessOwner.current().is_gone()
    child, owner = _child()
    try:
        assert not owner.is_gone()
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not owner.is_gone():  # a zombie until waited for: it runs nothing
            assert time.monotonic() < deadline, "a killed process still looks alive"
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
    assert owner.is_gone()


def test_a_reused_pid_is_not_the_owner_and_another_hosts_process_is_never_gone() -> None:
    child, owner = _child()
    try:
        assert ProcessOwner(owner.host, owner.pid, owner.start + 1).is_gone()  # same pid, another process
        assert not ProcessOwner(owner.host + ".elsewhere", owner.pid + 1, 1).is_gone()
    finally:
        child.kill()
        child.wait()
