"""``streamproc run``: plan → fetch → process (Spark local) → hand-off in one command; ``--dry-run`` stops early."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.engine.records import TopicPartition
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.plan.run_plan import RunPlan
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from tests.integration.conftest import create_topic
from tests.integration.handoff.test_handoff import PARTITIONS, TOPOLOGY, last_data_offsets, run
from tests.integration.spark.conftest import wait_for_leaders

pytestmark = pytest.mark.integration


def test_run_plans_fetches_processes_and_hands_off(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("run-app")
    changelog = f"{app_id}-counts-changelog"
    create_topic(admin, changelog, partitions=PARTITIONS, config={"cleanup.policy": "compact"})
    wait_for_leaders(admin, changelog)
    args = ["run", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", TOPOLOGY, "--store",
            str(tmp_path / "staging"), "--work-dir", str(tmp_path / "work"), "--master", "local[1]"]  # fmt: skip

    dry = run(*args, "--dry-run")
    assert "Hand-off (irreversible, after processing)" in dry.output
    # how the process step will run each sub-topology's tasks, before anything is fetched (issue #29)
    assert "\nParallelism (--split auto):\n  sub-topology 0: 2 task(s), at most " in dry.output, dry.output
    assert not (tmp_path / "staging").exists()  # nothing fetched

    state_dir = tmp_path / "state"
    out = run(*args, "--state-dir", str(state_dir), "--yes")
    assert "published 2 task(s), wrote 2 checkpoint(s)" in out.output
    plan = RunPlan.read(tmp_path / "work" / "plan.json")
    committed, _ = read_committed_offsets(admin, app_id)
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    last = last_data_offsets(kafka_broker, changelog, PARTITIONS)
    for p in range(PARTITIONS):
        checkpoint = OffsetCheckpoint(state_dir / app_id / f"0_{p}" / ".checkpoint").read()
        assert checkpoint == {TopicPartition(changelog, p): last[p]}
