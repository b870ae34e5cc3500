"""The application-level Kafka Streams oracle (a real ``KafkaStreams`` app on the session's broker) vs streamproc.

Each scenario runs ``RUNS`` times with different ``max.poll.records`` and fetch sizes (``AppRunner``); the answer
is the set of distinct live results. streamproc's result must be a member of that set (observable keys only,
``skip_steps`` is not observable live). Where the live app is deterministic, the set has exactly one element and
it equals the scenario's ``expected``. Where fetch boundaries decide (ties, punctuation granularity), the set may
hold several results; streamproc must still be one of them, and nothing outside the set is accepted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from streamproc_dev.conformance.oracle import (
    compare_to_expected,
    differences_from_app_set,
    ensure_oracle_jar,
    observable,
    run_oracle_app,
)
from streamproc_dev.conformance.report import RAN, STATUS_FAIL, STATUS_PASS, Row, RunnerOutcome, build_row

RUNS = 4

# Deterministic live: distinct timestamps (one and two topics), a corrupt record under LogAndContinue, a negative
# timestamp under LogAndSkip, a processing exception under LogAndContinueProcessing, a negative timestamp under
# FailOnInvalidTimestamp (the app fails with Kafka's exception and message).
DETERMINISTIC = (
    "o07-out-of-order-single-partition",
    "o09-interleave-two-topics-join-like",
    "o20-corrupt-at-head-continue",
    "o16-negative-ts-log-and-skip",
    "o38-processing-exception-continue",
    "o14-negative-ts-fail-blocks-preceding-record",
)
# Fetch-dependent live: a timestamp tie across two partitions (D-1) and stream-time punctuation (D-3).
VARYING = (
    "o01-tie-two-partitions-alternate",
    "o28-punct-exact-boundaries",
)


# Own scenarios (``conformance/scenarios``) with transactional inputs (ordering.md §11 q6: markers and aborted
# records, read_committed through exactly_once_v2 or isolation_level) and with the leader epoch a live fetch carries
# (c58/c59 = c22/c26 with leader_epoch 0). Deterministic live (no tie, no punctuation timing): one result, equal to
# expected, committed offsets included.
OWN_DETERMINISTIC = (
    "c52-txn-aborted-at-tail-committed-offset-after-gap",
    "c54-txn-aborted-records-read-uncommitted",
    "c55-txn-partition-with-only-aborted-records",
    "c56-txn-aborted-timestamps-do-not-punctuate",
    "c57-txn-aborted-corrupt-record-never-deserialized",
    "c58-negative-fail-on-invalid-middle-leader-epoch",
    "c59-negative-use-partition-time-unknown-second-topic-leader-epoch",
)
# With a timestamp tie next to a gap (D-1 vs fetch order): streamproc is one of the live results, and every live
# result holds the same records (never an aborted one) and commits the same offsets.
OWN_TIES = (
    "c50-txn-aborted-between-records-read-committed",
    "c51-txn-aborted-at-head-tie-after-gap",
    "c53-txn-committed-marker-between-two-partitions-heads",
)
OWN_DIR = Path(__file__).resolve().parents[3] / "conformance" / "scenarios"


@pytest.fixture(scope="module")
def oracle_ready() -> None:
    # Java 17 and Maven are on every machine of this project: a missing one is a failure, never a skip.
    assert shutil.which("java") is not None, "java is not on PATH; install a JDK 17"
    ensure_oracle_jar()


def _scenario(scenarios_dir: Path, name: str) -> tuple[Path, dict[str, Any]]:
    path = scenarios_dir / "ordering" / f"{name}.json"
    return path, json.loads(path.read_text("utf-8"))


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_scenario_has_one_live_result_equal_to_expected(
    oracle_ready: None, kafka_broker: str, scenarios_dir: Path, name: str
) -> None:
    path, scenario = _scenario(scenarios_dir, name)
    answer = run_oracle_app(kafka_broker, path, RUNS)
    assert len(answer["runs"]) == RUNS
    assert answer["not_observable"] == ["skip_steps"]
    assert len(answer["results"]) == 1, json.dumps(answer["results"], indent=1)
    hidden = answer["not_observable"]
    assert compare_to_expected(observable(scenario["expected"], hidden), answer["results"][0]) == []
    assert differences_from_app_set(run_scenario(scenario), answer) == []


@pytest.mark.parametrize("name", VARYING)
def test_streamproc_is_in_the_live_set(oracle_ready: None, kafka_broker: str, scenarios_dir: Path, name: str) -> None:
    path, scenario = _scenario(scenarios_dir, name)
    answer = run_oracle_app(kafka_broker, path, RUNS)
    streamproc = run_scenario(scenario)
    assert differences_from_app_set(streamproc, answer) == []
    # every live result processed every record exactly once: the set holds orders, not losses
    expected_records = sorted(map(tuple, scenario["expected"]["order"]))
    for result in answer["results"]:
        assert sorted(map(tuple, result["order"])) == expected_records


@pytest.mark.parametrize("name", OWN_DETERMINISTIC)
def test_own_deterministic_scenario_has_one_live_result_equal_to_expected(
    oracle_ready: None, kafka_broker: str, name: str
) -> None:
    path = OWN_DIR / f"{name}.json"
    scenario = json.loads(path.read_text("utf-8"))
    answer = run_oracle_app(kafka_broker, path, RUNS)
    assert len(answer["results"]) == 1, json.dumps(answer["results"], indent=1)
    hidden = answer["not_observable"]
    assert compare_to_expected(observable(scenario["expected"], hidden), answer["results"][0]) == []
    assert differences_from_app_set(run_scenario(scenario), answer) == []


@pytest.mark.parametrize("name", OWN_TIES)
def test_own_tie_scenario_keeps_streamproc_in_the_live_set(oracle_ready: None, kafka_broker: str, name: str) -> None:
    path = OWN_DIR / f"{name}.json"
    scenario = json.loads(path.read_text("utf-8"))
    answer = run_oracle_app(kafka_broker, path, RUNS)
    assert differences_from_app_set(run_scenario(scenario), answer) == []
    expected = scenario["expected"]
    for result in answer["results"]:
        assert sorted(map(tuple, result["order"])) == sorted(map(tuple, expected["order"]))
        assert result["committed_offsets"] == expected["committed_offsets"]


def test_membership_accepts_nothing_outside_the_set() -> None:
    """The check used by the report: a result differing from every member is rejected, with the reasons."""
    member = {"order": [["a", 0, 0]], "stream_time_after_each": [5], "dropped": []}
    answer = {"results": [member], "runs": [], "not_observable": ["skip_steps"]}
    assert differences_from_app_set({**member, "skip_steps": []}, answer) == []
    other = {**member, "stream_time_after_each": [6], "skip_steps": []}
    assert differences_from_app_set(other, answer) != []
    assert differences_from_app_set(member, {"results": [], "not_observable": []}) != []


def _row(scenario: dict[str, Any], streamproc: dict[str, Any], app_results: list[dict[str, Any]]) -> Row:
    outcome = RunnerOutcome(RAN, result=streamproc)
    app = RunnerOutcome(RAN, result={"results": app_results, "runs": [], "not_observable": ["skip_steps"]})
    return build_row(scenario, "x.json", outcome, outcome, app)


def test_report_fails_a_row_whose_streamproc_result_is_outside_the_app_set() -> None:
    result = {"order": [["a", 0, 0], ["b", 0, 0]], "stream_time_after_each": [1, 1], "dropped": [], "skip_steps": []}
    scenario = {"id": "x", "kind": "ordering", "config": {}, "expected": result}
    swapped = {**result, "order": [["b", 0, 0], ["a", 0, 0]]}
    inside = _row(scenario, result, [observable(swapped, ["skip_steps"]), observable(result, ["skip_steps"])])
    assert (inside.status, inside.streamproc_in_kafka_streams_app_set) == (STATUS_PASS, True)
    outside = _row(scenario, result, [observable(swapped, ["skip_steps"])])
    assert (outside.status, outside.streamproc_in_kafka_streams_app_set) == (STATUS_FAIL, False)
    assert any("app-level set" in d for d in outside.differences)


def test_report_does_not_judge_wall_clock_scenarios_by_the_app_set() -> None:
    result = {"order": [["a", 0, 0]], "stream_time_after_each": [5], "dropped": [], "skip_steps": []}
    scenario = {"id": "x", "kind": "ordering", "config": {"timestamp_extractor": "WallclockTimestampExtractor"}}
    row = _row({**scenario, "expected": result}, result, [{**observable(result, ["skip_steps"]), "dropped": [1]}])
    assert (row.status, row.streamproc_in_kafka_streams_app_set) == (STATUS_PASS, None)
