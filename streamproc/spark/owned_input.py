"""A per-record key shard that reads only the records it owns (issue #29, docs/split.md).

A per-record shard normally runs its task's whole ``PartitionGroup`` and gates the records it does not own
(``engine/key_shards.py``): correct whatever the input, but every shard reads, deserializes and orders every record.
For a task of one input partition whose poll cannot drop a record, none of that is needed: the order is the
partition's offsets (staged, then the records upstream tasks appended), so a record's position in the task's order
is its index in the input, and which shard owns it follows from its key bytes. Such a shard reads the key column once
(:func:`owned_input`), builds and processes only its own records, and is told each one's position through the gate
(``ShardGate.positions``); what every shard must report alike (records processed, steps, stream time, the committable
offset and partition time) is computed over every row's offset and timestamp (:meth:`OwnedInput.whole_result`), as
the columnar path computes it for the same inputs.

The poll cannot drop a record when (:func:`owned_input` checks each, else the shard runs the whole ``PartitionGroup``
and says why at debug level):

- the source validates no ``value_schema``, and its key and value deserializers are ``ByteArray`` or ``String``
  (neither fails: ``String`` replaces what is not UTF-8, as Java does) or the deserialization exception handler is
  ``LogAndFail`` (a record that does not deserialize fails the task, split or not, where it would have been
  dropped: a Schema Registry app's Avro, Protobuf or JSON Schema serdes under the default handler);
- its timestamp extractor is a record-metadata one and no timestamp is negative (read over the column).

The owner is chosen from the key as the sub-topology's first store serializes it, as the gate chooses it, but
balanced: the gate decides a record's owner as it meets it and can only take ``partition_for_key(bytes, K)``, while
such a shard has every row's key before it processes one. Each key goes to one of :data:`OWNER_BUCKETS` buckets
(``partition_for_key(bytes, OWNER_BUCKETS)``), and the buckets go to the shards by their records, the largest
first, each to the shard with the fewest records so far (:func:`balanced_owners`): every shard computes the same
from the same rows, so the shards still own disjoint keys and every row, and skewed keys no longer leave one shard
with most of the work (``murmur2 mod K`` gave the bench's 1 M-record windowed count's shards 52.5 % and 47.5 %). A
key the source deserializes to null, or a sub-topology without stores, goes round-robin by position, as the gate
sends it. Those bytes are the key bytes themselves when the store's key serializer undoes the source's key deserializer
(``ByteArray`` for ``ByteArray``, ``String`` for ``String`` over keys that are valid UTF-8, checked over the column):
then the key column is hashed at once. Otherwise each distinct key is deserialized as the source does and serialized
as the store does, once per shard (a key that fails to deserialize makes the shard read every record, and the task
fails there as it fails unsplit).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamproc.engine.deserialization_handler import LogAndFailExceptionHandler
from streamproc.engine.key_shards import ShardSpec, store_shard_key
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.processor_topology import ProcessorTopology
from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import ReplayResult
from streamproc.engine.serdes import (
    ByteArrayDeserializer,
    ByteArraySerializer,
    StringDeserializer,
    StringSerializer,
)
from streamproc.engine.stream_task import CommittableOffset, TaskConfig
from streamproc.engine.task_wide_times import Reach, keyed_running_max
from streamproc.engine.timestamp_extractor import ExtractRecordMetadataTimestamp, FailOnInvalidTimestamp
from streamproc.engine.validation import ValidatingSourceNode
from streamproc.spark.columnar.output import TaskKeys
from streamproc.spark.columnar.shape import serde_is
from streamproc.spark.task_input import StagedRange, checked_batches, task_batches
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import kept_records

_PLAIN_DESERIALIZERS = (ByteArrayDeserializer, StringDeserializer)
#: The key buckets a shard reading only its own records balances over the shards (:func:`balanced_owners`): enough
#: that the buckets a hot key does not hold level out to a small part of a shard's records, few enough that the
#: assignment is instant and a row's bucket fits in two bytes.
OWNER_BUCKETS = 4096
#: Rows whose key bytes are bucketed at once (``owned_input``): a few times a row group's, so the look-up of the keys
#: seen so far is built a few times per million rows, not once per row group, and a task's keys are never held all.
HASHED_ROWS = 128 * 1024
#: :meth:`_DeserializedOwners.owners` of a key the source deserializes to null (round-robin, and no stream time).
_NULL_KEY = -2


@dataclass(frozen=True)
class KeyOwners:
    """Which shard owns a store key, by its bytes: ``shard_of[partition_for_key(bytes, buckets)]``.

    The gate's rule is ``murmur2 mod K`` (``buckets`` = K, each bucket its own shard); a shard reading only its own
    records balances :data:`OWNER_BUCKETS` buckets over the shards (:func:`balanced_owners`). One value for both,
    so what a shard restores (``shard_restore.py``) is owned by the rule that routes its records."""

    buckets: int
    #: The shard of each bucket.
    shard_of: np.ndarray
    #: The shard this is.
    shard: ShardSpec

    @classmethod
    def murmur2(cls, shard: ShardSpec) -> KeyOwners:
        """The gate's rule (``key_shards.ShardGate.owner``) and the columnar shards' (``columnar/shard_rows.py``)."""
        return cls(shard.count, np.arange(shard.count), shard)

    def owns(self, keys: pa.Array, buckets: TaskKeys | None = None) -> np.ndarray:
        """Per key of ``keys`` (bytes), whether this shard owns it; a null key: ``True`` (it is no store's, and
        whoever reads it skips it alike). ``buckets``: a :class:`TaskKeys` of :attr:`buckets` partitions kept over
        the chunks, so each distinct key is hashed once."""
        return self.owns_buckets((buckets or TaskKeys(self.buckets)).partitions_of(keys))

    def owns_buckets(self, partitions: np.ndarray) -> np.ndarray:
        """Per bucket of ``partitions`` (``partition_for_key(bytes, buckets)``), whether this shard owns it; a negative
        one (a null key, or none at all): ``True``."""
        return np.where(partitions < 0, True, self.shard_of[np.maximum(partitions, 0)] == self.shard.index)


@dataclass(frozen=True)
class OwnedInput:
    """Which of a task's input rows (staged, then appended) one shard owns, and what the whole input computes."""

    #: Per input row, in the task's order: this shard owns it.
    owned: np.ndarray
    #: The positions of the owned rows, in order (what the gate stamps their events with).
    positions: np.ndarray
    #: The staged rows (the rest were appended by upstream tasks).
    staged_rows: int
    last_offset: int
    max_timestamp: int
    #: Per owned row, in order: the largest timestamp of a row with a non-null key up to and with it in the whole
    #: input (what the task's windowed processors' stream time is there, ``engine/task_wide_times.py``).
    keyed_times: list[int] = dataclasses.field(default_factory=list)
    #: The same up to the row, without it.
    keyed_before: list[int] = dataclasses.field(default_factory=list)
    #: Per processor behind a stateless prefix, per owned row: the largest timestamp up to it of a keyed row of
    #: another shard that passes the prefix (``engine/task_wide_times.py``; the shard's own rows it adds itself).
    others_times: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    #: Which shard owns a store key (``None``: the sub-topology has no stores, records go round-robin).
    key_owners: KeyOwners | None = None

    def records(self, store: ObjectStore, staged: StagedRange, upstream: Iterator[Any], *, task: str) -> Iterator[Any]:
        """The owned records, in order: staged ones built only for owned rows, then the owned upstream ones
        (``upstream``: every upstream record, which ``task_runner.upstream_records`` counts as read)."""
        start = 0
        for batch in checked_batches(store, staged, task=task):
            n = batch.num_rows
            yield from kept_records(batch, np.flatnonzero(self.owned[start : start + n]))
            start += n
        yield from itertools.compress(upstream, self.owned[self.staged_rows :].tolist())

    def whole_result(self, shard: ReplayResult, partition: TopicPartition, partition_time: int) -> ReplayResult:
        """The shard's result with what every shard of the task reports alike computed over the whole input: as the
        unsplit task counts one partition's steps when none is skipped, and its time and offset."""
        records = len(self.owned)
        stream_time = max(partition_time, self.max_timestamp)
        offsets = {partition: CommittableOffset(self.last_offset + 1, stream_time)} if records else {}
        return dataclasses.replace(
            shard,
            records_processed=records,
            steps=records,
            stream_time=stream_time,
            skip_steps=(),
            committable_offsets=offsets,
        )


