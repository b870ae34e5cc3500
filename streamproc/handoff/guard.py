"""The checks that must pass immediately before a hand-off commits anything (state.md §10 preconditions).

The broker does not protect a running application from the tool: a ``TxnOffsetCommit`` with generation -1 is
accepted even while the group has members (§8.4), so the tool itself must see an empty group, unchanged committed
offsets and an unlocked state directory whose checkpoints are not newer than the plan. Each refusal is one line
saying what was found and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.plan import preconditions, refusals
from streamproc.plan.cluster_snapshot import CommittedOffset, GroupState, TopicPartition
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_planner import GLOBAL_TASK
from streamproc.state.commit_metadata import handoff_mark
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import checkpoint_path

#: The plan's refusals of an active or streams group, raised here too (one rule: plan/preconditions.check_group).
GroupActive = refusals.GroupActive
StreamsGroupRefused = refusals.StreamsGroupRefused


class OffsetsMoved(HandoffError):
    """The group's committed offsets are no longer those the plan started from."""


class GroupEpochMoved(HandoffError):
    """The application's streams group is no longer at the epoch the plan was made at."""


class StateDirRefused(HandoffError):
    """The target state directory is in use or holds checkpoints newer than the plan."""


def parse_partition(name: str) -> TopicPartition:
    """``topic-partition`` (the plan's partition names) → a ``TopicPartition``."""
    topic, _, partition = name.rpartition("-")
    return TopicPartition(topic, int(partition))


def check_group(application_id: str, group: GroupState | None, planned_epoch: int | None = None) -> None:
    """The plan's rule (``plan/preconditions.check_group``) asked again right before anything is committed: an
    empty streams group is handed off to as a classic group is (the broker accepts the transactional offset commit
    for it, docs/streams-groups.md), one with members or whose members could not be read is refused. The hand-off
    offers no wait for the group to empty: members that are still there when it starts are refused.

    A streams group must also still be at the plan's epoch (``planned_epoch``, ``RunPlan.streams_group_epoch``):
    the coordinator bumps it whenever a member joins or leaves or the group's topology changes, so an application
    that ran and stopped again since the plan is seen even where its offsets did not move (it had nothing to
    commit, or committed the very offsets the plan starts from)."""
    preconditions.check_group(group, application_id, then="run the hand-off again", wait_hint=None)
    if planned_epoch is None:
        return
    now = group.epoch if group is not None and group.protocol == "streams" else None
    if now == planned_epoch:
        return
    if group is None:
        found = "no longer exists"
    elif group.protocol != "streams":
        found = f"is now a {group.protocol} group"
    else:
        found = f"is at epoch {'unknown' if now is None else now}"
    raise GroupEpochMoved(
        f"streams group '{application_id}' {found}, the plan was made at epoch {planned_epoch}: members joined or "
        "left (an instance of the application ran) or the group changed since the plan; make a new plan"
    )


def check_offsets(
    application_id: str,
    expected: Mapping[TopicPartition, int | None],
    committed: Mapping[TopicPartition, CommittedOffset],
    *,
    unstable: bool = False,
    pending: Sequence[TopicPartition] = (),
    waited_s: float = 0.0,
    plan_id: str | None = None,
) -> None:
    """Refuse when any partition's committed offset differs from ``expected`` (``None``: nothing committed), or a
    transactional commit is still pending (``unstable``, on ``pending`` after ``waited_s``).

    Each moved partition says whose commit it is, read from its metadata: streamproc's hand-off of another plan (or
    of this plan at another offset), or not streamproc's at all (the application, another tool). Commits of this
    plan's own tasks are recognised before this check (``handoff/reconcile.py``) and are in ``expected``.
    """
    if unstable:
        raise OffsetsMoved(refusals.pending_commit_message(application_id, pending, waited_s, "run the hand-off again"))
    moved = []
    for tp, want in sorted(expected.items()):
        got = committed.get(tp)
        now = None if got is None else got.offset
        if now != want:
            moved.append((tp, want, got))
    if moved:
        planned = ", ".join(f"{tp}={_offset(want)}" for tp, want, _ in moved)
        found = ", ".join(f"{tp}={_offset(None if got is None else got.offset)}{_whose(got, plan_id)}"
                          for tp, _, got in moved)  # fmt: skip
        by_streamproc = any(got is not None and handoff_mark(got.metadata) is not None for _, _, got in moved)
        meanwhile = (
            "another streamproc hand-off of the application committed meanwhile"
            if by_streamproc
            else "the application (or another tool) processed records meanwhile"
        )
        raise OffsetsMoved(
            f"group '{application_id}' committed offsets moved since the plan: planned {planned}; now {found}; "
            f"{meanwhile}: make a new plan from the current offsets"
        )


