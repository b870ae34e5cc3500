"""The Kafka Streams oracle agrees with the state scenarios that Kafka Streams classes answer directly.

Covered operations (``java -jar … state``/``batch``): ``checkpoint_write``/``checkpoint_read`` (``OffsetCheckpoint``),
``commit_metadata_encode``/``_decode`` (``TopicPartitionMetadata``), ``internal_topic_name``
(``ProcessorStateManager.storeChangelogTopic``, the DSL's repartition naming), ``changelog_record`` (real RocksDB
stores with logging, inside ``TopologyTestDriver``), and on live objects in a given state (``StateOpsRunner``):
``commit_offsets`` (``StreamTask.commitNeeded``/``prepareCommit``), ``partition_time`` (``PartitionGroup``),
``purge_offsets`` (``StreamTask.purgeableOffsets``), ``register_stores`` (``ProcessorStateManager.registerStore`` and
``checkpoint``), ``store_layout`` (a real task's state directory and RocksDB's column families). ``ks_version`` 4.3
scenarios of ``offsets_cf_entry`` and ``register_stores`` (refusals only) are answered by the Kafka Streams 4.3.1
oracle (``conformance/ks43/runner``), to which ``run_oracle_batch`` routes them. ``restore_plan`` needs a broker
and is not collected here.

Shared scenarios (``../shared/spec/scenarios/state``) and the project's own (``conformance/scenarios/state``) run
in one JVM per oracle jar. Kafka Streams must equal ``expected`` (or, for a finding documented in
``conformance/FINDINGS.md``, the documented Kafka Streams result), and streamproc must equal Kafka Streams.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from streamproc_dev.conformance.oracle import (
    KS43_STATE_OPERATIONS,
    OracleError,
    answers_with_ks43,
    compare_to_expected,
    documented_findings,
    ensure_oracle_jar,
    run_oracle,
)
from streamproc_dev.conformance.report import RAN, RunnerOutcome, compare_to_kafka_streams, run_oracle_batch
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

pytestmark = pytest.mark.integration

#: Operations the 4.2.2 oracle answers without a broker.
ORACLE_STATE_OPERATIONS = frozenset(
    {
        "checkpoint_write",
        "checkpoint_read",
        "commit_metadata_encode",
        "commit_metadata_decode",
        "internal_topic_name",
        "changelog_record",
        "commit_offsets",
        "partition_time",
        "purge_offsets",
        "register_stores",
        "store_layout",
    }
)
#: Operations added with ``StateOpsRunner`` and the 4.3 oracle: streamproc is also compared with Kafka Streams here.
LIVE_OBJECT_OPERATIONS = (
    frozenset({"commit_offsets", "partition_time", "purge_offsets", "register_stores", "store_layout"})
    | KS43_STATE_OPERATIONS
)
OWN_STATE_DIR = PROJECT_ROOT / "conformance" / "scenarios" / "state"


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path}: not a JSON object"
    return data


def _covered(path: Path) -> bool:
    scenario = _load(path)
    if answers_with_ks43(scenario):
        return True
    return scenario.get("operation") in ORACLE_STATE_OPERATIONS and scenario.get("ks_version", "4.2") == "4.2"


SHARED_STATE_SCENARIOS = sorted(p for p in (SCENARIOS_DIR / "state").glob("*.json") if _covered(p))
OWN_STATE_SCENARIOS = sorted(p for p in OWN_STATE_DIR.glob("*.json") if _covered(p))
STATE_SCENARIOS = SHARED_STATE_SCENARIOS + OWN_STATE_SCENARIOS


def _id(path: Path) -> str:
    return ("own/" if path.is_relative_to(OWN_STATE_DIR) else "") + path.stem


@pytest.fixture(scope="module")
def oracle_results() -> dict[Path, RunnerOutcome]:
    """Kafka Streams' answer for every covered scenario: one JVM per oracle jar (4.2.2, and 4.3.1 for v43)."""
    return run_oracle_batch(STATE_SCENARIOS)


def test_every_oracle_operation_has_shared_scenarios() -> None:
    covered = {_load(p)["operation"] for p in SHARED_STATE_SCENARIOS}
    assert covered == ORACLE_STATE_OPERATIONS | KS43_STATE_OPERATIONS


def test_own_state_scenarios_cover_every_live_object_operation() -> None:
    """At least one own scenario per operation answered on a live object, each in the shared layout (own format
    scenarios too, e.g. cm10 for commit metadata)."""
    operations = set()
    for path in OWN_STATE_SCENARIOS:
        scenario = _load(path)
        assert scenario["id"] == path.stem
        assert scenario["kind"] == "state"
        prefix = path.stem.split("-")[0]
        assert prefix.rstrip("0123456789") in {"cm", "co", "pt", "pg", "rs", "ly", "v"}, path.name
        assert {"title", "reference", "ks_version", "input", "expected", "confidence"} <= set(scenario)
        operations.add(scenario["operation"])
    assert operations >= LIVE_OBJECT_OPERATIONS
    assert len(OWN_STATE_SCENARIOS) >= 6


@pytest.mark.parametrize("scenario_path", STATE_SCENARIOS, ids=_id)
def test_oracle_matches_state_scenario(oracle_results: dict[Path, RunnerOutcome], scenario_path: Path) -> None:
    scenario = _load(scenario_path)
    finding = documented_findings().get(scenario["id"])
    expected = _load(finding) if finding is not None else scenario["expected"]
    outcome = oracle_results[scenario_path]
    assert outcome.status == RAN and outcome.result is not None, outcome.reason

    diffs = compare_to_expected(expected, outcome.result)
    assert not diffs, f"{scenario['id']}: Kafka Streams differs:\n  " + "\n  ".join(diffs)


@pytest.mark.parametrize(
    "scenario_path", [p for p in STATE_SCENARIOS if _load(p)["operation"] in LIVE_OBJECT_OPERATIONS], ids=_id
)
def test_streamproc_equals_kafka_streams(oracle_results: dict[Path, RunnerOutcome], scenario_path: Path) -> None:
    scenario = _load(scenario_path)
    outcome = oracle_results[scenario_path]
    assert outcome.status == RAN and outcome.result is not None, outcome.reason

    diffs = compare_to_kafka_streams("state", run_scenario(scenario), outcome.result)
    assert not diffs, f"{scenario['id']}: streamproc differs from Kafka Streams:\n  " + "\n  ".join(diffs)


def test_single_file_state_command_answers_a_live_object_operation() -> None:
    """``java -jar … state FILE`` (one JVM per file) gives the batch mode's answer for a task-level operation."""
    ensure_oracle_jar()
    path = next(p for p in SHARED_STATE_SCENARIOS if _load(p)["operation"] == "commit_offsets")
    assert not compare_to_expected(_load(path)["expected"], run_oracle("state", path))


def test_four_point_three_operations_are_routed_away_from_the_four_point_two_jar(
    oracle_results: dict[Path, RunnerOutcome],
) -> None:
    """The 4.2.2 jar does not know ``offsets_cf_entry``; the report's batch sends those scenarios to the 4.3 jar."""
    ks43 = [p for p in STATE_SCENARIOS if answers_with_ks43(_load(p))]
    assert {_load(p)["operation"] for p in ks43} == KS43_STATE_OPERATIONS
    assert all(oracle_results[p].status == RAN for p in ks43)
    offsets_entry = next(p for p in ks43 if _load(p)["operation"] == "offsets_cf_entry")
    with pytest.raises(OracleError, match="offsets_cf_entry"):
        run_oracle("state", offsets_entry)
