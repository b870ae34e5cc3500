"""``streamproc.plan.run_plan``: a plan file is validated on read, so a hand-edited plan never half-runs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import PlanError
from streamproc.intervals import first_overlap
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import isolation_for

DOC: dict[str, Any] = {
    "format": "streamproc-run-plan",
    "version": 1,
    "application_id": "app",
    "isolation_level": "read_uncommitted",
    "start_mode": "committed",
    "end_mode": "latest",
    "start_policy": "fail",
    "now_ms": None,
    "ranges": [
        {
            "topic": "orders",
            "partition": p,
            "start": 0,
            "end": 10,
            "internal": False,
            "compacted": False,
            "committed_offset": None,
            "partition_time": -1,
            "notes": [],
            "topic_id": "Iviqecp9R1OmncRk8fVRFg",
        }
        for p in (0, 1)
    ],  # fmt: skip
    "tasks": [],
    "stages": [],
    "restores": [
        {
            "task_id": "0_0",
            "store": "s",
            "changelog_topic": "app-s-changelog",
            "changelog_partition": 0,
            "start": 0,
            "end": 3,
            "checkpoint_offset": None,
            "task_corrupted": False,
            "local_state_wiped": False,
        }
    ],  # fmt: skip
    "handoff_preview": {"commit_offsets": [], "checkpoint_files": [], "delete_records": []},
    "warnings": [],
}


def edited(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    doc.update(changes)
    return doc


def test_a_valid_plan_round_trips_to_the_same_document() -> None:
    plan = RunPlan.from_dict(DOC)
    assert json.loads(plan.to_json()) == DOC


def test_an_unknown_isolation_level_is_a_plan_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(edited(isolation_level="read_maybe")))
    with pytest.raises(
        PlanError, match=r"plan .*plan.json: 'isolation_level' must be one of read_uncommitted, read_co"
    ):
        RunPlan.read(path)


def test_a_partition_planned_twice_is_refused() -> None:
    doc = edited()
    doc["ranges"].append(dict(doc["ranges"][0]))
    with pytest.raises(PlanError, match=r"orders-0 is planned twice"):
        RunPlan.from_dict(doc)


def test_a_restore_overlapping_a_planned_range_is_refused() -> None:
    doc = edited()
    doc["restores"][0].update(changelog_topic="orders", changelog_partition=1, start=5, end=12)
    with pytest.raises(PlanError, match=r"orders-1 \[0, 10\) and \[5, 12\) overlap"):
        RunPlan.from_dict(doc)


def test_adjacent_ranges_of_one_partition_are_fine() -> None:
    doc = edited()
    doc["restores"][0].update(changelog_topic="orders", changelog_partition=1, start=10, end=12)
    assert RunPlan.from_dict(doc).restores[0].start == 10


@pytest.mark.parametrize(
    ("value", "message"),
    [(None, "topic_id is missing or null"), ("", "must be a Kafka topic id"), (7, "must be a Kafka topic id")],
)
def test_a_range_needs_its_topic_id(value: object, message: str) -> None:
    doc = edited()
    doc["ranges"][1]["topic_id"] = value
    with pytest.raises(PlanError, match=message):
        RunPlan.from_dict(doc)
    del doc["ranges"][1]["topic_id"]
    with pytest.raises(PlanError, match="topic_id is missing or null"):
        RunPlan.from_dict(doc)


def test_first_overlap() -> None:
    assert first_overlap([("a-0", 0, 5), ("a-0", 5, 9), ("a-1", 0, 5)]) is None
    assert first_overlap([("a-0", 5, 9), ("a-0", 0, 6)]) == (("a-0", 0, 6), ("a-0", 5, 9))
    assert first_overlap([("a-0", 3, 3), ("a-0", 3, 3)]) == (("a-0", 3, 3), ("a-0", 3, 3))


def test_isolation_level_follows_the_guarantee_and_the_consumer_setting() -> None:
    assert isolation_for("at_least_once").value == "read_uncommitted"
    assert isolation_for("exactly_once_v2").value == "read_committed"
    assert isolation_for("at_least_once", "read_committed").value == "read_committed"  # StreamsConfig honours it
    assert isolation_for("exactly_once_v2", "read_committed").value == "read_committed"
    with pytest.raises(PlanError, match="contradicts"):
        isolation_for("exactly_once_v2", "read_uncommitted")
    with pytest.raises(PlanError, match="isolation.level must be one of"):
        isolation_for("at_least_once", "read_maybe")
