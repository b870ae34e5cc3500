"""The hand-off guard's refusals: an active group, a streams group, moved offsets, a locked or newer state dir."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.handoff import guard
from streamproc.plan.cluster_snapshot import CommittedOffset, GroupMember, GroupState
from streamproc.plan.run_plan import PlannedRestore, PlannedStore, PlannedTask, RunPlan
from streamproc.state.offset_checkpoint import OffsetCheckpoint

APP = "orders-app"
IN0, IN1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
CHANGELOG = TopicPartition(f"{APP}-counts-changelog", 0)


def plan() -> RunPlan:
    task = PlannedTask("0_0", 0, 0, ("orders-0",), (PlannedStore("counts", CHANGELOG.topic, 0),))
    restore = PlannedRestore("0_0", "counts", CHANGELOG.topic, 0, 0, 8, None)
    return RunPlan(APP, "read_uncommitted", "committed", "latest", "committed", (), (task,), ((0,),), (), (), (),
                   restores=(restore,))  # fmt: skip


def test_an_empty_or_absent_group_passes() -> None:
    guard.check_group(APP, None)
    guard.check_group(APP, GroupState("classic", "Empty", ()))


def test_a_group_with_members_is_refused_naming_them_and_their_hosts() -> None:
    group = GroupState("classic", "Stable", (GroupMember("app-1-StreamThread-1-consumer", "/10.0.0.7"),))
    with pytest.raises(guard.GroupActive, match=r"Stable with 1 member\(s\) \(app-1-StreamThread-1-consumer on "
                       r"/10.0.0.7\): either an instance of the application is running, or") as refused:  # fmt: skip
        guard.check_group(APP, group)
    # the hand-off offers no wait: members still there when it starts are refused
    assert "stop every instance and run the hand-off again (kafka-consumer-groups.sh" in str(refused.value)
    assert "--wait-for-empty-group" not in str(refused.value)


def test_a_streams_group_whose_members_are_unknown_is_refused_with_why_and_what_to_do() -> None:
    unknown = GroupState("streams", "Unknown", (), members_unknown="cannot read __consumer_offsets: not authorized")
    with pytest.raises(guard.StreamsGroupRefused) as refused:
        guard.check_group(APP, unknown)
    text = str(refused.value)
    assert "could not read from __consumer_offsets (cannot read __consumer_offsets: not authorized)" in text
    assert "an empty streams group is supported when its principal may READ __consumer_offsets" in text
    assert "--export" in text and "group.protocol=classic" in text


def test_an_empty_streams_group_is_handed_off_to() -> None:
    guard.check_group(APP, GroupState("streams", "Empty", (), epoch=4))


def test_a_streams_group_at_the_plans_epoch_is_handed_off_to_and_one_whose_epoch_moved_is_refused() -> None:
    guard.check_group(APP, GroupState("streams", "Empty", (), epoch=4), planned_epoch=4)
    guard.check_group(APP, GroupState("classic", "Empty", ()), planned_epoch=None)  # a classic plan: no epoch
    with pytest.raises(guard.GroupEpochMoved) as moved:
        guard.check_group(APP, GroupState("streams", "Empty", (), epoch=6), planned_epoch=4)
    assert str(moved.value) == (
        f"streams group '{APP}' is at epoch 6, the plan was made at epoch 4: members joined or left (an instance "
        "of the application ran) or the group changed since the plan; make a new plan"
    )
    with pytest.raises(guard.GroupEpochMoved, match=f"streams group '{APP}' no longer exists, the plan was made at "
                       "epoch 4"):  # fmt: skip
        guard.check_group(APP, None, planned_epoch=4)
    # members are named first: the application still runs
    with pytest.raises(guard.GroupActive):
        guard.check_group(APP, GroupState("streams", "NotEmpty", (GroupMember("c-1", "h", "m1"),), epoch=5), 4)


def test_a_streams_group_with_members_is_refused_naming_them_and_their_hosts() -> None:
    group = GroupState(
        "streams", "NotEmpty", (GroupMember("app-1-StreamThread-1-consumer", "10.0.0.7", "m1"),), epoch=3
    )
    with pytest.raises(guard.GroupActive) as refused:
        guard.check_group(APP, group)
    assert str(refused.value).startswith(
        f"streams group '{APP}' at epoch 3 has 1 member(s) (app-1-StreamThread-1-consumer on 10.0.0.7): stop every "
        "instance and run the hand-off again (`kafka-streams-groups.sh --describe"
    )


def test_the_hand_off_and_the_plan_refuse_a_group_with_one_rule() -> None:
    """The guard asks the plan's precondition (one definition): same classes, the hand-off's own next step and no
    offer to wait."""
    from streamproc.plan import preconditions, refusals
    from streamproc.plan.empty_group import PLAN_WAIT_HINT

    group = GroupState("classic", "Stable", (GroupMember("c-1", "/10.0.0.7"),))
    with pytest.raises(refusals.GroupActive) as planned:
        preconditions.check_group(group, APP)
    with pytest.raises(guard.GroupActive) as handed:
        guard.check_group(APP, group)
    plan_text = str(planned.value).replace(f", {PLAN_WAIT_HINT}", "")
    assert plan_text.replace("plan again", "run the hand-off again") == str(handed.value)
    assert guard.StreamsGroupRefused is refusals.StreamsGroupRefused


def test_moved_offsets_are_refused_showing_both_sets() -> None:
    expected = {IN0: 10, IN1: None}
    guard.check_offsets(APP, expected, {IN0: CommittedOffset(10, "x")})
    not_ours = r" \(not committed by streamproc's hand-off\)"
    with pytest.raises(
        guard.OffsetsMoved,
        match=rf"planned orders-0=10, orders-1=none; now orders-0=14{not_ours}, orders-1=3{not_ours}; the application "
        r"\(or another tool\) processed records meanwhile",
    ):
        guard.check_offsets(APP, expected, {IN0: CommittedOffset(14), IN1: CommittedOffset(3)})
    with pytest.raises(guard.OffsetsMoved, match="UNSTABLE_OFFSET_COMMIT"):
        guard.check_offsets(APP, expected, {}, unstable=True)


def test_a_move_by_streamproc_says_which_plan_and_task_committed_it() -> None:
    """The commit metadata's hand-off mark tells streamproc's commits from the application's (issue #27, 2)."""
    from streamproc.state.commit_metadata import TopicPartitionMetadata

    other = CommittedOffset(14, TopicPartitionMetadata(5).encode(handoff_mark="feedfeedfeedfeed/0_0"))
    with pytest.raises(
        guard.OffsetsMoved,
        match=r"now orders-0=14 \(committed by streamproc's hand-off of task 0_0 of another plan, feedfeedfeedfeed\); "
        r"another streamproc hand-off of the application committed meanwhile: make a new plan",
    ):
        guard.check_offsets(APP, {IN0: 10}, {IN0: other}, plan_id="0123456789abcdef")
    with pytest.raises(guard.OffsetsMoved, match=r"by this plan's hand-off of task 0_0, at another offset"):
        guard.check_offsets(APP, {IN0: 10}, {IN0: other}, plan_id="feedfeedfeedfeed")


