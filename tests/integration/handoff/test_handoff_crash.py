"""kill -9 the hand-off at a step boundary and in the middle of a transaction, then run it again.

After the re-run: the group's offsets are the plan's, a read_committed reader sees each output record once, and
every ``.checkpoint`` points at the last changelog record that was committed (never past what was published).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.engine.records import TopicPartition
from streamproc.handoff.kill_points import KILL_AT_ENV
from streamproc.kafka.cluster import read_committed_offsets
from streamproc.plan.run_plan import RunPlan
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import (
    PARTITIONS,
    RECORDS,
    last_data_offsets,
    log_ends,
    processed,
    read_all,
)

pytestmark = pytest.mark.integration


def handoff(
    bootstrap: str, run_: dict[str, object], state_dir: Path, kill_at: str | None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_AT_ENV}
    if kill_at is not None:
        env[KILL_AT_ENV] = kill_at
    return subprocess.run(
        [str(Path(sys.executable).parent / "streamproc"), "handoff", "--bootstrap", bootstrap, "--plan",
         str(run_["plan_file"]), "--store", str(run_["store"]), "--state-dir", str(state_dir), "--yes"],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("kill_at", ["in-transaction:0_1", "publish:0_0", "checkpoint:0_0", "in-transaction:0_0"])
def test_a_rerun_after_kill_9_ends_like_a_clean_run(
    kill_at: str,
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    app_id = unique("handoff-crash")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    plan: RunPlan = run_["plan"]
    state_dir = tmp_path / "state"
    before = log_ends(kafka_broker, topologies.OUTPUT, 2)

    killed = handoff(kafka_broker, run_, state_dir, kill_at)
    assert killed.returncode == -9, killed.stderr
    committed, _ = read_committed_offsets(admin, app_id)
    for tp, offset in committed.items():  # nothing committed past what the tasks processed
        assert offset.offset == next(c.after for c in plan.commits if c.partition == str(tp))
    for p in range(PARTITIONS):  # no checkpoint of a task whose offsets were not committed
        if not (state_dir / app_id / f"0_{p}" / ".checkpoint").exists():
            continue
        assert any(str(tp) == f"{topologies.INPUT}-{p}" for tp in committed)

    again = handoff(kafka_broker, run_, state_dir, None)
    assert again.returncode == 0, again.stderr + again.stdout
    committed, unstable = read_committed_offsets(admin, app_id)
    assert not unstable
    assert {str(tp): c.offset for tp, c in committed.items()} == {c.partition: c.after for c in plan.commits}
    assert len(read_all(kafka_broker, topologies.OUTPUT, 2, start=before)) == RECORDS  # each record once
    last = last_data_offsets(kafka_broker, run_["changelog"], PARTITIONS)
    for p in range(PARTITIONS):
        checkpoint = OffsetCheckpoint(state_dir / app_id / f"0_{p}" / ".checkpoint").read()
        assert checkpoint == {TopicPartition(run_["changelog"], p): last[p]}
