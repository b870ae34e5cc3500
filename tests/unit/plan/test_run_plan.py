"""``streamproc.plan.run_plan``: a plan file is validated on read, so a hand-edited plan never half-runs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_description import parse_description
from streamproc.errors import PlanError
from streamproc.handoff.preview import preview
from streamproc.intervals import first_overlap
from streamproc.plan.cluster_snapshot import (
    ClusterSnapshot,
    CommittedOffset,
    IsolationLevel,
    PartitionState,
    PlanRequest,
    TopicPartition,
    TopicState,
)
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import application_spec, build_run_plan, isolation_for

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


# ------------------------------------------------------------------------------------------------- versions

V2_PREVIEW = {
    "commit_offsets": [
        {"partition": "orders-0", "before": None, "after": 10, "plus_appended_by_stage": None},
        {"partition": "app-x-repartition-0", "before": 7, "after": 7, "plus_appended_by_stage": 0},
    ],
    "checkpoint_files": ["app/1_0/.checkpoint"],
    "task_directories": ["app/1_0"],
    "delete_records": [{"partition": "app-x-repartition-0", "before_offset": 7, "plus_appended_by_stage": 0}],
}


def test_a_version_1_plan_still_reads_and_is_written_back_byte_for_byte() -> None:
    """A plan made before version 2 keeps its bytes, so its plan id (the process step's object prefix, the
    ledger's key) is the same after an upgrade between process and hand-off."""
    doc = edited(handoff_preview={**DOC["handoff_preview"], "commit_offsets": [
        {"partition": "orders-0", "before": None, "after": 10}]})  # fmt: skip
    plan = RunPlan.from_dict(doc)
    assert plan.version == 1
    assert plan.to_json() == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    assert [(c.partition, c.after, c.plus_appended_by_stage) for c in plan.commits] == [("orders-0", 10, None)]


def test_a_version_2_plan_records_the_appended_stage_and_the_task_directories() -> None:
    doc = edited(version=2, handoff_preview=V2_PREVIEW)
    plan = RunPlan.from_dict(doc)
    assert json.loads(plan.to_json()) == doc
    assert [p.plus_appended_by_stage for p in plan.purges] == [0]
    assert plan.task_directories == ("app/1_0",)


def test_a_version_2_preview_is_validated() -> None:
    wrong_dirs = edited(version=2, handoff_preview={**V2_PREVIEW, "task_directories": ["app/0_0"]})
    with pytest.raises(PlanError, match=r"task_directories \['app/0_0'\] are not the directories of its checkpoint"):
        RunPlan.from_dict(wrong_dirs)
    commits = [{k: v for k, v in c.items() if k != "plus_appended_by_stage"} for c in V2_PREVIEW["commit_offsets"]]
    missing = edited(version=2, handoff_preview={**V2_PREVIEW, "commit_offsets": commits})
    with pytest.raises(PlanError, match=r"commit_offsets\[0\]: missing field 'plus_appended_by_stage'"):
        RunPlan.from_dict(missing)
    with pytest.raises(PlanError, match=r"plan version 3 is not supported \(this streamproc reads versions 1, 2\)"):
        RunPlan.from_dict(edited(version=3))


# ------------------------------------------------------------------------------ the hand-off preview of a plan

REKEY = """\
Topologies:
   Sub-topology: 0
    Source: orders (topics: [orders])
      --> rekey
    Processor: rekey (stores: [])
      --> to-rekeyed
      <-- orders
    Sink: to-rekeyed (topic: rekeyed-repartition)
      <-- rekey

  Sub-topology: 1
    Source: from-rekeyed (topics: [rekeyed-repartition])
      --> count
    Processor: count (stores: [counts])
      --> totals
      <-- from-rekeyed
    Sink: totals (topic: totals)
      <-- count
"""
REP = "app-rekeyed-repartition"
CHANGELOG = "app-counts-changelog"
APPENDED = " + the records stage 0 of this run appends (and their transaction markers; known after processing)"


def rekey_plan(*, rep_committed: tuple[int, int], rep_end: tuple[int, int] | None = None, eos: bool = False) -> RunPlan:
    """orders-0/1 [100, 160) and [40, 90); the repartition partitions committed at ``rep_committed``, their log
    ending at ``rep_end`` (default: the committed offsets: no backlog, the second run's case)."""
    ends = rep_end or rep_committed
    topics = {
        "orders": TopicState({0: PartitionState(0, 160, 160, 160), 1: PartitionState(0, 90, 90, 90)}),
        REP: TopicState(
            {p: PartitionState(rep_committed[p], ends[p], ends[p], ends[p]) for p in (0, 1)}, internal=True
        ),
        CHANGELOG: TopicState({0: PartitionState(0, 30, 30, 30), 1: PartitionState(0, 0, 0, 0)}),
    }
    committed = {TopicPartition("orders", 0): 100, TopicPartition("orders", 1): 40}
    committed |= {TopicPartition(REP, p): rep_committed[p] for p in (0, 1)}
    snapshot = ClusterSnapshot(
        topics=topics,
        committed={tp: CommittedOffset(offset) for tp, offset in committed.items()},
        partition_counts=dict.fromkeys(topics, 2),
        topic_ids={name: letter * 22 for name, letter in zip(topics, "ABC", strict=True)},
    )
    analysis = analyze(parse_description(REKEY), "app", dict.fromkeys(topics, 2))
    isolation = IsolationLevel.READ_COMMITTED if eos else IsolationLevel.READ_UNCOMMITTED
    app = application_spec("app", analysis, isolation_level=isolation)
    guarantee = "exactly_once_v2" if eos else "at_least_once"
    return build_run_plan(app, PlanRequest(), snapshot, analysis=analysis, processing_guarantee=guarantee)


# ------------------------------------------------------------------------------------------- from the plan alone


def test_the_plan_lists_the_repartition_commits_and_purges_of_partitions_without_backlog() -> None:
    """The issue's case: a second run, the repartition partitions committed at their log end (nothing to replay);
    the hand-off still commits them past stage 0's records and deletes those. Today's main listed neither."""
    plan = rekey_plan(rep_committed=(85565, 700))
    section = plan.to_dict()["handoff_preview"]
    assert section["commit_offsets"] == [
        {"partition": f"{REP}-0", "before": 85565, "after": 85565, "plus_appended_by_stage": 0},
        {"partition": f"{REP}-1", "before": 700, "after": 700, "plus_appended_by_stage": 0},
        {"partition": "orders-0", "before": 100, "after": 160, "plus_appended_by_stage": None},
        {"partition": "orders-1", "before": 40, "after": 90, "plus_appended_by_stage": None},
    ]
    assert section["delete_records"] == [
        {"partition": f"{REP}-0", "before_offset": 85565, "plus_appended_by_stage": 0},
        {"partition": f"{REP}-1", "before_offset": 700, "plus_appended_by_stage": 0},
    ]
    assert section["task_directories"] == ["app/1_0", "app/1_1"]
    assert section["checkpoint_files"] == ["app/1_0/.checkpoint", "app/1_1/.checkpoint"]
    assert RunPlan.from_dict(plan.to_dict()) == plan

    hand_off = plan.report().split("Hand-off (irreversible, after processing):\n")[1].splitlines()
    assert hand_off == [
        f"  commit {REP}-0: 85565 -> 85565{APPENDED}",
        f"  commit {REP}-1: 700 -> 700{APPENDED}",
        "  commit orders-0: 100 -> 160",
        "  commit orders-1: 40 -> 90",
        "  replace app/1_0 with the process step's stores, then write app/1_0/.checkpoint",
        "  replace app/1_1 with the process step's stores, then write app/1_1/.checkpoint",
        f"  delete records of {REP}-0 before offset 85565{APPENDED}",
        f"  delete records of {REP}-1 before offset 700{APPENDED}",
    ]
    text = preview(plan, "abc", Path("/state")).splitlines()
    assert text[0] == "Hand-off of plan abc for application 'app':"
    assert "  replace /state/app/1_0 with the process step's stores, then write /state/app/1_0/.checkpoint" in text
    assert preview(plan, "abc", None).splitlines()[5] == (
        "  no state directory (--state-dir not given): the application restores from the changelogs"
    )


def test_a_repartition_backlog_is_committed_and_purged_from_its_end_plus_the_appended_records() -> None:
    plan = rekey_plan(rep_committed=(50, 70), rep_end=(80, 70))
    commits = {c.partition: (c.before, c.after, c.plus_appended_by_stage) for c in plan.commits}
    assert commits[f"{REP}-0"] == (50, 80, 0)
    assert commits[f"{REP}-1"] == (70, 70, 0)
    assert [(p.partition, p.before_offset, p.plus_appended_by_stage) for p in plan.purges] == [
        (f"{REP}-0", 80, 0),
        (f"{REP}-1", 70, 0),
    ]


def test_a_streams_groups_epoch_round_trips_and_is_absent_for_other_groups() -> None:
    """The epoch the hand-off's guard checks (``streams_group_epoch``): absent for a classic group or none, so such
    plans keep their bytes and their plan id."""
    assert "streams_group_epoch" not in json.loads(RunPlan.from_dict(DOC).to_json())
    plan = RunPlan.from_dict(edited(streams_group_epoch=4))
    assert plan.streams_group_epoch == 4
    assert json.loads(plan.to_json()) == edited(streams_group_epoch=4)
    with pytest.raises(PlanError, match=r"streams_group_epoch"):
        RunPlan.from_dict(edited(streams_group_epoch="four"))
