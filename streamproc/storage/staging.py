"""Staging a planned range as segments: deterministic size-based splitting, and what a retry still has to fetch.

A range ``[start, end)`` of one partition is stored as one or more segments that tile it exactly. Boundaries
depend only on the records (a segment closes before the record that would exceed ``max_segment_records`` or
``max_segment_bytes``, and ends at that record's offset), so fetching the same data again yields the same object
names and bytes (DESIGN.md §1 step 2: "a retry rewrites the same object names"). A segment is *complete* when its
manifest is present, valid and its segment object has the recorded size; :func:`range_status` lists the complete
segments of a planned range and the sub-ranges still missing, so a retry fetches only those.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from streamproc.engine.records import RawRecord
from streamproc.errors import ConfigError, ManifestError
from streamproc.storage.manifest import Manifest, SegmentProof, check_segment, read_manifest, write_manifest
from streamproc.storage.object_store import ObjectNotFoundError, ObjectStore
from streamproc.storage.segments import (
    MANIFEST_SUFFIX,
    SegmentKey,
    SegmentWriter,
    decode_segment,
    parse_object_name,
    partition_prefix,
    record_size,
    records_from_table,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_SEGMENT_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_SEGMENT_RECORDS = 1_000_000


@dataclass(frozen=True, slots=True)
class SegmentLimits:
    """When to close a segment: after ``max_segment_records`` records, or before the uncompressed record bytes
    (:func:`streamproc.storage.segments.record_size`) would pass ``max_segment_bytes``. A single record larger than
    the byte limit gets a segment of its own."""

    max_segment_bytes: int = DEFAULT_MAX_SEGMENT_BYTES
    max_segment_records: int = DEFAULT_MAX_SEGMENT_RECORDS
    #: No segment spans a multiple of it (``None``: no such bound). What lets a fetch read one partition's range as
    #: pieces ``[k·n, (k+1)·n)`` in parallel and stage the same segments as one reading would, so that a retry or a
    #: fetch with other parallelism still rewrites the same objects.
    piece_offsets: int | None = None

    def __post_init__(self) -> None:
        if self.max_segment_bytes <= 0 or self.max_segment_records <= 0:
            raise ConfigError(
                f"max_segment_bytes ({self.max_segment_bytes}) and max_segment_records ({self.max_segment_records}) "
                f"must be positive"
            )
        if self.piece_offsets is not None and self.piece_offsets <= 0:
            raise ConfigError(f"piece_offsets ({self.piece_offsets}) must be positive")

    def pieces(self, start: int, end: int) -> list[tuple[int, int]]:
        """``[start, end)`` cut at every multiple of :attr:`piece_offsets` inside it (the whole range without one)."""
        if start >= end:
            return []
        n = self.piece_offsets
        if n is None:
            return [(start, end)]
        cuts = range((start // n + 1) * n, end, n)
        bounds = [start, *cuts, end]
        return list(zip(bounds, bounds[1:], strict=False))


DEFAULT_LIMITS = SegmentLimits()


@dataclass(frozen=True, slots=True)
class SegmentChunk:
    """One segment's share of a range: its sub-range and its records."""

    start: int
    end: int
    records: tuple[RawRecord, ...]


def split_range(
    start: int, end: int, records: Iterable[RawRecord], limits: SegmentLimits = DEFAULT_LIMITS
) -> Iterator[SegmentChunk]:
    """Cut ``[start, end)`` into chunks that tile it, streaming ``records`` (strictly increasing, inside the range).

    A chunk ends where the next one's first record is, so offsets without a record (markers, aborted, compacted)
    belong to the chunk before them; the last chunk ends at ``end``. An empty range gives no chunk; a non-empty
    range without records gives one empty chunk (its manifest still has to prove the range). With
    ``limits.piece_offsets`` each piece (:meth:`SegmentLimits.pieces`) is cut on its own: the chunks end at the
    piece's end, and a piece without records is an empty chunk.
    """
    if not 0 <= start <= end:
        raise ConfigError(f"[{start}, {end}) is not a valid offset range")
    if start == end:
        for record in records:
            raise ManifestError(
                f"{record.topic}-{record.partition}@{record.offset}: a record in the empty range [{start}, {end})"
            )
        return
    pieces = limits.pieces(start, end)
    if len(pieces) == 1:
        yield from _split_piece(start, end, records, limits)
        return
    queue = iter(records)
    pending: RawRecord | None = None
    for piece_start, piece_end in pieces:
        taken: list[RawRecord] = []
        if pending is not None:
            if pending.offset >= piece_end:
                yield from _split_piece(piece_start, piece_end, taken, limits)
                continue
            taken.append(pending)
            pending = None
        for record in queue:
            if record.offset >= piece_end:
                pending = record
                break
            taken.append(record)
        yield from _split_piece(piece_start, piece_end, taken, limits)
    if pending is not None:
        raise ManifestError(
            f"{pending.topic}-{pending.partition}@{pending.offset}: outside [{start}, {end}); records must be in "
            "strictly increasing offset order inside the range"
        )