@dataclass(frozen=True)
class OwnedReading:
    """What the topology alone says of a shard reading only its own records: they may be, and how owners are told."""

    #: Owners go by key (the sub-topology has stores); else round-robin by position.
    by_key: bool
    #: The store's key bytes are the record's key bytes (``ByteArray``/``ByteArray``, or ``String``/``String`` when
    #: :attr:`utf8` keys are valid): the key column is hashed as it is.
    same_bytes: bool
    #: The source reads keys as ``String``: only valid UTF-8 keeps their bytes.
    utf8: bool


def owned_reading(source: Any, config: TaskConfig, first_store: Any) -> OwnedReading | str:
    """Whether a shard of a task read from ``source`` may read only its own records, as far as the topology and
    config tell (the data's own checks, negative timestamps and keys that do not deserialize, come when it is read),
    or why not. One rule for the task runner (:func:`owned_input`) and the driver, which splits under ``--split
    auto`` only where the shards read only their own records (``task_split.auto_refusals``)."""
    if isinstance(source, ValidatingSourceNode):
        return "the source validates a value_schema"
    key_type = _plain(source.key_deserializer)
    plain = key_type is not None and _plain(source.value_deserializer) is not None
    if not plain and type(config.deserialization_exception_handler) is not LogAndFailExceptionHandler:
        return (
            "the source's serdes are not ByteArray or String and a deserialization exception handler is configured "
            "(it may drop a record at the poll)"
        )
    extractor = source.timestamp_extractor or config.default_timestamp_extractor or FailOnInvalidTimestamp()
    if getattr(type(extractor), "extract", None) is not ExtractRecordMetadataTimestamp.extract:
        return "the timestamp extractor is not a record-metadata one"
    by_key = first_store is not None
    same = False
    if by_key and key_type is not None:
        expected = ByteArraySerializer if key_type is ByteArrayDeserializer else StringSerializer
        same = serde_is(first_store.key_serde.serializer.serialize, expected)
    return OwnedReading(by_key, same, key_type is StringDeserializer)


