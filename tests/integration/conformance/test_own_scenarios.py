"""The project's own ordering scenarios (``conformance/scenarios/c*.json``): streamproc = Kafka Streams = expected.

Their ``expected`` was written from the Kafka Streams 4.2.2 task-level oracle (``conformance/tools/
gen_ordering_scenarios.py``) after checking it against a prediction derived from ordering.md. Here every file runs
through streamproc and, in one JVM, through the oracle again: the three must agree, so a change in streamproc, in
the oracle or in a file is noticed.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from streamproc_dev.conformance.oracle import compare_to_expected
from streamproc_dev.conformance.report import RAN, RunnerOutcome, compare_to_kafka_streams, run_oracle_batch
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.integration

OWN_DIR = PROJECT_ROOT / "conformance" / "scenarios"
OWN_SCENARIOS = sorted(OWN_DIR.glob("*.json"))
GENERATOR = PROJECT_ROOT / "conformance" / "tools" / "gen_ordering_scenarios.py"
REQUIRED_FIELDS = {"id", "kind", "name", "title", "description", "reference", "rules", "config", "partitions"}
REQUIRED_FIELDS |= {"expected", "confidence", "notes"}
RULE_ID = re.compile(r"^(SR|RQ|PG|ST|TE|DE|PE|DR|D)-\d+$")


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: not a JSON object"
    return data


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ordering_scenarios", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def oracle_results() -> dict[Path, RunnerOutcome]:
    """Kafka Streams' result for every own scenario, from one JVM (``java -jar … batch``)."""
    return run_oracle_batch(OWN_SCENARIOS)


def test_at_least_forty_own_scenarios_in_the_shared_format() -> None:
    assert len(OWN_SCENARIOS) >= 40
    for path in OWN_SCENARIOS:
        scenario = _load(path)
        missing = REQUIRED_FIELDS - set(scenario)
        assert not missing, f"{path.name}: missing {sorted(missing)}"
        assert scenario["id"] == scenario["name"] == path.stem
        assert re.fullmatch(r"c\d{2}-[a-z0-9-]+", scenario["id"]), scenario["id"]
        assert scenario["kind"] == "ordering"
        assert scenario["confidence"] in {"high", "medium", "low"}
        assert scenario["rules"] and all(RULE_ID.match(rule) for rule in scenario["rules"]), scenario["rules"]
        assert [p["partition"] for p in scenario["partitions"]] == [0] * len(scenario["partitions"])
        topics = [p["topic"] for p in scenario["partitions"]]
        assert topics == sorted(topics), f"{path.name}: partitions must be listed in D-1 order"


def test_expected_still_holds_the_hand_derived_predictions() -> None:
    """The committed ``expected`` blocks agree with the generator's ordering.md predictions (no oracle needed)."""
    generator = _generator()
    generator.build()
    predictions = {item["scenario"]["id"]: item["predict"] for item in generator.SCENARIOS}
    assert set(predictions) == {p.stem for p in OWN_SCENARIOS}
    for path in OWN_SCENARIOS:
        scenario = _load(path)
        assert generator.mismatches(predictions[path.stem], scenario["expected"]) == [], path.stem


@pytest.mark.parametrize("path", OWN_SCENARIOS, ids=lambda p: p.stem)
def test_streamproc_equals_expected(path: Path) -> None:
    scenario = _load(path)
    assert run_scenario(scenario) == scenario["expected"]


@pytest.mark.parametrize("path", OWN_SCENARIOS, ids=lambda p: p.stem)
def test_kafka_streams_equals_expected_and_streamproc(oracle_results: dict[Path, RunnerOutcome], path: Path) -> None:
    scenario = _load(path)
    outcome = oracle_results[path]
    assert outcome.status == RAN and outcome.result is not None, outcome.reason

    expected_diffs = compare_to_expected(scenario["expected"], outcome.result)
    assert not expected_diffs, f"{path.stem}: Kafka Streams differs from expected:\n  " + "\n  ".join(expected_diffs)

    streamproc_diffs = compare_to_kafka_streams("ordering", run_scenario(scenario), outcome.result)
    assert not streamproc_diffs, f"{path.stem}: streamproc differs from Kafka Streams:\n  " + "\n  ".join(
        streamproc_diffs
    )