def test_offsets_a_recorded_task_committed_are_expected_on_a_rerun() -> None:
    expected = guard.expected_offsets(plan(), {"0_0": {"offsets": {"orders-0": 25}}})
    assert expected == {IN0: 25}


def test_a_checkpoint_newer_than_the_plan_is_refused(tmp_path: Path) -> None:
    task_dir = tmp_path / APP / "0_0"
    task_dir.mkdir(parents=True)
    OffsetCheckpoint(task_dir / ".checkpoint").write({CHANGELOG: 7})  # the plan restored up to 7: fine
    guard.check_state_dir(tmp_path, plan())
    OffsetCheckpoint(task_dir / ".checkpoint").write({CHANGELOG: 9})
    with pytest.raises(guard.StateDirRefused, match=r"holds offset 9 for .*-counts-changelog-0, newer than the plan "
                       r"\(its changelog ended at 8\)"):  # fmt: skip
        guard.check_state_dir(tmp_path, plan())
    guard.check_state_dir(tmp_path, plan(), skip_tasks=frozenset({"0_0"}))


def test_a_state_dir_locked_by_another_process_is_refused(tmp_path: Path) -> None:
    app_dir = tmp_path / APP
    app_dir.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'a+b'); fcntl.lockf(f, fcntl.LOCK_EX); "
         "print('locked', flush=True); time.sleep(60)", str(app_dir / ".lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(guard.StateDirRefused, match=r"is locked .*a Kafka Streams instance"):
            guard.check_state_dir(tmp_path, plan())
    finally:
        holder.kill()
        holder.wait()
    guard.check_state_dir(tmp_path, plan())


def test_a_global_store_restore_is_no_task_checkpoint_and_its_checkpoint_may_move_on(tmp_path: Path) -> None:
    """The hand-off writes nothing of global stores: the state dir's ``global/.checkpoint`` is the app's own."""
    from dataclasses import replace

    from streamproc.plan.run_planner import GLOBAL_TASK

    products = TopicPartition("products", 0)
    with_global = replace(
        plan(), restores=(*plan().restores, PlannedRestore(GLOBAL_TASK, "p", "products", 0, 0, 5, None))
    )
    assert [str(p.task_id) for p in guard.planned_checkpoints(with_global)] == ["0_0"]
    (tmp_path / APP / "global").mkdir(parents=True)
    OffsetCheckpoint(tmp_path / APP / "global" / ".checkpoint").write({products: 9})
    guard.check_state_dir(tmp_path, with_global)
