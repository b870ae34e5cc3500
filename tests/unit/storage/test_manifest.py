"""``streamproc.storage.manifest``: the manifest's JSON, its validation, and ``verify`` over a staging area."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import ManifestError
from streamproc.storage import LocalObjectStore, ObjectStore
from streamproc.storage.manifest import (
    MANIFEST_VERSION,
    Manifest,
    SegmentProof,
    read_manifest,
    to_intervals,
)
from streamproc.storage.segments import (
    SEGMENT_SCHEMA_FINGERPRINT,
    SegmentKey,
    SegmentWriter,
    manifest_name,
    segment_name,
)
from streamproc.storage.staging import SegmentLimits, stage_range
from streamproc.storage.verify import verify
from tests.unit.storage.store_contract import DELIVERED, PROOF, records

NAME = manifest_name("orders", 0, 0, 10)


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return LocalObjectStore(tmp_path)


@pytest.fixture
def manifest(store: ObjectStore) -> Manifest:
    (m,) = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
    return m


def doc(manifest: Manifest) -> dict[str, Any]:
    return json.loads(manifest.to_json())  # type: ignore[no-any-return]


def parse(document: object, name: str = NAME) -> Manifest:
    return Manifest.from_json(json.dumps(document).encode(), name=name)


def test_manifest_document(manifest: Manifest) -> None:
    d = doc(manifest)
    assert d == {
        "format": "streamproc.segment-manifest",
        "version": MANIFEST_VERSION,
        "topic": "orders",
        "topic_id": None,
        "partition": 0,
        "start": 0,
        "end": 10,
        "segment": segment_name("orders", 0, 0, 10),
        "record_count": 5,
        "min_timestamp": 1000,
        "max_timestamp": 1008,
        "size_bytes": manifest.size_bytes,
        "sha256": manifest.sha256,
        "schema_fingerprint": SEGMENT_SCHEMA_FINGERPRINT,
        "proof": {
            "isolation_level": "read_committed",
            "delivered": [[0, 2], [7, 8]],
            "delivered_count": 5,
            "explained": {"aborted": [[4, 5]], "control": [[3, 3], [6, 6], [9, 9]]},
            "explained_count": 5,
            "end_minus_start": 10,
        },
    }
    assert manifest.to_json().endswith(b"}\n")
    assert parse(d) == manifest


def test_manifest_json_is_deterministic(manifest: Manifest) -> None:
    rebuilt = Manifest(
        key=manifest.key,
        record_count=5,
        min_timestamp=1000,
        max_timestamp=1008,
        size_bytes=manifest.size_bytes,
        sha256=manifest.sha256,
        proof=SegmentProof(
            delivered=((0, 2), (7, 8)),
            explained={"control": ((3, 3), (6, 6), (9, 9)), "aborted": ((4, 5),)},
            isolation_level="read_committed",
        ),
    )
    assert rebuilt.to_json() == manifest.to_json()


def test_proof_block_matches_the_planning_scenarios_shape(scenarios_dir: Path) -> None:
    """The planner's proof (scenario ``manifest`` block, ``CompletenessProof.to_dict()``) is read as it is."""
    scenario = json.loads((scenarios_dir / "planning" / "p15-completeness-read-committed.json").read_text())
    block = scenario["expected"]["manifest"]["orders-0"]
    proof = SegmentProof.from_dict(block, isolation_level="read_committed")
    assert proof == PROOF
    assert proof.problems(0, 10) == []
    assert {k: v for k, v in proof.to_dict(0, 10).items() if k != "isolation_level"} == block


def test_restrict_to_a_sub_range() -> None:
    assert PROOF.restrict(2, 8) == SegmentProof(
        delivered=((2, 2), (7, 7)),
        explained={"aborted": ((4, 5),), "control": ((3, 3), (6, 6))},
        isolation_level="read_committed",
    )
    assert PROOF.restrict(2, 8).problems(2, 8) == []
    assert PROOF.restrict(9, 10).delivered == ()


def test_to_intervals() -> None:
    assert to_intervals([5, 0, 1, 2, 2, 9, 8]) == ((0, 2), (5, 5), (8, 9))
    assert to_intervals([]) == ()


