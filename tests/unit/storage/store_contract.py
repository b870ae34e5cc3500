"""Behaviour every ``ObjectStore`` must have; subclassed by the local tests and by the local + S3 integration tests.

A subclass provides a ``store`` fixture. The staging tests here (segments, manifests, verify, retry) run unchanged on
each backend, because the fetch and process steps only ever see the ``ObjectStore`` interface.
"""

from __future__ import annotations

import pytest

from streamproc.engine.records import ConsumerRecord, RawRecord, TimestampType
from streamproc.errors import ConfigError
from streamproc.storage import ObjectNotFoundError, ObjectStore
from streamproc.storage.manifest import SegmentProof, read_manifest
from streamproc.storage.segments import manifest_name, segment_name
from streamproc.storage.staging import SegmentLimits, range_status, read_range, stage_range
from streamproc.storage.verify import verify


def records(topic: str, partition: int, offsets: list[int]) -> list[RawRecord]:
    return [
        ConsumerRecord.raw(
            topic,
            partition,
            o,
            1_000 + o,
            f"k{o}".encode(),
            None if o % 5 == 0 else f"value-{o}".encode(),
            timestamp_type=TimestampType.LOG_APPEND_TIME if o % 2 else TimestampType.CREATE_TIME,
            headers=(("h", b"x"), ("n", None)) if o % 3 == 0 else (),
            leader_epoch=None if o % 4 == 0 else 7,
        )
        for o in offsets
    ]


#: offsets 0..9 of orders-0: 3, 6 and 9 are transaction markers, 4 and 5 aborted records (read_committed).
DELIVERED = [0, 1, 2, 7, 8]
PROOF = SegmentProof(
    delivered=((0, 2), (7, 8)),
    explained={"control": ((3, 3), (6, 6), (9, 9)), "aborted": ((4, 5),)},
    isolation_level="read_committed",
)


class StoreContract:
    def test_put_then_get_returns_the_bytes(self, store: ObjectStore) -> None:
        store.put("a/b/c.bin", b"\x00\x01payload")
        assert store.get("a/b/c.bin") == b"\x00\x01payload"
        assert store.exists("a/b/c.bin")
        assert store.size("a/b/c.bin") == 9

    def test_put_replaces_an_existing_object(self, store: ObjectStore) -> None:
        store.put("x.bin", b"old contents")
        store.put("x.bin", b"new")
        assert store.get("x.bin") == b"new"
        assert store.size("x.bin") == 3

    def test_empty_object(self, store: ObjectStore) -> None:
        store.put("empty", b"")
        assert store.get("empty") == b""
        assert store.size("empty") == 0

    def test_missing_object(self, store: ObjectStore) -> None:
        assert not store.exists("nope/x")
        with pytest.raises(ObjectNotFoundError, match="nope/x"):
            store.get("nope/x")
        with pytest.raises(FileNotFoundError):
            store.size("nope/x")

    def test_list_is_a_sorted_string_prefix_match(self, store: ObjectStore) -> None:
        for name in ("t/b/2", "t/a/1", "t/ab/3", "u/4", "t/a/0"):
            store.put(name, b"x")
        assert store.list("t/a") == ["t/a/0", "t/a/1", "t/ab/3"]
        assert store.list("t/a/") == ["t/a/0", "t/a/1"]
        assert store.list("") == ["t/a/0", "t/a/1", "t/ab/3", "t/b/2", "u/4"]
        assert store.list("zzz/") == []

    def test_delete_is_idempotent(self, store: ObjectStore) -> None:
        store.put("d/x", b"x")
        store.delete("d/x")
        store.delete("d/x")
        assert not store.exists("d/x")
        assert store.list("d/") == []

    @pytest.mark.parametrize("name", ["", "/abs", "a//b", "../up", "a/./b", "a\\b"])
    def test_rejects_names_that_escape_the_root(self, store: ObjectStore, name: str) -> None:
        with pytest.raises(ConfigError):
            store.put(name, b"x")

    def test_large_object_round_trip(self, store: ObjectStore) -> None:
        data = bytes(range(256)) * (11 * 4096)  # 11 MiB: a multipart upload on S3
        store.put("big/object", data)
        assert store.size("big/object") == len(data)
        assert store.get("big/object") == data

    # ---------------------------------------------------------------------------------------------- staging
    def test_stage_verify_and_read_back(self, store: ObjectStore) -> None:
        recs = records("orders", 0, DELIVERED)
        manifests = stage_range(store, "orders", 0, 0, 10, recs, PROOF, SegmentLimits(max_segment_records=2))
        assert [(m.start, m.end) for m in manifests] == [(0, 2), (2, 8), (8, 10)]
        assert store.list("topics/") == sorted(
            n for m in manifests for n in (segment_name("orders", 0, m.start, m.end), m.name)
        )
        assert read_manifest(store, manifest_name("orders", 0, 2, 8)) == manifests[1]
        assert list(read_range(store, "orders", 0, 0, 10)) == recs
        report = verify(store)
        assert report.ok, report.problems
        assert report.segments_checked == 3

    def test_verify_catches_a_tampered_segment(self, store: ObjectStore) -> None:
        stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
        name = segment_name("orders", 0, 0, 10)
        store.put(name, store.get(name)[:-1] + b"\x00")
        report = verify(store)
        assert not report.ok
        assert {p.name for p in report.problems} == {name}
        assert any("sha256" in p.message for p in report.problems)

    def test_retry_fetches_only_what_is_missing(self, store: ObjectStore) -> None:
        recs = records("orders", 0, DELIVERED)
        limits = SegmentLimits(max_segment_records=2)
        first = stage_range(store, "orders", 0, 0, 10, recs, PROOF, limits)
        lost = first[1]
        store.delete(lost.name)  # the crash came between the segment and its manifest
        status = range_status(store, "orders", 0, 0, 10)
        assert status.missing == ((2, 8),)
        assert [m.name for m in status.complete] == [first[0].name, first[2].name]
        again = stage_range(
            store, "orders", 0, 2, 8, [r for r in recs if 2 <= r.offset < 8], PROOF.restrict(2, 8), limits
        )
        assert again == [lost]
        assert range_status(store, "orders", 0, 0, 10).is_complete
