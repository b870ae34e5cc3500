"""Worker processes of this machine that never outlive the command that started them.

The fetch's worker processes and the process step's (``--master processes``) start the same way: fresh interpreters
(spawn: no librdkafka or Arrow threads forked), which skip the parent's ``__main__`` and die with their parent.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@contextmanager
def _workers_skip_parent_main() -> Iterator[None]:
    """Spawned workers start without re-running the parent's ``__main__``: they need only this module.

    By spawn's rule a worker first runs the parent's main module as ``__mp_main__``. Inside an Airflow task that is
    the ``airflow`` command, and importing airflow in the worker fails: the task runner blocks the metadata DB by
    setting ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` to a URL nothing parses, which the worker inherits. Hiding the
    main module's path and spec while the pool starts its workers makes spawn skip that step.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = dict(main.__dict__)
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        for name in ("__file__", "__spec__"):
            if name in saved:
                main.__dict__[name] = saved[name]


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: a worker never outlives the fetch that started it, even one killed with ``kill -9``.

    On Linux the kernel sends the worker SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere a
    daemon thread watches the parent pid. A parent that died before this ran is caught by the pid check.
    """
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent_pid:
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@contextmanager
def worker_pool(processes: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``processes`` spawned workers that die with this process; shut down (and waited for) on exit."""
    context = multiprocessing.get_context("spawn")
    with (
        _workers_skip_parent_main(),
        ProcessPoolExecutor(
            max_workers=processes, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
        ) as pool,
    ):
        yield pool


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: ``taskset``, a container's cpuset), which is what a pool
    of workers can use; ``os.cpu_count()`` counts the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