@pytest.mark.parametrize(
    ("proof", "problem"),
    [
        (SegmentProof(delivered=((0, 9),), explained={"control": ((9, 9),)}), "both delivered and explained"),
        (SegmentProof(delivered=((0, 8),)), r"offsets 9\.\.9 are neither delivered nor explained"),
        (SegmentProof(delivered=((0, 10),)), r"0\.\.10 is not inside \[0, 10\)"),
        (SegmentProof(delivered=((0, 4), (5, 9))), "not sorted, disjoint and separated"),
        (SegmentProof(delivered=((5, 9), (0, 3))), "not sorted"),
        (SegmentProof(delivered=((0, 8),), explained={"lost": ((9, 9),)}), "unknown reason 'lost'"),
        (SegmentProof(delivered=((0, 9),), isolation_level="serializable"), "isolation level 'serializable'"),
    ],
)
def test_proofs_that_do_not_prove_their_range(proof: SegmentProof, problem: str) -> None:
    problems = proof.problems(0, 10)
    assert any(re.search(problem, p) for p in problems), problems


def test_stage_range_refuses_a_proof_of_another_range(store: ObjectStore) -> None:
    with pytest.raises(ManifestError, match="does not prove the range"):
        stage_range(store, "orders", 0, 0, 11, records("orders", 0, DELIVERED), PROOF)
    assert store.list() == []


def test_records_must_be_the_delivered_offsets(store: ObjectStore) -> None:
    with pytest.raises(ManifestError, match=r"records written \(0\.\.2, 7\.\.7, 9\.\.9\).*delivered offsets"):
        stage_range(store, "orders", 0, 0, 10, records("orders", 0, [0, 1, 2, 7, 9]), PROOF)
    assert not store.exists(NAME)


def _mutations() -> list[tuple[str, Any, str]]:
    def set_(path: str, value: Any) -> Any:
        def apply(d: dict[str, Any]) -> None:
            *parents, leaf = path.split(".")
            target = d
            for p in parents:
                target = target[p]
            target[leaf] = value

        return apply

    def drop(field: str) -> Any:
        return lambda d: d.pop(field)

    def gap(d: dict[str, Any]) -> None:
        d["proof"]["explained"] = {"control": [[3, 3], [6, 6], [9, 9]]}
        d["proof"]["explained_count"] = 3

    return [
        ("wrong format", set_("format", "something-else"), "format is 'something-else'"),
        ("newer version", set_("version", MANIFEST_VERSION + 1), "upgrade streamproc"),
        ("bool version", set_("version", True), "no integer 'version'"),
        ("missing start", drop("start"), "'start' must be an integer"),
        ("string end", set_("end", "10"), "'end' must be an integer"),
        ("bad topic", set_("topic", "a/b"), "not a legal Kafka topic name"),
        ("end before start", set_("start", 11), "not a valid segment range"),
        ("segment name", set_("segment", "elsewhere.parquet"), "'segment' is 'elsewhere.parquet'"),
        ("record count", set_("record_count", 4), "record_count 4 differs from the proof's delivered count 5"),
        ("no min timestamp", set_("min_timestamp", None), "null exactly when the segment has no records"),
        ("min after max", set_("min_timestamp", 2000), "min_timestamp 2000 is after max_timestamp 1008"),
        ("short hash", set_("sha256", "abc"), "sha256 'abc' is not 64 lowercase hex"),
        ("delivered count", set_("proof.delivered_count", 6), "delivered_count is 6"),
        ("end minus start", set_("proof.end_minus_start", 9), "end_minus_start is 9"),
        ("gap", gap, r"offsets 4\.\.5 are neither delivered nor explained"),
        ("bad interval", set_("proof.delivered", [[0, 2], [7]]), r"\[7\] is not a \[first, last\] pair"),
        ("proof not object", set_("proof", [1]), "a proof must be a JSON object"),
    ]


@pytest.mark.parametrize(
    ("mutate", "message"), [(m, msg) for _, m, msg in _mutations()], ids=[i for i, _, _ in _mutations()]
)
def test_invalid_manifests_are_manifest_errors_naming_the_object(manifest: Manifest, mutate: Any, message: str) -> None:
    d = doc(manifest)
    mutate(d)
    with pytest.raises(ManifestError, match=re.escape(NAME)) as error:
        parse(d)
    assert re.search(message, str(error.value)), str(error.value)


