"""``planning`` scenarios judged live: where a real Kafka Streams 4.2.2 app starts = where streamproc's plan starts.

The scenarios that start from committed offsets go through the jar's ``startpos`` mode (``StartPositionRunner``:
the scenario's topics, logs, transactions, log starts and commits on a real broker, then a real ``KafkaStreams``
app); the reset-tool start modes and the active group go through Kafka's reset tool. The report built from both
(``run_report`` on the planning directories) must leave no planning row pending except the refusals of a requested
end (a live app has none), and every row must pass: streamproc plans where the app starts, and refuses exactly
where the app dies or silently moves away from the group's committed offsets.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc_dev.conformance import run_scenario
from streamproc_dev.conformance.report import RAN, STATUS_PARTIAL, STATUS_PASS, STATUS_PENDING, Row, run_report
from streamproc_dev.conformance.start_positions import END_REFUSALS, compare, covers, run_start_positions
from tests.conftest import PROJECT_ROOT, SCENARIOS_DIR

pytestmark = pytest.mark.integration

DIRECTORIES = [SCENARIOS_DIR / "planning", PROJECT_ROOT / "conformance" / "scenarios" / "planning"]
COMMITTED = sorted(p for d in DIRECTORIES for p in d.glob("*.json") if covers(json.loads(p.read_text("utf-8"))))


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _stem(name: str) -> Path:
    return next(p for p in COMMITTED if p.stem.startswith(name))


@pytest.fixture(scope="module")
def rows(kafka_broker: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    """Every planning row of the report with both live oracles (about 40 s: reset tool, then the startpos apps)."""
    result, _ = run_report(DIRECTORIES, tmp_path_factory.mktemp("results"), bootstrap=kafka_broker, app_runs=1)
    return {row.scenario: row for row in result}


@pytest.fixture(scope="module")
def live(rows: dict[str, Row]) -> dict[str, dict[str, Any]]:
    """The startpos app's answers, from the report's rows."""
    return {
        name: row.kafka_streams_task.result
        for name, row in rows.items()
        if row.kafka_streams_task.result is not None and "live_starts" in row.kafka_streams_task.result
    }


def test_the_committed_scenarios_are_found() -> None:
    assert len(COMMITTED) >= 12, [p.stem for p in COMMITTED]  # p11 (an active group) is the reset tool's


def test_no_planning_row_is_pending_except_end_refusals(rows: dict[str, Row]) -> None:
    pending = {name: row.kafka_streams_task.reason for name, row in rows.items() if row.status == STATUS_PENDING}
    for name, reason in pending.items():
        expected = rows[name].spec_expected or {}
        assert (expected.get("error") or {}).get("type") in END_REFUSALS, (name, reason)
        assert "started at" in str(reason), reason
    # Kafka answers part of each plan (starts, delivered offsets, refusals): partial, never a silent pass
    judged = {name: row for name, row in rows.items() if name not in pending}
    wrong = {
        name: (row.status, row.answered_by_kafka_streams, row.differences)
        for name, row in judged.items()
        if row.status not in (STATUS_PASS, STATUS_PARTIAL) or not row.answered_by_kafka_streams
    }
    assert not wrong


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_the_live_app_answers_every_committed_start(rows: dict[str, Row], path: Path) -> None:
    scenario = _load(path)
    row = rows[scenario["id"]]
    if (scenario["expected"].get("error") or {}).get("type") in END_REFUSALS:
        assert row.kafka_streams_task.status == STATUS_PENDING
        return
    assert row.kafka_streams_task.status == RAN, row.kafka_streams_task.reason
    kafka = row.kafka_streams_task.result
    assert kafka is not None and kafka["answered"] == ["starts", "delivered"]
    assert compare(run_scenario(scenario), kafka) == []
    assert compare(scenario["expected"], kafka) == []


def test_the_app_silently_skips_what_retention_deleted(live: dict[str, dict[str, Any]]) -> None:
    """p05: Kafka Streams resets orders-3 past its committed offset; a plan that starts at the commit differs."""
    kafka = live["p05-committed-below-log-start-refused"]
    assert kafka["resets"] == {"orders-3": {"committed": 1200, "started_at": 2000}}
    scenario = _load(_stem("p05b-"))
    plan = run_scenario(scenario)
    assert compare(plan, kafka) == []
    unnoted = copy.deepcopy(plan)
    unnoted["ranges"]["orders-3"]["notes"] = []
    assert compare(unnoted, kafka) == [
        "orders-3: the app skipped [1200, 2000) silently and the plan starts there without a data_loss_accepted note"
    ]
    at_commit = copy.deepcopy(plan)
    at_commit["ranges"]["orders-3"]["start"] = 1200
    assert compare(at_commit, kafka) == ["orders-3: start 1200, the live app starts at 2000"]


def test_a_refusal_must_name_where_kafka_fails_or_resets(live: dict[str, dict[str, Any]]) -> None:
    refusal = run_scenario(_load(_stem("p05-")))
    assert compare(refusal, live["p05-committed-below-log-start-refused"]) == []
    elsewhere = copy.deepcopy(refusal)
    elsewhere["error"]["partitions"] = ["orders-2"]
    assert compare(elsewhere, live["p05-committed-below-log-start-refused"])[0].startswith(
        "refuses ['orders-2']; Kafka Streams silently resets ['orders-3']"
    )
    no_policy = run_scenario(_load(_stem("p04-")))
    kafka = live["p04-no-committed-offset-policy-none"]
    assert kafka["error"]["partitions"] == ["orders-1"]  # NoOffsetForPartitionException#partitions
    assert compare(no_policy, kafka) == []
    assert compare({"error": {**no_policy["error"], "partitions": ["orders-0"]}}, kafka) != []
    # a plan where the app dies is a difference
    assert compare(run_scenario(_load(_stem("p01-"))), kafka)[0].startswith("the reference plans; Kafka Streams fails")
    # a refusal where the app neither fails nor loses data is a difference
    assert compare(no_policy, live["p01-committed-to-latest"])[0].startswith("refuses (NoResetPolicy)")


def test_the_manifest_is_what_the_app_delivers(live: dict[str, dict[str, Any]]) -> None:
    """p15/p16: the app skips markers (and aborted records under read_committed) exactly as the manifest says."""
    for name in ("p15-", "p16-"):
        plan = run_scenario(_load(_stem(name)))
        kafka = next(v for k, v in live.items() if k.startswith(name))
        assert compare(plan, kafka) == []
        wrong = copy.deepcopy(plan)
        wrong["manifest"]["orders-0"]["delivered"] = [[0, 8]]
        assert len(compare(wrong, kafka)) == 1
    faulty = run_scenario(_load(_stem("p18-")))
    assert compare(faulty, live["p18-completeness-unexplained-gap"]) == []  # the app delivers 3..4


def test_the_startpos_mode_alone(kafka_broker: str) -> None:
    """The mode's own answer shape on one scenario, outside the report."""
    path = _stem("p02-")
    answer = run_start_positions(kafka_broker, [path])[path]
    kafka = answer["result"]
    assert set(kafka) >= {"live_starts", "delivered", "end_positions", "resets", "kafka_behaviour", "not_observable"}
    assert answer["observations"]["processing_guarantee"] == "exactly_once_v2"
    assert compare(run_scenario(_load(path)), kafka) == []
