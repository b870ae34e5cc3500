"""Every ``scenarios/state/*.json`` through ``streamproc_dev.conformance.state`` (errors: type and quoted
substrings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from tests.conftest import SCENARIOS_DIR

STATE_DIR = SCENARIOS_DIR / "state"
SCENARIO_FILES = sorted(STATE_DIR.glob("*.json"))


def test_scenarios_are_present() -> None:
    assert len(SCENARIO_FILES) > 0, f"no state scenarios under {STATE_DIR}"


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_state_scenario(path: Path) -> None:
    scenario: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["kind"] == "state"
    result = run_scenario(scenario)
    expected = scenario["expected"]
    if "error" not in expected:
        assert result == expected
        return
    assert "error" in result, f"expected an error, got {result}"
    error, want = result["error"], expected["error"]
    assert error["type"] == want["type"]
    for text in want.get("message_contains", []):
        assert text in error["message"]
    if "kafka_message_contains" in want:
        assert want["kafka_message_contains"] in error["message"]
    if "kafka_exception" in want:
        assert error["kafka_exception"] == want["kafka_exception"]


@pytest.mark.parametrize(
    ("committed", "processed", "dropped", "expected"),
    [(1000, [500, 1500, 1200], [-5], 1500), (-1, [], [], -1), (2000, [10], [], 2000), (-1, [0], [-7], 0)],
)
def test_partition_time_scenarios_run_on_the_engines_record_queue(
    committed: int, processed: list[int], dropped: list[int], expected: int
) -> None:
    """The ``partition_time`` operation has no model of its own: it polls a real engine ``RecordQueue``."""
    scenario = {
        "kind": "state",
        "operation": "partition_time",
        "input": {
            "committed_partition_time": committed,
            "processed_record_timestamps": processed,
            "dropped_record_timestamps": dropped,
        },
    }
    assert run_scenario(scenario) == {"partition_time": expected}
