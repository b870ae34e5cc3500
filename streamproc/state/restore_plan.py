"""What Kafka Streams does with a task's local state when it starts: trust the checkpoint, wipe, restore how much.

A pure model of ``PSM.initializeStoreOffsetsFromCheckpoint`` (4.3: ``registerStateStores`` +
``LegacyCheckpointingStateStore.migrateLegacyOffsets`` + ``initializeStoreOffsets``), ``StoreChangelogReader``
(``initializeChangelogs``, ``prepareChangelogs``, ``restore``, ``hasRestoredToEnd``) and the task-corruption path
(``TaskCorruptedException`` → dirty close → EOS wipe → revive), state.md §4-§5. The hand-off uses it to predict, before
the application starts, that every handed-off changelog restores 0 records.

Rules, in order:

1. **Initialisation.** Per persistent logged store, in registration order: an entry in ``.checkpoint`` sets the offset
   L (``OFFSET_UNKNOWN`` → unknown); no entry under ``exactly_once_v2`` with a non-empty task directory →
   ``TaskCorruptedException`` (the task directory is wiped). Under EOS the file is then deleted (4.2). 4.3 migrates
   the file into the stores instead (dropping ``OFFSET_UNKNOWN`` entries) and deletes it under both guarantees.
   In-memory and unlogged stores ignore the checkpoint.
2. **Restore bounds.** Start at L+1, or at the log start when L is unknown. End = log end offset; for a source topic
   reused as changelog, ``min(log end, committed offset of the group)`` (0 when nothing is committed).
3. **Out of range.** If L+1 is below the log start or above the log end, the first poll fails with
   ``OffsetOutOfRangeException`` → ``TaskCorruptedException``: the changelog is dropped from the checkpoint, the
   task closed dirty (EOS: wiped) and revived, and the store restores from the log start. L+1 above the log end
   (state.md §16 q1) is a race that live Kafka Streams 4.2.2 runs settle by ``poll.ms``: with the default 100 ms
   the first restore poll gets the broker's ``OFFSET_OUT_OF_RANGE`` (the outcome modelled here; scenarios rp10,
   rp31, rp32); with ``poll.ms`` 1-5 ms the poll returns empty first and ``StoreChangelogReader.hasRestoredToEnd``
   (position >= end) declares the changelog restored with 0 records. The plan notes the alternative.
4. **Records restored.** Offsets in ``[start, end)`` except transaction markers, null-key records (skipped) and,
   under EOS only (``read_committed``), records of aborted transactions.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError
from streamproc.state.offset_checkpoint import OFFSET_UNKNOWN
from streamproc.state.store_registration import KS_VERSION_4_2, KS_VERSION_4_3, StateStoreMetadata

LOG = logging.getLogger(__name__)


class CheckpointOutOfRange(StateError):
    """A checkpoint offset to be written lies outside ``[log start - 1, log end - 1]`` of its changelog (§5.5, §10)."""

    def __init__(self, partition: TopicPartition, offset: int, changelog: ChangelogState) -> None:
        self.partition = partition
        self.offset = offset
        super().__init__(
            f"checkpoint offset {offset} for {partition} is outside [{changelog.log_start_offset - 1}, "
            f"{changelog.log_end_offset - 1}] (log start {changelog.log_start_offset}, log end "
            f"{changelog.log_end_offset}): Kafka Streams would hit OffsetOutOfRangeException on restore, mark the task "
            "corrupted and restore from the log start; write the offset of the last changelog record the store "
            "reflects (log end - 1 after publishing), never the next offset"
        )


class ProcessingGuarantee(enum.Enum):
    """``processing.guarantee`` (``StreamsConfig``); only the two values 4.2 still supports."""

    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE_V2 = "exactly_once_v2"

    @property
    def eos(self) -> bool:
        return self is ProcessingGuarantee.EXACTLY_ONCE_V2


@dataclass(frozen=True, slots=True)
class ChangelogState:
    """A changelog partition as the broker holds it when the application starts.

    Offsets in ``[log_start_offset, log_end_offset)`` not listed are committed data records with a key.
    ``group_committed_offset`` matters only for a source topic reused as changelog.
    """

    log_start_offset: int
    log_end_offset: int
    control_offsets: frozenset[int] = frozenset()
    aborted_offsets: frozenset[int] = frozenset()
    null_key_offsets: frozenset[int] = frozenset()
    group_committed_offset: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.log_start_offset <= self.log_end_offset:
            raise StateError(
                f"changelog offsets inconsistent: log start {self.log_start_offset} > log end {self.log_end_offset}"
            )

    def records_applied(self, start: int, end: int, *, read_committed: bool) -> int:
        """Records the restore applies from ``[start, end)``: markers and null keys never, aborted ones under ALOS."""
        if start >= end:
            return 0
        skipped = set(self.control_offsets) | set(self.null_key_offsets)
        if read_committed:
            skipped |= set(self.aborted_offsets)
        return (end - start) - sum(1 for offset in skipped if start <= offset < end)


@dataclass(frozen=True, slots=True)
class ChangelogRestore:
    """The restoration that finally runs for one logged store."""

    store_name: str
    changelog_partition: TopicPartition
    start_offset: int
    restore_end_offset: int
    records_restored: int


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What happens to one task's state at start-up."""

    task_corrupted: bool
    local_state_wiped: bool
    checkpoint_deleted_at_init: bool
    restores: tuple[ChangelogRestore, ...]
    corrupted_changelogs: tuple[TopicPartition, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def restore_for(self, store_name: str) -> ChangelogRestore | None:
        return next((r for r in self.restores if r.store_name == store_name), None)

    @property
    def total_records_restored(self) -> int:
        return sum(r.records_restored for r in self.restores)


def _initial_offsets(
    guarantee: ProcessingGuarantee,
    stores: tuple[StateStoreMetadata, ...],
    checkpoint: Mapping[TopicPartition, int] | None,
    task_dir_empty: bool,
    ks_version: str,
    notes: list[str],
) -> tuple[dict[str, int | None], bool, bool]:
    """Offsets per store after initialisation, whether it threw ``TaskCorruptedException``, whether the file went."""
    offsets: dict[str, int | None] = {s.name: None for s in stores}
    deleted = False
    if ks_version == KS_VERSION_4_3:
        loaded: dict[TopicPartition, int] = {}
        if checkpoint is not None:
            logged = {s.changelog_partition for s in stores if s.changelog_partition is not None}
            loaded = {tp: off for tp, off in checkpoint.items() if tp in logged and off != OFFSET_UNKNOWN}
            deleted = True
            notes.append(f"4.3 migrated {len(loaded)} legacy checkpoint offsets into the stores and deleted the file")
    else:
        loaded = dict(checkpoint or {})
    for store in stores:
        if store.changelog_partition is None or not store.persistent:
            continue
        if store.changelog_partition in loaded:
            offset = loaded.pop(store.changelog_partition)
            offsets[store.name] = None if offset == OFFSET_UNKNOWN else offset
        elif guarantee.eos and not task_dir_empty:
            notes.append(
                f"store {store.name} has no checkpoint offset while the task directory is not empty: "
                "TaskCorruptedException under EOS, task directory wiped"
            )
            return {s.name: None for s in stores}, True, deleted
    if ks_version != KS_VERSION_4_3 and guarantee.eos and checkpoint is not None:
        deleted = True
        notes.append("EOS deleted .checkpoint after loading it")
    return offsets, False, deleted


def _restore_end(store: StateStoreMetadata, changelog: ChangelogState) -> int:
    if store.source_topic_changelog:
        committed = changelog.group_committed_offset
        return min(changelog.log_end_offset, 0 if committed is None else committed)
    return changelog.log_end_offset


def plan_restore(
    guarantee: ProcessingGuarantee,
    stores: Iterable[StateStoreMetadata],
    checkpoint: Mapping[TopicPartition, int] | None,
    changelogs: Mapping[TopicPartition, ChangelogState],
    *,
    task_dir_empty: bool,
    ks_version: str = KS_VERSION_4_2,
) -> RestorePlan:
    """Predict start-up of one task: ``checkpoint`` is the parsed ``.checkpoint`` (``None`` = no file).

    ``task_dir_empty`` is state.md §1 rule 7, evaluated before the stores are opened; ``changelogs`` must hold
    every logged store's changelog partition.
    """
    if ks_version not in (KS_VERSION_4_2, KS_VERSION_4_3):
        raise StateError(f"unsupported Kafka Streams version {ks_version!r}; expected 4.2 or 4.3")
    store_list = tuple(stores)
    for store in store_list:
        if store.changelog_partition is not None and store.changelog_partition not in changelogs:
            raise StateError(f"store {store.name}: no state given for changelog {store.changelog_partition}")
    notes: list[str] = []
    offsets, corrupted_at_init, deleted = _initial_offsets(
        guarantee, store_list, checkpoint, task_dir_empty, ks_version, notes
    )
    task_corrupted = corrupted_at_init
    wiped = corrupted_at_init

    out_of_range: list[TopicPartition] = []
    for store in store_list:
        offset = offsets[store.name]
        if store.changelog_partition is None or offset is None:
            continue
        changelog = changelogs[store.changelog_partition]
        if not changelog.log_start_offset <= offset + 1 <= changelog.log_end_offset:
            out_of_range.append(store.changelog_partition)
            notes.append(
                f"store {store.name}: checkpoint {offset} + 1 is outside [{changelog.log_start_offset}, "
                f"{changelog.log_end_offset}] of {store.changelog_partition}: OffsetOutOfRangeException, task corrupted"
            )
            if offset + 1 > changelog.log_end_offset:
                notes.append(
                    f"store {store.name}: beyond the log end the outcome depends on timing: when the first restore "
                    "poll returns before the broker's OFFSET_OUT_OF_RANGE answer (poll.ms shorter than the first "
                    "fetch), Kafka Streams declares the changelog restored with 0 records instead (position >= end)"
                )
    if out_of_range:
        task_corrupted = True
        if guarantee.eos:
            wiped = True
            offsets = dict.fromkeys(offsets)
        else:
            for store in store_list:
                if store.changelog_partition in out_of_range:
                    offsets[store.name] = None

    restores: list[ChangelogRestore] = []
    for store in store_list:
        if store.changelog_partition is None:
            continue
        changelog = changelogs[store.changelog_partition]
        offset = offsets[store.name]
        start = changelog.log_start_offset if offset is None else offset + 1
        end = _restore_end(store, changelog)
        applied = changelog.records_applied(start, end, read_committed=guarantee.eos)
        restores.append(ChangelogRestore(store.name, store.changelog_partition, start, end, applied))
        LOG.debug("Restore plan for %s: [%s, %s) applies %s records", store.changelog_partition, start, end, applied)
    LOG.info(
        "Restore plan: corrupted=%s, wiped=%s, checkpoint deleted at init=%s, %d changelogs, %d records to restore",
        task_corrupted,
        wiped,
        deleted,
        len(restores),
        sum(r.records_restored for r in restores),
    )
    return RestorePlan(
        task_corrupted=task_corrupted,
        local_state_wiped=wiped,
        checkpoint_deleted_at_init=deleted,
        restores=tuple(restores),
        corrupted_changelogs=tuple(out_of_range),
        notes=tuple(notes),
    )


def check_checkpoint_offsets(
    offsets: Mapping[TopicPartition, int],
    changelogs: Mapping[TopicPartition, ChangelogState],
    *,
    guarantee: ProcessingGuarantee = ProcessingGuarantee.AT_LEAST_ONCE,
    ks_version: str = KS_VERSION_4_2,
) -> list[str]:
    """Refuse a checkpoint the application would not trust (state.md §10 step 3); return warnings for the rest.

    Real offsets must satisfy ``log start - 1 <= L <= log end - 1``. ``OFFSET_UNKNOWN`` is accepted, with a warning
    when the changelog has records (they would all be restored) and when targeting 4.3 under EOS (a -4 entry is
    dropped by the migration, which makes the task corrupted, §15).
    """
    warnings: list[str] = []
    for tp, offset in offsets.items():
        changelog = changelogs.get(tp)
        if changelog is None:
            raise StateError(f"no changelog state given for checkpoint entry {tp}; cannot validate offset {offset}")
        if offset == OFFSET_UNKNOWN:
            if changelog.log_end_offset > changelog.log_start_offset:
                warnings.append(
                    f"{tp}: OFFSET_UNKNOWN with records in [{changelog.log_start_offset}, "
                    f"{changelog.log_end_offset}): the store will be restored from the log start"
                )
            if ks_version == KS_VERSION_4_3 and guarantee.eos:
                warnings.append(f"{tp}: OFFSET_UNKNOWN under EOS makes Kafka Streams 4.3 wipe the task")
            continue
        if not changelog.log_start_offset - 1 <= offset <= changelog.log_end_offset - 1:
            raise CheckpointOutOfRange(tp, offset, changelog)
    for warning in warnings:
        LOG.warning("Checkpoint check: %s", warning)
    return warnings
