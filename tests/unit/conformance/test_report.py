"""``streamproc_dev.conformance.report``: row logic (pending never passes, mismatches fail the run), comparisons,
files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import ConfigError
from streamproc_dev.conformance import report
from streamproc_dev.conformance.coverage import result_parts, snapshot_of
from streamproc_dev.conformance.report import (
    ERROR,
    EXIT_MISMATCH,
    EXIT_OK,
    PENDING,
    RAN,
    STATUS_FAIL,
    STATUS_PARTIAL,
    STATUS_PASS,
    STATUS_PENDING,
    RunnerOutcome,
    build_row,
    compare_to_kafka_streams,
    compare_to_spec,
    exit_code,
    totals,
)
from streamproc_dev.conformance.reset_tool import NOT_OBSERVABLE as RESET_TOOL_NOT_OBSERVABLE
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


# ----------------------------------------------------------------------------------- partial rows and snapshots

PLANNING_OWN = OWN / "planning"
TOPOLOGY_OWN = OWN / "topology"


def reset_tool_answer(expected: dict[str, Any]) -> dict[str, Any]:
    """What ``reset_tool.run_reset_tool`` answers for a plan: its starts only."""
    starts = {tp: r["start"] for tp, r in expected["ranges"].items()}
    return {"reset_tool_starts": starts, "not_observable": list(RESET_TOOL_NOT_OBSERVABLE)}


def planning_own(name: str = "p36-earliest-two-topics") -> dict[str, Any]:
    return load(PLANNING_OWN / f"{name}.json")


def test_a_row_kafka_answered_only_in_part_is_partial_and_says_what_each_side_answered() -> None:
    scenario = planning_own()
    expected = scenario["expected"]
    row = row_for(scenario, RunnerOutcome(RAN, expected), RunnerOutcome(RAN, reset_tool_answer(expected)))
    assert row.status == STATUS_PARTIAL
    assert row.answered_by_kafka_streams == ("starts",)
    assert row.only_expected == ("ends", "notes", "partition_times", "max_records_total")
    assert row.differences == ()
    assert exit_code([row]) == EXIT_OK
    document = row.to_json()
    assert document["answered_by_kafka_streams"] == ["starts"]
    assert document["only_expected"] == ["ends", "notes", "partition_times", "max_records_total"]


def test_a_partial_row_fails_on_a_difference_kafka_did_not_answer() -> None:
    """The reset tool agrees on every start; streamproc's end differs from ``expected``: the row fails."""
    scenario = planning_own()
    expected = scenario["expected"]
    wrong = copy.deepcopy(expected)
    tp = sorted(wrong["ranges"])[0]
    wrong["ranges"][tp]["end"] += 1
    row = row_for(scenario, RunnerOutcome(RAN, wrong), RunnerOutcome(RAN, reset_tool_answer(expected)))
    assert row.status == STATUS_FAIL
    assert row.streamproc_matches_kafka_streams is True
    assert [d for d in row.differences if tp in d and "did not answer" in d]
    assert exit_code([row]) == EXIT_MISMATCH


def test_a_partial_row_fails_where_kafka_answered_and_differs() -> None:
    scenario = planning_own()
    expected = scenario["expected"]
    kafka = reset_tool_answer(expected)
    tp = sorted(kafka["reset_tool_starts"])[0]
    kafka["reset_tool_starts"][tp] += 1
    row = row_for(scenario, RunnerOutcome(RAN, expected), RunnerOutcome(RAN, kafka))
    assert row.status == STATUS_FAIL
    assert row.streamproc_matches_kafka_streams is False
    assert row.spec_matches_kafka_streams is False


def test_an_answered_list_from_a_live_oracle_decides_the_parts() -> None:
    """A live planning mode that shows starts only says ``answered: ["starts"]``; one that shows all is a pass."""
    scenario = planning_own()
    expected = scenario["expected"]
    starts_only = {
        "answered": ["starts"],
        "ranges": {tp: {"start": r["start"]} for tp, r in expected["ranges"].items()},
    }

    def compare_starts(kind: str, reference: dict[str, Any], kafka: dict[str, Any]) -> list[str]:
        return [tp for tp, r in kafka["ranges"].items() if reference["ranges"].get(tp, {}).get("start") != r["start"]]

    row = build_row(scenario, "p.json", RunnerOutcome(RAN, expected), RunnerOutcome(RAN, starts_only), APP,
                    compare_kafka=compare_starts)  # fmt: skip
    assert (row.status, row.answered_by_kafka_streams) == (STATUS_PARTIAL, ("starts",))
    everything = {**starts_only, "answered": ["starts", "ends", "notes", "partition_times", "max_records_total"]}
    row = build_row(scenario, "p.json", RunnerOutcome(RAN, expected), RunnerOutcome(RAN, everything), APP,
                    compare_kafka=compare_starts)  # fmt: skip
    assert (row.status, row.only_expected) == (STATUS_PASS, ())


