"""``planning`` scenarios: Kafka's reset tool (``StreamsResetter --dry-run``) on a real broker = the plan's starts.

Every shared and own planning scenario goes to the reset-tool oracle (``streamproc_dev.conformance.reset_tool``); the
ones it can rebuild (a reset-tool start mode or an active group, a log without transactions) are laid out on the
broker and the tool's offsets must equal the starts of streamproc's plan, and of the scenario's ``expected``; where
streamproc refuses, the tool must refuse too or reset past offsets the application has not processed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from streamproc_dev.conformance.report import compare_to_kafka_streams
from streamproc_dev.conformance.reset_tool import run_reset_tool
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

pytestmark = pytest.mark.integration

SHARED = sorted((SCENARIOS_DIR / "planning").glob("*.json"))
OWN = sorted((PROJECT_ROOT / "conformance" / "scenarios" / "planning").glob("*.json"))
ALL = SHARED + OWN


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


@pytest.fixture(scope="module")
def answers(kafka_broker: str) -> dict[Path, dict[str, Any]]:
    """The reset tool's answer for every planning scenario (about 30 s: one tool JVM per answered scenario)."""
    return run_reset_tool(kafka_broker, ALL)


def test_the_tool_answers_every_own_scenario_and_the_shared_reset_modes(answers: dict[Path, dict[str, Any]]) -> None:
    answered = {p.stem for p, a in answers.items() if "result" in a}
    assert {p.stem for p in OWN} <= answered, {p.stem: answers[p] for p in OWN if "result" not in answers[p]}
    assert {"p06-to-offset-clamping", "p08-by-duration", "p09-shift-by", "p20-repartition-backlog"} <= answered
    assert all("oracle_error" not in a for a in answers.values()), [a for a in answers.values() if "oracle_error" in a]


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_plan_starts_equal_the_reset_tool(answers: dict[Path, dict[str, Any]], path: Path) -> None:
    answer = answers[path]
    if "result" not in answer:
        assert answer["unsupported"], answer
        return
    scenario = _load(path)
    kafka = answer["result"]
    assert kafka.get("reset_tool_starts") or kafka.get("reset_tool_failure"), answer["observations"]
    assert compare_to_kafka_streams("planning", run_scenario(scenario), kafka) == []
    assert compare_to_kafka_streams("planning", scenario["expected"], kafka) == []


def test_a_wrong_start_is_a_difference(answers: dict[Path, dict[str, Any]]) -> None:
    path = next(p for p in SHARED if p.stem.startswith("p06-"))
    plan = run_scenario(_load(path))
    plan["ranges"]["orders-1"]["start"] = 50  # the requested offset, not clamped to the log start 60
    assert compare_to_kafka_streams("planning", plan, answers[path]["result"]) == [
        "orders-1: start 50, the reset tool 60"
    ]


def test_the_tool_refuses_or_skips_where_streamproc_refuses(answers: dict[Path, dict[str, Any]]) -> None:
    """Kafka's tool on the refusals: a parse failure, a missing partition (NPE), an active group; a shift from no
    committed offset goes ahead from the log end and skips offsets the app never processed."""
    by_stem = {p.stem: a["result"] for p, a in answers.items() if "result" in a}
    failures = {stem: r["reset_tool_failure"]["message"] for stem, r in by_stem.items() if "reset_tool_failure" in r}
    assert "Text cannot be parsed to a Duration" in failures["p08b-by-duration-bad-format"]
    assert "not following the format `TOPIC,PARTITION,OFFSET`" in failures["p10b-from-file-malformed"]
    assert "NullPointerException" in failures["p10c-from-file-missing-partition"]
    assert "is still active" in failures["p11-group-active"]
    assert by_stem["p09b-shift-by-without-committed-offset"]["skips_unprocessed"] == {"orders-1": [10, 20]}
    refusal = run_scenario(_load(next(p for p in SHARED if p.stem.startswith("p09b-"))))
    shifted = by_stem["p09b-shift-by-without-committed-offset"]
    assert compare_to_kafka_streams("planning", refusal, shifted) == []
    assert compare_to_kafka_streams("planning", {"error": {"type": "X", "partitions": ["orders-0"]}}, shifted) != []
