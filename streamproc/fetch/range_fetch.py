"""Fetch one range: copy a planned ``[start, end)`` from Kafka to object storage as proved segments.

The range is streamed, never held whole: the consumer's messages flow from a :class:`RangeReader` straight into
column buffers (no record object per row: that alone cost more than the Parquet encoding), and a segment closes by
size exactly as :func:`~streamproc.storage.staging.split_range` closes one. Each segment is proved on its own
before it is written (planning.md §8.2): its delivered offsets come from the first reading; the offsets it did not
deliver are read again ``read_uncommitted`` (two-pass evidence) to tell aborted records from markers and compacted
offsets; a segment that is not the last is proved to reach its end by the next segment's first record, which lies
exactly at that end, and the last one by the reader's end-of-range evidence. Only then are the segment and its
manifest written, each atomically, so a crash leaves whole segments and nothing half-counted.

A retry asks :func:`~streamproc.storage.staging.range_status` which sub-ranges are still missing and fetches only
those; because segment boundaries depend only on the records from a boundary on (and on the fixed piece boundaries,
multiples of ``SegmentLimits.piece_offsets``, which no segment spans), the retried segments are byte-identical to
those of an uninterrupted fetch, and so are the segments of a range read as pieces in parallel.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

from streamproc.engine.records import TimestampType
from streamproc.errors import FetchError
from streamproc.fetch.ranges import FETCH_LIMITS, FetchRange, RangeFetchResult
from streamproc.kafka.cluster import topic_ids
from streamproc.kafka.message_kernel import message_kernel
from streamproc.kafka.native_consume import offsets_of
from streamproc.kafka.range_reader import READ_COMMITTED, READ_UNCOMMITTED, RangeReader, refuse_isolation_setting
from streamproc.plan.cluster_snapshot import IsolationLevel, TopicPartition
from streamproc.plan.completeness import CompletenessProof, prove_two_pass
from streamproc.storage.manifest import Manifest, SegmentProof, write_manifest
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import SegmentColumns, SegmentKey
from streamproc.storage.staging import RangeStatus, SegmentLimits, range_status

log = logging.getLogger(__name__)

PROGRESS_EVERY_RECORDS = 100_000

# confluent-kafka's timestamp type (NOT_AVAILABLE, CREATE_TIME, LOG_APPEND_TIME) → Kafka's id, as segments store it.
_TIMESTAMP_TYPE_IDS = {
    0: TimestampType.NO_TIMESTAMP_TYPE.id,
    1: TimestampType.CREATE_TIME.id,
    2: TimestampType.LOG_APPEND_TIME.id,
}


class _Progress:
    """Counts what one range's readers delivered and logs every ``PROGRESS_EVERY_RECORDS`` records; its pieces may
    be read in several threads at once."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.records = 0
        self.bytes = 0
        self._started = time.monotonic()
        self._lock = threading.Lock()

    def add_batch(self, records: int, size: int) -> None:
        """Count a batch and log when a multiple of the interval was passed."""
        with self._lock:
            before = self.records
            self.records += records
            self.bytes += size
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
    return [offset for batch in reader.batches(native=True) for offset in offsets_of(batch) if offset in gap_set]


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
    """``offsets``: the segment's, a ``range`` where they are one run (``SegmentColumns.offset_sequence``)."""
    if len(offsets) == end - start:
        gaps: list[int] = []  # every offset delivered: nothing to explain, no second reading
    else:
        present = set(offsets)
        gaps = [o for o in range(start, end) if o not in present]
    second = _second_pass(client_config, rng, gaps) if isolation is IsolationLevel.READ_COMMITTED else []
    # A segment that is not the last ends where the next segment's first record is: that record proves the end.
    first_pass: Sequence[int] = offsets
    if not last:
        if isinstance(offsets, range) and offsets.stop == end:
            first_pass = range(offsets.start, end + 1)
        else:
            first_pass = [*offsets, end]
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
        client_config, rng, start, end, columns.offset_sequence(), isolation, last=last, eof_position=eof_position
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
    kernel = message_kernel()
    for batch in reader.batches(native=True):
        index, count, size = 0, len(batch), 0
        while index < count:
            index, added = columns.fill(batch, index, max_records, max_bytes, types, kernel)
            size += added
            if index < count:  # the message at index would pass a limit: it starts the next segment
                offset = batch[index].offset()
                _write_segment(client_config, store, rng, segment_start, offset, columns, isolation, last=False,
                               eof_position=None)  # fmt: skip
                written += 1
                segment_start, columns = offset, SegmentColumns()
        progress.add_batch(count, size)
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