def test_a_refusal_kafka_did_not_answer_is_compared_with_expected_by_the_error_rules() -> None:
    """A live app that shows only what it started from, on a scenario whose ``expected`` is a refusal: the
    refusal is ``expected``'s part alone, compared by type and quoted texts, not by equality."""
    planning = load(SCENARIOS_DIR / "planning" / "p04-no-committed-offset-policy-none.json")
    want = planning["expected"]["error"]
    error = {
        "type": want["type"],
        "message": " ".join([*want.get("message_contains", []), str(want.get("kafka_message_contains", ""))]),
        **{k: v for k, v in want.items() if k not in {"type", "message_contains", "kafka_message_contains"}},
    }
    kafka = {"answered": ["starts"], "ranges": {}}
    row = build_row(planning, "p.json", RunnerOutcome(RAN, {"error": error}), RunnerOutcome(RAN, kafka), APP,
                    compare_kafka=lambda *_: [])  # fmt: skip
    assert (row.status, row.answered_by_kafka_streams, row.only_expected) == (STATUS_PARTIAL, (), ("error",))
    other = {"error": {**error, "type": "Other"}}
    row = build_row(planning, "p.json", RunnerOutcome(RAN, other), RunnerOutcome(RAN, kafka), APP,
                    compare_kafka=lambda *_: [])  # fmt: skip
    assert row.status == STATUS_FAIL


def test_a_live_topology_answer_without_stages_is_partial_and_stages_are_still_compared() -> None:
    scenario = load(TOPOLOGY_OWN / "t31-join-equal-with-repartition-elsewhere.json")
    expected = scenario["expected"]
    kafka = {k: v for k, v in expected.items() if k != "stages"} | {"not_observable": ["stages"]}
    row = row_for(scenario, RunnerOutcome(RAN, expected), RunnerOutcome(RAN, kafka))
    assert (row.status, row.only_expected) == (STATUS_PARTIAL, ("stages",))
    assert "stages" not in row.answered_by_kafka_streams and "tasks" in row.answered_by_kafka_streams
    other = {**expected, "stages": list(reversed(expected["stages"]))}
    row = row_for(scenario, RunnerOutcome(RAN, other), RunnerOutcome(RAN, kafka))
    assert row.status == STATUS_FAIL
    assert any(
        d.startswith("streamproc vs expected (Kafka Streams did not answer it): stages") for d in row.differences
    )


def test_a_full_answer_is_pass_not_partial() -> None:
    scenario = ordering()
    row = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]), RunnerOutcome(RAN, scenario["expected"]))
    assert (row.status, row.only_expected, row.snapshot) == (STATUS_PASS, (), None)
    assert row.answered_by_kafka_streams == tuple(scenario["expected"])


@pytest.mark.parametrize("path", sorted(PLANNING_OWN.glob("p3*.json")), ids=lambda p: p.stem)
def test_own_plans_kafka_confirmed_only_in_part_are_snapshots_of_everything_else(path: Path) -> None:
    """p30–p38: ``expected`` is streamproc's plan; the reset tool confirmed the starts; the rest is a snapshot."""
    scenario = load(path)
    snapshot = snapshot_of(scenario)
    assert snapshot is not None and snapshot.source == "streamproc"
    assert "starts" not in snapshot.parts
    assert set(snapshot.parts) | {"starts"} == set(result_parts("planning", scenario["expected"]))
    row = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]),
                  RunnerOutcome(RAN, reset_tool_answer(scenario["expected"])))  # fmt: skip
    assert row.status == STATUS_PARTIAL and row.snapshot == snapshot
    assert row.only_expected == snapshot.parts


def test_own_topology_stages_from_streamproc_are_snapshots() -> None:
    labelled = {p.stem.split("-")[0]: snapshot_of(load(p)) for p in sorted(TOPOLOGY_OWN.glob("*.json"))}
    assert {k for k, v in labelled.items() if v is not None} == {"t31"}
    assert all(v.parts == ("stages",) for v in labelled.values() if v is not None)


