"""``streamproc.conformance.report``: row logic (pending never passes, mismatches fail the run), comparisons, files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.conformance import report
from streamproc.conformance.report import (
    ERROR,
    EXIT_MISMATCH,
    EXIT_OK,
    PENDING,
    RAN,
    STATUS_FAIL,
    STATUS_PASS,
    STATUS_PENDING,
    RunnerOutcome,
    build_row,
    compare_to_kafka_streams,
    compare_to_spec,
    exit_code,
    totals,
)
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

OWN = PROJECT_ROOT / "conformance" / "scenarios"
APP = RunnerOutcome(PENDING, reason="no application-level runner yet")


def load(path: Path) -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return scenario


def ordering(name: str = "c01-tie-two-topics-three-each") -> dict[str, Any]:
    return load(OWN / f"{name}.json")


def as_kafka_result(expected: dict[str, Any], full_message: str | None = None) -> dict[str, Any]:
    """What the oracle prints for a scenario whose Kafka result equals ``expected`` (simple class, whole message)."""
    result = copy.deepcopy(expected)
    if "error" in result:
        error = result["error"]
        error["kafka_exception"] = error["kafka_exception"].rsplit(".", 1)[-1]
        error["kafka_message_prefix"] = full_message or error["kafka_message_prefix"]
    return result


def row_for(
    scenario: dict[str, Any], streamproc: RunnerOutcome, task: RunnerOutcome, app: RunnerOutcome = APP
) -> report.Row:
    return build_row(scenario, f"{scenario['id']}.json", streamproc, task, app)


def test_streamproc_equal_to_kafka_streams_passes() -> None:
    scenario = ordering()
    row = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]), RunnerOutcome(RAN, scenario["expected"]))
    assert row.status == STATUS_PASS
    assert row.streamproc_matches_kafka_streams is True
    assert row.spec_matches_kafka_streams is True
    assert exit_code([row]) == EXIT_OK


def test_pending_oracle_never_counts_as_passing() -> None:
    scenario = ordering()
    row = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]), RunnerOutcome(PENDING, reason="no mode"))
    assert row.status == STATUS_PENDING
    assert row.streamproc_matches_kafka_streams is None
    assert row.spec_matches_kafka_streams is None
    assert row.streamproc_matches_spec is True
    counts = totals([row])
    assert (counts["pass"], counts["pending"], counts["kafka_streams_task_ran"]) == (0, 1, 0)
    assert row.to_json()["kafka_streams_app"] == {"status": PENDING, "reason": "no application-level runner yet"}


def test_streamproc_differing_from_kafka_streams_fails_the_run() -> None:
    scenario = ordering()
    wrong = copy.deepcopy(scenario["expected"])
    wrong["order"] = list(reversed(wrong["order"]))
    row = row_for(scenario, RunnerOutcome(RAN, wrong), RunnerOutcome(RAN, scenario["expected"]))
    assert row.status == STATUS_FAIL
    assert row.streamproc_matches_kafka_streams is False
    assert any(d.startswith("streamproc vs Kafka Streams: order") for d in row.differences)
    passing = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]), RunnerOutcome(RAN, scenario["expected"]))
    assert exit_code([passing, row]) == EXIT_MISMATCH


def test_kafka_streams_wins_over_expected() -> None:
    """streamproc equal to Kafka Streams passes even where ``expected`` says otherwise (a finding, not a failure)."""
    scenario = ordering()
    kafka = copy.deepcopy(scenario["expected"])
    kafka["stream_time_after_each"] = [99] * len(kafka["stream_time_after_each"])
    row = row_for(scenario, RunnerOutcome(RAN, kafka), RunnerOutcome(RAN, kafka))
    assert row.status == STATUS_PASS
    assert row.spec_matches_kafka_streams is False
    assert row.streamproc_matches_spec is False
    assert totals([row])["spec_differs_from_kafka_streams"] == 1


def test_differing_from_expected_fails_where_the_oracle_does_not_run() -> None:
    scenario = ordering()
    wrong = copy.deepcopy(scenario["expected"])
    wrong["dropped"] = [{"topic": "t0", "partition": 0, "offset": 0, "reason": "deserialization"}]
    row = row_for(scenario, RunnerOutcome(RAN, wrong), RunnerOutcome(PENDING, reason="no mode"))
    assert row.status == STATUS_FAIL
    assert any(d.startswith("streamproc vs expected: dropped") for d in row.differences)
    assert exit_code([row]) == EXIT_MISMATCH


@pytest.mark.parametrize(
    ("streamproc", "task"),
    [
        (RunnerOutcome(ERROR, reason="KeyError: 'x'"), RunnerOutcome(PENDING, reason="no mode")),
        (None, RunnerOutcome(ERROR, reason="java.lang.IllegalStateException: boom")),
    ],
    ids=["streamproc-crashed", "oracle-crashed"],
)
def test_a_runner_that_crashed_is_a_failure_not_a_pass(streamproc: RunnerOutcome | None, task: RunnerOutcome) -> None:
    scenario = ordering()
    row = row_for(scenario, streamproc or RunnerOutcome(RAN, scenario["expected"]), task)
    assert row.status == STATUS_FAIL
    assert row.differences and ("did not produce" in row.differences[0] or "oracle failed" in row.differences[0])
    assert exit_code([row]) == EXIT_MISMATCH


def test_ordering_error_compares_by_prefix_and_simple_class_name() -> None:
    """streamproc's error (qualified class, prefix cut to the scenario's) equals the oracle's (simple class, whole)."""
    scenario = ordering("c22-negative-fail-on-invalid-middle")
    expected = scenario["expected"]
    whole = expected["error"]["kafka_message_prefix"] + "CreateTime = -1, … has invalid (negative) timestamp."
    kafka = as_kafka_result(expected, whole)
    assert compare_to_kafka_streams("ordering", expected, kafka) == []
    other = copy.deepcopy(expected)
    other["error"]["kafka_message_prefix"] = "Input record ConsumerRecord(topic = b"
    assert any("kafka_message_prefix" in d for d in compare_to_kafka_streams("ordering", other, kafka))


