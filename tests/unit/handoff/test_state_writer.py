"""Checkpoint entries per target Kafka Streams version (state.md §15, FINDINGS rp42) and clearing a task's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.handoff.state_writer import clear_task_state, offsets_for_version
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN, OffsetCheckpoint
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import checkpoint_path

COUNTS = TopicPartition("app-counts-changelog", 0)
EMPTY = TopicPartition("app-seen-changelog", 0)


@pytest.mark.parametrize("eos", [False, True])
def test_42_keeps_every_entry_including_unknown(eos: bool) -> None:
    offsets = {COUNTS: 41, EMPTY: OFFSET_UNKNOWN}
    assert offsets_for_version(offsets, kafka_streams_version="4.2", eos=eos) == offsets


def test_43_keeps_unknown_under_at_least_once_and_real_offsets_under_eos() -> None:
    offsets = {COUNTS: 41, EMPTY: OFFSET_UNKNOWN}
    assert offsets_for_version(offsets, kafka_streams_version="4.3", eos=False) == offsets
    assert offsets_for_version({COUNTS: 41}, kafka_streams_version="4.3", eos=True) == {COUNTS: 41}


@pytest.mark.parametrize("offsets", [{EMPTY: OFFSET_UNKNOWN}, {COUNTS: 41, EMPTY: OFFSET_UNKNOWN}])
def test_43_under_eos_never_gets_an_unknown_entry(offsets: dict[TopicPartition, int]) -> None:
    assert offsets_for_version(offsets, kafka_streams_version="4.3", eos=True) is None


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(HandoffError, match=r"'3\.9' is not one the hand-off targets: use one of 4\.2, 4\.3"):
        offsets_for_version({}, kafka_streams_version="3.9", eos=False)


def test_clear_task_state_removes_the_checkpoint_and_the_stores(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, "app")
    task = TaskId(0, 1)
    task_dir = directory.task_dir(task)
    (task_dir / "rocksdb" / "counts").mkdir(parents=True)
    (task_dir / "rocksdb" / "counts" / "CURRENT").write_text("MANIFEST-000001\n")
    OffsetCheckpoint(checkpoint_path(task_dir)).write({COUNTS: 41})
    other = directory.task_dir(TaskId(0, 0))
    clear_task_state(directory, task)
    assert not task_dir.exists() and other.exists()
    clear_task_state(directory, task)  # a re-run finds nothing to clear
