"""Fetch: copy each planned ``[start, end)`` range from Kafka to object storage as proved segments.

The range is streamed, never held whole: records flow from a :class:`RangeReader` into
:func:`~streamproc.storage.staging.split_range`, which closes a segment by size. Each segment is proved on its own
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

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from streamproc.engine.records import RawRecord
from streamproc.errors import FetchError
from streamproc.kafka.range_reader import READ_COMMITTED, READ_UNCOMMITTED, RangeReader
from streamproc.plan.cluster_snapshot import IsolationLevel, TopicPartition
from streamproc.plan.completeness import CompletenessProof, prove_two_pass
from streamproc.storage.manifest import SegmentProof
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import record_size
from streamproc.storage.staging import SegmentChunk, SegmentLimits, range_status, split_range, stage_range

log = logging.getLogger(__name__)

PROGRESS_EVERY_RECORDS = 100_000

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

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


@dataclass(frozen=True, slots=True)
class RangeFetchResult:
    """What fetching one range did: segments written now, segments found complete, records and bytes copied."""

    range: FetchRange
    segments_written: int
    segments_already_complete: int
    records: int
    bytes: int
    seconds: float

    @property
    def skipped(self) -> bool:
        """Nothing was fetched: every segment of the range was already staged."""
        return self.segments_written == 0


class _Progress:
    """Counts what flows through one range's reader and logs every ``PROGRESS_EVERY_RECORDS`` records."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.records = 0
        self.bytes = 0
        self._started = time.monotonic()

    def track(self, records: Iterator[RawRecord]) -> Iterator[RawRecord]:
        for record in records:
            self.records += 1
            self.bytes += record_size(record)
            if self.records % PROGRESS_EVERY_RECORDS == 0:
                elapsed = max(time.monotonic() - self._started, 1e-9)
                log.info(
                    "%s: %d records, %.1f MB so far (%.0f records/s)",
                    self.label, self.records, self.bytes / 1e6, self.records / elapsed,
                )  # fmt: skip
            yield record


def _second_pass(
    client_config: Mapping[str, object], rng: FetchRange, chunk: SegmentChunk, gaps: Sequence[int]
) -> list[int]:
    """Offsets in the chunk's gaps that a ``read_uncommitted`` reading delivers (aborted records)."""
    if not gaps:
        return []
    reader = RangeReader(
        client_config, rng.topic, rng.partition, gaps[0], gaps[-1] + 1, isolation_level=READ_UNCOMMITTED
    )
    gap_set = set(gaps)
    return [r.offset for r in reader.records() if r.offset in gap_set]


def _prove_chunk(
    client_config: Mapping[str, object],
    rng: FetchRange,
    chunk: SegmentChunk,
    isolation: IsolationLevel,
    *,
    last: bool,
    eof_position: int | None,
) -> CompletenessProof:
    delivered = [r.offset for r in chunk.records]
    present = set(delivered)
    gaps = [o for o in range(chunk.start, chunk.end) if o not in present]
    second = _second_pass(client_config, rng, chunk, gaps) if isolation is IsolationLevel.READ_COMMITTED else []
    # A chunk that is not the last ends where the next chunk's first record is: that record proves the end.
    first_pass = delivered if last else [*delivered, chunk.end]
    return prove_two_pass(
        TopicPartition(rng.topic, rng.partition),
        chunk.start,
        chunk.end,
        isolation=isolation,
        compacted=rng.compacted,
        first_pass=first_pass,
        second_pass=second,
        eof_position=eof_position if last else None,
    )


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
    """Read ``[start, end)`` once, proving and staging segment by segment; returns the segments written."""
    level = READ_COMMITTED if isolation is IsolationLevel.READ_COMMITTED else READ_UNCOMMITTED
    reader = RangeReader(client_config, rng.topic, rng.partition, start, end, isolation_level=level)
    written = 0
    pending: SegmentChunk | None = None
    for chunk in split_range(start, end, progress.track(reader.records()), limits):
        if pending is not None:
            proof = _prove_chunk(client_config, rng, pending, isolation, last=False, eof_position=None)
            _stage(store, rng, pending, proof, limits)
            written += 1
        pending = chunk
    if pending is not None:
        evidence = reader.evidence
        if evidence.reached_end_by is None:
            raise FetchError(f"{rng}: the reader stopped before reaching {end}; fetch again")
        proof = _prove_chunk(client_config, rng, pending, isolation, last=True, eof_position=evidence.final_position)
        _stage(store, rng, pending, proof, limits)
        written += 1
    return written


def _stage(
    store: ObjectStore, rng: FetchRange, chunk: SegmentChunk, proof: CompletenessProof, limits: SegmentLimits
) -> None:
    segment_proof = SegmentProof.from_dict(proof.to_dict(), isolation_level=proof.isolation_level.value)
    stage_range(store, rng.topic, rng.partition, chunk.start, chunk.end, chunk.records, segment_proof, limits)


def fetch_range(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
) -> RangeFetchResult:
    """Stage one range: skip what is already complete, fetch and prove the rest."""
    started = time.monotonic()
    status = range_status(store, rng.topic, rng.partition, rng.start, rng.end)
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
    )
    if result.skipped:
        log.info("%s: already staged in %d segment(s); nothing fetched", rng, len(status.complete))
    else:
        log.info(
            "Fetched %s: %d records, %.1f MB, %d new segment(s), %d already staged, %.1fs",
            rng, result.records, result.bytes / 1e6, written, len(status.complete), result.seconds,
        )  # fmt: skip
    return result


def fetch_ranges(
    client_config: Mapping[str, object],
    store: ObjectStore,
    ranges: Sequence[FetchRange],
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
    parallelism: int = 4,
) -> list[RangeFetchResult]:
    """Stage every range, ``parallelism`` partitions at a time; the first failure is raised after the others end.

    Every range that completed stays staged, so re-running after a failure fetches only what is still missing.
    """
    if parallelism < 1:
        raise FetchError(f"parallelism must be at least 1, not {parallelism}")
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
        if isinstance(first, FetchError):
            raise first
        raise FetchError(f"fetching {errors[0][0]} failed: {first}") from first
    total = sum(r.records for r in results)
    log.info(
        "Fetch complete: %d range(s), %d records, %.1f MB; %d range(s) were already staged",
        len(results), total, sum(r.bytes for r in results) / 1e6, sum(1 for r in results if r.skipped),
    )  # fmt: skip
    return results