def owned_input(
    *,
    store: ObjectStore,
    staged: StagedRange,
    appended: tuple[str, ...],
    graph: ProcessorTopology,
    config: TaskConfig,
    first_store: Any,
    shard: ShardSpec,
    task: str,
    stream_times: bool = False,
    reaches: Mapping[str, Mapping[str, Reach]] | None = None,
) -> OwnedInput | str:
    """The shard's rows of a one-partition task whose poll cannot drop a record, or why it must read them all
    (see the module doc). ``first_store``: the sub-topology's first store by name, ``None`` without stores.
    ``stream_times``: compute :attr:`OwnedInput.keyed_times` (the task has windowed processors); ``reaches``: the
    windowed processors behind a stateless prefix, whose :attr:`OwnedInput.others_times` this shard computes by
    running the prefix over the other shards' rows."""
    source = graph.source(staged.topic)
    reading = owned_reading(source, config, first_store)
    if isinstance(reading, str):
        return reading
    buckets = OWNER_BUCKETS if shard.count <= OWNER_BUCKETS else shard.count
    owners = TaskKeys(buckets) if reading.by_key else None
    deserialized = _DeserializedOwners(source, first_store, buckets, staged.topic) if reading.by_key else None
    chosen_buckets: list[np.ndarray] = []
    as_buckets = np.int16 if buckets < 1 << 15 else np.int64
    # the key bytes of consecutive batches hashed as they are, bucketed together: a look-up of a batch's keys
    # builds a hash of every key seen so far, which per row group cost a shard a twentieth of a count's time
    hashed: list[pa.Array] = []
    hashed_rows = 0

    def bucket_hashed() -> None:
        nonlocal hashed_rows
        if hashed:
            assert owners is not None
            chosen = owners.partitions_of(pa.concat_arrays(hashed))  # a null key: UNASSIGNED, round-robin
            chosen_buckets.append(np.maximum(chosen, -1).astype(as_buckets))
            hashed.clear()
            hashed_rows = 0

    keyed: list[np.ndarray] = []
    times: list[np.ndarray] = []
    staged_rows = 0
    last_offset, max_timestamp = -1, UNKNOWN
    columns = ("offset", "timestamp", "key")
    for batch in task_batches(store, staged, appended, task=task, columns=columns):
        n = batch.num_rows
        timestamps = batch.column("timestamp")
        lowest = pc.min(timestamps).as_py()
        if lowest is not None and lowest < 0:
            return "a timestamp is negative"
        keys = batch.column("key")
        present = keys.is_valid().to_numpy(zero_copy_only=False)
        if owners is None or deserialized is None:
            chosen_buckets.append(np.full(n, -1, as_buckets))  # no stores: every row round-robin
        elif reading.same_bytes and (not reading.utf8 or _utf8(keys)):
            hashed.append(keys)
            hashed_rows += n
            if hashed_rows >= HASHED_ROWS:
                bucket_hashed()
        else:
            bucket_hashed()
            try:
                chosen = deserialized.owners(keys)
            except Exception:  # noqa: BLE001 - the task fails at this record, where every record is read
                return "a key does not deserialize"
            present = chosen != _NULL_KEY
            chosen_buckets.append(np.maximum(chosen, -1).astype(as_buckets))
        if stream_times:
            keyed.append(present)
            times.append(timestamps.to_numpy(zero_copy_only=False).astype(np.int64, copy=False))
        offsets = batch.column("offset")
        staged_rows += pc.sum(pc.less(offsets, staged.end)).as_py() or 0
        last_offset = int(offsets[-1].as_py())
        max_timestamp = max(max_timestamp, int(pc.max(timestamps).as_py()))
    bucket_hashed()
    rows = np.concatenate(chosen_buckets) if chosen_buckets else np.zeros(0, dtype=np.int16)
    by_key = rows >= 0
    key_owners = KeyOwners(buckets, balanced_owners(np.bincount(rows[by_key], minlength=buckets), shard.count), shard)
    mask = np.where(by_key, key_owners.owns_buckets(rows), np.arange(len(rows)) % shard.count == shard.index)
    chosen_rows = np.flatnonzero(mask)
    keyed_times: list[int] = []
    keyed_before: list[int] = []
    others: dict[str, list[int]] = {name: [] for name in reaches or {}}
    if stream_times and len(rows):
        all_times, all_keyed = np.concatenate(times), np.concatenate(keyed)
        with_row, before_row = keyed_running_max(all_times, all_keyed)
        keyed_times, keyed_before = with_row[chosen_rows].tolist(), before_row[chosen_rows].tolist()
        if reaches:
            of_source = {name: per_source[source.name] for name, per_source in reaches.items()}
            passed = _passing_others(source, store, staged, appended, task, all_keyed & ~mask, of_source)
            for name, flags in passed.items():
                others[name] = keyed_running_max(all_times, flags)[0][chosen_rows].tolist()
    return OwnedInput(
        mask,
        chosen_rows,
        staged_rows,
        last_offset,
        max_timestamp,
        keyed_times,
        keyed_before,
        others,
        key_owners if reading.by_key else None,
    )