def _split_piece(start: int, end: int, records: Iterable[RawRecord], limits: SegmentLimits) -> Iterator[SegmentChunk]:
    """:func:`split_range` within one piece: chunks closed by the record and byte limits alone."""
    chunk_start = start
    current: list[RawRecord] = []
    current_bytes = 0
    previous: int | None = None
    for record in records:
        if not start <= record.offset < end or (previous is not None and record.offset <= previous):
            raise ManifestError(
                f"{record.topic}-{record.partition}@{record.offset}: outside [{start}, {end}) or not after offset "
                f"{previous}; records must be in strictly increasing offset order inside the range"
            )
        previous = record.offset
        size = record_size(record)
        if current and (len(current) >= limits.max_segment_records or current_bytes + size > limits.max_segment_bytes):
            yield SegmentChunk(chunk_start, record.offset, tuple(current))
            chunk_start, current, current_bytes = record.offset, [], 0
        current.append(record)
        current_bytes += size
    yield SegmentChunk(chunk_start, end, tuple(current))


def stage_range(
    store: ObjectStore,
    topic: str,
    partition: int,
    start: int,
    end: int,
    records: Iterable[RawRecord],
    proof: SegmentProof,
    limits: SegmentLimits = DEFAULT_LIMITS,
) -> list[Manifest]:
    """Write ``[start, end)`` of ``topic``-``partition`` as segments, each followed by its manifest.

    ``proof`` proves the whole range (``streamproc.plan.completeness``; e.g. ``SegmentProof.from_dict(
    proof.to_dict(), isolation_level=…)``); each segment stores its restriction. A stale manifest of the same name
    is deleted before its segment is rewritten, so a manifest never describes other bytes than its segment's.
    """
    problems = proof.problems(start, end)
    if problems:
        raise ManifestError(
            f"{topic}-{partition} [{start}, {end}): the proof does not prove the range: {'; '.join(problems)}"
        )
    manifests: list[Manifest] = []
    for chunk in split_range(start, end, records, limits):
        key = SegmentKey(topic, partition, chunk.start, chunk.end)
        writer = SegmentWriter(topic, partition)
        writer.extend(chunk.records)
        store.delete(key.manifest_name)
        written = writer.write(store, chunk.start, chunk.end)
        manifest = Manifest.for_segment(written, proof.restrict(chunk.start, chunk.end))
        write_manifest(store, manifest)
        manifests.append(manifest)
    logger.info(
        "Staged %s-%s [%s, %s): %s records in %s segment(s) at %s",
        topic,
        partition,
        start,
        end,
        sum(m.record_count for m in manifests),
        len(manifests),
        store.uri,
    )
    return manifests


@dataclass(frozen=True, slots=True)
class RangeStatus:
    """For a planned range: the complete segments that tile part of it, and the half-open sub-ranges missing."""

    topic: str
    partition: int
    start: int
    end: int
    complete: tuple[Manifest, ...]
    missing: tuple[tuple[int, int], ...]

    @property
    def is_complete(self) -> bool:
        return not self.missing


