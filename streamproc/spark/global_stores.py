"""A run's global stores: bootstrapped once per Python worker from the plan's global-topic ranges, shared by every
task that worker runs.

Kafka Streams' global thread restores every global store to its topic's high watermark before any stream task runs
(``GlobalStateManagerImpl``, see ``engine/global_state_task.py``), once per application instance, and every stream
thread's tasks read the same stores. The plan fixed that end (``plan_global_restores``: the high watermark when
planning, from the global checkpoint or the log start); ``fetch`` staged those ranges once. A Spark Python worker is
our instance: Spark reuses it for task after task (``spark.python.worker.reuse``, the default; ``local[N]`` has N),
so the first task of a run that a worker runs bootstraps the stores (:func:`worker_global_stores`) and the worker's
later tasks of that run reuse them instead of replaying the global topics again. Sharing is safe because a stream
task only reads a global store (Kafka's ``ProcessorContextImpl#getStateStore`` hands it a read-only decorator; a
task gets :attr:`GlobalStores.read_only`, ``engine/global_state_task.py``'s ``read_only_view`` of each, whose writes,
flush and close raise) and because nothing a global store carries points at a stream task: its ``StoreContext`` is
wired to the global task's own context and dropped-records sensor (``GlobalStateUpdateTask.__init__``), while
``ProcessorStateManager.attach`` only rewires the task's own stores.

What decides the stores' contents is the :class:`GlobalStoresKey` (plan, application, topology, staging store, global
ranges, the state directory copied from): a task with another key (the next run in the same process, a test) closes
the worker's stores and deletes their directory before bootstrapping its own, so a worker holds one run's RocksDB
handles and disk at a time. The directory is made under the executor's first local directory
(``SPARK_LOCAL_DIRS`` in a Python worker: the executor's block-manager directories, which outlive every task and
which Spark deletes when the application stops; a task's own work directory is deleted when the task ends, too
early), else under the system temporary directory. A Spark Python worker ends with ``os._exit`` (its RocksDB
handles go with the process, Spark deletes the directory); any other process closes and deletes them at exit
(``atexit``).

The bootstrap's drops (a global record the deserialization exception handler skipped, counted under task ``-1_-1``)
belong to the run, not to any task: every worker that bootstraps sees the same ones, so only the task the driver
designates (``TaskWork.reports_global_drops``, the run's first) puts them in its report (``global_dropped``), and
the driver logs them once.

The one difference from a live application (docs/semantics.md): a live app keeps applying records that reach a
global topic while its stream tasks run, so a join may see a row written after the stream record; the batch sees each
global topic as of the plan, for every record of the run.

Where the plan starts from a global checkpoint (the state directory had ``global/.checkpoint``), the bootstrap starts
from a copy of ``<state.dir>/<application.id>/global`` (the stores at that checkpoint) and restores the rest.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from streamproc.engine.deserialization_handler import DeserializationExceptionHandler
from streamproc.engine.global_state_task import GlobalStateUpdateTask, read_only_view
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
    """The opened global stores of a run and the global task that bootstrapped them."""

    task: GlobalStateUpdateTask
    stores: dict[str, StateStore]
    restored: dict[str, int]
    #: The stores as stream tasks get them: read-only views (``engine.global_state_task.read_only_view``).
    read_only: dict[str, StateStore]

    @property
    def dropped(self) -> dict[str, int]:
        """Records the bootstrap dropped, per reason (the global task's sensor, task ``-1_-1``)."""
        return self.task.dropped.counts

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
    return GlobalStores(global_task, stores, restored, {name: read_only_view(s) for name, s in stores.items()})


@dataclass(frozen=True, slots=True)
class GlobalStoresKey:
    """What a run's global stores hold is decided by these alone: tasks with equal keys may share one bootstrap."""

    plan_id: str
    application_id: str
    #: The topology reference (``MODULE:FUNCTION``): the global processors and the deserialization handler.
    topology: str
    #: Where the global ranges are staged.
    store_uri: str
    ranges: tuple[GlobalRestoreRange, ...]
    #: The state directory the bootstrap starts from a copy of (when the plan starts at its global checkpoint).
    state_dir: str | None


@dataclass(slots=True)
class _Bootstrapped:
    """The worker's global stores (``None``: the topology has none) for ``key``, and the directory they live in."""

    key: GlobalStoresKey
    stores: GlobalStores | None
    directory: Path | None


class _GlobalStateManager:
    """The Python worker's one set of global stores (Kafka's per-instance ``GlobalStateManager``); see the module
    docstring. A Python worker runs one task at a time, so no lock."""

    def __init__(self) -> None:
        self.current: _Bootstrapped | None = None
        #: Bootstraps this process ran (a test's proof that a worker restores a run's global topics once).
        self.bootstraps = 0

    def get(
        self,
        key: GlobalStoresKey,
        topology: Topology,
        *,
        object_store: ObjectStore,
        local_dir: str | None,
        task: str,
        deserialization_exception_handler: DeserializationExceptionHandler | None,
    ) -> tuple[GlobalStores | None, bool]:
        """The stores for ``key`` and whether this call bootstrapped them (``False``: reused from an earlier task)."""
        current = self.current
        if current is not None and current.key == key:
            if current.stores is not None:
                logger.info(
                    "task [%s] reads the global stores this worker restored for plan %s: %s",
                    task,
                    key.plan_id,
                    current.stores.restored,
                )
            return current.stores, False
        self.release()
        if not global_store_builders(topology):
            self.current = _Bootstrapped(key, None, None)
            return None, False
        directory = Path(tempfile.mkdtemp(prefix=f"streamproc-global-{key.plan_id}-", dir=local_dir))
        try:
            stores = bootstrap_global_stores(
                topology,
                key.ranges,
                object_store=object_store,
                application_id=key.application_id,
                state_root=directory,
                state_dir=key.state_dir,
                task=task,
                deserialization_exception_handler=deserialization_exception_handler,
            )
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        self.bootstraps += 1
        self.current = _Bootstrapped(key, stores, directory)
        return stores, stores is not None

    def release(self) -> None:
        """Close the worker's global stores and delete their directory (another run's key arrived, or exit)."""
        current, self.current = self.current, None
        if current is None:
            return
        try:
            if current.stores is not None:
                current.stores.close()
        finally:
            if current.directory is not None:
                shutil.rmtree(current.directory, ignore_errors=True)


#: This process's global stores.
GLOBAL_STATE_MANAGER = _GlobalStateManager()
atexit.register(GLOBAL_STATE_MANAGER.release)


def worker_global_stores(
    key: GlobalStoresKey,
    topology: Topology,
    *,
    object_store: ObjectStore,
    local_dir: str | None,
    task: str,
    deserialization_exception_handler: DeserializationExceptionHandler | None = None,
) -> tuple[GlobalStores | None, bool]:
    """The run's global stores in this worker, bootstrapped by the first task with ``key`` (then ``True``), reused
    by the next (``False``); ``(None, False)`` when the topology has none. The caller must not close them."""
    return GLOBAL_STATE_MANAGER.get(
        key,
        topology,
        object_store=object_store,
        local_dir=local_dir,
        task=task,
        deserialization_exception_handler=deserialization_exception_handler,
    )


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
