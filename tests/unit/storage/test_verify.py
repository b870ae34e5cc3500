"""``streamproc.storage.verify``: nothing staged is a failure, and a plan's ranges must be covered by sound segments."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from streamproc.fetch import FetchRange
from streamproc.storage import LocalObjectStore, ObjectStore
from streamproc.storage.manifest import read_manifest, write_manifest
from streamproc.storage.staging import SegmentLimits, stage_range
from streamproc.storage.verify import location, verify
from tests.unit.storage.store_contract import DELIVERED, PROOF, records


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return LocalObjectStore(tmp_path / "staging")


def test_a_store_without_segments_fails_and_names_where_it_looked(
    store: ObjectStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="streamproc.storage.verify"):
        report = verify(store)

    assert not report.ok and report.segments_checked == 0
    [problem] = report.problems
    assert problem.name == f"{store.uri}/topics/" and "no staged segment here" in problem.message
    assert f"under {store.uri}/topics/:" in caplog.text  # the URI and the prefix, joined by one '/'


def test_location_joins_with_exactly_one_slash(store: ObjectStore) -> None:
    assert location(store, "topics/") == f"{store.uri}/topics/"
    assert location(store, "/topics/") == f"{store.uri}/topics/"


def test_planned_ranges_must_be_covered(store: ObjectStore) -> None:
    stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF, SegmentLimits(max_segment_records=2))
    planned = [FetchRange("orders", 0, 0, 10), FetchRange("orders", 1, 0, 4), FetchRange("orders", 2, 5, 5)]

    report = verify(store, planned=planned)

    assert (report.ranges_checked, report.ranges_covered) == (2, 1)  # an empty range needs no segment
    assert [str(p) for p in report.problems] == [
        "orders-1 [0, 4): planned offsets [0, 4) are not staged by a sound segment; run fetch again"
    ]


def test_a_corrupt_or_missing_segment_leaves_its_offsets_uncovered(store: ObjectStore) -> None:
    manifests = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF,
                            SegmentLimits(max_segment_records=2))  # fmt: skip
    middle = manifests[1]
    store.put(middle.segment_name, store.get(middle.segment_name)[::-1])
    store.delete(manifests[2].segment_name)
    store.delete(manifests[2].name)

    report = verify(store, planned=[FetchRange("orders", 0, 0, 10)])

    uncovered = [p.message for p in report.problems if p.name == "orders-0 [0, 10)"]
    assert uncovered == [
        f"planned offsets [{middle.start}, {manifests[2].end}) are not staged by a sound segment; run fetch again"
    ]
    assert report.ranges_covered == 0


def test_segments_of_another_topic_id_do_not_cover_the_plan(store: ObjectStore) -> None:
    [manifest] = stage_range(store, "orders", 0, 0, 10, records("orders", 0, DELIVERED), PROOF)
    write_manifest(store, replace(read_manifest(store, manifest.name), topic_id="AAAAAAAAAAAAAAAAAAAAAQ"))

    report = verify(store, planned=[FetchRange("orders", 0, 0, 10, topic_id="BBBBBBBBBBBBBBBBBBBBBQ")])

    [problem] = report.problems
    assert "staged from topic id AAAAAAAAAAAAAAAAAAAAAQ, not the planned BBBBBBBBBBBBBBBBBBBBBQ" in problem.message
    assert verify(store, planned=[FetchRange("orders", 0, 0, 10, topic_id="AAAAAAAAAAAAAAAAAAAAAQ")]).ok