def _passing_others(
    source: Any,
    store: ObjectStore,
    staged: StagedRange,
    appended: tuple[str, ...],
    task: str,
    candidates: np.ndarray,
    reaches: Mapping[str, Reach],
) -> dict[str, np.ndarray]:
    """Per processor, per input row: the row is one of ``candidates`` (keyed, another shard's) and passes the
    processor's prefix, run on its key and value as the source deserializes them (a deserializer that raises:
    the owner's task fails there, so the row reaches nothing)."""
    passed = {name: np.zeros(len(candidates), dtype=bool) for name in reaches}
    topic = staged.topic
    start = 0
    for batch in task_batches(store, staged, appended, task=task, columns=("key", "value")):
        n = batch.num_rows
        picked = np.flatnonzero(candidates[start : start + n])
        if len(picked):
            rows = batch.take(pa.array(picked))
            keys = _deserialized(rows.column("key"), source.key_deserializer, topic)
            values = _deserialized(rows.column("value"), source.value_deserializer, topic)
            for row, key, value in zip((picked + start).tolist(), keys, values, strict=True):
                if key is _UNREADABLE or value is _UNREADABLE:
                    continue  # the owner fails the task at this record
                for name, reach in reaches.items():
                    if reach(key, value):
                        passed[name][row] = True
        start += n
    return passed


#: A column value the source's deserializer raised on.
_UNREADABLE = object()


