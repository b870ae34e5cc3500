"""The hand-off preview: every irreversible action of a hand-off, shown before the user confirms it (the CLI's
prompt, the Airflow approval form), in the order the hand-off takes them.

Two depths. From the plan alone (:meth:`RunPlan.handoff_lines`: ``plan``'s report, the Airflow plan log) a
repartition partition's commit and purge read "+ the records stage N of this run appends", since only the process
step knows how many. Once the process step's reports are in the store (the ``handoff``/``run`` prompt, the Airflow
approval), :func:`handoff_actions` works out exactly what the hand-off will do, with the rules ``procedure.handoff``
itself runs (``task_results.task_commits``, ``committable_offsets.repartition_commit_offset``,
``procedure.purges``, ``procedure.task_checkpoint``, ``state_writer.offsets_for_version``): per task its records
and its commits with their offsets, then its task directory; then the purges with their offsets. Steps the ledger
already holds (a re-run) are listed as done and left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamproc.handoff.procedure import purges, repartition_log_ends, task_checkpoint
from streamproc.handoff.state_bundle import MANIFEST, task_object
from streamproc.handoff.state_writer import offsets_for_version
from streamproc.handoff.task_results import TaskResults, load_results, planned_commits, task_commits
from streamproc.kafka import clients as kafka_clients
from streamproc.ledger import Ledger, LedgerStep
from streamproc.plan.cluster_snapshot import TopicPartition
from streamproc.plan.run_plan import RunPlan, state_text, task_directory
from streamproc.state.committable_offsets import (
    COMMIT_MARKERS_PER_TRANSACTION,
    log_end_after_transactions,
    repartition_commit_offset,
)
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN
from streamproc.storage.object_store import ObjectStore

#: The plan-only preview's line when the hand-off writes no state anywhere.
NO_STATE_DIR = "no state directory (--state-dir not given): the application restores from the changelogs"


@dataclass(frozen=True, slots=True)
class CommitAction:
    """One partition's group offset, before → after, as its task's transaction commits it.

    A repartition partition committed at its log end after this run's upstream tasks published to it also says
    why: ``log_end`` is its log end now, ``appended`` the records still to be published to it, ``markers`` their
    transactions' commit markers (``after = log_end + appended + markers``) and ``stages`` the stages writing them.
    """

    partition: str
    before: int | None
    after: int
    log_end: int | None = None
    appended: int = 0
    markers: int = 0
    stages: tuple[int, ...] = ()

    def text(self) -> str:
        before = "none" if self.before is None else str(self.before)
        line = f"commit {self.partition}: {before} -> {self.after}"
        if self.log_end is None:
            return line
        stages = ", ".join(map(str, self.stages))
        return (
            f"{line} (its log end after this run's records: {self.log_end} now + {self.appended} record(s) of "
            f"stage {stages} + {self.markers} commit marker(s))"
        )


@dataclass(frozen=True, slots=True)
class PublishAction:
    """One task's transaction: its output and changelog records (per topic) and its commits."""

    outputs: tuple[tuple[str, int], ...]
    changelogs: tuple[tuple[str, int], ...]
    reduced: bool
    commits: tuple[CommitAction, ...]

    def text(self, task_id: str) -> str:
        parts = [f"{n} record(s) to {topic}" for topic, n in self.outputs]
        reduced = "the last per key of " if self.reduced else ""
        parts += [f"{reduced}{n} changelog record(s) to {topic}" for topic, n in self.changelogs]
        commits = "and commit:" if self.commits else "no offset to commit"
        return f"publish task {task_id} in one transaction: {', '.join(parts) or 'no record'}; {commits}"


@dataclass(frozen=True, slots=True)
class TaskAction:
    """What the hand-off does for one task: its transaction (``None``: done before), then its state."""

    task_id: str
    publish: PublishAction | None
    state: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        lines = []
        if self.publish is not None:
            lines.append(self.publish.text(self.task_id))
            lines += [f"  {c.text()}" for c in self.publish.commits]
        return lines + list(self.state)