def test_manifest_that_is_not_json(store: ObjectStore) -> None:
    store.put(NAME, b"\x89PNG not json")
    with pytest.raises(ManifestError, match=re.escape(f"manifest '{NAME}' is invalid: not JSON")):
        read_manifest(store, NAME)


def test_manifest_under_the_name_of_another_range(manifest: Manifest) -> None:
    other = manifest_name("orders", 0, 0, 11)
    with pytest.raises(ManifestError, match=r"describes orders-0 \[0, 10\) but its name says orders-0 \[0, 11\)"):
        parse(doc(manifest), name=other)


def test_empty_segment_manifest(store: ObjectStore) -> None:
    proof = SegmentProof(delivered=(), explained={"control": ((4, 4),)})
    (m,) = stage_range(store, "t", 1, 4, 5, [], proof)
    assert (m.record_count, m.min_timestamp, m.max_timestamp) == (0, None, None)
    assert read_manifest(store, m.name) == m
    assert verify(store).ok


# ------------------------------------------------------------------------------------------------------- verify
def test_verify_a_clean_staging_area(store: ObjectStore) -> None:
    stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF, SegmentLimits(max_segment_records=1))
    stage_range(store, "orders", 1, 0, 3, records("orders", 1, [0, 1, 2]), SegmentProof(((0, 2),)))
    store.put("outputs/task-0_0/result.bin", b"not a staged segment, not checked")
    report = verify(store)
    assert report.ok and report.segments_checked == 6 and report.segments_ok == 6
    report.raise_for_problems()
    assert verify(store, "topics/orders/partition=1/").segments_checked == 1


def test_verify_catches_a_rewritten_segment_with_other_records(store: ObjectStore, manifest: Manifest) -> None:
    writer = SegmentWriter("orders", 0)
    writer.extend(records("orders", 0, [0, 1, 2, 7]))
    writer.write(store, 0, 10)
    problems = [p.message for p in verify(store).problems]
    assert any("sha256" in p for p in problems)
    assert any("holds 4 records, the manifest says 5" in p for p in problems)
    assert any("holds offsets 0..2, 7..7, but the manifest proves delivered 0..2, 7..8" in p for p in problems)
    assert any("timestamps span 1000..1007" in p for p in problems)


def test_verify_catches_a_foreign_object_in_a_segment_name(store: ObjectStore, manifest: Manifest) -> None:
    store.put(manifest.segment_name, b"<html>not parquet</html>")
    report = verify(store)
    assert [p.name for p in report.problems] == [manifest.segment_name] * 3
    assert "not a readable Parquet segment" in report.problems[-1].message
    with pytest.raises(ManifestError, match=r"3 problem\(s\)"):
        report.raise_for_problems()


def test_verify_catches_foreign_objects_and_missing_manifests(store: ObjectStore, manifest: Manifest) -> None:
    orphan = SegmentKey("orders", 0, 10, 20)
    SegmentWriter("orders", 0).write(store, 10, 20)
    store.put("topics/orders/partition=0/README.txt", b"hello")
    problems = {p.name: p.message for p in verify(store).problems}
    assert set(problems) == {orphan.segment_name, "topics/orders/partition=0/README.txt"}
    assert "without a manifest" in problems[orphan.segment_name]
    assert "foreign object" in problems["topics/orders/partition=0/README.txt"]


def test_verify_catches_a_missing_segment_and_a_bad_manifest(store: ObjectStore, manifest: Manifest) -> None:
    store.delete(manifest.segment_name)
    other = manifest_name("orders", 0, 10, 12)
    store.put(other, b"{}")
    problems = {p.name: p.message for p in verify(store).problems}
    assert set(problems) == {manifest.segment_name, other}
    assert "missing; its manifest" in problems[manifest.segment_name]
    assert "is invalid" in problems[other]


def test_topic_id_round_trips_and_must_be_text(manifest: Manifest) -> None:
    from dataclasses import replace

    with_id = replace(manifest, topic_id="Iviqecp9R1OmncRk8fVRFg")
    assert parse(doc(with_id)) == with_id
    with pytest.raises(ManifestError, match="'topic_id' must be a string or null"):
        parse({**doc(with_id), "topic_id": 7})
