"""The crash tests' kill -9 at a hand-off step boundary (a test hook; inert unless the variable is set).

A step boundary cannot be hit reliably by killing the process from outside at the right moment, so the process
kills itself with SIGKILL (no clean-up, no atexit, no flush: exactly a kill -9) at the named point.
"""

from __future__ import annotations

import os
import signal

#: ``<point>:<subject>``: ``in-transaction:0_1`` (records produced, transaction open), ``committed:0_1``
#: (transaction committed, not yet recorded), ``publish:0_1`` (transaction committed and recorded),
#: ``checkpoint:0_1``, ``purge:<topic>-<partition>``.
KILL_AT_ENV = "STREAMPROC_HANDOFF_KILL_AT"


def kill_point(name: str) -> None:
    """SIGKILL this process when ``STREAMPROC_HANDOFF_KILL_AT`` names this point; wait there when
    ``STREAMPROC_HANDOFF_PAUSE_AT`` does (every kill point is a pause point: the broker-kill tests stop the broker
    while the run is held at the point, then let it go on against a broker that is gone)."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
    pause_point(name)


#: ``<point>:<subject>`` (any kill point) where the hand-off pauses (the fenced-producer test: another producer takes
#: the task's transactional id meanwhile; the broker-kill tests: the broker is killed meanwhile; the Airflow recovery
#: test: the paused task's process is killed); ``STREAMPROC_HANDOFF_PAUSE_DIR`` gets ``paused`` (holding the process
#: id), the run goes on at ``resume``.
PAUSE_AT_ENV = "STREAMPROC_HANDOFF_PAUSE_AT"
PAUSE_DIR_ENV = "STREAMPROC_HANDOFF_PAUSE_DIR"


def armed() -> bool:
    """Whether a test named a kill or pause point: the hand-off then publishes its tasks one at a time, so that a
    point is a boundary between two tasks' steps (no other task's transaction is open beside it)."""
    return bool(os.environ.get(KILL_AT_ENV) or os.environ.get(PAUSE_AT_ENV))


def pause_point(name: str, timeout_s: float = 120.0) -> None:
    """Wait at this point for the test's ``resume`` file when ``STREAMPROC_HANDOFF_PAUSE_AT`` names it."""
    if os.environ.get(PAUSE_AT_ENV) != name:
        return
    import time
    from pathlib import Path

    directory = Path(os.environ[PAUSE_DIR_ENV])
    (directory / "paused").write_text(str(os.getpid()), encoding="ascii")
    deadline = time.monotonic() + timeout_s
    while not (directory / "resume").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