def test_a_malformed_expected_source_fails_the_row_with_a_clear_line() -> None:
    scenario = planning_own()
    scenario["expected_source"] = {"streamproc": ["ends", "nonsense"]}
    with pytest.raises(ConfigError, match=r"expected_source names \['nonsense'\]"):
        snapshot_of(scenario)
    row = row_for(scenario, RunnerOutcome(RAN, scenario["expected"]), RunnerOutcome(PENDING, reason="no mode"))
    assert row.status == STATUS_FAIL and "expected_source" in row.differences[0]
    scenario["expected_source"] = "streamproc"
    with pytest.raises(ConfigError, match="expected_source must be"):
        snapshot_of(scenario)


def test_totals_and_files_count_partial_and_snapshot_apart(tmp_path: Path) -> None:
    planning = planning_own()
    plain = ordering()
    rows = [
        row_for(
            planning,
            RunnerOutcome(RAN, planning["expected"]),
            RunnerOutcome(RAN, reset_tool_answer(planning["expected"])),
        ),  # fmt: skip
        row_for(plain, RunnerOutcome(RAN, plain["expected"]), RunnerOutcome(RAN, plain["expected"])),
        row_for(plain, RunnerOutcome(RAN, plain["expected"]), RunnerOutcome(PENDING, reason="no mode")),
    ]
    counts = totals(rows)
    assert {k: counts[k] for k in ("scenarios", "pass", "partial", "fail", "pending", "snapshot")} == {
        "scenarios": 3, "pass": 1, "partial": 1, "fail": 0, "pending": 1, "snapshot": 1,
    }  # fmt: skip
    summary = {"generated_at": "now", "duration_s": 0.0, "oracle_duration_s": 0.0, "streamproc_duration_s": 0.0,
               "totals": counts}  # fmt: skip
    markdown = report.render_markdown(rows, summary)
    assert "**3 scenarios: 1 pass, 1 partial, 0 fail, 1 pending; 1 snapshot**" in markdown
    assert "## Partial rows" in markdown and "## Snapshot scenarios" in markdown
    line = next(li for li in markdown.splitlines() if li.startswith(f"| `{planning['id']}`"))
    assert "Kafka Streams: starts; expected only: ends, notes, partition_times, max_records_total" in line
    assert line.endswith("| partial (snapshot) |")


def test_report_file_holds_the_new_fields(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    name = "p36-earliest-two-topics"
    (scenarios / f"{name}.json").write_text((PLANNING_OWN / f"{name}.json").read_text(encoding="utf-8"), "utf-8")
    results = tmp_path / "results"
    assert report.main(["--scenarios", str(scenarios), "--results", str(results), "--no-oracle"]) == EXIT_OK
    document = json.loads((results / "latest.json").read_text(encoding="utf-8"))
    assert document["totals"]["snapshot"] == 1 and document["totals"]["partial"] == 0
    row = document["rows"][0]
    assert row["status"] == STATUS_PENDING
    assert row["snapshot"] == {
        "source": "streamproc",
        "parts": ["ends", "notes", "partition_times", "max_records_total"],
    }
    assert row["answered_by_kafka_streams"] == [] and row["only_expected"] == []


def test_refusal_rows_show_what_kafka_did_next_to_the_refusal() -> None:
    """A refusal judged by the live app passes, and ``latest.md`` shows what Kafka did beside streamproc's refusal."""
    scenario = load(SCENARIOS_DIR / "planning" / "p04-no-committed-offset-policy-none.json")
    quote = scenario["expected"]["error"]["kafka_message_contains"]
    refusal = {
        "error": {"type": "NoResetPolicy", "message": f"no committed offset ({quote})", "partitions": ["orders-1"]}
    }
    answer = {
        "error": {"kafka_exception": "org.apache.kafka.streams.errors.StreamsException",
                  "kafka_message": quote, "partitions": ["orders-1"]},
        "live_starts": {}, "delivered": {}, "end_positions": {}, "resets": {},
        "kafka_behaviour": "the app died with StreamsException", "answered": ["starts", "delivered"],
        "not_observable": ["ends", "partition_times", "max_records_total", "stages", "resolved_timestamp_ms"],
    }  # fmt: skip
    row = row_for(scenario, RunnerOutcome(RAN, refusal), RunnerOutcome(RAN, answer))
    assert row.status == STATUS_PASS and row.answered_by_kafka_streams == ("error",), row.differences
    summary = {"generated_at": "now", "duration_s": 0.0, "oracle_duration_s": 0.0, "streamproc_duration_s": 0.0,
               "totals": totals([row])}  # fmt: skip
    markdown = report.render_markdown([row], summary)
    assert "Kafka: the app died with StreamsException; streamproc refuses (NoResetPolicy on orders-1)" in markdown
