"""streamproc's own transactions: the one rule for their transactional ids, and fencing a dead attempt's.

The hand-off publishes each task in one transaction whose ``transactional.id`` is derived from the application and
the task only (:func:`transactional_id`), never from the plan: any later step over any plan of the application
knows the ids a killed hand-off was using, and ``init_transactions`` with one of them fences that producer and
aborts its open transaction at once (KIP-98), instead of leaving it to the broker's transaction timeout. An open
transaction holds back the last stable offset of every partition it wrote (changelogs, outputs, repartition
topics) and keeps its offsets pending, so a read_committed fetch of a new plan could not read past it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from streamproc.errors import PlanError, StreamprocError
from streamproc.kafka import clients as kafka_clients

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan

log = logging.getLogger(__name__)

#: How long fencing one transactional id may take (the coordinator aborts the open transaction first).
FENCE_TIMEOUT_S = 60.0
_FENCING_THREADS = 8


class FencingFailed(StreamprocError):
    """A transactional id could not be fenced (no answer, no authorization): the dead attempt's transaction stays
    open until the broker's transaction timeout aborts it."""


def transactional_id(application_id: str, task_id: str) -> str:
    """The hand-off's transactional id of one task: the same on every attempt of every plan, so each fences the
    last (two hand-offs of one application never run at once: the guard and the ledger's lock see to that)."""
    return f"{application_id}-streamproc-{task_id}"


def plan_transactional_ids(plan: RunPlan, task_ids: Collection[str] | None = None) -> list[str]:
    """The transactional ids of ``task_ids`` (default: every task) of ``plan``."""
    wanted = [t.task_id for t in plan.tasks] if task_ids is None else sorted(task_ids)
    return [transactional_id(plan.application_id, task_id) for task_id in wanted]


def _fence_one(client_config: Mapping[str, object], txn_id: str) -> None:
    producer = kafka_clients.producer(client_config, **{"transactional.id": txn_id, "enable.idempotence": True})
    try:
        producer.init_transactions(FENCE_TIMEOUT_S)
    except Exception as exc:
        raise FencingFailed(
            f"could not fence transactional id {txn_id} (to abort a killed hand-off's open transaction): {exc}; "
            "run again, or wait for the broker to abort it (the producer's transaction.timeout.ms, 60 s by default)"
        ) from exc
    finally:
        producer.flush(0)


def fence(client_config: Mapping[str, object], transactional_ids: Sequence[str]) -> None:
    """Fence each id: its last producer can no longer write, and its open transaction, if any, is aborted.

    Returns once the coordinator has completed every abort (it answers ``CONCURRENT_TRANSACTIONS`` until then and
    librdkafka retries), so the aborted partitions' last stable offsets have moved past the transactions. A
    transaction already committed is left as it is.
    """
    if not transactional_ids:
        return
    with ThreadPoolExecutor(min(_FENCING_THREADS, len(transactional_ids))) as pool:
        for future in [pool.submit(_fence_one, client_config, txn_id) for txn_id in transactional_ids]:
            future.result()
    log.info("fenced %d transactional id(s): %s", len(transactional_ids), ", ".join(transactional_ids))


def fence_open_transactions(
    client_config: Mapping[str, object], plan: RunPlan, only: Collection[tuple[str, int]] | None = None
) -> list[str]:
    """Before a read_committed fetch of ``plan``: when a range of a topic streamproc's hand-off writes (a store's
    changelog, a repartition topic) is held back by an open transaction (its last stable offset is before the
    planned end), fence every task's transactional id, so a killed hand-off's transaction is aborted now rather
    than at the broker's transaction timeout. Returns the ids fenced (none when nothing is held back). ``only``:
    look at these partitions only (one range's fetch).

    Which task's transaction it is cannot be asked of the broker through this client (no DescribeProducers), and
    fencing an id without an open transaction changes nothing, so all of them are fenced. A transaction of
    another producer holds the range back still; the fetch then says so.
    """
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import OffsetSpec

    from streamproc.kafka.cluster import _list_offsets
    from streamproc.plan.cluster_snapshot import IsolationLevel

    if plan.isolation_level != IsolationLevel.READ_COMMITTED.value:
        return []
    ends: dict[tuple[str, int], int] = {}
    for r in plan.ranges:
        if r.internal and not r.empty:
            ends[(r.topic, r.partition)] = max(r.end, ends.get((r.topic, r.partition), 0))
    for restore in plan.restores:
        if restore.end > restore.start:
            key = (restore.changelog_topic, restore.changelog_partition)
            ends[key] = max(restore.end, ends.get(key, 0))
    if only is not None:
        ends = {key: end for key, end in ends.items() if key in set(only)}
    if not ends:
        return []
    admin = kafka_clients.admin(client_config)
    specs = {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in sorted(ends)}
    try:
        stable = _list_offsets(admin, specs, IsolationLevel.READ_COMMITTED, "last stable offset")
    except PlanError as exc:  # a topic gone since the plan: the fetch of its range says so in its own words
        log.info("not looking for open transactions: %s", exc)
        return []
    held = sorted(f"{tp.topic}-{tp.partition}" for tp, lso in stable.items() if lso < ends[(tp.topic, tp.partition)])
    if not held:
        return []
    ids = plan_transactional_ids(plan)
    log.warning(
        "%s: a transaction is still open (the last stable offset is before the planned end); fencing the hand-off's "
        "transactional ids of application '%s' (a killed hand-off's transaction is aborted now)",
        ", ".join(held),
        plan.application_id,
    )
    fence(client_config, ids)
    return ids


def fence_for_pending_commits(
    client_config: Mapping[str, object],
    application_id: str,
    subtopology_of: Mapping[str, int],
    pending: Sequence[tuple[str, int]],
) -> list[str]:
    """A transactional offset commit of the group is pending on ``pending`` (source partitions; all of them when the
    coordinator did not say which): fence the hand-off's transactional ids of the tasks reading them, so that a
    killed hand-off's open transaction, whose commit it is, is aborted now rather than waited for until the
    broker's transaction timeout. Another producer's commit (the application's, another tool's) stays pending and
    is then waited for or reported as before. Returns the ids fenced."""
    from streamproc.engine.task_id import TaskId

    read = [(topic, partition) for topic, partition in pending if topic in subtopology_of]
    tasks = sorted({TaskId(subtopology_of[topic], partition) for topic, partition in read})
    ids = [transactional_id(application_id, str(task)) for task in tasks]
    if ids:
        log.warning(
            "group '%s' has a transactional offset commit pending; fencing the hand-off's transactional ids of "
            "task(s) %s (a killed hand-off's transaction is aborted now; another producer's is waited for)",
            application_id,
            ", ".join(map(str, tasks)),
        )
        fence(client_config, ids)
    return ids
