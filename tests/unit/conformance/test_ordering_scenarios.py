"""Every ordering scenario in ``../shared/spec/scenarios/ordering/`` through ``streamproc_dev.conformance.ordering``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario as dispatch
from streamproc_dev.conformance.ordering import run_scenario
from tests.conftest import SCENARIOS_DIR

ORDERING = sorted((SCENARIOS_DIR / "ordering").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return scenario


def test_scenarios_are_present() -> None:
    assert len(ORDERING) >= 30


@pytest.mark.parametrize("path", ORDERING, ids=[p.stem for p in ORDERING])
def test_ordering_scenario(path: Path) -> None:
    scenario = load(path)
    assert run_scenario(scenario) == scenario["expected"]


def test_dispatch_by_kind_uses_the_ordering_runner() -> None:
    scenario = load(ORDERING[0])
    assert dispatch(scenario) == scenario["expected"]


def test_wrong_message_shows_up_as_a_mismatch() -> None:
    """The error projection must not hide a message that lacks the expected text."""
    scenario = load(SCENARIOS_DIR / "ordering" / "o14-negative-ts-fail-blocks-preceding-record.json")
    scenario["expected"]["error"]["kafka_message_contains"] = ["text Kafka never wrote"]
    scenario["expected"]["error"]["kafka_message_prefix"] = "Something else entirely"
    error = run_scenario(scenario)["error"]
    assert error["kafka_message_contains"] == []
    assert error["kafka_message_prefix"] != "Something else entirely"
