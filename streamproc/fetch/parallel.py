"""Fetch many ranges at once: partitions in threads, or in worker processes where the per-record work needs more
than one core (it holds the GIL)."""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from streamproc.errors import FetchError, StreamprocError
from streamproc.fetch.range_fetch import fetch_range
from streamproc.fetch.ranges import FETCH_LIMITS, FetchRange, RangeFetchResult, check_disjoint, planned_ranges
from streamproc.kafka.range_reader import refuse_isolation_setting
from streamproc.plan.cluster_snapshot import IsolationLevel
from streamproc.storage.object_store import ObjectStore, load_store
from streamproc.storage.staging import SegmentLimits

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)

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


def _fetch_range_in_process(
    client_config: Mapping[str, object],
    store_uri: str,
    store_options: Mapping[str, Any],
    rng: FetchRange,
    isolation: IsolationLevel,
    limits: SegmentLimits,
) -> RangeFetchResult:
    """A worker process's share: open the store by URI (stores are not shared across processes) and fetch."""
    return fetch_range(client_config, load_store(store_uri, **store_options), rng, isolation=isolation, limits=limits)


def fetch_ranges(
    client_config: Mapping[str, object],
    store: ObjectStore,
    ranges: Sequence[FetchRange],
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
    parallelism: int = 4,
    processes: int = 1,
    store_options: Mapping[str, Any] | None = None,
) -> list[RangeFetchResult]:
    """Stage every range, ``parallelism`` partitions at a time; the first failure is raised after the others end.

    Ranges of one partition must not overlap (:func:`check_disjoint`), and the isolation level is the plan's:
    an ``isolation.level`` in ``client_config`` is refused rather than silently overridden.

    With ``processes`` > 1 the partitions are spread over that many worker processes (each running ``parallelism``
    threads' worth of ranges one after the other): the per-record work is Python and holds the GIL, so threads
    alone use one core. Workers open the store from ``store.uri`` and ``store_options`` (e.g. explicit S3
    credentials). Every range that completed stays staged, so re-running after a failure fetches only what is
    still missing.
    """
    if parallelism < 1 or processes < 1:
        raise FetchError(f"parallelism and processes must be at least 1, not {parallelism} and {processes}")
    refuse_isolation_setting(client_config, isolation.value)
    check_disjoint(ranges)
    if processes > 1:
        context = multiprocessing.get_context("spawn")  # fresh interpreters: no librdkafka threads forked
        with (
            _workers_skip_parent_main(),
            ProcessPoolExecutor(
                max_workers=processes, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
            ) as process_pool,
        ):
            futures = [
                process_pool.submit(
                    _fetch_range_in_process,
                    dict(client_config),
                    store.uri,
                    dict(store_options or {}),
                    r,
                    isolation,
                    limits,
                )  # fmt: skip
                for r in ranges
            ]
            wait(futures)
    else:
        with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="fetch") as pool:
            futures = [
                pool.submit(fetch_range, client_config, store, r, isolation=isolation, limits=limits) for r in ranges
            ]
    results: list[RangeFetchResult] = []
    errors: list[tuple[FetchRange, BaseException]] = []
    for rng, future in zip(ranges, futures, strict=True):
        error = future.exception()
        if error is None:
            results.append(future.result())
        else:
            errors.append((rng, error))
    if errors:
        failed = "; ".join(f"{rng}: {error}" for rng, error in errors)
        log.error("Fetch failed for %d of %d range(s): %s", len(errors), len(ranges), failed)
        first = errors[0][1]
        if isinstance(first, StreamprocError):  # already one line naming what failed and what to do
            raise first
        raise FetchError(f"fetching {errors[0][0]} failed: {first}") from first
    total = sum(r.records for r in results)
    log.info(
        "Fetch complete: %d range(s), %d records, %.1f MB; %d range(s) were already staged",
        len(results), total, sum(r.bytes for r in results) / 1e6, sum(1 for r in results if r.skipped),
    )  # fmt: skip
    return results


#: A fetch of at least this many records gets a worker process per core by default (``processes=0``): below it the
#: processes' start costs more than the second core gives.
PROCESS_PER_CORE_FROM_RECORDS = 500_000


def fetch_plan(
    client_config: Mapping[str, object],
    run_plan: RunPlan,
    store_uri: str,
    *,
    store_options: Mapping[str, Any] | None = None,
    parallelism: int = 4,
    processes: int = 0,
) -> list[RangeFetchResult]:
    """Stage every range of ``run_plan`` at its isolation level (``streamproc fetch``, ``streamproc run``).

    ``processes=0`` chooses: one per core (at most one per range) for fetches of
    :data:`PROCESS_PER_CORE_FROM_RECORDS` records or more, else one. An unreachable cluster is one error before
    any range starts, not one per range after their timeouts. A range that an open transaction of streamproc's own
    hand-off holds back (a killed hand-off) is freed first by fencing the plan's transactional ids.
    """
    from streamproc.kafka import clients
    from streamproc.kafka.transactions import fence_open_transactions

    ranges = planned_ranges(run_plan)
    options = dict(store_options or {})
    clients.admin(client_config)
    fence_open_transactions(client_config, run_plan)  # a killed hand-off's transaction is aborted now, not later
    if processes == 0:
        large = sum(r.end - r.start for r in ranges) >= PROCESS_PER_CORE_FROM_RECORDS
        processes = min(os.cpu_count() or 1, len(ranges)) if large else 1
    return fetch_ranges(
        client_config,
        load_store(store_uri, **options),
        ranges,
        isolation=IsolationLevel(run_plan.isolation_level),
        parallelism=parallelism,
        processes=max(processes, 1),
        store_options=options,
    )
