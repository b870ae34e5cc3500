"""The Kafka Streams oracle agrees with the shared state scenarios that Kafka Streams classes answer directly.

Covered operations (``java -jar … state``): ``checkpoint_write``/``checkpoint_read`` (``OffsetCheckpoint``),
``commit_metadata_encode``/``_decode`` (``TopicPartitionMetadata``), ``internal_topic_name``
(``ProcessorStateManager.storeChangelogTopic``, the DSL's repartition naming) and ``changelog_record`` (real
RocksDB stores with logging, inside ``TopologyTestDriver``). Scenarios of other operations need a broker or a
restore run and are not collected here. Findings documented in ``conformance/FINDINGS.md`` are asserted against
the documented Kafka Streams result instead of ``expected``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.conformance.oracle import (
    compare_to_expected,
    documented_findings,
    ensure_oracle_jar,
    run_oracle,
)
from tests.conftest import SCENARIOS_DIR

pytestmark = pytest.mark.integration

ORACLE_STATE_OPERATIONS = frozenset(
    {
        "checkpoint_write",
        "checkpoint_read",
        "commit_metadata_encode",
        "commit_metadata_decode",
        "internal_topic_name",
        "changelog_record",
    }
)


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: not a JSON object"
    return data


STATE_SCENARIOS = sorted(
    p
    for p in (SCENARIOS_DIR / "state").glob("*.json")
    if _load(p).get("operation") in ORACLE_STATE_OPERATIONS and _load(p).get("ks_version", "4.2") == "4.2"
)


@pytest.fixture(scope="session")
def oracle_jar() -> Path:
    """Build the oracle jar once per session (Maven is skipped when the jar is newer than every source)."""
    return ensure_oracle_jar()


def test_every_oracle_operation_has_scenarios() -> None:
    covered = {_load(p)["operation"] for p in STATE_SCENARIOS}
    assert covered == ORACLE_STATE_OPERATIONS


@pytest.mark.parametrize("scenario_path", STATE_SCENARIOS, ids=lambda p: p.stem)
def test_oracle_matches_state_scenario(oracle_jar: Path, scenario_path: Path) -> None:
    scenario = _load(scenario_path)
    finding = documented_findings().get(scenario["id"])
    expected = _load(finding) if finding is not None else scenario["expected"]

    actual = run_oracle("state", scenario_path)

    diffs = compare_to_expected(expected, actual)
    assert not diffs, f"{scenario['id']}: Kafka Streams differs:\n  " + "\n  ".join(diffs)
