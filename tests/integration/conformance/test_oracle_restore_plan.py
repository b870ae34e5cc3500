"""``restore_plan`` scenarios: real Kafka Streams apps (4.2.2, or 4.3.1) on a real broker = streamproc's restore plan.

Every shared (``../shared/spec/scenarios/state/rp*.json``) and own (``conformance/scenarios/state/rp*.json``)
restore-plan scenario runs through the live restore oracle (``java -jar … restore``, ``RestorePlanRunner``: the
changelog built with the scenario's exact offsets, the task directory and ``.checkpoint`` written, a ``KafkaStreams``
started until the task is RUNNING), all in one JVM, and through streamproc
(``streamproc.state.restore_plan.plan_restore``). They must agree. Own scenarios' ``expected`` is what Kafka Streams
did, so it must equal the live result too; a shared scenario whose ``expected`` differs from Kafka Streams must have
an own corrected file with the same id. ``ks_version`` 4.3 scenarios run in the Kafka Streams 4.3.1 oracle jar
(``conformance/ks43/runner``, the same ``RestorePlanRunner`` source); each jar refuses the other version's scenarios.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import oracle, run_scenario
from streamproc_dev.conformance.oracle import compare_to_expected, is_restore_plan, run_oracle_restore
from streamproc_dev.conformance.report import RAN, run_restore_oracle
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


def _ks43(scenario: dict[str, Any]) -> bool:
    return str(scenario.get("ks_version", "4.2")) == "4.3"


@pytest.fixture(scope="module")
def answers(kafka_broker: str) -> dict[Path, dict[str, Any]]:
    """The live oracle's answer for every restore-plan scenario, one JVM per version (about 45 s for 32 scenarios)."""
    return run_oracle_restore(kafka_broker, ALL)


def test_scenarios_found() -> None:
    assert len(SHARED) >= 15, SHARED_DIR
    assert len(OWN) >= 4
    assert all(_load(p)["id"] == p.stem for p in OWN)
    assert sum(_ks43(_load(p)) for p in ALL) >= 5, "the 4.3 live restore mode needs scenarios"


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_kafka_streams_equals_streamproc(answers: dict[Path, dict[str, Any]], path: Path) -> None:
    scenario = _load(path)
    answer = answers[path]
    assert "result" in answer, answer.get("oracle_error") or answer.get("unsupported")
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
    """state.md §16 q1 (rp10): the seek to the log end + 1 fails the first poll and the task is corrupted. On a loaded
    machine the first poll may time out before the broker's answer and Kafka Streams declares the changelog restored
    (FINDINGS); ``run_oracle_restore`` then asks again with time for the answer, which must be this one."""
    path = next(p for p in SHARED if p.stem.startswith("rp10-"))
    observations = answers[path]["observations"]
    assert observations["restores"][0][:2] == [101, 100]
    assert observations["restores"][-1] == [0, 100, 100]
    assert any("OffsetOutOfRangeException" in event for event in observations["events"])


def test_an_answer_that_raced_the_brokers_out_of_range_answer_is_asked_again(kafka_broker: str) -> None:
    """With ``poll.ms`` 1 the first restore poll always returns before the broker's answer (FINDINGS: rp10), as a
    loaded machine's may with the default: the oracle must notice and ask again, and the second answer is the one
    a broker that answers in time gives."""
    path = next(p for p in SHARED if p.stem.startswith("rp10-"))
    answer = run_oracle_restore(kafka_broker, [path], poll_ms=1)[path]
    assert answer["first_answer_raced"]["restores"] == [[101, 100, 0]]
    assert answer["observations"]["restores"][-1] == [0, 100, 100]
    assert answer["result"]["task_corrupted"] is True


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
    """``report.run_restore_oracle`` turns the answers into the Kafka Streams column, 4.3 scenarios included."""
    monkeypatch.setattr(oracle, "run_oracle_restore", lambda bootstrap, paths: {p: answers[p] for p in paths})
    scenarios = {p: _load(p) for p in ALL}
    outcomes = run_restore_oracle(ALL, scenarios, "unused:0")
    assert set(outcomes) == set(ALL)
    for path, outcome in outcomes.items():
        assert outcome.status == RAN and outcome.result == answers[path]["result"], path.stem


def test_each_jar_refuses_the_other_version(kafka_broker: str) -> None:
    """A scenario of the other ``ks_version`` is unsupported by a jar, never answered by the wrong Kafka Streams.

    ``run_oracle_restore`` routes by version; this calls each jar with one scenario of the other version directly.
    The refusal comes before any topic or app is made.
    """
    v42 = next(p for p in ALL if not _ks43(_load(p)))
    v43 = next(p for p in ALL if _ks43(_load(p)))
    cases = ((oracle.ensure_oracle_jar(), v43, "4.2.2"), (oracle.ensure_ks43_oracle_jar(), v42, "4.3.1"))
    for jar, path, runs in cases:
        answer = oracle._run_live_jar(jar, oracle.RESTORE_COMMAND, kafka_broker, [path], 1)[path]
        assert "result" not in answer, path.stem
        assert f"runs Kafka Streams {runs}" in answer["unsupported"], answer
