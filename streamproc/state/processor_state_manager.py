"""``ProcessorStateManager``: a task's stores, their restoration and its ``.checkpoint`` (``PI/ProcessorStateManager``).

The life of a task's state in a streamproc run, following Kafka Streams 4.2 (state.md §3-§5, §10):

1. **register** (constructor): :func:`~streamproc.state.store_registration.register_stores` rules (illegal and
   duplicate names, changelog partition = task partition);
2. **initialize** (:meth:`ProcessorStateManager.initialize`): lock the app dir, evaluate "task dir empty" before any
   store is opened, read ``.checkpoint`` (a corrupt file is fatal, as in Kafka), let
   :func:`~streamproc.state.restore_plan.plan_restore` decide (trusted checkpoint, EOS wipe when an entry is
   missing, out-of-range checkpoint → corrupted changelog: EOS wipes the task dir, ALOS restores from the log start
   over the existing contents), delete the file under EOS, then open the stores;
3. **restore** (:meth:`ProcessorStateManager.restore`): apply the changelog records ``[start, end)`` the plan gives,
   from any iterator of raw ``ConsumerRecord`` s (the broker or staged segments), in batches, skipping null keys;
4. **process**: the task gets the stores through ``context.get_state_store(name)`` (pass :attr:`stores` to
   ``StreamTask`` and :meth:`attach` its context); every write produces its changelog record in the collector;
5. **checkpoint** (:meth:`ProcessorStateManager.checkpoint`): flush, then write L per logged persistent store, L =
   the changelog end offset after the hand-off published this run's records, minus one (an empty changelog gives
   ``OFFSET_UNKNOWN``); stores the run did not write keep the offset they were restored to.

A missing changelog topic is what Kafka Streams' next rebalance would create: an empty topic (warning); a missing
source topic reused as changelog is fatal there (``MissingSourceTopicException``) and here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, TopicPartition
from streamproc.engine.serdes import Serde
from streamproc.engine.task_id import TaskId
from streamproc.engine.task_log import STREAM_TASK, TaskLoggerAdapter
from streamproc.errors import StateError
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN, CheckpointCorrupt, OffsetCheckpoint
from streamproc.state.restore_plan import (
    ChangelogState,
    ProcessingGuarantee,
    RestorePlan,
    check_checkpoint_offsets,
    plan_restore,
)
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore, rocksdb_segmented_store
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_layout import (
    DB_FILE_DIR,
    checkpoint_path,
    default_segment_interval,
    task_dir_is_empty,
)
from streamproc.state.store_registration import (
    KS_VERSION_4_2,
    RegisteredStores,
    StateStoreMetadata,
    StoreSpec,
    register_stores,
)
from streamproc.state.store_type import StoreType
from streamproc.state.stores import (
    ChangelogSink,
    InMemoryKeyValueBytesStore,
    KeyValueBytesStore,
    KeyValueStore,
    SegmentedBytesStore,
    SessionStore,
    StateStore,
    StoreContext,
    TimestampedKeyValueStore,
    TimestampedWindowStore,
    WindowStore,
)
from streamproc.state.time_ordered_buffer import InMemoryTimeOrderedKeyValueChangeBuffer

logger = logging.getLogger(__name__)

#: ``max.poll.records`` default of the restore consumer: records applied per restore batch.
DEFAULT_RESTORE_BATCH_SIZE = 1000

RawRecord = ConsumerRecord[bytes | None, bytes | None]


class MissingSourceTopicChangelog(StateError):
    """A source topic reused as a store's changelog does not exist (Kafka: ``MissingSourceTopicException``)."""

    def __init__(self, task_id: TaskId, store_name: str, partition: TopicPartition) -> None:
        self.task_id = task_id
        self.store_name = store_name
        self.partition = partition
        super().__init__(
            f"task [{task_id}] store {store_name}: source topic {partition.topic} (partition {partition.partition}), "
            "which the store uses as its changelog, does not exist; Kafka Streams would fail with "
            "MissingSourceTopicException. Create the topic or fix the topology"
        )


class HasRecordContext(Protocol):
    """The part of ``ProcessorContextImpl`` a store needs: the current record context (for its timestamp)."""

    @property
    def record_context(self) -> ProcessorRecordContext: ...


