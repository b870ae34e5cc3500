"""The hand-off's start, reconciled with Kafka instead of trusting the ledger alone (issue #27, findings 2 and 3).

A kill between a task's ``commit_transaction`` and the ledger's record of it leaves Kafka ahead of the ledger: the
task's offsets are committed, its outputs and changelog records visible, but the ledger says nothing. Offsets
alone cannot tell that commit from the application's (it may commit the very same offsets), so every offset the
hand-off commits carries the mark of its plan and task in its metadata (``publish.commit_mark``). A partition whose
committed offset is exactly the one this plan's hand-off commits there, with that task's mark, was committed by
that task's transaction (one transaction commits all its offsets or none): the task is recorded as published, with
the last changelog offsets its transaction wrote read back from the changelogs, and the hand-off goes on with its
remaining steps. Any other move keeps the guard's refusal, which says whose commit it was.

Before the group is read, the transactional ids of every task not yet published are fenced: a killed attempt's
open transaction (its records, and offsets it had sent, pending) is aborted at once, not at the broker's
transaction timeout, and a transaction the coordinator was completing is completed first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamproc.engine.records import TopicPartition
from streamproc.errors import HandoffError
from streamproc.handoff import guard
from streamproc.handoff.publish import commit_mark
from streamproc.handoff.task_results import TaskResults
from streamproc.kafka import clients as kafka_clients
from streamproc.kafka.cluster import GroupCommits, read_group_commits
from streamproc.kafka.transactions import fence, plan_transactional_ids
from streamproc.ledger import Ledger
from streamproc.plan.cluster_snapshot import CommittedOffset
from streamproc.plan.run_plan import RunPlan
from streamproc.state.commit_metadata import handoff_mark

log = logging.getLogger(__name__)

#: How long reading a changelog's committed tail back may go without a record or its end.
_READ_STALL_S = 60.0


def reconcile_with_kafka(
    admin: Any,
    client_config: Mapping[str, object],
    plan: RunPlan,
    plan_id: str,
    results: Sequence[TaskResults],
    ledger: Ledger,
    published: Mapping[str, Mapping[str, Any]],
    *,
    resolve: Callable[[TopicPartition, int], int],
    planned_commits: Mapping[str, tuple[int, int]],
) -> dict[str, dict[str, Any]]:
    """Fence the unpublished tasks' transactional ids, read the group's commits (the plan's partitions named, a
    pending commit waited for), record the tasks this plan's hand-off had committed unrecorded, then check the
    offsets (``guard.check_offsets``). Returns the recognised tasks' publish details, as recorded."""
    unpublished = [r.task_id for r in results if r.task_id not in published]
    fence(client_config, plan_transactional_ids(plan, unpublished))
    commits = read_commits(admin, plan)
    recognised: dict[str, dict[str, Any]] = {}
    if not commits.unstable:
        for r in results:
            if r.task_id in published:
                continue
            offsets = own_commit(r, commits.committed, plan_id, resolve, planned_commits)
            if offsets is None:
                continue
            detail = {
                "offsets": offsets,
                "changelog_last": last_committed_offsets(client_config, _changelog_starts(plan, r)),
                "recognised": "committed in Kafka by this plan's hand-off before it stopped (commit metadata)",
            }
            recognised[r.task_id] = ledger.record(plan_id, "publish", r.task_id, detail).detail
            log.warning(
                "task [%s] was committed by this plan's hand-off before it stopped (its offsets %s carry the plan's "
                "mark); recorded as published, not published again",
                r.task_id,
                ", ".join(f"{name}={offset}" for name, offset in sorted(offsets.items())),
            )
    guard.check_offsets(
        plan.application_id,
        guard.expected_offsets(plan, {**published, **recognised}),
        commits.committed,
        unstable=commits.unstable,
        pending=commits.pending,
        waited_s=commits.waited_s,
        plan_id=plan_id,
    )
    return recognised


def read_commits(admin: Any, plan: RunPlan) -> GroupCommits:
    """The group's commits with the plan's input partitions named, so that a pending first commit is seen and
    waited for (bounded: ``kafka.cluster.PENDING_COMMIT_WAIT_S``)."""
    partitions = [TopicPartition(r.topic, r.partition) for r in plan.ranges]
    return read_group_commits(admin, plan.application_id, partitions)


def own_commit(
    results: TaskResults,
    committed: Mapping[TopicPartition, CommittedOffset],
    plan_id: str,
    resolve: Callable[[TopicPartition, int], int],
    planned_commits: Mapping[str, tuple[int, int]],
) -> dict[str, int] | None:
    """The task's committed offsets when every input partition of it holds exactly what this plan's hand-off
    commits there with the task's mark; else ``None`` (not committed, or not by this task's transaction)."""
    mark = commit_mark(plan_id, results.task_id)
    offsets: dict[str, int] = {}
    for commit in results.commits(planned_commits):
        want = resolve(commit.partition, commit.next_offset)
        got = committed.get(commit.partition)
        if got is None or got.offset != want or handoff_mark(got.metadata) != mark:
            return None
        offsets[str(commit.partition)] = want
    return offsets or None


def _changelog_starts(plan: RunPlan, results: TaskResults) -> dict[TopicPartition, int]:
    """Where this plan's records begin in each of the task's changelog partitions: the plan's restore end there
    (nothing but the hand-off writes a changelog while the application is stopped), else its start."""
    ends = {
        TopicPartition(r.changelog_topic, r.changelog_partition): r.end for r in plan.restores
        if r.task_id == results.task_id
    }  # fmt: skip
    return {TopicPartition(t, p): ends.get(TopicPartition(t, p), 0) for t, p in results.changelog_partitions()}


def last_committed_offsets(client_config: Mapping[str, object], starts: Mapping[TopicPartition, int]) -> dict[str, int]:
    """The offset of the last committed record (read_committed) at or after each start, to the log's end: the last
    changelog record a committed hand-off transaction wrote there, which the task's ``.checkpoint`` names."""
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    if not starts:
        return {}
    settings: dict[str, object] = {"group.id": "streamproc-handoff-reconcile", "enable.auto.commit": False,
                                   "enable.partition.eof": True, "isolation.level": "read_committed",
                                   "auto.offset.reset": "earliest"}  # fmt: skip
    consumer = kafka_clients.consumer(client_config, topic=None, **settings)
    last: dict[TopicPartition, int] = {}
    try:
        consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, max(start, 0)) for tp, start in starts.items()])
        done: set[TopicPartition] = set()
        progress = time.monotonic()
        while len(done) < len(starts):
            message = consumer.poll(1.0)
            if message is None:
                if time.monotonic() - progress > _READ_STALL_S:
                    raise HandoffError(f"could not read the committed changelog records of {sorted(starts)} back")
                continue
            progress = time.monotonic()
            tp = TopicPartition(message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise HandoffError(f"reading changelog {tp} back failed: {error.str()}")
                done.add(tp)
                continue
            last[tp] = max(last.get(tp, -1), message.offset())
    finally:
        consumer.close()
    missing = sorted(str(tp) for tp in starts if tp not in last)
    if missing:
        raise HandoffError(
            f"the task's offsets are committed, but no committed record is in changelog partition(s) "
            f"{', '.join(missing)} after the plan's end there: the changelog was changed since; make a new plan"
        )
    return {str(tp): offset for tp, offset in sorted(last.items())}
