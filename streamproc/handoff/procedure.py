"""The hand-off of one processed plan, step by step, each step recorded in the ledger (state.md §10).

Per task, in stage order: check the group is still empty, publish the task's records and commit its offsets in one
transaction (read back and checked), record it; then write its state directory, ``.checkpoint`` last, record it.
Then purge each repartition partition up to the offset just committed, record it. A re-run (after a crash, a
refusal or a failed step) skips every recorded step; the guard accepts the offsets the recorded tasks committed, and
those Kafka shows this plan's own transactions committed unrecorded (``reconcile.py`` records them first).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.handoff import guard
from streamproc.handoff.kill_points import armed as kill_points_armed
from streamproc.handoff.kill_points import kill_point
from streamproc.handoff.publish import PublishedTask, publish_task, verify_committed
from streamproc.handoff.purge import purge_partition
from streamproc.handoff.reconcile import reconcile_with_kafka
from streamproc.handoff.state_bundle import task_object, task_tar, write_manifest
from streamproc.handoff.state_writer import (
    checkpoint_offsets,
    clear_task_state,
    offsets_for_version,
    write_task_state,
)
from streamproc.handoff.task_results import TaskResults, load_results, planned_commits
from streamproc.kafka import clients as kafka_clients
from streamproc.ledger import Ledger
from streamproc.plan.run_plan import PlannedTask, RunPlan
from streamproc.state.committable_offsets import purge_offsets, repartition_commit_offset
from streamproc.state.state_directory import StateDirectory
from streamproc.storage.object_store import ObjectStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HandoffSummary:
    """What this invocation did and what earlier ones had done (``skipped``), per step."""

    plan_id: str
    published: tuple[str, ...] = ()
    checkpointed: tuple[str, ...] = ()
    purged: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


def restored_last(plan: RunPlan, task_id: str) -> dict[TopicPartition, int]:
    """The last changelog offset the plan restored per store of one task (its restore end − 1)."""
    return {
        TopicPartition(r.changelog_topic, r.changelog_partition): r.end - 1
        for r in plan.restores
        if r.task_id == task_id and r.end > 0
    }


def source_changelog_last(task: PlannedTask, committed: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """The checkpoint of a store whose changelog is one of the task's source partitions (a table source reusing its
    topic): the offset of the last record the task consumed, committed offset − 1, as ``StreamTask``'s
    ``checkpointableOffsets`` gives it (the consumed offsets of source partitions); the app's restore then starts at
    the committed offset and ends there (``StoreChangelogReader`` stops a source changelog at the committed offset).
    A partition this hand-off committed nothing for keeps the plan's restore end (the offset committed before)."""
    sources = set(task.source_partitions)
    out: dict[TopicPartition, int] = {}
    for store in task.stores:
        name = f"{store.changelog_topic}-{store.changelog_partition}"
        if name in sources and name in committed:
            out[TopicPartition(store.changelog_topic, store.changelog_partition)] = int(committed[name]) - 1
    return out


def task_checkpoint(
    plan: RunPlan, results: TaskResults, persistent: frozenset[str], published: Mapping[str, Any]
) -> dict[TopicPartition, int]:
    """The ``.checkpoint`` entries of one task's directory, from its publish step's ledger detail (``published``:
    the offsets committed, the last offset published per changelog partition)."""
    stores = {
        s.name: TopicPartition(s.changelog_topic, s.changelog_partition)
        for s in results.task.stores
        if s.name in persistent and s.changelog_topic
    }
    last = published.get("changelog_last", {})
    published_last = {guard.parse_partition(name): int(offset) for name, offset in last.items()}
    published_last.update(source_changelog_last(results.task, published.get("offsets", {})))
    return checkpoint_offsets(stores, published_last, restored_last(plan, results.task_id))


def purges(plan: RunPlan, committed: Mapping[str, int]) -> list[tuple[str, int]]:
    """(partition, DeleteRecords offset) after the hand-off committed ``committed`` (partition → offset): each
    repartition partition it committed, up to that offset (``purge_offsets``, Kafka Streams' rule), in plan order."""
    internal = [r for r in plan.ranges if r.internal]
    offsets = purge_offsets(
        {TopicPartition(r.topic, r.partition): committed[r.name] for r in internal if r.name in committed},
        {r.topic for r in internal},
    )
    return [(str(tp), offset) for tp, offset in offsets.items()]