@dataclass(slots=True)
class RangeFetch:
    """One range's fetch, prepared: what is already staged, and the pieces still to read.

    The pieces (``SegmentLimits.pieces`` of every missing sub-range) are independent readings, each proved and
    staged on its own, so they may run in parallel (:func:`fetch_pieces`, ``parallel.fetch_ranges``): a partition's
    range no longer needs to be read by one thread. Segments never span a piece boundary, so the same segments are
    staged however many pieces run at once, and a retry reads only the pieces' missing parts.
    """

    range: FetchRange
    isolation: IsolationLevel
    limits: SegmentLimits
    status: RangeStatus
    pieces: list[tuple[int, int]]
    progress: _Progress
    started: float = field(default_factory=time.monotonic)

    def fetch_piece(self, client_config: Mapping[str, object], store: ObjectStore, piece: tuple[int, int]) -> int:
        """Read, prove and stage one piece; returns the segments written."""
        start, end = piece
        rng = self.range
        log.info("Fetching %s-%d [%d, %d) (%s)", rng.topic, rng.partition, start, end, self.isolation.value)
        return _fetch_subrange(client_config, store, self.range, start, end, self.isolation, self.limits, self.progress)

    def result(self, written: int) -> RangeFetchResult:
        """The range's result once every piece was staged, ``written`` segments by this fetch."""
        status, progress, rng = self.status, self.progress, self.range
        result = RangeFetchResult(
            range=rng,
            segments_written=written,
            segments_already_complete=len(status.complete),
            records=progress.records,
            bytes=progress.bytes,
            seconds=time.monotonic() - self.started,
            # the segments found complete by their manifests' counts, and every record copied now (each went into a
            # segment that now has its manifest): the range's staged total, whichever attempt staged each segment
            records_staged=sum(m.record_count for m in status.complete) + progress.records,
        )
        if result.skipped:
            log.info("%s: already staged in %d segment(s); nothing fetched", rng, len(status.complete))
        else:
            log.info(
                "Fetched %s: %d records, %.1f MB, %d new segment(s) in %d piece(s), %d already staged, %.1fs",
                rng, result.records, result.bytes / 1e6, written, len(self.pieces), len(status.complete),
                result.seconds,
            )  # fmt: skip
        return result


def prepare_range(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
) -> RangeFetch:
    """Check the range against the cluster (its topic id) and the store, and cut what is missing into pieces.

    A segment counts as staged only when its bytes match its manifest (hash, schema, offsets), not merely its
    size: a segment corrupted in place is fetched again, to the same bytes.
    """
    refuse_isolation_setting(client_config, isolation.value)
    if rng.topic_id is not None:
        _check_topic_id(client_config, rng)
    status = range_status(
        store, rng.topic, rng.partition, rng.start, rng.end, check_content=True, topic_id=rng.topic_id
    )
    pieces = [piece for start, end in status.missing for piece in limits.pieces(start, end)]
    return RangeFetch(rng, isolation, limits, status, pieces, _Progress(str(rng)))


def fetch_pieces(
    client_config: Mapping[str, object],
    store: ObjectStore,
    ranges: Sequence[FetchRange],
    *,
    isolation: IsolationLevel,
    limits: SegmentLimits,
    threads: int,
) -> list[Future[RangeFetchResult]]:
    """Every range's pieces in one pool of ``threads`` threads, so that a few large partitions (one, at the extreme)
    keep every thread busy as many small ones do; a future per range, in ``ranges``' order, which holds the range's
    first failure once its other pieces ended (they stay staged)."""
    results: list[Future[RangeFetchResult]] = [Future() for _ in ranges]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fetch") as pool:
        prepared = [
            pool.submit(prepare_range, client_config, store, r, isolation=isolation, limits=limits) for r in ranges
        ]
        pieces: list[tuple[int, RangeFetch, list[Future[int]]]] = []
        for index, future in enumerate(prepared):
            error = future.exception()
            if error is not None:
                results[index].set_exception(error)
                continue
            fetch = future.result()
            pieces.append(
                (index, fetch, [pool.submit(fetch.fetch_piece, client_config, store, piece) for piece in fetch.pieces])
            )
        for index, fetch, piece_futures in pieces:
            wait(piece_futures)
            errors = [f.exception() for f in piece_futures if f.exception() is not None]
            if errors:
                results[index].set_exception(errors[0])
            else:
                results[index].set_result(fetch.result(sum(f.result() for f in piece_futures)))
    return results


def fetch_range(
    client_config: Mapping[str, object],
    store: ObjectStore,
    rng: FetchRange,
    *,
    isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    limits: SegmentLimits = FETCH_LIMITS,
    threads: int = 1,
) -> RangeFetchResult:
    """Stage one range: skip what is already complete, fetch and prove the rest, ``threads`` pieces at a time."""
    [result] = fetch_pieces(client_config, store, [rng], isolation=isolation, limits=limits, threads=max(threads, 1))
    return result.result()