@dataclass(frozen=True, slots=True)
class PurgeAction:
    """DeleteRecords on one repartition partition before the offset the hand-off committed for it."""

    partition: str
    before_offset: int

    def text(self) -> str:
        return f"delete records of {self.partition} before offset {self.before_offset}"


@dataclass(frozen=True, slots=True)
class HandoffActions:
    """Everything a hand-off of a processed plan will do, in order, and what an earlier attempt already did."""

    tasks: tuple[TaskAction, ...]
    purges: tuple[PurgeAction, ...]
    done: tuple[str, ...] = ()
    bundle_manifest: str | None = None
    no_state_dir: bool = False

    def lines(self) -> list[str]:
        lines = []
        if self.done:
            lines.append(f"already done (in the ledger; skipped): {', '.join(self.done)}")
        for task in self.tasks:
            lines += task.lines()
        if self.no_state_dir:
            lines.append(NO_STATE_DIR)
        if self.bundle_manifest is not None:
            lines.append(f"write {self.bundle_manifest} (last: the bundle is complete)")
        return lines + [p.text() for p in self.purges]

    @property
    def commits(self) -> dict[str, int]:
        """Partition → the offset the hand-off will commit (tasks still to publish)."""
        return {c.partition: c.after for t in self.tasks if t.publish for c in t.publish.commits}


def preview(plan: RunPlan, plan_id: str, state_dir: Path | None, actions: HandoffActions | None = None) -> str:
    """The hand-off preview: a heading, then one line per action; exact when ``actions`` (from the process step's
    reports, :func:`handoff_actions`) are given, else from the plan alone."""
    if actions is not None:
        body = actions.lines()
    else:
        body = plan.handoff_lines(state_dir, no_state_line=NO_STATE_DIR if state_dir is None else None)
    lines = [f"Hand-off of plan {plan_id} for application '{plan.application_id}':"]
    return "\n".join(lines + ([f"  {line}" for line in body] or ["  nothing"]))


def processed_preview(
    plan: RunPlan,
    plan_id: str,
    *,
    client_config: Mapping[str, object],
    store: ObjectStore,
    ledger: Ledger,
    state_dir: Path | None,
    state_bundle: str | None = None,
    kafka_streams_version: str = "4.2",
    reduce_changelogs: bool = True,
) -> str:
    """The exact preview of a processed plan (the ``handoff`` prompt, the Airflow approval): the task reports from
    ``store`` (a task without one is the hand-off's own refusal, before the question), the repartition partitions'
    log ends from the cluster, the steps an earlier attempt recorded in ``ledger``."""
    results = load_results(plan, plan_id, store)
    actions = handoff_actions(
        plan,
        results,
        log_ends=read_log_ends(kafka_clients.admin(client_config), plan),
        done=ledger.steps(plan_id),
        state_dir=state_dir,
        state_bundle=state_bundle,
        kafka_streams_version=kafka_streams_version,
        reduce_changelogs=reduce_changelogs,
    )
    return preview(plan, plan_id, state_dir, actions)


def read_log_ends(admin: Any, plan: RunPlan) -> dict[TopicPartition, int]:
    """The log end of every repartition partition of the plan, now (the base of its predicted commit offset)."""
    return repartition_log_ends(admin, [TopicPartition(r.topic, r.partition) for r in plan.ranges if r.internal])