def repartition_log_ends(admin: Any, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The log end (high watermark, read_uncommitted: past every transaction marker) of each partition."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import OffsetSpec

    from streamproc.kafka.cluster import _list_offsets
    from streamproc.plan.cluster_snapshot import IsolationLevel

    if not partitions:
        return {}
    specs = {KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.latest() for tp in partitions}
    found = _list_offsets(admin, specs, IsolationLevel.READ_UNCOMMITTED, "log end")
    return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in found.items()}


def _check_sink_topics(admin: Any, results: list[TaskResults]) -> None:
    metadata = admin.list_topics(timeout=30).topics
    needed = {t for r in results for t, _ in (*r.output_partitions(), *r.changelog_partitions())}
    missing = sorted(t for t in needed if t not in metadata or metadata[t].error is not None)
    if missing:
        changelogs = {t for r in results for t, _ in r.changelog_partitions()}
        first_run = (
            "; a changelog is missing because the application never ran: make the plan again with "
            "--create-internal-topics (it creates them as Kafka Streams would), then process and hand off that plan"
            if changelogs & set(missing)
            else ""
        )
        raise HandoffError(
            f"topic(s) {', '.join(missing)} that the tasks' results go to do not exist; nothing was handed off: "
            f"create them as the application would (partition counts, compaction for changelogs) and run again"
            f"{first_run}"
        )


_DAY_MS = 86_400_000


def warn_changelog_retention(admin: Any, results: list[TaskResults], now_ms: int) -> list[str]:
    """Warn (before anything is published) about changelog records the broker will delete soon after publishing.

    A changelog with ``cleanup.policy`` including ``delete`` (window and session stores: retention + 1 day) drops
    records older than ``retention.ms`` at its next retention check; the store streamproc writes still holds them,
    but a later restore from the changelog (a lost state directory, an EOS wipe) will not.
    """
    from confluent_kafka.admin import ConfigResource, ResourceType

    topics = sorted({t for r in results for t, _ in r.changelog_partitions()})
    if not topics:
        return []
    retention: dict[str, int] = {}
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    for resource, future in admin.describe_configs(resources, request_timeout=30).items():
        try:
            configs = future.result(timeout=30)
        except TimeoutError:
            raise HandoffError(kafka_clients.no_answer(f"could not read the configs of {resource.name}", 30)) from None
        policy = configs.get("cleanup.policy")
        ms = configs.get("retention.ms")
        if policy is not None and "delete" in (policy.value or "") and ms is not None and int(ms.value) >= 0:
            retention[resource.name] = int(ms.value)
    warnings = []
    for r in results:
        for topic, partition in r.changelog_partitions():
            if topic not in retention:
                continue
            cutoff = now_ms - retention[topic]
            old = r.changelog_older_than(topic, partition, cutoff)
            if old:
                warnings.append(
                    f"task [{r.task_id}] {old} changelog record(s) for {topic}-{partition} are older than the topic's "
                    f"retention.ms={retention[topic]} ({retention[topic] / _DAY_MS:.1f} days): the broker deletes "
                    "them soon after they are published; the handed-off store keeps them, but a later restore from "
                    "the changelog (a lost state directory, an exactly_once wipe) will not"
                )
    for warning in warnings:
        log.warning("%s", warning)
    return warnings


def _end_offset_resolver(admin: Any, plan: RunPlan) -> Callable[[TopicPartition, int], int]:
    """A repartition partition whose appended records the task consumed is committed at its log end, read now
    (``repartition_commit_offset``); every other offset is the report's."""
    ends = {TopicPartition(r.topic, r.partition): r.end for r in plan.ranges if r.internal}

    def resolve(partition: TopicPartition, next_offset: int) -> int:
        end = ends.get(partition)
        if end is None:
            return next_offset
        return repartition_commit_offset(next_offset, end, lambda: repartition_log_ends(admin, [partition])[partition])

    return resolve


#: Tasks of one stage whose transactions are open at once. A task's publish is a Python loop over its records (one
#: core) beside librdkafka's threads (compression, the network) and the broker's round trips (begin, commit, the
#: offsets read back): side by side, one task's loop runs while another waits.
PUBLISH_THREADS = 4


