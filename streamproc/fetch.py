"""Fetch: copy each planned ``[start, end)`` range from Kafka to object storage as proved segments.

The range is streamed, never held whole: the consumer's messages flow from a :class:`RangeReader` straight into
column buffers (no record object per row: that alone cost more than the Parquet encoding), and a segment closes by
size exactly as :func:`~streamproc.storage.staging.split_range` closes one. Each segment is proved on its own
before it is written (planning.md §8.2): its delivered offsets come from the first reading; the offsets it did not
deliver are read again ``read_uncommitted`` (two-pass evidence) to tell aborted records from markers and compacted
offsets; a segment that is not the last is proved to reach its end by the next segment's first record, which lies
exactly at that end, and the last one by the reader's end-of-range evidence. Only then are the segment and its
manifest written, each atomically, so a crash leaves whole segments and nothing half-counted.

A retry asks :func:`~streamproc.storage.staging.range_status` which sub-ranges are still missing and fetches only
those; because segment boundaries depend only on the records from a boundary on, the retried segments are
byte-identical to those of an uninterrupted fetch. Partitions are fetched in parallel threads (librdkafka releases
the GIL while it waits), each logging progress and a summary.
"""

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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from streamproc.engine.records import TimestampType
from streamproc.errors import FetchError, StreamprocError
from streamproc.intervals import first_overlap
from streamproc.kafka.cluster import topic_ids
from streamproc.kafka.range_reader import READ_COMMITTED, READ_UNCOMMITTED, RangeReader, refuse_isolation_setting
from streamproc.plan.cluster_snapshot import IsolationLevel, TopicPartition
from streamproc.plan.completeness import CompletenessProof, prove_two_pass
from streamproc.storage.manifest import Manifest, SegmentProof, write_manifest
from streamproc.storage.object_store import ObjectStore, load_store
from streamproc.storage.segments import SegmentColumns, SegmentKey
from streamproc.storage.staging import SegmentLimits, range_status

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)

PROGRESS_EVERY_RECORDS = 100_000

# confluent-kafka's timestamp type (NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME) → Kafka's id, as segments store it.
_TIMESTAMP_TYPE_IDS = {
    0: TimestampType.NO_TIMESTAMP_TYPE.id,
    1: TimestampType.CREATE_TIME.id,
    2: TimestampType.LOG_APPEND_TIME.id,
}

# Segment limits of a fetch. A segment is held in memory until it is proved, so they bound a fetch's memory
# (two segments per partition in flight); they also decide segment names, so a retry must use the same limits.
FETCH_LIMITS = SegmentLimits(max_segment_bytes=64 * 1024 * 1024, max_segment_records=200_000)


@dataclass(frozen=True, slots=True)
class FetchRange:
    """One planned range to stage; ``compacted`` is the topic's cleanup policy (it decides how gaps are explained)."""

    topic: str
    partition: int
    start: int
    end: int
    compacted: bool = False
    #: the topic id the plan saw; a different id at fetch time means the topic was re-created since
    topic_id: str | None = None

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


def planned_ranges(run_plan: RunPlan) -> list[FetchRange]:
    """The non-empty ranges a plan stages: its input ranges, then its stores' changelog restore ranges.

    Changelogs are compacted topics (Kafka Streams creates them so): a gap there is a marker or a compacted offset.
    ``fetch`` stages exactly these and ``verify --plan`` proves exactly these are covered.
    """
    ranges = [
        FetchRange(r.topic, r.partition, r.start, r.end, r.compacted, r.topic_id)
        for r in run_plan.ranges
        if not r.empty
    ]
    ranges += [
        FetchRange(r.changelog_topic, r.changelog_partition, r.start, r.end, compacted=True)
        for r in run_plan.restores
        if r.end > r.start
    ]
    return ranges