def _whose(got: CommittedOffset | None, plan_id: str | None) -> str:
    """Who committed ``got``, from its metadata's hand-off mark (``publish.commit_mark``: ``<plan id>/<task>``)."""
    if got is None:
        return ""
    mark = handoff_mark(got.metadata)
    if mark is None:
        return " (not committed by streamproc's hand-off)"
    plan, _, task = mark.partition("/")
    if plan == plan_id:
        return f" (committed by this plan's hand-off of task {task}, at another offset than it commits)"
    return f" (committed by streamproc's hand-off of task {task} of another plan, {plan})"


def _offset(offset: int | None) -> str:
    return "none" if offset is None else str(offset)


@dataclass(frozen=True, slots=True)
class PlannedCheckpoint:
    """The newest changelog offset the plan knows for one store's changelog partition (its end − 1)."""

    task_id: TaskId
    changelog: TopicPartition
    last_offset: int


def planned_checkpoints(plan: RunPlan) -> list[PlannedCheckpoint]:
    """Per planned restore, the last changelog offset at plan time: a checkpoint beyond it is newer than the plan.

    Global stores are left out: the hand-off writes nothing of them (the application restores them from their
    topics, from its own ``global/.checkpoint``), so their checkpoint may move on freely."""
    return [
        PlannedCheckpoint(TaskId.parse(r.task_id), TopicPartition(r.changelog_topic, r.changelog_partition), r.end - 1)
        for r in plan.restores
        if r.task_id != GLOBAL_TASK
    ]


def check_state_dir(state_dir: Path, plan: RunPlan, *, skip_tasks: frozenset[str] = frozenset()) -> None:
    """Refuse a state dir whose ``.lock`` another process holds, or whose checkpoints are newer than the plan's.

    ``skip_tasks``: tasks whose checkpoint this hand-off already wrote (a re-run after a crash).
    """
    directory = StateDirectory(state_dir, plan.application_id)
    if directory.is_locked_elsewhere():
        raise StateDirRefused(
            f"state directory {directory.app_dir} is locked ({directory.lock_path} is held): a Kafka Streams "
            "instance of the application is running on this host; stop it and run the hand-off again"
        )
    planned: dict[tuple[TaskId, TopicPartition], int] = {
        (p.task_id, p.changelog): p.last_offset for p in planned_checkpoints(plan)
    }
    tasks = {TaskId.parse(t.task_id): t for t in plan.tasks}
    for task_id, task in tasks.items():
        if task.task_id in skip_tasks:
            continue
        path = checkpoint_path(directory.task_dir_path(task_id))
        offsets = OffsetCheckpoint(path).read()
        for store in task.stores:
            changelog = TopicPartition(store.changelog_topic, store.changelog_partition)
            found = offsets.get(changelog)
            limit = planned.get((task_id, changelog))
            if found is not None and found >= 0 and (limit is None or found > limit):
                raise StateDirRefused(
                    f"task [{task_id}] checkpoint {path} holds offset {found} for {changelog}, newer than the plan "
                    f"(its changelog ended at {'an unknown offset' if limit is None else limit + 1}): the "
                    "application ran after the plan was made; make a new plan"
                )


def expected_offsets(plan: RunPlan, published: Mapping[str, Mapping[str, Any]]) -> dict[TopicPartition, int | None]:
    """The committed offset each planned partition must have now: the plan's "before" offset, or for a task this
    hand-off already published (``published``: task id → its ledger detail) the offsets its transaction committed."""
    expected: dict[TopicPartition, int | None] = {
        TopicPartition(r.topic, r.partition): r.committed_offset for r in plan.ranges
    }
    for detail in published.values():
        for name, offset in detail.get("offsets", {}).items():
            expected[parse_partition(name)] = int(offset)
    return expected
