"""Fetch many ranges at once: partitions in threads (the default: the per-record work is compiled and holds the GIL
only briefly), or in worker processes by choice."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import wait
from typing import TYPE_CHECKING, Any

from streamproc.errors import FetchError, StreamprocError
from streamproc.fetch.range_fetch import fetch_pieces, fetch_range
from streamproc.fetch.ranges import FETCH_LIMITS, FetchRange, RangeFetchResult, check_disjoint, planned_ranges
from streamproc.kafka.range_reader import refuse_isolation_setting
from streamproc.plan.cluster_snapshot import IsolationLevel
from streamproc.storage.object_store import ObjectStore, load_store
from streamproc.storage.staging import SegmentLimits
from streamproc.worker_processes import worker_pool

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)


def _fetch_range_in_process(
    client_config: Mapping[str, object],
    store_uri: str,
    store_options: Mapping[str, Any],
    rng: FetchRange,
    isolation: IsolationLevel,
    limits: SegmentLimits,
    threads: int,
) -> RangeFetchResult:
    """A worker process's share: open the store by URI (stores are not shared across processes) and fetch the
    range's pieces in ``threads`` threads."""
    store = load_store(store_uri, **store_options)
    return fetch_range(client_config, store, rng, isolation=isolation, limits=limits, threads=threads)


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
    """Stage every range, ``parallelism`` pieces at a time; the first failure is raised after the others end.

    Ranges of one partition must not overlap (:func:`check_disjoint`), and the isolation level is the plan's:
    an ``isolation.level`` in ``client_config`` is refused rather than silently overridden.

    With ``processes`` > 1 the ranges are spread over that many worker processes (each range's pieces in
    ``parallelism // processes`` threads, at least one), for a machine where one process's GIL would still be the limit
    (see :func:`fetch_plan` for what threads cost here). Workers open the store from ``store.uri`` and
    ``store_options`` (e.g. explicit S3 credentials). Every range that completed stays staged, so re-running after a
    failure fetches only what is still missing.
    """
    if parallelism < 1 or processes < 1:
        raise FetchError(f"parallelism and processes must be at least 1, not {parallelism} and {processes}")
    refuse_isolation_setting(client_config, isolation.value)
    check_disjoint(ranges)
    if processes > 1:
        with worker_pool(processes) as process_pool:
            futures = [
                process_pool.submit(
                    _fetch_range_in_process,
                    dict(client_config),
                    store.uri,
                    dict(store_options or {}),
                    r,
                    isolation,
                    limits,
                    max(1, parallelism // processes),
                )  # fmt: skip
                for r in ranges
            ]
            wait(futures)
    else:
        futures = fetch_pieces(client_config, store, ranges, isolation=isolation, limits=limits, threads=parallelism)
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


def fetch_plan(
    client_config: Mapping[str, object],
    run_plan: RunPlan,
    store_uri: str,
    *,
    store_options: Mapping[str, Any] | None = None,
    parallelism: int = 4,
    processes: int = 1,
) -> list[RangeFetchResult]:
    """Stage every range of ``run_plan`` at its isolation level (``streamproc fetch``, ``streamproc run``).

    ``processes`` 1, the default: the ranges in threads of this process. Since the per-message loops are compiled
    (``kafka/_message_kernel.c``) a fetch holds the GIL for well under a microsecond per record, and threads fetch
    both faster and with less CPU than a worker process per core (measured on 2 M records, two cores: 143 000 against
    112 000 records/s, 181 000 against 158 000 records per CPU-second, ``bench/test_bench_fetch.py``).

    An unreachable cluster is one error before any range starts, not one per range after their timeouts. A range
    that an open transaction of streamproc's own hand-off holds back (a killed hand-off) is freed first by fencing
    the plan's transactional ids.
    """
    from streamproc.kafka import clients
    from streamproc.kafka.transactions import fence_open_transactions

    ranges = planned_ranges(run_plan)
    options = dict(store_options or {})
    clients.admin(client_config)
    fence_open_transactions(client_config, run_plan)  # a killed hand-off's transaction is aborted now, not later
    return fetch_ranges(
        client_config,
        load_store(store_uri, **options),
        ranges,
        isolation=IsolationLevel(run_plan.isolation_level),
        parallelism=parallelism,
        processes=max(processes, 1),
        store_options=options,
    )
