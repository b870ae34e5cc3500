"""``streamproc_dev.conformance.coverage``: the parts of a result, what an oracle's answer covers, projections."""

from __future__ import annotations

from typing import Any

import pytest

from streamproc_dev.conformance.coverage import kafka_answered, only_expected_differences, project, result_parts

PLAN: dict[str, Any] = {
    "error": None,
    "ranges": {"a-0": {"start": 1, "end": 5, "notes": []}, "a-1": {"start": 0, "end": 2, "notes": ["n"]}},
    "partition_times": {"a-0": -1, "a-1": 7},
    "max_records_total": 6,
    "reference_tool_output": "informational, never a part",
}


def test_a_plan_splits_its_ranges_and_skips_informational_fields() -> None:
    assert result_parts("planning", PLAN) == ("starts", "ends", "notes", "partition_times", "max_records_total")
    assert result_parts("planning", {"error": {"type": "X"}, "kafka_reference": "x"}) == ("error",)
    assert result_parts("topology", {"tasks": {}, "stages": [], "not_observable": ["stages"]}) == ("tasks", "stages")
    assert result_parts("planning", None) == ()


@pytest.mark.parametrize("names", [["starts"], ["start"], ["ranges.start"], ["ranges.starts"]])
def test_answered_accepts_the_names_of_a_ranges_field(names: list[str]) -> None:
    assert kafka_answered("planning", {"answered": names}, result_parts("planning", PLAN)) == ("starts",)


def test_what_each_kind_of_answer_covers() -> None:
    parts = result_parts("planning", PLAN)
    assert kafka_answered("planning", {"reset_tool_starts": {}, "not_observable": ["ranges"]}, parts) == ("starts",)
    assert kafka_answered("planning", {"not_observable": ["ranges", "max_records_total"]}, parts) == (
        "partition_times",
    )
    assert kafka_answered("planning", {"error": {"type": "X"}, "not_observable": ["ranges"]}, parts) == parts
    assert kafka_answered("planning", dict(PLAN), parts) == parts
    assert kafka_answered("planning", {"answered": ["ends", "unknown"]}, parts) == ("ends",)


def test_projection_keeps_only_the_named_range_fields() -> None:
    assert project("planning", PLAN, ["ends", "max_records_total"]) == {
        "ranges": {"a-0": {"end": 5}, "a-1": {"end": 2}},
        "max_records_total": 6,
    }


def test_only_expected_differences_compare_part_by_part() -> None:
    other = {**PLAN, "ranges": {**PLAN["ranges"], "a-1": {"start": 9, "end": 3, "notes": ["n"]}}}
    assert only_expected_differences("planning", PLAN, other, ["notes"]) == []
    assert only_expected_differences("planning", PLAN, other, ["ends"]) == ["a-1: expected {'end': 2}, got {'end': 3}"]
    extra = {**PLAN, "ranges": {**PLAN["ranges"], "b-0": {"start": 0, "end": 1, "notes": []}}}
    assert only_expected_differences("planning", PLAN, extra, ["ends"]) == ["b-0: unexpected range {'end': 1}"]
    assert only_expected_differences("planning", PLAN, {"error": {"type": "X"}}, ["ends"]) == [
        "unexpected error {'type': 'X'}"
    ]
    assert only_expected_differences("topology", {"stages": [[0]]}, {"stages": [[1]]}, ["stages"]) == [
        "stages: expected [[0]], got [[1]]"
    ]
    assert only_expected_differences("topology", {"stages": [[0]]}, {}, ["stages"]) == ["missing key 'stages'"]
