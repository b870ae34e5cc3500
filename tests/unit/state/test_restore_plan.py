"""The start-up restore decision (state.md §4-§5): checkpoint trust, EOS corruption and wipe, bounds, counts."""

from __future__ import annotations

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN
from streamproc.state.restore_plan import (
    ChangelogState,
    CheckpointOutOfRange,
    ProcessingGuarantee,
    check_checkpoint_offsets,
    plan_restore,
)
from streamproc.state.store_registration import StateStoreMetadata

ALOS = ProcessingGuarantee.AT_LEAST_ONCE
EOS = ProcessingGuarantee.EXACTLY_ONCE_V2
A = TopicPartition("app-a-changelog", 0)
B = TopicPartition("app-b-changelog", 0)
STORE_A = StateStoreMetadata("a", True, A)
STORE_B = StateStoreMetadata("b", True, B)
FULL = ChangelogState(0, 100)


def _one(
    guarantee: ProcessingGuarantee,
    checkpoint: dict[TopicPartition, int] | None,
    *,
    task_dir_empty: bool,
    changelog: ChangelogState = FULL,
    ks_version: str = "4.2",
) -> tuple[bool, bool, bool, int, int, int]:
    plan = plan_restore(
        guarantee, [STORE_A], checkpoint, {A: changelog}, task_dir_empty=task_dir_empty, ks_version=ks_version
    )
    r = plan.restores[0]
    return (
        plan.task_corrupted,
        plan.local_state_wiped,
        plan.checkpoint_deleted_at_init,
        r.start_offset,
        r.restore_end_offset,
        r.records_restored,
    )


def test_alos_checkpoint_at_end_restores_nothing() -> None:
    assert _one(ALOS, {A: 99}, task_dir_empty=False) == (False, False, False, 100, 100, 0)


def test_eos_deletes_checkpoint_and_skips_marker() -> None:
    changelog = ChangelogState(0, 101, control_offsets=frozenset({100}))
    assert _one(EOS, {A: 99}, task_dir_empty=False, changelog=changelog) == (False, False, True, 100, 101, 0)


def test_eos_sentinel_entry_is_not_missing_in_4_2() -> None:
    assert _one(EOS, {A: OFFSET_UNKNOWN}, task_dir_empty=False) == (False, False, True, 0, 100, 100)


def test_eos_sentinel_entry_corrupts_in_4_3() -> None:
    assert _one(EOS, {A: OFFSET_UNKNOWN}, task_dir_empty=False, ks_version="4.3") == (True, True, True, 0, 100, 100)


def test_4_3_migrates_and_deletes_under_alos_too() -> None:
    assert _one(ALOS, {A: 99}, task_dir_empty=False, ks_version="4.3") == (False, False, True, 100, 100, 0)


def test_eos_missing_checkpoint_with_state_wipes() -> None:
    assert _one(EOS, None, task_dir_empty=False) == (True, True, False, 0, 100, 100)
    assert _one(EOS, None, task_dir_empty=True) == (False, False, False, 0, 100, 100)
    assert _one(ALOS, None, task_dir_empty=False) == (False, False, False, 0, 100, 100)


def test_one_missing_entry_wipes_every_store_under_eos() -> None:
    plan = plan_restore(EOS, [STORE_A, STORE_B], {A: 99}, {A: FULL, B: FULL}, task_dir_empty=False)
    assert plan.task_corrupted and plan.local_state_wiped and not plan.checkpoint_deleted_at_init
    assert [r.start_offset for r in plan.restores] == [0, 0]


def test_checkpoint_below_log_start_alos_keeps_other_stores() -> None:
    changelogs = {A: ChangelogState(100, 150), B: FULL}
    plan = plan_restore(ALOS, [STORE_A, STORE_B], {A: 40, B: 89}, changelogs, task_dir_empty=False)
    assert plan.task_corrupted and not plan.local_state_wiped
    assert plan.corrupted_changelogs == (A,)
    assert [(r.start_offset, r.records_restored) for r in plan.restores] == [(100, 50), (90, 10)]