def test_state_error_compares_type_class_and_quoted_message() -> None:
    kafka = {
        "error": {
            "type": "CheckpointCorrupt",
            "kafka_exception": "NumberFormatException",
            "kafka_message_contains": 'For input string: "x"',
        }
    }
    streamproc = {
        "error": {
            "type": "CheckpointCorrupt",
            "kafka_exception": "java.lang.NumberFormatException",
            "message": 'checkpoint is corrupt: java.lang.NumberFormatException: For input string: "x"',
        }
    }
    assert compare_to_kafka_streams("state", streamproc, kafka) == []
    streamproc["error"]["message"] = "checkpoint is corrupt"
    assert compare_to_kafka_streams("state", streamproc, kafka) == [
        "error: Kafka Streams' message 'For input string: \"x\"' is not quoted"
    ]


def test_spec_comparison_follows_each_kinds_rules() -> None:
    planning = load(SCENARIOS_DIR / "planning" / "p04-no-committed-offset-policy-none.json")
    expected = planning["expected"]
    assert "error" in expected
    error = {
        "type": expected["error"]["type"],
        "message": " ".join(
            [*expected["error"].get("message_contains", []), str(expected["error"].get("kafka_message_contains", ""))]
        ),
        **{
            k: v
            for k, v in expected["error"].items()
            if k not in {"type", "message_contains", "kafka_message_contains"}
        },
    }
    assert compare_to_spec("planning", expected, {"error": error}) == []
    assert compare_to_spec("planning", expected, {"error": {**error, "type": "Other"}}) != []
    scenario = ordering()
    assert compare_to_spec("ordering", scenario["expected"], scenario["expected"]) == []
    assert compare_to_spec("ordering", scenario["expected"], {**scenario["expected"], "extra": 1}) == [
        "unexpected key 'extra': 1"
    ]


def test_report_without_oracle_writes_pending_rows_and_exit_zero(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("c01-tie-two-topics-three-each", "c16-corrupt-two-at-tail-continue"):
        (scenarios / f"{name}.json").write_text((OWN / f"{name}.json").read_text(encoding="utf-8"), encoding="utf-8")
    results = tmp_path / "results"

    code = report.main(["--scenarios", str(scenarios), "--results", str(results), "--no-oracle"])

    assert code == EXIT_OK
    document = json.loads((results / "latest.json").read_text(encoding="utf-8"))
    assert [row["scenario"] for row in document["rows"]] == [
        "c01-tie-two-topics-three-each",
        "c16-corrupt-two-at-tail-continue",
    ]
    for row in document["rows"]:
        assert row["status"] == STATUS_PENDING
        assert row["kafka_streams_task"]["status"] == PENDING and row["kafka_streams_task"]["reason"]
        assert row["kafka_streams_app"]["status"] == PENDING
        assert row["streamproc_matches_kafka_streams"] is None and row["spec_matches_kafka_streams"] is None
        assert row["streamproc"]["status"] == RAN and row["streamproc_matches_spec"] is True
    assert document["totals"]["pass"] == 0 and document["totals"]["pending"] == 2
    markdown = (results / "latest.md").read_text(encoding="utf-8")
    assert "| `c01-tie-two-topics-three-each` | ordering | pending: the oracle was not run (--no-oracle) |" in markdown
    assert "0 pass" in markdown


def test_report_exits_non_zero_when_streamproc_differs_from_expected(tmp_path: Path) -> None:
    scenario = ordering()
    scenario["expected"]["order"] = list(reversed(scenario["expected"]["order"]))
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / f"{scenario['id']}.json").write_text(json.dumps(scenario), encoding="utf-8")
    results = tmp_path / "results"

    code = report.main(["--scenarios", str(scenarios), "--results", str(results), "--no-oracle"])

    assert code == EXIT_MISMATCH
    document = json.loads((results / "latest.json").read_text(encoding="utf-8"))
    assert document["rows"][0]["status"] == STATUS_FAIL
    assert "## Failures" in (results / "latest.md").read_text(encoding="utf-8")
