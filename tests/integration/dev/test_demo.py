"""``make demo``'s pipeline on the session broker: seed, plan, fetch, verify, process and hand off, twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc_dev import demo

pytestmark = pytest.mark.integration


def test_the_demo_runs_end_to_end_and_again(
    kafka_broker: str, admin: AdminClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):  # a second run starts clean: fresh topics, state directory and ledger
        per_partition = demo.seed(kafka_broker)
        demo.run_pipeline(kafka_broker, tmp_path)
        out = capsys.readouterr().out
        assert "4. Hand-off" in out
        committed, _ = read_committed_offsets(admin, demo.APPLICATION_ID)
        assert {tp: c.offset for tp, c in committed.items()} == {
            TopicPartition(demo.TOPIC, p): n for p, n in per_partition.items()
        }
        assert sum(per_partition.values()) == demo.RECORDS
        tasks = sorted((tmp_path / "state" / demo.APPLICATION_ID).glob("0_*"))
        assert [t.name for t in tasks] == [f"0_{p}" for p in range(demo.PARTITIONS)]
        for task in tasks:
            [(changelog, offset)] = OffsetCheckpoint(task / ".checkpoint").read().items()
            assert changelog.topic == f"{demo.APPLICATION_ID}-totals-changelog" and offset >= 0