def handoff_actions(
    plan: RunPlan,
    results: Sequence[TaskResults],
    *,
    log_ends: Mapping[TopicPartition, int],
    done: Sequence[LedgerStep] = (),
    state_dir: Path | None = None,
    state_bundle: str | None = None,
    kafka_streams_version: str = "4.2",
    reduce_changelogs: bool = True,
) -> HandoffActions:
    """What ``procedure.handoff`` will do with these task results (in its order), see the module docstring.

    ``log_ends``: each repartition partition's log end now (:func:`read_log_ends`); ``done``: the plan's steps in
    the ledger. A repartition partition's offset is exact as long as nothing but the hand-off writes to it
    meanwhile (the application is stopped: the guard's premise); a re-run that fences a crashed transaction adds
    its abort marker, and the hand-off then commits past that too (it reads the log end when it commits).
    """
    recorded = {(s.kind, s.subject) for s in done}
    published = {s.subject: s.detail for s in done if s.kind == "publish"}
    eos = plan.isolation_level == "read_committed"
    rules = _Rules(plan, results, log_ends, published)
    committed = {name: int(offset) for detail in published.values() for name, offset in detail["offsets"].items()}
    tasks = []
    for r in results:
        publish = None
        detail = published.get(r.task_id)
        if detail is None:
            commits = tuple(rules.commit(c.partition, c.next_offset) for c in task_commits(r, rules.planned))
            publish = PublishAction(
                _per_topic(r.report.get("outputs", {})),
                _per_topic(r.report.get("changelogs", {})),
                reduce_changelogs,
                commits,
            )
            committed.update({c.partition: c.after for c in commits})
            detail = _expected_detail(r, commits)
        state: tuple[str, ...] = ()
        if (state_dir is not None or state_bundle is not None) and ("checkpoint", r.task_id) not in recorded:
            state = _state_lines(plan, r, detail, state_dir, state_bundle, kafka_streams_version, eos)
        if publish is not None or state:
            tasks.append(TaskAction(r.task_id, publish, state))
    return HandoffActions(
        tasks=tuple(tasks),
        purges=tuple(PurgeAction(n, o) for n, o in purges(plan, committed) if ("purge", n) not in recorded),
        done=tuple(f"{s.kind} {s.subject}" for s in done),
        bundle_manifest=None if state_bundle is None else f"{state_bundle.rstrip('/')}/{MANIFEST}",
        no_state_dir=state_dir is None and state_bundle is None and any(r.has_bundle for r in results),
    )


class _Rules:
    """The hand-off's commit rule over the plan and the reports: which tasks append to which repartition
    partition, and what its log end will be when its own task commits (every writer published by then: stages
    are handed off in order)."""

    def __init__(
        self,
        plan: RunPlan,
        results: Sequence[TaskResults],
        log_ends: Mapping[TopicPartition, int],
        published: Mapping[str, Any],
    ) -> None:
        self.planned = planned_commits(plan)
        self._log_ends = log_ends
        self._befores = {r.name: r.committed_offset for r in plan.ranges}
        self._ends = {TopicPartition(r.topic, r.partition): r.end for r in plan.ranges if r.internal}
        stage_of = {sub: i for i, stage in enumerate(plan.stages) for sub in stage}
        #: per repartition partition, (stage, records) of each task still to publish records to it
        self._pending: dict[TopicPartition, list[tuple[int, int]]] = {}
        for r in results:
            if r.task_id in published:
                continue  # its records and their marker are in the log end already
            for name, count in r.report.get("outputs", {}).items():
                topic, _, partition = name.rpartition("+")
                tp = TopicPartition(topic, int(partition))
                if tp in self._ends and int(count) > 0:
                    self._pending.setdefault(tp, []).append((stage_of.get(r.task.subtopology, 0), int(count)))

    def commit(self, partition: TopicPartition, next_offset: int) -> CommitAction:
        name, before = str(partition), self._befores.get(str(partition))
        end = self._ends.get(partition)
        if end is None:
            return CommitAction(name, before, next_offset)
        pending = self._pending.get(partition, [])
        used: list[int] = []

        def log_end() -> int:
            if partition not in self._log_ends:
                raise KeyError(f"the log end of repartition partition {partition} was not read")
            used.append(self._log_ends[partition])
            return log_end_after_transactions(used[0], [n for _, n in pending])

        after = repartition_commit_offset(next_offset, end, log_end)
        if not used:
            return CommitAction(name, before, after)
        return CommitAction(
            name,
            before,
            after,
            log_end=used[0],
            appended=sum(n for _, n in pending),
            markers=COMMIT_MARKERS_PER_TRANSACTION * len(pending),
            stages=tuple(sorted({stage for stage, _ in pending})),
        )


