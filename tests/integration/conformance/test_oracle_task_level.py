"""The Kafka Streams oracle at task level agrees with every shared ordering scenario.

Each scenario in ``../shared/spec/scenarios/ordering/`` is replayed through a real Kafka Streams 4.2.2
``StreamTask`` (``conformance/``, ``java -jar … task``). The result must equal the scenario's ``expected``, unless
``conformance/FINDINGS.md`` documents that Kafka Streams differs: then it must equal the documented Kafka Streams
result (``conformance/findings/<id>.json``), so a change on either side is noticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance.oracle import (
    compare_to_expected,
    documented_findings,
    ensure_oracle_jar,
    run_oracle,
)
from tests.conftest import SCENARIOS_DIR

pytestmark = pytest.mark.integration

ORDERING_SCENARIOS = sorted((SCENARIOS_DIR / "ordering").glob("*.json"))


@pytest.fixture(scope="session")
def oracle_jar() -> Path:
    """Build the oracle jar once per session (Maven is skipped when the jar is newer than every source)."""
    return ensure_oracle_jar()


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: not a JSON object"
    return data


def test_ordering_scenarios_are_present() -> None:
    assert ORDERING_SCENARIOS, f"no ordering scenarios under {SCENARIOS_DIR / 'ordering'}"


def test_every_finding_names_a_scenario_and_documents_a_result() -> None:
    ids = {p.stem for p in ORDERING_SCENARIOS} | {p.stem for p in (SCENARIOS_DIR / "state").glob("*.json")}
    for scenario_id, result_file in documented_findings().items():
        assert scenario_id in ids, f"FINDINGS.md lists {scenario_id}, which is not a shared scenario"
        assert result_file.is_file(), f"FINDINGS.md lists {scenario_id} but {result_file} is missing"


@pytest.mark.parametrize("scenario_path", ORDERING_SCENARIOS, ids=lambda p: p.stem)
def test_oracle_matches_ordering_scenario(oracle_jar: Path, scenario_path: Path) -> None:
    scenario = _load(scenario_path)
    finding = documented_findings().get(scenario["id"])
    expected = _load(finding) if finding is not None else scenario["expected"]

    actual = run_oracle("task", scenario_path)

    diffs = compare_to_expected(expected, actual)
    assert not diffs, f"{scenario['id']}: Kafka Streams differs:\n  " + "\n  ".join(diffs)
