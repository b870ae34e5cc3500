"""``topology`` scenarios: each scenario's program as a real Kafka Streams 4.2.2 app = streamproc's analysis.

Every shared (``../shared/spec/scenarios/topology/``) and own corrected (``conformance/scenarios/topology/``)
scenario runs through the live topology oracle (``java -jar … topology``, ``TopologyRunner``: the program built
from ``TopologyPrograms``, its topics created with the scenario's partition counts, the app run until its task
assignment is stable) and through streamproc's analysis of the scenario's describe() text. They must agree on
everything Kafka Streams shows; ``stages`` is streamproc's own. An own file corrects the shared file of its name:
the correction must be needed (the shared file disagrees with Kafka Streams) and sufficient.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance.oracle import run_oracle_topology
from streamproc_dev.conformance.report import RAN, compare_to_kafka_streams, run_topology_oracle
from streamproc_dev.conformance.topology import run_scenario
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

pytestmark = pytest.mark.integration

SHARED = sorted((SCENARIOS_DIR / "topology").glob("*.json"))
OWN = sorted((PROJECT_ROOT / "conformance" / "scenarios" / "topology").glob("*.json"))
ALL = SHARED + OWN
#: own files that correct the shared file of the same name (the others are new scenarios)
CORRECTED = {p.name for p in OWN} & {p.name for p in SHARED}


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _standing(path: Path) -> bool:
    """The scenario file that stands: an own file, or a shared one no own file corrects."""
    return path in OWN or path.name not in CORRECTED


@pytest.fixture(scope="module")
def answers(kafka_broker: str) -> dict[Path, dict[str, Any]]:
    """The live oracle's answer for every topology scenario, one JVM (about 30 s for 15 scenarios)."""
    return run_oracle_topology(kafka_broker, ALL)


def test_scenarios_found() -> None:
    assert len(SHARED) >= 10
    assert len(CORRECTED) < len(OWN), "own scenarios beyond the corrections"


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_kafka_streams_equals_streamproc(answers: dict[Path, dict[str, Any]], path: Path) -> None:
    scenario = _load(path)
    answer = answers[path]
    assert "result" in answer, answer.get("oracle_error") or answer.get("unsupported")
    kafka = answer["result"]
    diffs = compare_to_kafka_streams("topology", run_scenario(scenario), kafka)
    assert not diffs, f"{path.stem}: streamproc differs from Kafka Streams:\n  " + "\n  ".join(diffs)
    spec_diffs = compare_to_kafka_streams("topology", scenario["expected"], kafka)
    if _standing(path):
        assert not spec_diffs, f"{path.stem}: expected differs from Kafka Streams: {spec_diffs}"
        assert answer["observations"]["describe_same_lines"], answer["observations"].get("kafka_describe")
    else:
        assert spec_diffs or not answer["observations"]["describe_same_lines"], f"{path.name}: needless correction"


def test_unequal_user_topics_are_refused_only_with_a_repartition_topic(answers: dict[Path, dict[str, Any]]) -> None:
    """t04b: Kafka Streams runs a join of 3 and 2 partitions (task 0_2 reads left-2 alone); t30: the same join
    beside a re-keyed count fails with Kafka's TopologyException (FINDINGS.md)."""
    t04b = next(p for p in SHARED if p.name.startswith("t04b-"))
    assert answers[t04b]["result"]["tasks"]["0_2"] == ["left-2"]
    t30 = next(p for p in OWN if p.name.startswith("t30-"))
    error = answers[t30]["result"]["error"]
    assert error["kafka_exception"] == "TopologyException"
    assert "Topics not co-partitioned: [{left=3, right=2}]" in error["kafka_message"]


def test_report_rows_take_the_live_result(answers: dict[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from streamproc_dev.conformance import oracle

    monkeypatch.setattr(oracle, "run_oracle_topology", lambda bootstrap, paths: {p: answers[p] for p in paths})
    scenarios = {p: _load(p) for p in ALL}
    outcomes = run_topology_oracle(ALL, scenarios, "unused:0")
    assert set(outcomes) == set(ALL)
    assert all(o.status == RAN and o.result == answers[p]["result"] for p, o in outcomes.items())


def test_a_wrong_reference_is_a_difference(answers: dict[Path, dict[str, Any]]) -> None:
    """The comparison can fail: a moved task partition and a refusal Kafka Streams does not make are caught."""
    path = next(p for p in SHARED if p.name.startswith("t03-"))
    kafka = answers[path]["result"]
    mine = run_scenario(_load(path))
    mine["tasks"] = {**mine["tasks"], "1_3": ["clicks-3"]}
    assert any(d.startswith("tasks:") for d in compare_to_kafka_streams("topology", mine, kafka))
    refusal = {"error": {"type": "NotCopartitioned", "kafka_exception": "TopologyException"}}
    assert compare_to_kafka_streams("topology", refusal, kafka)