@dataclass(frozen=True, slots=True)
class StoreDefinition:
    """A store as the topology builds it (``StoreBuilder``): kind, serdes, logging, and windowing parameters.

    ``retention_ms`` is required for window and session stores; ``segment_interval_ms`` defaults to
    ``max(retention / 2, 60 000)``; ``window_size_ms`` (window stores) builds the windows ``fetch_all`` returns.
    """

    name: str
    store_type: StoreType
    key_serde: Serde[Any]
    value_serde: Serde[Any]
    persistent: bool = True
    logged: bool = True
    changelog_topic: str | None = None
    retention_ms: int | None = None
    segment_interval_ms: int | None = None
    window_size_ms: int | None = None
    retain_duplicates: bool = False
    #: Cached in Kafka Streams (the DSL's default); emulated only with ``--record-cache flush-at-end``.
    caching_enabled: bool = False

    def spec(self) -> StoreSpec:
        return StoreSpec(self.name, self.logged, self.persistent, self.changelog_topic)

    def segment_interval(self) -> int:
        if self.segment_interval_ms is not None:
            return self.segment_interval_ms
        if self.retention_ms is None:
            raise StateError(f"store {self.name}: a {self.store_type.value} store needs retention_ms")
        return default_segment_interval(self.retention_ms)


def open_store(
    definition: StoreDefinition, context: StoreContext | None, task_dir: Path | None, *, task: str = "?"
) -> StateStore:
    """The typed store of ``definition``: RocksDB under ``task_dir`` when it is persistent and a task directory is
    given (Kafka Streams' layout), otherwise in memory (``InMemoryKeyValueStore`` / in-memory segments)."""
    name, kind = definition.name, definition.store_type
    if kind is StoreType.TIME_ORDERED_KEY_VALUE_BUFFER:
        return InMemoryTimeOrderedKeyValueChangeBuffer(
            name, definition.key_serde, definition.value_serde, context, logged=definition.logged
        )
    on_disk = definition.persistent and task_dir is not None
    if kind.segmented:
        assert definition.retention_ms is not None
        interval = definition.segment_interval()
        segments: SegmentedBytesStore
        if on_disk:
            assert task_dir is not None
            segments = rocksdb_segmented_store(
                task_dir, name, kind, retention_ms=definition.retention_ms, segment_interval_ms=interval, task=task
            )
        else:
            segments = SegmentedBytesStore(
                name,
                retention_ms=definition.retention_ms,
                segment_interval_ms=interval,
                segment_factory=lambda _segment: InMemoryKeyValueBytesStore(),
                persistent=False,
                window_expiry=not definition.persistent,  # Kafka's in-memory stores expire per window
            )
        if kind is StoreType.SESSION:
            return SessionStore(name, segments, definition.key_serde, definition.value_serde, context)
        window_type = TimestampedWindowStore if kind is StoreType.TIMESTAMPED_WINDOW else WindowStore
        assert definition.window_size_ms is not None
        return window_type(
            name,
            segments,
            definition.key_serde,
            definition.value_serde,
            window_size_ms=definition.window_size_ms,
            retain_duplicates=definition.retain_duplicates,
            context=context,
        )
    bytes_store: KeyValueBytesStore
    if on_disk:
        assert task_dir is not None
        bytes_store = RocksDBKeyValueBytesStore(name, task_dir / DB_FILE_DIR / name, kind, task=task)
    else:
        bytes_store = InMemoryKeyValueBytesStore()
    store_type = TimestampedKeyValueStore if kind is StoreType.TIMESTAMPED_KEY_VALUE else KeyValueStore
    return store_type(name, bytes_store, definition.key_serde, definition.value_serde, context)


