"""Every scenario of ``scenarios/topology/`` through ``streamproc_dev.conformance.topology`` (README comparison
rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamproc_dev.conformance import run_scenario as dispatch
from streamproc_dev.conformance.topology import compare, run_scenario
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

SHARED_FILES = sorted((SCENARIOS_DIR / "topology").glob("*.json"))
#: Own scenarios: new ones, and copies of shared ones that real Kafka Streams corrected (same name; FINDINGS.md).
OWN_FILES = sorted((PROJECT_ROOT / "conformance" / "scenarios" / "topology").glob("*.json"))
SCENARIO_FILES = [p for p in SHARED_FILES if p.name not in {c.name for c in OWN_FILES}] + OWN_FILES


def test_the_shared_directory_has_scenarios() -> None:
    assert SHARED_FILES, f"no topology scenarios under {SCENARIOS_DIR}"
    assert all(json.loads(p.read_text(encoding="utf-8"))["id"] == p.stem for p in OWN_FILES)


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_scenario_matches_expected(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert compare(scenario["expected"], run_scenario(scenario)) == []


def test_dispatch_by_kind_reaches_this_runner() -> None:
    scenario = json.loads((SCENARIOS_DIR / "topology" / "t01-filter-to.json").read_text(encoding="utf-8"))
    assert dispatch(scenario) == run_scenario(scenario)


def test_compare_reports_real_differences() -> None:
    scenario = json.loads((SCENARIOS_DIR / "topology" / "t05-rekey-stream-table-join.json").read_text(encoding="utf-8"))
    result = run_scenario(scenario)
    result["tasks"] = {**result["tasks"], "1_3": ["customers-3"]}
    assert any(p.startswith("tasks:") for p in compare(scenario["expected"], result))
    error = {"error": {"type": "NotCopartitioned", "message": "no quote", "topics": {"a": 1}}}
    expected = {"error": {"type": "NotCopartitioned", "topics": {"a": 1}, "kafka_message_contains": "Topics not"}}
    assert compare(expected, error) == ["message does not quote 'Topics not': 'no quote'"]


def test_changed_partition_count_is_reported_in_the_error_shape() -> None:
    scenario = json.loads((SCENARIOS_DIR / "topology" / "t05-rekey-stream-table-join.json").read_text(encoding="utf-8"))
    scenario["input"]["partition_counts"]["app-KSTREAM-KEY-SELECT-0000000004-repartition"] = 6
    error = run_scenario(scenario)["error"]
    assert error["type"] == "PartitionCountChanged"
    assert "expected: 3; actual: 6" in error["kafka_message_contains"]
