"""What a plan reads from the application's ``state.dir``: each task's ``.checkpoint`` and the global one.

The plan decides where each store's changelog restore starts from the task's checkpoint, and whether the task
directory is empty (Kafka Streams' EOS wipe rule), and where each global store resumes from the global checkpoint.
Reading them is this module's only job, so the planning rules (``streamproc.plan.run_planner``) work on values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.store_layout import (
    CHECKPOINT_FILE_NAME,
    GLOBAL_STATE_DIR,
    application_directory,
    task_dir_is_empty,
    task_directory,
)


@dataclass(frozen=True, slots=True)
class TaskCheckpoint:
    """One task directory: its ``.checkpoint`` entries (``None``: no file) and whether the directory is empty."""

    checkpoint: Mapping[TopicPartition, int] | None = None
    task_dir_empty: bool = True


@dataclass(frozen=True, slots=True)
class LocalCheckpoints:
    """The checkpoints of an application's ``state.dir``; a task that is not listed has no directory."""

    tasks: Mapping[TaskId, TaskCheckpoint] = field(default_factory=dict)
    #: ``<state.dir>/<application.id>/global/.checkpoint`` (empty: no file)
    global_checkpoint: Mapping[TopicPartition, int] = field(default_factory=dict)

    def task(self, task_id: TaskId) -> TaskCheckpoint:
        return self.tasks.get(task_id, TaskCheckpoint())


def read_local_checkpoints(
    state_dir: Path, application_id: str, task_ids: Iterable[TaskId], *, read_global: bool = True
) -> LocalCheckpoints:
    """Read the checkpoints of ``task_ids`` and (``read_global``) the global one; a corrupt file raises."""
    tasks: dict[TaskId, TaskCheckpoint] = {}
    for task_id in task_ids:
        directory = task_directory(state_dir, application_id, task_id)
        path = directory / CHECKPOINT_FILE_NAME
        checkpoint = OffsetCheckpoint(path).read() if path.exists() else None
        tasks[task_id] = TaskCheckpoint(checkpoint, task_dir_is_empty(directory))
    global_path = application_directory(state_dir, application_id) / GLOBAL_STATE_DIR / CHECKPOINT_FILE_NAME
    global_checkpoint = OffsetCheckpoint(global_path).read() if read_global and global_path.exists() else {}
    return LocalCheckpoints(tasks, global_checkpoint)
