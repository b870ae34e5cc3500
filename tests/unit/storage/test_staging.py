"""``streamproc.storage.staging``: deterministic size-based splitting, and what a retry still has to fetch."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamproc.engine.records import ConsumerRecord, RawRecord
from streamproc.errors import ConfigError, ManifestError
from streamproc.intervals import to_intervals
from streamproc.storage import LocalObjectStore, ObjectStore
from streamproc.storage.manifest import SegmentProof, write_manifest
from streamproc.storage.segments import RECORD_OVERHEAD_BYTES, SegmentWriter, manifest_name, record_size
from streamproc.storage.staging import (
    SegmentLimits,
    range_status,
    read_range,
    split_range,
    stage_range,
)
from tests.unit.storage.store_contract import DELIVERED, PROOF, records


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return LocalObjectStore(tmp_path)


def sized(offset: int, value_bytes: int) -> RawRecord:
    return ConsumerRecord.raw("t", 0, offset, offset, None, b"v" * value_bytes)


def bounds(start: int, end: int, recs: list[RawRecord], limits: SegmentLimits) -> list[tuple[int, int, list[int]]]:
    return [(c.start, c.end, [r.offset for r in c.records]) for c in split_range(start, end, recs, limits)]


def full_proof(start: int, end: int, delivered: list[int]) -> SegmentProof:
    gaps = sorted(set(range(start, end)) - set(delivered))
    return SegmentProof(to_intervals(delivered), {"control": to_intervals(gaps)} if gaps else {})


# ------------------------------------------------------------------------------------------------- splitting
def test_split_by_record_count_puts_gaps_before_the_next_record() -> None:
    recs = records("orders", 0, DELIVERED)
    assert bounds(0, 10, recs, SegmentLimits(max_segment_records=2)) == [
        (0, 2, [0, 1]),
        (2, 8, [2, 7]),
        (8, 10, [8]),
    ]
    assert bounds(0, 10, recs, SegmentLimits(max_segment_records=5)) == [(0, 10, DELIVERED)]


def test_split_by_bytes() -> None:
    recs = [sized(o, 100 - RECORD_OVERHEAD_BYTES) for o in range(5)]  # 100 bytes each
    assert all(record_size(r) == 100 for r in recs)
    assert bounds(0, 5, recs, SegmentLimits(max_segment_bytes=250)) == [(0, 2, [0, 1]), (2, 4, [2, 3]), (4, 5, [4])]
    assert bounds(0, 5, recs, SegmentLimits(max_segment_bytes=300)) == [(0, 3, [0, 1, 2]), (3, 5, [3, 4])]


def test_a_record_larger_than_the_byte_limit_gets_a_segment_of_its_own() -> None:
    recs = [sized(0, 10), sized(1, 5000), sized(2, 10)]
    assert bounds(0, 3, recs, SegmentLimits(max_segment_bytes=100)) == [(0, 1, [0]), (1, 2, [1]), (2, 3, [2])]


def test_empty_and_record_free_ranges() -> None:
    assert bounds(5, 5, [], SegmentLimits()) == []
    assert bounds(5, 9, [], SegmentLimits()) == [(5, 9, [])]


@pytest.mark.parametrize("offsets", [[3, 2], [2, 2], [1], [10]])
def test_split_refuses_records_out_of_order_or_range(offsets: list[int]) -> None:
    with pytest.raises(ManifestError, match="strictly increasing offset order inside the range"):
        bounds(2, 10, records("t", 0, offsets), SegmentLimits())


def test_invalid_limits() -> None:
    with pytest.raises(ConfigError):
        SegmentLimits(max_segment_bytes=0)
    with pytest.raises(ConfigError):
        SegmentLimits(max_segment_records=-1)


@given(
    offsets=st.sets(st.integers(0, 200), max_size=60),
    extra=st.integers(0, 5),
    max_records=st.integers(1, 10),
    max_bytes=st.integers(1, 400),
    sizes=st.lists(st.integers(0, 150), min_size=60, max_size=60),
)
def test_split_tiles_the_range_deterministically(
    offsets: set[int], extra: int, max_records: int, max_bytes: int, sizes: list[int]
) -> None:
    ordered = sorted(offsets)
    start, end = (ordered[0] if ordered else 0), (ordered[-1] + 1 if ordered else 0) + extra
    recs = [sized(o, s) for o, s in zip(ordered, sizes, strict=False)]
    limits = SegmentLimits(max_segment_bytes=max_bytes, max_segment_records=max_records)
    chunks = bounds(start, end, recs, limits)
    assert chunks == bounds(start, end, list(recs), limits)
    if start == end:
        assert chunks == []
        return
    assert chunks[0][0] == start and chunks[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    assert [o for _, _, chunk in chunks for o in chunk] == ordered
    by_offset = {r.offset: r for r in recs}
    for chunk_start, chunk_end, chunk in chunks:
        assert chunk_start < chunk_end
        assert all(chunk_start <= o < chunk_end for o in chunk)
        assert len(chunk) <= max_records
        assert len(chunk) == 1 or sum(record_size(by_offset[o]) for o in chunk) <= max_bytes
    for (_, _, chunk), (_, _, following) in zip(chunks, chunks[1:], strict=False):
        # a chunk closed only because the next record did not fit
        closed_by_count = len(chunk) == max_records
        closed_by_bytes = (
            sum(record_size(by_offset[o]) for o in chunk) + record_size(by_offset[following[0]]) > max_bytes
        )
        assert closed_by_count or closed_by_bytes


# --------------------------------------------------------------------------------------------------- staging
@given(
    offsets=st.sets(st.integers(0, 120), max_size=50),
    start=st.integers(0, 40),
    extra=st.integers(0, 30),
    piece=st.integers(1, 25),
    max_records=st.integers(1, 6),
)
def test_pieces_are_split_each_on_its_own_and_no_chunk_spans_a_piece_boundary(
    offsets: set[int], start: int, extra: int, piece: int, max_records: int
) -> None:
    """What a fetch of a range's pieces in parallel stages (issue #29): each piece's chunks, as if it were a range."""
    end = max([start, *offsets]) + 1 + extra
    recs = [sized(o, 10) for o in sorted(o for o in offsets if start <= o)]
    limits = SegmentLimits(max_segment_records=max_records, piece_offsets=piece)
    pieces = limits.pieces(start, end)
    assert pieces[0][0] == start and pieces[-1][1] == end
    assert all(a[1] == b[0] and b[0] % piece == 0 for a, b in zip(pieces, pieces[1:], strict=False))
    per_piece = [
        chunk
        for piece_start, piece_end in pieces
        for chunk in bounds(piece_start, piece_end, [r for r in recs if piece_start <= r.offset < piece_end],
                            SegmentLimits(max_segment_records=max_records))
    ]  # fmt: skip
    assert bounds(start, end, recs, limits) == per_piece


def test_restaging_rewrites_the_same_objects_with_the_same_bytes(store: ObjectStore) -> None:
    recs = records("orders", 0, DELIVERED)
    limits = SegmentLimits(max_segment_records=2)
    first = stage_range(store, "orders", 0, 0, 10, recs, PROOF, limits)
    before = {n: store.get(n) for n in store.list()}
    second = stage_range(store, "orders", 0, 0, 10, recs, PROOF, limits)
    assert first == second
    assert {n: store.get(n) for n in store.list()} == before


def test_each_segment_stores_its_share_of_the_proof(store: ObjectStore) -> None:
    manifests = stage_range(
        store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF, SegmentLimits(max_segment_records=2)
    )
    assert [m.proof for m in manifests] == [PROOF.restrict(0, 2), PROOF.restrict(2, 8), PROOF.restrict(8, 10)]
    assert manifests[1].proof.explained == {"aborted": ((4, 5),), "control": ((3, 3), (6, 6))}
    assert sum(m.record_count for m in manifests) == 5


def test_an_empty_range_stages_nothing(store: ObjectStore) -> None:
    assert stage_range(store, "orders", 0, 7, 7, [], SegmentProof(())) == []
    assert store.list() == []
    status = range_status(store, "orders", 0, 7, 7)
    assert status.is_complete and status.complete == ()
    assert list(read_range(store, "orders", 0, 7, 7)) == []


def test_nothing_staged_means_everything_is_missing(store: ObjectStore) -> None:
    assert range_status(store, "orders", 0, 3, 9).missing == ((3, 9),)
    with pytest.raises(ManifestError, match=r"sub-ranges \[3, 9\) are not staged"):
        list(read_range(store, "orders", 0, 3, 9))


def test_segments_outside_the_planned_range_do_not_count(store: ObjectStore) -> None:
    stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF, SegmentLimits(max_segment_records=2))
    status = range_status(store, "orders", 0, 1, 10)
    assert [(m.start, m.end) for m in status.complete] == [(2, 8), (8, 10)]
    assert status.missing == ((1, 2),)
    assert range_status(store, "orders", 1, 0, 10).missing == ((0, 10),)


def test_a_segment_without_its_object_or_with_another_size_is_missing(store: ObjectStore) -> None:
    manifests = stage_range(
        store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF, SegmentLimits(max_segment_records=2)
    )
    store.delete(manifests[0].segment_name)
    store.put(manifests[2].segment_name, store.get(manifests[2].segment_name) + b"x")
    assert range_status(store, "orders", 0, 0, 10).missing == ((0, 2), (8, 10))


def test_check_content_catches_a_same_size_tampering(store: ObjectStore) -> None:
    (m,) = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
    data = bytearray(store.get(m.segment_name))
    data[len(data) // 2] ^= 0xFF
    store.put(m.segment_name, bytes(data))
    assert range_status(store, "orders", 0, 0, 10).is_complete
    assert range_status(store, "orders", 0, 0, 10, check_content=True).missing == ((0, 10),)


def test_an_invalid_manifest_is_ignored(store: ObjectStore) -> None:
    (m,) = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
    store.put(m.name, m.to_json().replace(b'"record_count": 5', b'"record_count": 4'))
    assert range_status(store, "orders", 0, 0, 10).missing == ((0, 10),)


def test_overlapping_segments_from_other_limits_are_resolved(store: ObjectStore) -> None:
    recs = records("orders", 0, DELIVERED)
    stage_range(store, "orders", 0, 0, 10, recs, PROOF, SegmentLimits(max_segment_records=2))
    stage_range(store, "orders", 0, 0, 8, recs[:4], PROOF.restrict(0, 8), SegmentLimits(max_segment_records=3))
    status = range_status(store, "orders", 0, 0, 10)
    # staged: [0, 2) [2, 8) [8, 10) and [0, 7) [7, 8); from 0 the furthest-reaching [0, 7) wins, [2, 8) overlaps it
    assert [(m.start, m.end) for m in status.complete] == [(0, 7), (7, 8), (8, 10)]
    assert status.is_complete
    assert list(read_range(store, "orders", 0, 0, 10)) == recs


def test_the_longest_segment_from_a_start_wins(store: ObjectStore) -> None:
    recs = records("orders", 0, DELIVERED)
    stage_range(store, "orders", 0, 0, 10, recs, PROOF, SegmentLimits(max_segment_records=2))
    stage_range(store, "orders", 0, 0, 8, recs[:4], PROOF.restrict(0, 8))
    status = range_status(store, "orders", 0, 0, 10)
    assert [(m.start, m.end) for m in status.complete] == [(0, 8), (8, 10)]
    assert list(read_range(store, "orders", 0, 0, 10)) == recs


def test_read_range_refuses_a_segment_that_no_longer_matches(store: ObjectStore) -> None:
    (m,) = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
    writer = SegmentWriter("orders", 0)
    writer.extend(records("orders", 0, [0, 1, 2, 7]))
    data = writer.to_bytes()
    store.put(m.segment_name, data)
    write_manifest(store, m.__class__(**{**{f: getattr(m, f) for f in m.__slots__}, "size_bytes": len(data)}))
    with pytest.raises(ManifestError, match="holds 4 records, its manifest says 5"):
        list(read_range(store, "orders", 0, 0, 10))


def test_manifest_names_are_the_segment_stems(store: ObjectStore) -> None:
    proof = full_proof(100, 110, [100, 105])
    (m,) = stage_range(store, "orders", 3, 100, 110, records("orders", 3, [100, 105]), proof)
    assert m.name == manifest_name("orders", 3, 100, 110)
    assert store.list() == [m.name, m.segment_name]
