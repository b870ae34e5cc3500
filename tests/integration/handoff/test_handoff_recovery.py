"""Recovery after a crash, reconciled with Kafka rather than trusted to the ledger (issue #27, findings 2-4).

- A commit that is not streamproc's own keeps the "moved" refusal, and the message says whose it is.
- A new plan over a killed hand-off's open transaction is fetched at once: the dead attempt's transactions are
  fenced through their deterministic transactional ids instead of waiting for the broker's transaction timeout.
- A pending transactional offset commit on a partition the group never committed is seen by the guard (and the
  plan: tests/integration/plan/test_pending_commit.py), not taken for "nothing committed".
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streamproc.kafka.cluster import read_committed_offsets
from streamproc.kafka.librdkafka import alter_committed_offsets
from streamproc.plan.run_plan import RunPlan
from streamproc.state.commit_metadata import TopicPartitionMetadata
from tests.integration.handoff import topologies
from tests.integration.handoff.test_handoff import processed, run
from tests.integration.handoff.test_handoff_crash import handoff
from tests.integration.plan.test_pending_commit import pending_offset_commit

pytestmark = pytest.mark.integration

EOS = ("--processing-guarantee", "exactly_once_v2")


def test_offsets_another_client_committed_keep_the_refusal_saying_they_are_not_streamprocs(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    app_id = unique("recover-moved")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    plan: RunPlan = run_["plan"]
    after = {c.partition: c.after for c in plan.commits}
    # the application committed exactly where the plan would (it processed the same window): not streamproc's
    metadata = TopicPartitionMetadata(1_000_000).encode()
    alter_committed_offsets(admin, app_id, [(topologies.INPUT, 0, after[f"{topologies.INPUT}-0"], metadata)],
                            timeout_s=30)  # fmt: skip
    refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                  str(run_["store"]), "--yes", ok=False)  # fmt: skip
    assert refused.exit_code == 1, refused.output
    assert (
        f"committed offsets moved since the plan: planned {topologies.INPUT}-0=none; now "
        f"{topologies.INPUT}-0={after[f'{topologies.INPUT}-0']} (not committed by streamproc's hand-off)"
    ) in refused.output
    assert "the application (or another tool) processed records meanwhile" in refused.output


def fetch_cli(bootstrap: str, plan_file: Path, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "streamproc"), "fetch", "--bootstrap", bootstrap, "--plan", str(plan_file),
         "--store", str(store)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_new_plan_over_a_killed_transaction_is_fetched_at_once(
    kafka_broker: str, admin: AdminClient, input_topic: str, unique: Callable[[str], str], tmp_path: Path
) -> None:
    """kill -9 inside task 0_1's transaction (its changelog records written, not committed), then plan anew and
    fetch: the restore range of 0_1's changelog holds the open transaction; the fetch fences it through the task's
    transactional id and finishes, long before the broker's transaction timeout (60 s) would have aborted it."""
    app_id = unique("recover-open-txn")
    run_ = processed(kafka_broker, admin, app_id, tmp_path, plan_args=EOS)
    killed = handoff(kafka_broker, run_, tmp_path / "state", "in-transaction:0_1")
    assert killed.returncode == -9, killed.stderr

    plan_file = tmp_path / "replan.json"
    run("plan", "--bootstrap", kafka_broker, "--application-id", app_id, "--topology", str(tmp_path / "topology.txt"),
        "--out", str(plan_file), *EOS)  # fmt: skip
    replan = RunPlan.read(plan_file)
    changelog_p1 = [r for r in replan.restores if r.changelog_partition == 1]
    assert changelog_p1 and changelog_p1[0].end > changelog_p1[0].start  # the open transaction is in the range
    fetched = fetch_cli(kafka_broker, plan_file, tmp_path / "restaging")
    assert fetched.returncode == 0, fetched.stderr
    # it found the transaction still open (not aborted by the broker's timeout meanwhile) and fenced it
    assert "a transaction is still open" in fetched.stderr, fetched.stderr
    assert "fencing the hand-off's transactional ids" in fetched.stderr, fetched.stderr
    checked = subprocess.run(
        [str(Path(sys.executable).parent / "streamproc"), "verify", "--plan", str(plan_file), "--store",
         str(tmp_path / "restaging")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr + checked.stdout


def test_the_guard_reports_a_pending_commit_on_a_partition_never_committed(
    kafka_broker: str,
    admin: AdminClient,
    input_topic: str,
    unique: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streamproc.kafka import cluster

    monkeypatch.setattr(cluster, "PENDING_COMMIT_WAIT_S", 2.0)
    app_id = unique("recover-pending")
    run_ = processed(kafka_broker, admin, app_id, tmp_path)
    assert read_committed_offsets(admin, app_id) == ({}, False)  # the group never committed anything
    with pending_offset_commit(kafka_broker, app_id, topologies.INPUT, 1, 7) as producer:
        refused = run("handoff", "--bootstrap", kafka_broker, "--plan", str(run_["plan_file"]), "--store",
                      str(run_["store"]), "--yes", ok=False)  # fmt: skip
        producer.abort_transaction(30)
    assert refused.exit_code == 1, refused.output
    assert (
        f"group '{app_id}' has a transactional offset commit pending on {topologies.INPUT}-1 "
        "(UNSTABLE_OFFSET_COMMIT), still after 2 s"
    ) in refused.output
    assert read_committed_offsets(admin, app_id) == ({}, False)  # nothing handed off
