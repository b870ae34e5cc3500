"""Write one task's directory in Kafka Streams' layout, ``.checkpoint`` last (state.md §10 step 3).

Called only after the task's transaction committed its offsets (the crash rule: state written before the offsets
would make an at_least_once application re-process records on top of state that already includes them). Order:
the old ``.checkpoint`` is deleted first (durably), then the old stores, then the process step's store bundle is
unpacked, and the new ``.checkpoint`` is written atomically (temp file, fsync, rename, fsync of the directory).
A crash anywhere before the last step leaves a task directory without a checkpoint: Kafka Streams then restores
from the changelog (under exactly_once it wipes the directory first), which is correct, only slower.

The app dir's ``.lock`` is held meanwhile, so an instance started on this host waits instead of opening half a task.
"""

from __future__ import annotations

import io
import logging
import os
import shutil
import tarfile
from collections.abc import Mapping
from pathlib import Path

from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.state import bundle_archive
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN, OffsetCheckpoint
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import checkpoint_path

log = logging.getLogger(__name__)


def checkpoint_offsets(
    stores: Mapping[str, TopicPartition],
    published_last: Mapping[TopicPartition, int],
    restored_last: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """One entry per persistent logged store: the last changelog offset its state reflects.

    The offset this hand-off published last to the changelog partition; else the last offset the plan restored from
    (the changelog's end − 1 at plan time: nothing was written since, the guard checked the group was empty); else
    -4 (``OFFSET_UNKNOWN``: an empty changelog, state.md §10 step 3).
    """
    offsets: dict[TopicPartition, int] = {}
    for _store, changelog in sorted(stores.items()):
        last = published_last.get(changelog, restored_last.get(changelog, OFFSET_UNKNOWN))
        offsets[changelog] = last if last >= 0 else OFFSET_UNKNOWN
    return offsets


#: The Kafka Streams versions a hand-off can target (``--kafka-streams-version``).
KAFKA_STREAMS_VERSIONS = ("4.2", "4.3")


def offsets_for_version(
    offsets: Mapping[TopicPartition, int], *, kafka_streams_version: str, eos: bool
) -> dict[TopicPartition, int] | None:
    """The checkpoint entries to write for the target version; ``None``: write no state for this task.

    Both versions restore from the 4.2 layout (4.3 migrates the legacy ``.checkpoint`` on its first start, state.md
    §15 item 4), except one entry: a -4 (``OFFSET_UNKNOWN``, an empty changelog) under exactly_once_v2. 4.3 drops it
    during the migration, finds a store without an offset in a non-empty task directory and wipes the task
    (FINDINGS ``rp42``). Such a store's changelog was empty and this run published nothing to it, so the store is
    empty too: a task whose every entry is -4 needs no directory at all (the app starts it empty and restores
    nothing); a task with other stores is not written (the app restores it from its changelogs: correct, slower,
    where a -4 entry would have wiped it anyway).
    """
    if kafka_streams_version not in KAFKA_STREAMS_VERSIONS:
        raise HandoffError(
            f"Kafka Streams version {kafka_streams_version!r} is not one the hand-off targets: "
            f"use one of {', '.join(KAFKA_STREAMS_VERSIONS)}"
        )
    if kafka_streams_version == "4.2" or not eos or OFFSET_UNKNOWN not in offsets.values():
        return dict(offsets)
    return None


def _safe_members(tar: tarfile.TarFile, task: TaskId) -> list[tarfile.TarInfo]:
    members = tar.getmembers()
    outside = bundle_archive.outside_entries(members)
    if outside:
        raise HandoffError(f"task [{task}] store bundle holds an entry outside the task directory: {outside[0]}")
    return members


def clear_task_state(directory: StateDirectory, task_id: TaskId) -> None:
    """Remove the task's directory (``.checkpoint`` first): the app then starts the task from its changelogs.

    For a task whose state the target version cannot take (:func:`offsets_for_version`): an old directory left
    there would describe stores from before this run. The caller holds ``directory``'s lock.
    """
    task_dir = directory.task_dir_path(task_id)
    OffsetCheckpoint(checkpoint_path(task_dir)).delete()
    if task_dir.exists():
        shutil.rmtree(task_dir)


def write_task_state(
    directory: StateDirectory, task_id: TaskId, bundle: bytes, offsets: Mapping[TopicPartition, int]
) -> Path:
    """Replace the task's directory by ``bundle`` and write its ``.checkpoint`` with ``offsets``; returns the dir.

    The caller holds ``directory``'s lock.
    """
    task_dir = directory.task_dir_path(task_id)
    checkpoint = OffsetCheckpoint(checkpoint_path(task_dir))
    checkpoint.delete()  # first: an old checkpoint must never describe the new stores
    if task_dir.exists():
        shutil.rmtree(task_dir)
    task_dir = directory.task_dir(task_id)
    with tarfile.open(fileobj=io.BytesIO(bundle)) as tar:
        members = [m for m in _safe_members(tar, task_id) if m.name != ".checkpoint"]  # written last, below
        bundle_archive.extract(tar, task_dir, members)
    for entry in task_dir.rglob("*"):
        if entry.is_file():
            with open(entry, "rb+") as handle:  # durable before the checkpoint says the store is complete
                os.fsync(handle.fileno())
    checkpoint.write(dict(offsets))
    log.info("task [%s] state written to %s with checkpoint %s", task_id, task_dir, dict(offsets))
    return task_dir