def publish_waves(plan: RunPlan, results: Sequence[TaskResults], *, sequential: bool) -> list[list[TaskResults]]:
    """The tasks whose transactions may be open together, wave after wave in stage order.

    A task commits a repartition partition's offset past the records (and transaction markers) that the tasks of
    earlier stages published to it (``_end_offset_resolver``), so a stage's tasks wait for every earlier stage's;
    the tasks of one stage read and write disjoint partitions and are independent. ``sequential``: one task a
    wave, the order of ``results`` (a step boundary named by ``stop_after`` or a test's kill point is then a
    boundary between two tasks).
    """
    if sequential:
        return [[r] for r in results]
    stage_of = {sub: i for i, stage in enumerate(plan.stages) for sub in stage}
    waves: dict[int, list[TaskResults]] = {}
    for r in results:
        waves.setdefault(stage_of.get(r.task.subtopology, 0), []).append(r)
    return [waves[stage] for stage in sorted(waves)]


def _publish_side_by_side(
    todo: Sequence[TaskResults], publish: Callable[[TaskResults], PublishedTask]
) -> Iterator[tuple[TaskResults, PublishedTask | Exception]]:
    """Each task of ``todo`` published (its own producer and transaction), up to :data:`PUBLISH_THREADS` at once;
    yields each task's outcome, or the error that ended it, in ``todo``'s order. A failed task does not stop the
    others: their transactions finish and are recorded, not left open (the pool is awaited even when the caller
    stops reading). A lone task is published in the calling thread: a test's pause point then holds the hand-off
    itself, and nothing else is open beside it."""
    if len(todo) == 1:
        try:
            yield todo[0], publish(todo[0])
        except Exception as exc:  # noqa: BLE001 - handed to the caller, which records the others first
            yield todo[0], exc
        return
    if todo:
        log.info("publishing %d tasks side by side (%d at once): %s", len(todo), min(len(todo), PUBLISH_THREADS),
                 ", ".join(r.task_id for r in todo))  # fmt: skip
    with ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="publish") as pool:
        futures = [(r, pool.submit(publish, r)) for r in todo]
        for r, future in futures:
            error = future.exception()
            yield r, (error if isinstance(error, Exception) else future.result())