def test_checkpoint_below_log_start_eos_wipes_all() -> None:
    changelogs = {A: ChangelogState(100, 150), B: FULL}
    plan = plan_restore(EOS, [STORE_A, STORE_B], {A: 40, B: 89}, changelogs, task_dir_empty=False)
    assert plan.task_corrupted and plan.local_state_wiped and plan.checkpoint_deleted_at_init
    assert [r.start_offset for r in plan.restores] == [100, 0]


def test_checkpoint_equal_to_log_end_is_corruption() -> None:
    assert _one(ALOS, {A: 100}, task_dir_empty=False) == (True, False, False, 0, 100, 100)
    assert _one(ALOS, {A: 4}, task_dir_empty=False, changelog=ChangelogState(5, 100)) == (
        False,
        False,
        False,
        5,
        100,
        95,
    )


def test_source_topic_changelog_bounded_by_committed_offset() -> None:
    store = StateStoreMetadata("t", True, A, source_topic_changelog=True)
    committed = ChangelogState(0, 80, group_committed_offset=60)
    plan = plan_restore(ALOS, [store], {A: 49}, {A: committed}, task_dir_empty=False)
    assert (plan.restores[0].start_offset, plan.restores[0].restore_end_offset, plan.restores[0].records_restored) == (
        50,
        60,
        10,
    )
    none = ChangelogState(0, 80)
    plan = plan_restore(ALOS, [store], {A: 49}, {A: none}, task_dir_empty=False)
    assert (plan.restores[0].restore_end_offset, plan.restores[0].records_restored) == (0, 0)


def test_aborted_records_applied_only_under_alos() -> None:
    changelog = ChangelogState(0, 100, control_offsets=frozenset({98}), aborted_offsets=frozenset({95, 96, 97}))
    assert _one(ALOS, {A: 89}, task_dir_empty=False, changelog=changelog)[5] == 9
    assert _one(EOS, {A: 89}, task_dir_empty=False, changelog=changelog)[5] == 6


def test_null_keys_skipped() -> None:
    changelog = ChangelogState(0, 10, null_key_offsets=frozenset({3, 7}))
    assert _one(ALOS, None, task_dir_empty=False, changelog=changelog)[5] == 8


def test_in_memory_and_unlogged_stores() -> None:
    mem = StateStoreMetadata("mem", False, A)
    unlogged = StateStoreMetadata("u", True, None)
    plan = plan_restore(EOS, [mem, unlogged], {A: 99}, {A: FULL}, task_dir_empty=False)
    assert not plan.task_corrupted
    assert [(r.store_name, r.start_offset, r.records_restored) for r in plan.restores] == [("mem", 0, 100)]
    assert plan.restore_for("u") is None


def test_input_validation() -> None:
    with pytest.raises(StateError):
        ChangelogState(5, 4)
    with pytest.raises(StateError, match="no state given"):
        plan_restore(ALOS, [STORE_A], None, {}, task_dir_empty=True)
    with pytest.raises(StateError, match="unsupported"):
        plan_restore(ALOS, [STORE_A], None, {A: FULL}, task_dir_empty=True, ks_version="3.9")


def test_eos_checkpoint_on_commit_marker_restores_nothing() -> None:
    changelog = ChangelogState(0, 101, control_offsets=frozenset({100}))
    assert _one(EOS, {A: 100}, task_dir_empty=False, changelog=changelog) == (False, False, True, 101, 101, 0)


def test_check_checkpoint_offsets_bounds() -> None:
    changelogs = {A: ChangelogState(10, 100)}
    assert check_checkpoint_offsets({A: 99}, changelogs) == []
    assert check_checkpoint_offsets({A: 9}, changelogs) == []
    for bad in (100, 8):
        with pytest.raises(CheckpointOutOfRange, match=f"checkpoint offset {bad} for app-a-changelog-0"):
            check_checkpoint_offsets({A: bad}, changelogs)
    with pytest.raises(StateError, match="no changelog state"):
        check_checkpoint_offsets({B: 1}, changelogs)


def test_check_checkpoint_offsets_warns_on_unknown() -> None:
    assert check_checkpoint_offsets({A: OFFSET_UNKNOWN}, {A: ChangelogState(0, 0)}) == []
    warnings = check_checkpoint_offsets({A: OFFSET_UNKNOWN}, {A: ChangelogState(0, 5)}, guarantee=EOS, ks_version="4.3")
    assert len(warnings) == 2
