"""``restore_plan`` scenarios: real Kafka Streams 4.2.2 apps on a real broker = streamproc's restore plan.

Every shared (``../shared/spec/scenarios/state/rp*.json``) and own (``conformance/scenarios/state/rp*.json``)
restore-plan scenario runs through the live restore oracle (``java -jar … restore``, ``RestorePlanRunner``: the
changelog built with the scenario's exact offsets, the task directory and ``.checkpoint`` written, a ``KafkaStreams``
started until the task is RUNNING), all in one JVM, and through streamproc
(``streamproc.state.restore_plan.plan_restore``). They must agree. Own scenarios' ``expected`` is what Kafka Streams
did, so it must equal the live result too; a shared scenario whose ``expected`` differs from Kafka Streams must have
an own corrected file with the same id. 4.3 scenarios cannot run live (the jar is Kafka Streams 4.2.2) and must be
reported as unsupported, never answered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.conformance import run_scenario
from streamproc.conformance.oracle import compare_to_expected, is_restore_plan, run_oracle_restore
from streamproc.conformance.report import PENDING, RAN, run_restore_oracle
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.integration

SHARED_DIR = PROJECT_ROOT.parent / "shared" / "spec" / "scenarios" / "state"
OWN_DIR = PROJECT_ROOT / "conformance" / "scenarios" / "state"


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: not a JSON object"
    return data


def _restore_plans(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("rp*.json") if is_restore_plan(_load(p)))


SHARED = _restore_plans(SHARED_DIR) if SHARED_DIR.is_dir() else []
OWN = _restore_plans(OWN_DIR)
ALL = SHARED + OWN
OWN_IDS = {_load(p)["id"] for p in OWN}


def _live(scenario: dict[str, Any]) -> bool:
    return str(scenario.get("ks_version", "4.2")) == "4.2"


@pytest.fixture(scope="module")
def answers(kafka_broker: str) -> dict[Path, dict[str, Any]]:
    """The live oracle's answer for every restore-plan scenario, one JVM (about 40 s for 27 scenarios)."""
    return run_oracle_restore(kafka_broker, ALL)


def test_scenarios_found() -> None:
    assert len(SHARED) >= 15, SHARED_DIR
    assert len(OWN) >= 4
    assert all(_load(p)["id"] == p.stem for p in OWN)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_kafka_streams_equals_streamproc(answers: dict[Path, dict[str, Any]], path: Path) -> None:
    scenario = _load(path)
    answer = answers[path]
    if not _live(scenario):
        assert "unsupported" in answer and "4.3" in answer["unsupported"], answer
        assert run_scenario(scenario) == scenario["expected"]
        return
    assert "result" in answer, answer.get("oracle_error")
    kafka = answer["result"]
    mine = run_scenario(scenario)
    diffs = compare_to_expected(mine, kafka)
    assert not diffs, f"{path.stem}: streamproc differs from Kafka Streams {answer['observations']}:\n  " + "\n  ".join(
        diffs
    )
    if path in OWN or scenario["id"] not in OWN_IDS:
        spec_diffs = compare_to_expected(scenario["expected"], kafka)
        assert not spec_diffs, f"{path.stem}: expected differs from Kafka Streams (add a corrected own file): " + (
            "; ".join(spec_diffs)
        )


def test_checkpoint_at_log_end_is_out_of_range_not_restored(answers: dict[Path, dict[str, Any]]) -> None:
    """state.md §16 q1 (rp10): the seek to the log end + 1 fails the first poll; no race declares it restored."""
    path = next(p for p in SHARED if p.stem.startswith("rp10-"))
    observations = answers[path]["observations"]
    assert observations["restores"][0][:2] == [101, 100]
    assert observations["restores"][-1] == [0, 100, 100]
    assert any("OffsetOutOfRangeException" in event for event in observations["events"])


def test_wipe_observed_in_the_store_itself(answers: dict[Path, dict[str, Any]]) -> None:
    """Where a sentinel key was planted in a real store directory, it survives exactly when no wipe was logged."""
    checked = 0
    for path in ALL:
        answer = answers[path]
        present = answer.get("observations", {}).get("sentinel_present")
        if present is not None:
            assert present is not answer["result"]["local_state_wiped"], path.stem
            checked += 1
    assert checked >= 10


def test_report_rows_take_the_live_result(answers: dict[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """``report.run_restore_oracle`` turns the answers into the Kafka Streams column: ran, or pending for 4.3."""
    from streamproc.conformance import oracle

    monkeypatch.setattr(oracle, "run_oracle_restore", lambda bootstrap, paths: {p: answers[p] for p in paths})
    scenarios = {p: _load(p) for p in ALL}
    outcomes = run_restore_oracle(ALL, scenarios, "unused:0")
    assert set(outcomes) == set(ALL)
    for path, outcome in outcomes.items():
        if _live(scenarios[path]):
            assert outcome.status == RAN and outcome.result == answers[path]["result"], path.stem
        else:
            assert outcome.status == PENDING and outcome.reason and "4.3" in outcome.reason, path.stem