def _deserialized(column: pa.Array, deserializer: Any, topic: str) -> list[Any]:
    """The column as the source's ``deserializer`` reads each value (:data:`_UNREADABLE` where it raises): a
    ``ByteArray`` column as it is, a ``String`` one of valid UTF-8 decoded by Arrow at once, else value by value."""
    kind = _plain(deserializer)
    if kind is ByteArrayDeserializer:
        return cast(list[Any], column.to_pylist())
    if kind is StringDeserializer:
        try:
            return cast(list[Any], column.cast(pa.string()).to_pylist())
        except pa.ArrowInvalid:
            pass  # not UTF-8: Java's replacement characters, value by value
    out: list[Any] = []
    for data in column.to_pylist():
        try:
            out.append(deserializer(topic, data))
        except Exception:  # noqa: BLE001 - the owner's poll fails the task at this record
            out.append(_UNREADABLE)
    return out


def balanced_owners(loads: np.ndarray, count: int) -> np.ndarray:
    """The shard of each bucket: the buckets by their records (``loads``), the largest first (the lower bucket first
    among equals), each to the shard with the fewest records so far (the lower shard among equals). A greedy
    schedule of the largest first: no shard ends more than one bucket's records above the least loaded, and the
    result is a function of ``loads`` alone, so every shard of a task computes the same."""
    order = np.lexsort((np.arange(len(loads)), -loads))
    shards = [(0, index) for index in range(count)]  # a heap of (records so far, shard)
    owner = np.empty(len(loads), np.int64)
    for bucket, load in zip(order.tolist(), loads[order].tolist(), strict=True):
        records, index = heapq.heappop(shards)
        owner[bucket] = index
        heapq.heappush(shards, (records + load, index))
    return owner


class _DeserializedOwners:
    """Owners of keys whose store bytes are not their record bytes: each distinct key deserialized as the source
    does and serialized as the store does (``key_shards.store_shard_key``, the gate's rule), once per shard."""

    def __init__(self, source: Any, store: Any, count: int, topic: str) -> None:
        self._deserialize = source.key_deserializer
        self._shard_key = store_shard_key(store)
        self._count = count
        self._topic = topic
        self._known: dict[bytes | None, int] = {}

    def owners(self, keys: pa.Array) -> np.ndarray:
        """Per key, its bucket (``partition_for_key`` modulo the count given), or a negative number for one the gate
        sends round-robin: :data:`_NULL_KEY` for one deserialized to null, -1 for one without store bytes; raises
        what the source's deserializer raises."""
        encoded = pc.dictionary_encode(keys)
        by_id = np.fromiter((self._owner(raw) for raw in encoded.dictionary.to_pylist()), np.int64)
        indices = encoded.indices
        chosen = np.zeros(len(keys), np.int64)
        if len(by_id):
            chosen = by_id[indices.fill_null(0).to_numpy(zero_copy_only=False)]
        if indices.null_count:
            chosen[indices.is_null().to_numpy(zero_copy_only=False)] = self._owner(None)
        return chosen

    def _owner(self, raw: bytes | None) -> int:
        owner = self._known.get(raw)
        if owner is None:
            key = self._deserialize(self._topic, raw)
            if key is None:
                owner = self._known[raw] = _NULL_KEY
                return owner
            try:
                data = self._shard_key(key)
            except Exception:  # noqa: BLE001 - the store could not address it either (the gate's rule)
                data = None
            owner = self._known[raw] = -1 if data is None else partition_for_key(data, self._count)
        return owner


def _plain(deserializer: Any) -> type | None:
    """``ByteArrayDeserializer`` or ``StringDeserializer`` when the source's deserializer is one of them."""
    function = getattr(deserializer, "deserialize", deserializer)
    return next((kind for kind in _PLAIN_DESERIALIZERS if serde_is(function, kind)), None)


def _utf8(keys: pa.Array) -> bool:
    try:
        keys.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def translated_drops(result: ReplayResult, stamps: Sequence[Any]) -> ReplayResult:
    """The shard's drops with the step of each one's record in the whole task (its stamp's position), not the count
    of the shard's own records before it."""
    if not result.dropped:
        return result
    dropped = tuple(
        dataclasses.replace(drop, records_processed=stamp.position)
        for drop, stamp in zip(result.dropped, stamps, strict=True)
    )
    return dataclasses.replace(result, dropped=dropped)