def check_disjoint(ranges: Sequence[FetchRange]) -> None:
    """Two ranges of one partition that share offsets would stage the same segments twice, at once: refuse them."""
    pair = first_overlap((f"{r.topic}-{r.partition}", r.start, r.end) for r in ranges)
    if pair is not None:
        (name, a, b), (_, c, d) = pair
        raise FetchError(
            f"{name} [{a}, {b}) and [{c}, {d}) overlap: the same offsets would be fetched twice at once; the plan "
            f"is inconsistent (edited by hand?), re-plan"
        )


@dataclass(frozen=True, slots=True)
class RangeFetchResult:
    """What fetching one range did: segments written now, segments found complete, records and bytes copied now,
    and the records staged for the range in all (``records_staged``: what the ledger records, so that a fetch that
    resumed a range an earlier, interrupted attempt had partly staged still reports the range's whole count)."""

    range: FetchRange
    segments_written: int
    segments_already_complete: int
    records: int
    bytes: int
    seconds: float
    records_staged: int

    @property
    def skipped(self) -> bool:
        """Nothing was fetched: every segment of the range was already staged."""
        return self.segments_written == 0


class _Progress:
    """Counts what one range's reader delivered and logs every ``PROGRESS_EVERY_RECORDS`` records."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.records = 0
        self.bytes = 0
        self._started = time.monotonic()

    def add_batch(self, records: int) -> None:
        """Count a batch (its bytes were added row by row) and log when a multiple of the interval was passed."""
        before = self.records
        self.records += records
        if self.records // PROGRESS_EVERY_RECORDS > before // PROGRESS_EVERY_RECORDS:
            elapsed = max(time.monotonic() - self._started, 1e-9)
            log.info(
                "%s: %d records, %.1f MB so far (%.0f records/s)",
                self.label, self.records, self.bytes / 1e6, self.records / elapsed,
            )  # fmt: skip


def _second_pass(client_config: Mapping[str, object], rng: FetchRange, gaps: Sequence[int]) -> list[int]:
    """Offsets in a segment's gaps that a ``read_uncommitted`` reading delivers (aborted records)."""
    if not gaps:
        return []
    reader = RangeReader(
        client_config, rng.topic, rng.partition, gaps[0], gaps[-1] + 1, isolation_level=READ_UNCOMMITTED
    )
    gap_set = set(gaps)
    return [m.offset() for m in reader.messages() if m.offset() in gap_set]


def _prove_segment(
    client_config: Mapping[str, object],
    rng: FetchRange,
    start: int,
    end: int,
    offsets: Sequence[int],
    isolation: IsolationLevel,
    *,
    last: bool,
    eof_position: int | None,
) -> CompletenessProof:
    if len(offsets) == end - start:
        gaps: list[int] = []  # every offset delivered: nothing to explain, no second reading
    else:
        present = set(offsets)
        gaps = [o for o in range(start, end) if o not in present]
    second = _second_pass(client_config, rng, gaps) if isolation is IsolationLevel.READ_COMMITTED else []
    # A segment that is not the last ends where the next segment's first record is: that record proves the end.
    first_pass = offsets if last else [*offsets, end]
    return prove_two_pass(
        TopicPartition(rng.topic, rng.partition),
        start,
        end,
        isolation=isolation,
        compacted=rng.compacted,
        first_pass=first_pass,
        second_pass=second,
        eof_position=eof_position if last else None,
    )


def _write_segment(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    start: int,
    end: int,
    columns: SegmentColumns,
    isolation: IsolationLevel,
    *,
    last: bool,
    eof_position: int | None,
) -> None:
    """Prove ``[start, end)`` from the rows read, then write its segment and manifest (each atomically)."""
    proof = _prove_segment(
        client_config, rng, start, end, columns.offsets, isolation, last=last, eof_position=eof_position
    )
    segment_proof = SegmentProof.from_dict(proof.to_dict(), isolation_level=proof.isolation_level.value)
    key = SegmentKey(rng.topic, rng.partition, start, end)
    store.delete(key.manifest_name)  # a manifest must never describe other bytes than its segment's
    written = columns.write(store, rng.topic, rng.partition, start, end)
    write_manifest(store, replace(Manifest.for_segment(written, segment_proof), topic_id=rng.topic_id))
    log.debug("Staged %s: %d records, %d bytes", key.segment_name, written.record_count, written.size_bytes)