def handoff(
    plan: RunPlan,
    plan_id: str,
    *,
    client_config: Mapping[str, object],
    store: ObjectStore,
    ledger: Ledger,
    state_dir: Path | None,
    state_bundle: ObjectStore | None = None,
    reduce_changelogs: bool = True,
    stop_after: str | None = None,
    kafka_streams_version: str = "4.2",
) -> HandoffSummary:
    """Run (or resume) the hand-off of ``plan`` whose tasks the process step finished in ``store``.

    ``stop_after`` ("publish:<task>" or "checkpoint:<task>") ends the run right after that step is recorded: the
    crash tests' step boundary. ``kafka_streams_version`` is the version that will open the state (4.2 or 4.3).
    """
    offsets_for_version({}, kafka_streams_version=kafka_streams_version, eos=False)  # refuse an unknown one first
    eos = plan.isolation_level == "read_committed"
    results = load_results(plan, plan_id, store)
    admin = kafka_clients.admin(client_config)
    published: dict[str, dict[str, Any]] = {}
    checkpointed: set[str] = set()
    stateless_for_version: set[str] = set()
    for r in results:
        step = ledger.done(plan_id, "publish", r.task_id)
        if step is not None:
            published[r.task_id] = step.detail
        done = ledger.done(plan_id, "checkpoint", r.task_id)
        if done is not None:
            checkpointed.add(r.task_id)
            if done.detail.get("no_state"):
                stateless_for_version.add(r.task_id)

    from streamproc.kafka.cluster import read_group

    group = read_group(admin, plan.application_id, client_config=client_config)  # members: their session timeouts
    guard.check_group(plan.application_id, group, plan.streams_group_epoch)
    resolve = _end_offset_resolver(admin, plan)
    planned = planned_commits(plan)
    # fences the unpublished tasks' transactional ids, records tasks Kafka shows this plan committed, checks offsets
    published.update(reconcile_with_kafka(admin, client_config, plan, plan_id, results, ledger, published,
                                          resolve=resolve, planned_commits=planned))  # fmt: skip
    if state_dir is not None:
        guard.check_state_dir(state_dir, plan, skip_tasks=frozenset(checkpointed))
    _check_sink_topics(admin, results)
    if not published:
        warn_changelog_retention(admin, results, int(time.time() * 1000))

    directory = StateDirectory(state_dir, plan.application_id) if state_dir is not None else None
    done_now: dict[str, list[str]] = {"publish": [], "checkpoint": [], "purge": []}
    skipped: list[str] = []

    def publish(r: TaskResults) -> PublishedTask:
        return publish_task(
            client_config,
            plan.application_id,
            plan_id,
            r,
            reduce_changelogs=reduce_changelogs,
            resolve_offset=resolve,
            planned_commits=planned,
        )

    def write_checkpoint(r: TaskResults) -> bool:
        """The task's state and ``.checkpoint`` written and recorded (False: nothing to write, or done before)."""
        if directory is None and state_bundle is None:
            return False
        bundle = r.bundle()
        if bundle is None:
            return False
        if r.task_id in checkpointed:
            skipped.append(f"checkpoint {r.task_id}")
            return False
        offsets = task_checkpoint(plan, r, r.persistent_stores(bundle), published[r.task_id])
        detail: dict[str, Any] = {"offsets": {str(tp): o for tp, o in offsets.items()}}
        target = offsets_for_version(offsets, kafka_streams_version=kafka_streams_version, eos=eos)
        if target is None:
            log.warning(
                "task [%s] no state written: a store's changelog is empty (checkpoint -4), which Kafka Streams "
                "%s under exactly_once_v2 takes as a corrupted task; the application starts the task from its "
                "changelogs (the empty store restores nothing)",
                r.task_id,
                kafka_streams_version,
            )
            detail["no_state"] = True
            stateless_for_version.add(r.task_id)
            if directory is not None:
                clear_task_state(directory, TaskId.parse(r.task_id))
        elif state_bundle is not None:
            state_bundle.put(task_object(r.task_id), task_tar(bundle, offsets))
            detail["bundle"] = task_object(r.task_id)
        if directory is not None and target is not None:
            detail["task_dir"] = str(write_task_state(directory, TaskId.parse(r.task_id), bundle, offsets))
        ledger.record(plan_id, "checkpoint", r.task_id, detail)
        done_now["checkpoint"].append(r.task_id)
        kill_point(f"checkpoint:{r.task_id}")
        return True

    sequential = stop_after is not None or kill_points_armed()
    if directory is not None:
        directory.lock()
    try:
        for wave in publish_waves(plan, results, sequential=sequential):
            todo = [r for r in wave if r.task_id not in published]
            skipped.extend(f"publish {r.task_id}" for r in wave if r.task_id in published)
            if todo:
                guard.check_group(
                    plan.application_id,
                    read_group(admin, plan.application_id, client_config=client_config),
                    plan.streams_group_epoch,
                )
            failure: Exception | None = None
            for r, outcome in _publish_side_by_side(todo, publish):
                if isinstance(outcome, Exception):
                    failure = failure or outcome
                    continue
                verify_committed(admin, plan.application_id, outcome.offsets)
                published[r.task_id] = ledger.record(plan_id, "publish", r.task_id, outcome.detail()).detail
                done_now["publish"].append(r.task_id)
                kill_point(f"publish:{r.task_id}")
            if failure is not None:
                raise failure
            for r in wave:
                if stop_after == f"publish:{r.task_id}":
                    return _summary(plan_id, done_now, skipped)
                if write_checkpoint(r) and stop_after == f"checkpoint:{r.task_id}":
                    return _summary(plan_id, done_now, skipped)
        if state_bundle is not None:
            write_manifest(
                state_bundle,
                plan.application_id,
                plan_id,
                [r.task_id for r in results if r.has_bundle and r.task_id not in stateless_for_version],
                no_state=sorted(stateless_for_version),
            )
    finally:
        if directory is not None:
            directory.unlock()

    committed_now = {name: offset for detail in published.values() for name, offset in detail["offsets"].items()}
    for name, before in purges(plan, committed_now):
        if ledger.done(plan_id, "purge", name) is not None:
            skipped.append(f"purge {name}")
            continue
        low = purge_partition(admin, guard.parse_partition(name), before)
        ledger.record(plan_id, "purge", name, {"before_offset": before, "log_start": low})
        done_now["purge"].append(name)
        kill_point(f"purge:{name}")
    return _summary(plan_id, done_now, skipped)


def _summary(plan_id: str, done: Mapping[str, list[str]], skipped: list[str]) -> HandoffSummary:
    return HandoffSummary(
        plan_id,
        published=tuple(done["publish"]),
        checkpointed=tuple(done["checkpoint"]),
        purged=tuple(done["purge"]),
        skipped=tuple(skipped),
    )
