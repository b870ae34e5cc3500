"""Every shared and own planning scenario (``scenarios/planning/*.json``) through
``streamproc_dev.conformance.planning``.

Results are compared on the keys the scenario expects (``reference_tool_output`` is informational). Error
expectations compare the type, the partitions/topics and structured fields it names, and require every
``message_contains`` substring and the quoted ``kafka_message_contains`` text in streamproc's message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

PLANNING_DIR = SCENARIOS_DIR / "planning"
#: the project's own (their starts confirmed by Kafka's reset tool: tests/integration/conformance/)
OWN_DIR = PROJECT_ROOT / "conformance" / "scenarios" / "planning"
SCENARIO_FILES = sorted(PLANNING_DIR.glob("*.json")) + sorted(OWN_DIR.glob("*.json"))
_INFORMATIONAL = {"reference_tool_output", "kafka_exception", "kafka_streams_would", "kafka_reference"}


def _check_error(expected: dict[str, Any], actual: dict[str, Any]) -> None:
    assert actual.get("error"), f"expected a {expected['type']} refusal, got {actual}"
    error = actual["error"]
    assert error["type"] == expected["type"], error
    message = error["message"]
    for piece in expected.get("message_contains", []):
        assert piece in message, f"{piece!r} not in {message!r}"
    if "kafka_message_contains" in expected:
        assert expected["kafka_message_contains"] in message, message
    for key, value in expected.items():
        if key in {"type", "message_contains", "kafka_message_contains"} | _INFORMATIONAL:
            continue
        assert error.get(key) == value, f"{key}: expected {value!r}, got {error.get(key)!r}"


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[p.stem for p in SCENARIO_FILES])
def test_planning_scenario(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    actual = run_scenario(scenario)
    expected = scenario["expected"]
    if expected.get("error"):
        _check_error(expected["error"], actual)
        return
    assert actual.get("error") is None, actual
    for key, value in expected.items():
        if key in _INFORMATIONAL or key == "error":
            continue
        assert actual.get(key) == value, f"{key}: expected {value!r}, got {actual.get(key)!r}"


def test_the_shared_directory_has_planning_scenarios() -> None:
    assert len(list(PLANNING_DIR.glob("*.json"))) >= 20