class ProcessorStateManager:
    """The state of one task: stores, offsets, restoration and the ``.checkpoint`` (see the module docstring)."""

    def __init__(
        self,
        task_id: TaskId,
        definitions: Iterable[StoreDefinition],
        *,
        application_id: str,
        state_directory: StateDirectory | None = None,
        guarantee: ProcessingGuarantee = ProcessingGuarantee.AT_LEAST_ONCE,
        collector: ChangelogSink | None = None,
        topic_prefix: str | None = None,
        ks_version: str = KS_VERSION_4_2,
    ) -> None:
        self.task_id = task_id
        self.application_id = application_id
        self.guarantee = guarantee
        self.ks_version = ks_version
        self.collector = collector
        self.log = TaskLoggerAdapter(logger, task_id, STREAM_TASK)
        self.definitions = {d.name: d for d in definitions}
        self.registered: RegisteredStores = register_stores(
            application_id,
            task_id,
            [d.spec() for d in definitions],
            topic_prefix=topic_prefix,
            ks_version=ks_version,
        )
        self._metadata: dict[str, StateStoreMetadata] = {m.name: m for m in self.registered.stores}
        for definition in self.definitions.values():
            if definition.store_type is StoreType.WINDOW or definition.store_type is StoreType.TIMESTAMPED_WINDOW:
                if definition.window_size_ms is None:
                    raise StateError(f"task [{task_id}] window store {definition.name} needs window_size_ms")
            if definition.store_type.segmented:
                definition.segment_interval()
        self.has_persistent_stores = any(d.persistent for d in self.definitions.values())
        if self.has_persistent_stores and state_directory is None:
            raise StateError(
                f"task [{task_id}] has persistent stores {[d.name for d in self.definitions.values() if d.persistent]} "
                "but no state directory was given"
            )
        self.state_directory = state_directory
        self._stores: dict[str, StateStore] = {}
        # A store restored from its source topic writes no changelog: the topic is the user's input.
        self._contexts: dict[str, StoreContext] = {
            name: StoreContext(None if meta.source_topic_changelog else meta.changelog_partition, collector)
            for name, meta in self._metadata.items()
        }
        #: Offset L of the last changelog record each logged store reflects (``StateStoreMetadata.offset``).
        self._offsets: dict[str, int | None] = dict.fromkeys(self._metadata)
        self._bounds: dict[str, tuple[int, int]] = {}
        self.restored: dict[str, int] = {}
        self.plan: RestorePlan | None = None

    # -- paths -----------------------------------------------------------------------------------------------------

    @property
    def task_dir(self) -> Path | None:
        if self.state_directory is None:
            return None
        return self.state_directory.task_dir_path(self.task_id)

    @property
    def checkpoint_file(self) -> OffsetCheckpoint | None:
        task_dir = self.task_dir
        return None if task_dir is None else OffsetCheckpoint(checkpoint_path(task_dir))

    # -- initialisation --------------------------------------------------------------------------------------------

    def _changelog_states(
        self, changelogs: Mapping[TopicPartition, ChangelogState]
    ) -> dict[TopicPartition, ChangelogState]:
        states = dict(changelogs)
        for meta in self.registered.stores:
            tp = meta.changelog_partition
            if tp is None or tp in states:
                continue
            if meta.source_topic_changelog:
                raise MissingSourceTopicChangelog(self.task_id, meta.name, tp)
            self.log.warning(
                "Changelog topic %s of store %s does not exist; Kafka Streams creates it empty at its next rebalance, "
                "so the store is treated as having an empty changelog (a checkpointed offset then is out of range)",
                tp,
                meta.name,
            )
            states[tp] = ChangelogState(0, 0)
        return states

    def _read_checkpoint(self) -> dict[TopicPartition, int] | None:
        file = self.checkpoint_file
        if file is None or not file.path.exists():
            return None
        try:
            return file.read()
        except CheckpointCorrupt:
            self.log.error(
                "Error loading and deleting checkpoint file when creating the state manager (%s); stores %s",
                file.path,
                self.registered.checkpointed_stores,
            )
            raise

    def initialize(self, changelogs: Mapping[TopicPartition, ChangelogState]) -> RestorePlan:
        """Lock, read the checkpoint, plan the restoration (wiping if Kafka Streams would), open the stores.

        ``changelogs`` describes each logged store's changelog partition as the broker holds it now.
        """
        if self.plan is not None:
            raise StateError(f"task [{self.task_id}] state manager initialized twice")
        task_dir: Path | None = None
        if self.has_persistent_stores:
            assert self.state_directory is not None
            self.state_directory.lock()
            task_dir = self.state_directory.task_dir(self.task_id)
        empty = task_dir is None or task_dir_is_empty(task_dir, self.ks_version)
        states = self._changelog_states(changelogs)
        checkpoint = self._read_checkpoint()
        plan = plan_restore(
            self.guarantee,
            self.registered.stores,
            checkpoint,
            states,
            task_dir_empty=empty,
            ks_version=self.ks_version,
        )
        for note in plan.notes:
            self.log.info("%s", note)
        if plan.local_state_wiped and task_dir is not None and self.state_directory is not None:
            self.log.warning(
                "Wiping state stores for %s task %s (stores %s): %s",
                "active",
                self.task_id,
                [m.name for m in self.registered.stores if m.persistent],
                "; ".join(plan.notes) or "task corrupted",
            )
            self.state_directory.wipe_task(self.task_id)
            task_dir = self.state_directory.task_dir(self.task_id)
        elif plan.corrupted_changelogs:
            self.log.warning(
                "Changelogs %s are out of range of their checkpoint: restoring those stores from the log start over "
                "their existing contents (at_least_once)",
                [str(tp) for tp in plan.corrupted_changelogs],
            )
        if plan.checkpoint_deleted_at_init and self.checkpoint_file is not None:
            self.checkpoint_file.delete()
        trusted = {} if plan.local_state_wiped else dict(checkpoint or {})
        for restore in plan.restores:
            meta = self._metadata[restore.store_name]
            entry = trusted.get(restore.changelog_partition)
            known = (
                meta.persistent
                and entry is not None
                and entry != OFFSET_UNKNOWN
                and restore.changelog_partition not in plan.corrupted_changelogs
            )
            self._offsets[restore.store_name] = restore.start_offset - 1 if known else None
            self._bounds[restore.store_name] = (restore.start_offset, restore.restore_end_offset)
            if known:
                self.log.info(
                    "State store %s initialized from checkpoint with offset %s at changelog %s",
                    restore.store_name,
                    restore.start_offset - 1,
                    restore.changelog_partition,
                )
        for definition in self.definitions.values():
            self._stores[definition.name] = self._open(definition, task_dir)
            self.log.debug("Registered state store %s to its state manager", definition.name)
        self.plan = plan
        return plan

    def _open(self, definition: StoreDefinition, task_dir: Path | None) -> StateStore:
        if definition.persistent:
            assert task_dir is not None
        return open_store(definition, self._contexts[definition.name], task_dir, task=str(self.task_id))

    # -- the task's view -------------------------------------------------------------------------------------------

    @property
    def stores(self) -> Mapping[str, StateStore]:
        """Store name → store, for ``StreamTask(stores=...)`` (``context.get_state_store(name)``)."""
        if self.plan is None:
            raise StateError(f"task [{self.task_id}] stores are opened by initialize(); call it first")
        return self._stores

    def store(self, name: str) -> StateStore:
        try:
            return self.stores[name]
        except KeyError:
            raise StateError(f"task [{self.task_id}] has no store {name!r} (stores: {sorted(self._stores)})") from None

    def attach(self, context: HasRecordContext) -> None:
        """Give every store the task's record context: changelog records carry the current record's timestamp, and
        a put a window or session store refuses is counted in the task's ``dropped-records`` sensor."""

        def record_timestamp() -> int:
            return context.record_context.timestamp

        # The task's context reads the timestamp without building a lazy record context (one object per write).
        timestamp_of: Callable[[], int] = getattr(context, "record_timestamp", record_timestamp)
        record_dropped: Callable[[str], None] | None = getattr(context, "record_dropped", None)
        for store_context in self._contexts.values():
            store_context.record_timestamp = timestamp_of
            if record_dropped is not None:  # the task's dropped-records sensor: window stores count expired puts
                store_context.record_dropped = record_dropped

    def changelog_offsets(self) -> dict[str, int | None]:
        """Store → L (offset of the last changelog record reflected), ``None`` when unknown."""
        return dict(self._offsets)

    def restore_bounds(self, store_name: str) -> tuple[int, int]:
        """``[start, end)`` of the changelog offsets to apply to ``store_name`` (from the restore plan)."""
        if store_name not in self._bounds:
            raise StateError(f"task [{self.task_id}] store {store_name} is not logged or not initialized")
        return self._bounds[store_name]

    # -- restoration -----------------------------------------------------------------------------------------------

    def restore(
        self, store_name: str, records: Iterable[RawRecord], *, batch_size: int = DEFAULT_RESTORE_BATCH_SIZE
    ) -> int:
        """Apply the changelog records of ``[start, end)`` to ``store_name``; return how many were applied.

        Records before ``start`` are skipped (the caller may hand over the whole log), the first record at or after
        ``end`` stops the restoration, null keys are skipped (``StoreChangelogReader``), the store offset advances to
        the last applied record of each batch (``ProcessorStateManager.restore``).
        """
        store = self.store(store_name)
        meta = self._metadata[store_name]
        partition = meta.changelog_partition
        if partition is None:
            raise StateError(f"task [{self.task_id}] store {store_name} is not logged: nothing to restore")
        start, end = self.restore_bounds(store_name)
        topic, part = partition.topic, partition.partition
        batch: list[RawRecord] = []
        append = batch.append
        applied = 0
        null_keys = 0
        for record in records:
            if record.partition != part or record.topic != topic:
                raise StateError(
                    f"task [{self.task_id}] store {store_name}: record {record.topic}-{record.partition}@"
                    f"{record.offset} is not from its changelog {partition}"
                )
            offset = record.offset
            if offset < start:
                continue
            if offset >= end:
                break
            if record.key is None:
                null_keys += 1
                continue
            append(record)
            if len(batch) >= batch_size:
                store.restore_batch(batch)
                applied += len(batch)
                self._offsets[store_name] = batch[-1].offset
                batch.clear()
        if batch:
            store.restore_batch(batch)
            applied += len(batch)
            self._offsets[store_name] = batch[-1].offset
        if null_keys:
            self.log.warning("Skipped %d changelog records with null key while restoring %s", null_keys, store_name)
        self.restored[store_name] = self.restored.get(store_name, 0) + applied
        self.log.info(
            "Finished restoring changelog %s to store %s with a total number of %s records",
            partition,
            store_name,
            applied,
        )
        return applied

    # -- checkpoint and close --------------------------------------------------------------------------------------

    def flush(self) -> None:
        for store in self._stores.values():
            store.flush()

    def checkpoint_offsets(
        self, changelog_end_offsets: Mapping[TopicPartition, int] | None = None
    ) -> dict[TopicPartition, int]:
        """The ``.checkpoint`` map ``PSM.checkpoint`` would write after the hand-off.

        ``changelog_end_offsets``: per changelog partition, the log end offset once this run's changelog records are
        published (for a source topic reused as changelog: the next input offset committed); L = end - 1, or
        ``OFFSET_UNKNOWN`` for an empty changelog. A store written in this run without its end offset is an error:
        its L is not known before the hand-off.
        """
        ends = changelog_end_offsets or {}
        offsets: dict[str, int | None] = {}
        for meta in self.registered.stores:
            if not meta.checkpointed or meta.changelog_partition is None:
                continue
            tp = meta.changelog_partition
            if tp in ends:
                end = ends[tp]
                offsets[meta.name] = end - 1 if end > 0 else None
            elif self._contexts[meta.name].written:
                raise StateError(
                    f"task [{self.task_id}] store {meta.name} was written in this run but the end offset of its "
                    f"changelog {tp} after the hand-off was not given; publish the changelog records first and pass "
                    "the resulting end offset"
                )
            else:
                offsets[meta.name] = self._offsets[meta.name]
        return self.registered.checkpoint_offsets(offsets)

    def checkpoint(
        self,
        changelog_end_offsets: Mapping[TopicPartition, int] | None = None,
        *,
        changelogs: Mapping[TopicPartition, ChangelogState] | None = None,
        close_stores: bool = True,
    ) -> dict[TopicPartition, int]:
        """Flush (and by default close) the stores, then write ``.checkpoint`` last, atomically (state.md §10, §14).

        Closing first is what makes the directories openable by Kafka Streams (RocksDB's lock released, rocksdict's
        config file gone); keep ``close_stores=False`` only for an intermediate checkpoint.

        With ``changelogs`` (the broker's view after the hand-off) every offset is checked to lie in
        ``[log start - 1, log end - 1]`` first; an offset outside raises ``CheckpointOutOfRange`` and nothing is
        written.
        """
        entries = self.checkpoint_offsets(changelog_end_offsets)
        if changelogs is not None:
            check_checkpoint_offsets(entries, changelogs, guarantee=self.guarantee, ks_version=self.ks_version)
        self.flush()
        file = self.checkpoint_file
        if file is None:
            if entries:
                raise StateError(f"task [{self.task_id}] has checkpointed stores but no state directory")
            return entries
        if close_stores:
            for store in self._stores.values():
                if store.persistent:
                    store.close()
        file.write(entries)
        self.log.info("Writing checkpoint: %s for task %s", {str(k): v for k, v in entries.items()}, self.task_id)
        return entries

    def close(self) -> None:
        """Flush and close every store (RocksDB directories are left exactly as Kafka Streams expects them)."""
        for store in self._stores.values():
            store.close()

    def wipe(self) -> None:
        """Close the stores and delete the task directory (an EOS dirty close)."""
        self.close()
        if self.state_directory is not None:
            self.state_directory.wipe_task(self.task_id)
        self._stores.clear()
