"""Transactional inputs and leader epochs in ordering scenarios (``streamproc_dev.conformance.ordering``).

What a consumer hands to Kafka Streams: never a control marker, and no record of an aborted transaction under
``read_committed``; the task commits the position past trailing markers. The own scenarios ``c50``-``c59`` hold
Kafka Streams' results (task-level oracle, confirmed live by ``tests/integration/conformance``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from streamproc.errors import ConfigError
from streamproc_dev.conformance.ordering import delivered_records, end_position, read_committed, run_scenario

OWN = Path(__file__).resolve().parents[3] / "conformance" / "scenarios"
TRANSACTIONAL = sorted(OWN.glob("c5*.json"))


def _record(offset: int, timestamp: int, **extra: Any) -> dict[str, Any]:
    return {"offset": offset, "timestamp": timestamp, "key": "k", "value": f"v{offset}", **extra}


def _marker(offset: int, txn: str, kind: str) -> dict[str, Any]:
    return {"offset": offset, "control": kind, "txn": txn}


def _scenario(config: dict[str, Any], *partitions: dict[str, Any], **expected: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"order": [], "stream_time_after_each": [], "dropped": [], "skip_steps": []}
    return {
        "id": "t",
        "kind": "ordering",
        "config": config,
        "partitions": list(partitions),
        "expected": base | expected,
    }


A = {
    "topic": "a",
    "partition": 0,
    "records": [
        _record(0, 1, txn="t1"),
        _marker(1, "t1", "COMMIT"),
        _record(2, 50, txn="t2"),
        _marker(3, "t2", "ABORT"),
        _record(4, 2),
        _record(5, 60, txn="t3"),
        _marker(6, "t3", "ABORT"),
    ],
}


def test_the_own_transactional_scenarios_are_present() -> None:
    assert len(TRANSACTIONAL) >= 10


@pytest.mark.parametrize("path", TRANSACTIONAL, ids=[p.stem for p in TRANSACTIONAL])
def test_own_scenario_equals_kafka_streams(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert run_scenario(scenario) == scenario["expected"]


@pytest.mark.parametrize(
    ("config", "committed_only"),
    [
        ({}, False),
        ({"isolation_level": "read_uncommitted"}, False),
        ({"isolation_level": "read_committed"}, True),
        ({"processing_guarantee": "exactly_once_v2"}, True),
        ({"processing_guarantee": "at_least_once", "isolation_level": "read_committed"}, True),
    ],
)
def test_read_committed_follows_the_guarantee_or_the_isolation_level(
    config: dict[str, Any], committed_only: bool
) -> None:
    assert read_committed(config) is committed_only


def test_markers_are_never_delivered_and_aborted_records_only_under_read_uncommitted() -> None:
    uncommitted = _scenario({}, A)
    committed = _scenario({"isolation_level": "read_committed"}, A)
    assert [r["offset"] for r in delivered_records(uncommitted, A)] == [0, 2, 4, 5]
    assert [r["offset"] for r in delivered_records(committed, A)] == [0, 4]


def test_the_end_position_is_past_the_last_marker() -> None:
    assert end_position(A) == 7
    assert end_position({"topic": "e", "partition": 0, "records": []}) == 0


def test_replay_skips_aborted_records_and_commits_past_the_trailing_gap() -> None:
    scenario = _scenario({"isolation_level": "read_committed"}, A, committed_offsets=[])
    result = run_scenario(scenario)
    assert result["order"] == [["a", 0, 0], ["a", 0, 4]]
    assert result["stream_time_after_each"] == [1, 2]
    assert result["committed_offsets"] == [{"topic": "a", "partition": 0, "offset": 7}]


def test_read_uncommitted_processes_aborted_records() -> None:
    result = run_scenario(_scenario({}, A, committed_offsets=[]))
    assert result["order"] == [["a", 0, 0], ["a", 0, 2], ["a", 0, 4], ["a", 0, 5]]
    assert result["stream_time_after_each"] == [1, 50, 50, 60]
    assert result["committed_offsets"] == [{"topic": "a", "partition": 0, "offset": 7}]


def test_a_partition_of_aborted_records_only_is_not_committed() -> None:
    only_aborted = {
        "topic": "b",
        "partition": 0,
        "records": [_record(0, 0, txn="x"), _marker(1, "x", "ABORT")],
    }
    result = run_scenario(_scenario({"processing_guarantee": "exactly_once_v2"}, A, only_aborted, committed_offsets=[]))
    assert [entry["topic"] for entry in result["committed_offsets"]] == ["a"]


def test_committed_offsets_only_when_the_scenario_asks_for_them() -> None:
    assert "committed_offsets" not in run_scenario(_scenario({}, A))


def test_a_transaction_without_marker_is_refused_under_read_committed() -> None:
    open_txn = {"topic": "a", "partition": 0, "records": [_record(0, 1, txn="open")]}
    with pytest.raises(ConfigError, match="'open' has no commit or abort marker"):
        run_scenario(_scenario({"isolation_level": "read_committed"}, open_txn))


def test_contradicting_markers_are_refused() -> None:
    a = {"topic": "a", "partition": 0, "records": [_record(0, 1, txn="t"), _marker(1, "t", "COMMIT")]}
    b = {"topic": "b", "partition": 0, "records": [_record(0, 1, txn="t"), _marker(1, "t", "ABORT")]}
    with pytest.raises(ConfigError, match="both commit and abort markers"):
        run_scenario(_scenario({"isolation_level": "read_committed"}, a, b))


def test_the_leader_epoch_is_quoted_in_the_extractor_error() -> None:
    scenario = json.loads((OWN / "c58-negative-fail-on-invalid-middle-leader-epoch.json").read_text("utf-8"))
    assert "leaderEpoch = 0," in run_scenario(scenario)["error"]["kafka_message_prefix"]
    without = copy.deepcopy(scenario)
    for partition in without["partitions"]:
        for record in partition["records"]:
            del record["leader_epoch"]
    assert "leaderEpoch = null," in run_scenario(without)["error"]["kafka_message_prefix"]
