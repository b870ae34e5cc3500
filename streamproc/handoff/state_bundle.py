"""State for another host: each task's directory and ``.checkpoint`` as one tar in object storage, unpacked on the
host that will run the application by ``streamproc handoff install-state``.

Layout under the bundle location: ``state/<task id>.tar`` (the process step's stores plus the ``.checkpoint`` the
hand-off computed after the task's offsets were committed), then ``bundle.json`` (application id, plan id, tasks,
and ``no_state``: the tasks that must have no directory) written last: a bundle without it is incomplete and is
refused. Installing writes each task directory as the hand-off does on its own host (old checkpoint deleted first,
stores, ``.checkpoint`` last and atomically) and removes the directory of every ``no_state`` task (a target
version that cannot take its state, ``state_writer.offsets_for_version``: an old directory left there would
describe stores from before this run), under the app dir's ``.lock``.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import HandoffError
from streamproc.handoff.state_writer import clear_task_state, write_task_state
from streamproc.state.offset_checkpoint import parse_offsets, serialize_offsets
from streamproc.state.state_directory import StateDirectory
from streamproc.storage.object_store import ObjectStore

MANIFEST = "bundle.json"
CHECKPOINT_ENTRY = ".checkpoint"


def task_object(task_id: str) -> str:
    return f"state/{task_id}.tar"


def task_tar(stores: bytes, offsets: Mapping[TopicPartition, int]) -> bytes:
    """The process step's store tar with the ``.checkpoint`` entry appended."""
    sink = io.BytesIO()
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as out:
        with tarfile.open(fileobj=io.BytesIO(stores)) as source:
            for member in source.getmembers():
                out.addfile(member, source.extractfile(member) if member.isfile() else None)
        data = serialize_offsets(offsets)
        info = tarfile.TarInfo(CHECKPOINT_ENTRY)
        info.size = len(data)
        out.addfile(info, io.BytesIO(data))
    return sink.getvalue()


def write_manifest(
    store: ObjectStore, application_id: str, plan_id: str, tasks: list[str], no_state: list[str] | None = None
) -> None:
    """Written after every task's tar: marks the bundle complete. ``no_state``: tasks whose directory must go."""
    manifest = {
        "application_id": application_id,
        "plan_id": plan_id,
        "tasks": sorted(tasks),
        "no_state": sorted(no_state or ()),
    }
    store.put(MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())


def read_manifest(store: ObjectStore, where: str) -> dict[str, Any]:
    if not store.exists(MANIFEST):
        raise HandoffError(
            f"state bundle {where} has no {MANIFEST}: the hand-off that writes it has not finished; run "
            "`streamproc handoff` to its end (it resumes) before installing"
        )
    manifest: dict[str, Any] = json.loads(store.get(MANIFEST))
    return manifest


@dataclass(frozen=True, slots=True)
class Installed:
    """What an install did: task directories written, and removed (``no_state`` tasks that had one)."""

    written: tuple[str, ...]
    removed: tuple[str, ...]


def install(store: ObjectStore, where: str, state_dir: Path) -> Installed:
    """Unpack every task of the bundle into ``state_dir`` and remove the ``no_state`` tasks' directories."""
    from streamproc.state.state_directory import StateDirLocked

    manifest = read_manifest(store, where)
    directory = StateDirectory(state_dir, manifest["application_id"])
    try:
        directory.lock()
    except StateDirLocked as exc:
        raise HandoffError(
            f"state directory {directory.app_dir} is locked ({directory.lock_path} is held): a Kafka Streams "
            "instance of the application is running on this host; stop it and install again"
        ) from exc
    written, removed = [], []
    try:
        for task in manifest["tasks"]:
            data = store.get(task_object(task))
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                entry = tar.extractfile(CHECKPOINT_ENTRY)
                if entry is None:
                    raise HandoffError(f"state bundle {where}: {task_object(task)} has no {CHECKPOINT_ENTRY}")
                offsets = parse_offsets(entry.read(), f"{where}/{task_object(task)}")
            written.append(str(write_task_state(directory, TaskId.parse(task), data, offsets)))
        for task in manifest.get("no_state", ()):  # bundles written before the field have none
            task_dir = directory.task_dir_path(TaskId.parse(task))
            if task_dir.exists():
                clear_task_state(directory, TaskId.parse(task))
                removed.append(str(task_dir))
    finally:
        directory.unlock()
    return Installed(tuple(written), tuple(removed))