def _fetch_subrange(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    start: int,
    end: int,
    isolation: IsolationLevel,
    limits: SegmentLimits,
    progress: _Progress,
) -> int:
    """Read ``[start, end)`` once, proving and staging segment by segment; returns the segments written.

    Segments close exactly as :func:`~streamproc.storage.staging.split_range` closes them (before the row that would
    pass ``max_segment_records`` or ``max_segment_bytes``; a segment ends at the next one's first offset), built as
    columns straight from the consumer's messages.
    """
    level = READ_COMMITTED if isolation is IsolationLevel.READ_COMMITTED else READ_UNCOMMITTED
    reader = RangeReader(client_config, rng.topic, rng.partition, start, end, isolation_level=level)
    max_records, max_bytes = limits.max_segment_records, limits.max_segment_bytes
    written = 0
    segment_start = start
    columns = SegmentColumns()
    types = _TIMESTAMP_TYPE_IDS
    for batch in reader.batches():
        index, count = 0, len(batch)
        while index < count:
            index, added = columns.fill(batch, index, max_records, max_bytes, types)
            progress.bytes += added
            if index < count:  # the message at index would pass a limit: it starts the next segment
                offset = batch[index].offset()
                _write_segment(client_config, store, rng, segment_start, offset, columns, isolation, last=False,
                               eof_position=None)  # fmt: skip
                written += 1
                segment_start, columns = offset, SegmentColumns()
        progress.add_batch(count)
    evidence = reader.evidence
    if evidence.reached_end_by is None:
        raise FetchError(f"{rng}: the reader stopped before reaching {end}; fetch again")
    _write_segment(client_config, store, rng, segment_start, end, columns, isolation, last=True,
                   eof_position=evidence.final_position)  # fmt: skip
    return written + 1


def _check_topic_id(client_config: Mapping[str, object], rng: FetchRange) -> None:
    """The planned offsets belong to one incarnation of the topic: a re-created topic's offsets are other records."""
    current = topic_ids(client_config, [rng.topic]).get(rng.topic)
    if current is not None and current != rng.topic_id:
        raise FetchError(
            f"{rng}: topic '{rng.topic}' was deleted and re-created since the plan (topic id {rng.topic_id} then, "
            f"{current} now); its offsets are other records now: re-plan"
        )


def fetch_range(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
) -> RangeFetchResult:
    """Stage one range: skip what is already complete, fetch and prove the rest.

    A segment counts as staged only when its bytes match its manifest (hash, schema, offsets), not merely its
    size: a segment corrupted in place is fetched again, to the same bytes.
    """
    started = time.monotonic()
    refuse_isolation_setting(client_config, isolation.value)
    if rng.topic_id is not None:
        _check_topic_id(client_config, rng)
    status = range_status(
        store, rng.topic, rng.partition, rng.start, rng.end, check_content=True, topic_id=rng.topic_id
    )
    progress = _Progress(str(rng))
    written = 0
    for start, end in status.missing:
        log.info("Fetching %s-%d [%d, %d) (%s)", rng.topic, rng.partition, start, end, isolation.value)
        written += _fetch_subrange(client_config, store, rng, start, end, isolation, limits, progress)
    result = RangeFetchResult(
        range=rng,
        segments_written=written,
        segments_already_complete=len(status.complete),
        records=progress.records,
        bytes=progress.bytes,
        seconds=time.monotonic() - started,
        # the segments found complete by their manifests' counts, and every record copied now (each went into a
        # segment that now has its manifest): the range's staged total, whichever attempt staged each segment
        records_staged=sum(m.record_count for m in status.complete) + progress.records,
    )
    if result.skipped:
        log.info("%s: already staged in %d segment(s); nothing fetched", rng, len(status.complete))
    else:
        log.info(
            "Fetched %s: %d records, %.1f MB, %d new segment(s), %d already staged, %.1fs",
            rng, result.records, result.bytes / 1e6, written, len(status.complete), result.seconds,
        )  # fmt: skip
    return result


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
