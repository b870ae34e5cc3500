"""A Spark task's global stores: bootstrapped from the plan's global-topic ranges before the task processes.

Kafka Streams' global thread restores every global store to its topic's high watermark before any stream task runs
(``GlobalStateManagerImpl``, see ``engine/global_state_task.py``). The plan fixed that end (``plan_global_restores``:
the high watermark when planning, from the global checkpoint or the log start); ``fetch`` staged those ranges once,
and every task of the run reads them and builds its own copy of each global store from them, then processes.

The one difference from a live application (docs/semantics.md): a live app keeps applying records that reach a
global topic while its stream tasks run, so a join may see a row written after the stream record; the batch sees each
global topic as of the plan, for every record of the run.

Where the plan starts from a global checkpoint (the state directory had ``global/.checkpoint``), the task starts
from a copy of ``<state.dir>/<application.id>/global`` (the stores at that checkpoint) and restores the rest.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from streamproc.engine.deserialization_handler import DeserializationExceptionHandler
from streamproc.engine.global_state_task import GlobalStateUpdateTask
from streamproc.engine.records import TopicPartition
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import global_store_builders
from streamproc.errors import ManifestError, StateError
from streamproc.spark.task_input import read_records, staged_range
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.processor_state_manager import open_store
from streamproc.state.store_builders import store_definitions
from streamproc.state.store_layout import GLOBAL_STATE_DIR, application_directory, checkpoint_path
from streamproc.state.stores import StateStore, StoreContext
from streamproc.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GlobalRestoreRange:
    """One partition of a global store's topic, ``[start, end)`` (``end``: the high watermark when planning)."""

    store: str
    topic: str
    partition: int
    start: int
    end: int
    #: The offset the state directory's ``global/.checkpoint`` had for this partition (``None``: no entry).
    checkpoint_offset: int | None = None


@dataclass(slots=True)
class GlobalStores:
    """The opened global stores of one task and the global task that bootstrapped them."""

    task: GlobalStateUpdateTask
    stores: dict[str, StateStore]
    restored: dict[str, int]

    def close(self) -> None:
        self.task.close()
        for store in self.stores.values():
            store.close()


def bootstrap_global_stores(
    topology: Topology,
    ranges: Sequence[GlobalRestoreRange],
    *,
    object_store: ObjectStore,
    application_id: str,
    state_root: Path,
    state_dir: str | None,
    task: str,
    deserialization_exception_handler: DeserializationExceptionHandler | None = None,
) -> GlobalStores | None:
    """Open the topology's global stores under ``state_root/<application.id>/global``, restore each from its staged
    ranges (every partition of its topic, in partition order) and initialise the global processors; ``None`` when
    the topology has no global store. A store without planned ranges, or a range not staged, is an error naming the
    task and what to run."""
    builders = global_store_builders(topology)
    if not builders:
        return None
    by_store: dict[str, list[GlobalRestoreRange]] = {}
    for r in ranges:
        by_store.setdefault(r.store, []).append(r)
    missing = sorted(set(builders) - set(by_store))
    if missing:
        raise ManifestError(
            f"task [{task}] global store(s) {missing}: the plan has no range of their topic to restore from; the "
            "plan was made without this topology's global stores: re-plan with --topology, fetch, then process"
        )
    staged = {
        (r.topic, r.partition): staged_range(object_store, r.topic, r.partition, r.start, r.end, task=task)
        for r in ranges
    }
    global_dir = application_directory(state_root, application_id) / GLOBAL_STATE_DIR
    global_dir.mkdir(parents=True, exist_ok=True)
    if state_dir is not None:
        _copy_global_directory(Path(state_dir), application_id, global_dir, ranges, task)
    stores: dict[str, StateStore] = {}
    try:
        for definition in store_definitions(builders):
            stores[definition.name] = open_store(definition, StoreContext(), global_dir, task="global")
        global_task = GlobalStateUpdateTask(
            topology,
            stores,
            application_id=application_id,
            deserialization_exception_handler=deserialization_exception_handler,
        )
        restored: dict[str, int] = {}
        for name in stores:
            for r in sorted(by_store[name], key=lambda r: r.partition):
                records = read_records(object_store, staged[(r.topic, r.partition)], task=task)
                restored[name] = restored.get(name, 0) + global_task.restore(name, records)
        global_task.initialize()
    except BaseException:
        for store in stores.values():
            store.close()
        raise
    dropped = global_task.dropped.total
    logger.info(
        "task [%s] restored global stores %s%s",
        task,
        restored,
        f"; {dropped} record(s) dropped by the deserialization exception handler" if dropped else "",
    )
    return GlobalStores(global_task, stores, restored)


def _copy_global_directory(
    state_dir: Path, application_id: str, target: Path, ranges: Sequence[GlobalRestoreRange], task: str
) -> None:
    """Start from ``<state.dir>/<application.id>/global`` when the plan restores from its checkpoint; the checkpoint
    there must still be the one the plan read (else the ranges start at the wrong offsets)."""
    if all(r.checkpoint_offset is None for r in ranges):
        return
    source = application_directory(state_dir, application_id) / GLOBAL_STATE_DIR
    path = checkpoint_path(source)
    entries = OffsetCheckpoint(path).read() if path.exists() else {}
    for r in ranges:
        found = entries.get(TopicPartition(r.topic, r.partition))
        if found != r.checkpoint_offset:
            raise StateError(
                f"task [{task}] global store {r.store}: {path} has offset {found} for {r.topic}-{r.partition}, the "
                f"plan was made with {r.checkpoint_offset}; the state directory changed since the plan was made: "
                "re-plan with the same --state-dir, fetch, then process"
            )
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock"), dirs_exist_ok=True)