def range_status(
    store: ObjectStore,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    check_content: bool = False,
    topic_id: str | None = None,
) -> RangeStatus:
    """Which segments of ``[start, end)`` are already complete, and which sub-ranges a retry must still fetch.

    A segment counts when it lies inside the range, its manifest is valid (an invalid one is logged and ignored)
    and its object exists with the recorded size (with ``check_content``, also the hash, schema and offsets: what
    the fetch step asks, so that a corrupt segment is fetched again rather than counted). Overlaps are resolved
    by :func:`tile`. With ``topic_id``, segments staged from another topic id (an earlier topic of the same name)
    do not count.
    """
    if not 0 <= start <= end:
        raise ConfigError(f"[{start}, {end}) is not a valid offset range")
    candidates: list[Manifest] = []
    if start < end:
        for name in store.list(partition_prefix(topic, partition)):
            parsed = parse_object_name(name)
            if parsed is None or parsed[1] != MANIFEST_SUFFIX:
                continue
            key = parsed[0]
            if key.topic != topic or key.partition != partition or not start <= key.start < key.end <= end:
                continue
            manifest = _complete_manifest(store, name, check_content)
            if manifest is not None and topic_id is not None and manifest.topic_id != topic_id:
                logger.warning(
                    "Segment %s was staged from topic id %s, not %s (the topic was re-created); fetching it again",
                    manifest.segment_name, manifest.topic_id, topic_id,
                )  # fmt: skip
                continue
            if manifest is not None:
                candidates.append(manifest)
    complete, missing = tile(candidates, start, end)
    logger.info(
        "%s-%s [%s, %s): %s complete segment(s), %s missing sub-range(s) %s",
        topic,
        partition,
        start,
        end,
        len(complete),
        len(missing),
        missing,
    )
    return RangeStatus(topic, partition, start, end, tuple(complete), tuple(missing))


def tile(manifests: Iterable[Manifest], start: int, end: int) -> tuple[list[Manifest], list[tuple[int, int]]]:
    """The segments that tile ``[start, end)`` and the half-open sub-ranges they leave uncovered.

    Overlapping segments (left by fetches with other limits) are resolved by taking, from the lowest offset up,
    the segment that starts first and reaches furthest; segments outside the range are ignored.
    """
    candidates = sorted((m for m in manifests if start <= m.start < m.end <= end), key=lambda m: (m.start, -m.end))
    complete: list[Manifest] = []
    missing: list[tuple[int, int]] = []
    position = start
    for manifest in candidates:
        if manifest.start < position:
            continue
        if manifest.start > position:
            missing.append((position, manifest.start))
        complete.append(manifest)
        position = manifest.end
    if position < end:
        missing.append((position, end))
    return complete, missing


def _complete_manifest(store: ObjectStore, name: str, check_content: bool) -> Manifest | None:
    try:
        manifest = read_manifest(store, name)
        if check_content:
            problems = check_segment(manifest, store.get(manifest.segment_name))
            if problems:
                logger.warning("Segment %s does not match its manifest: %s", manifest.segment_name, problems)
                return None
        elif store.size(manifest.segment_name) != manifest.size_bytes:
            logger.warning("Segment %s does not have its manifest's size; fetching it again", manifest.segment_name)
            return None
    except ObjectNotFoundError:
        logger.warning("Manifest %s has no segment object; fetching its range again", name)
        return None
    except ManifestError as e:
        logger.warning("Ignoring %s: %s", name, e)
        return None
    return manifest


def read_range(store: ObjectStore, topic: str, partition: int, start: int, end: int) -> Iterator[RawRecord]:
    """The staged records of ``[start, end)`` in offset order; :class:`ManifestError` if part of it is missing."""
    status = range_status(store, topic, partition, start, end)
    if status.missing:
        text = ", ".join(f"[{a}, {b})" for a, b in status.missing)
        raise ManifestError(f"{topic}-{partition} [{start}, {end}): sub-ranges {text} are not staged; fetch them")
    for manifest in status.complete:
        table = decode_segment(store.get(manifest.segment_name), manifest.segment_name)
        if table.num_rows != manifest.record_count:
            raise ManifestError(
                f"segment '{manifest.segment_name}' holds {table.num_rows} records, its manifest says "
                f"{manifest.record_count}; run verify and fetch it again"
            )
        yield from records_from_table(table)