def _expected_detail(results: TaskResults, commits: Sequence[CommitAction]) -> dict[str, Any]:
    """The publish step's ledger detail as far as the checkpoint rule reads it before the publish: the offsets to
    commit, and a changelog offset (some offset ≥ 0; which one the publish tells) per changelog partition the task
    publishes records to. Enough to know which checkpoint entries will be unknown (-4)."""
    changelogs = sorted(_dash(name) for name, n in results.report.get("changelogs", {}).items() if int(n) > 0)
    return {"offsets": {c.partition: c.after for c in commits}, "changelog_last": dict.fromkeys(changelogs, 0)}


def _dash(name: str) -> str:
    """``topic+p`` (the reports' object names) → ``topic-p`` (the ledger's partition names)."""
    topic, sep, partition = name.rpartition("+")
    return f"{topic}-{partition}" if sep else name


def _state_lines(
    plan: RunPlan,
    results: TaskResults,
    published: Mapping[str, Any],
    state_dir: Path | None,
    state_bundle: str | None,
    kafka_streams_version: str,
    eos: bool,
) -> tuple[str, ...]:
    """The task's state step: its directory replaced (``.checkpoint`` last), its bundle tar, or (a target version
    that cannot take an unknown checkpoint entry) its directory removed; nothing for a task without persistent
    stores (no store bundle)."""
    if not results.has_bundle:
        return ()
    if _unknown_entry_drops_state(kafka_streams_version, eos):  # which stores are persistent matters only here
        persistent = results.persistent_stores(results.bundle() or b"")
    else:
        persistent = frozenset(s.name for s in results.task.stores)
    offsets = task_checkpoint(plan, results, persistent, published)
    directory = task_directory(plan.application_id, results.task_id)
    where = None if state_dir is None else str(state_dir / directory)
    if offsets_for_version(offsets, kafka_streams_version=kafka_streams_version, eos=eos) is None:
        why = (
            f"a store's changelog is empty (checkpoint {OFFSET_UNKNOWN}), which Kafka Streams "
            f"{kafka_streams_version} under exactly_once_v2 takes as a corrupted task; the application restores "
            "the task from its changelogs"
        )
        lines = [] if where is None else [f"remove {where}: {why}"]
        if state_bundle is not None:
            lines.append(f"list task {results.task_id} under no_state in the bundle ({why})")
        return tuple(lines)
    lines = []
    if state_bundle is not None:
        tar = f"{state_bundle.rstrip('/')}/{task_object(results.task_id)}"
        lines.append(f"write {tar} (the process step's stores and the .checkpoint)")
    if where is not None:
        lines.append(state_text(where))
    return tuple(lines)


def _unknown_entry_drops_state(kafka_streams_version: str, eos: bool) -> bool:
    """Whether a -4 checkpoint entry makes the hand-off write no state for the task (``offsets_for_version``)."""
    return offsets_for_version({TopicPartition("", 0): OFFSET_UNKNOWN}, kafka_streams_version=kafka_streams_version,
                               eos=eos) is None  # fmt: skip


def _per_topic(counts: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """``{"topic+p": n}`` → ``((topic, total), ...)`` for topics with records."""
    totals: dict[str, int] = {}
    for name, n in sorted(counts.items()):
        topic = name.rpartition("+")[0]
        totals[topic] = totals.get(topic, 0) + int(n)
    return tuple((topic, n) for topic, n in totals.items() if n)
