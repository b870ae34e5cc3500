"""The Arrow columns the columnar paths write (``count.py``, ``window.py``): sink and changelog
rows built from buffers, byte for byte the rows the per-record collectors write, and the task's keys with their
sink partitions looked up once per distinct key.

Rows of one key shard of a split task (``shard_rows.py``) carry a :data:`POSITION` column; what :func:`send` and
:func:`send_changes` write for them ends with the stamp the shard collectors write (``spark/task_shards.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from streamproc.engine.key_shards import PROCESS
from streamproc.engine.partitioner import partition_for_key
from streamproc.engine.records import TopicPartition
from streamproc.engine.serdes import LongDeserializer, LongSerializer
from streamproc.spark.columnar.groups import ids_with_new
from streamproc.spark.task_output import (
    _HEADERS,
    CHANGELOG_SCHEMA,
    OUTPUT_SCHEMA,
    UNASSIGNED,
    TaskChangelogCollector,
    TaskOutputCollector,
)
from streamproc.spark.task_shards import SHARD_CHANGELOG_SCHEMA, SHARD_OUTPUT_SCHEMA

_BIG_ENDIAN_LONG = np.dtype(">i8")
#: The column of a key shard's rows that holds each row's position in the task's order (``shard_rows.py``).
POSITION = "position"


class SinkPlan(Protocol):
    """Where a columnar task's sink writes: its topic, node name and the topic's partition count."""

    @property
    def sink_topic(self) -> str: ...

    @property
    def sink_name(self) -> str: ...

    @property
    def sink_partitions(self) -> int: ...


#: ``Long``'s range: an ``int`` in it is its own round trip (:func:`stored_long`), the folds' check before calling it.
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def stored_long(topic: str, value: Any) -> int | None:
    """A new aggregate as a ``Long`` store round-trips it (``LongSerializer`` then ``LongDeserializer``, ``topic``
    the store's serde topic): ``None`` as it is (a tombstone), an ``int`` subclass as an ``int``; what the serializer
    rejects (not an int, a bool, past ``Long``'s range) raises its error, which per record the store's ``put`` raises
    at the aggregate node. The columnar folds call it only for a value that is not a plain ``int`` in range."""
    if value is None:
        return None
    return LongDeserializer().deserialize(topic, LongSerializer().serialize(topic, value))


def same_strings(text: str, n: int) -> pa.Array:
    """``n`` times ``text`` as a string column, built from buffers (no Python object per row)."""
    data = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def longs(values: np.ndarray) -> pa.Array:
    """Each value serialized as ``LongSerializer`` does (8 bytes, big-endian), as a binary column."""
    n = len(values)
    offsets = np.arange(n + 1, dtype=np.int32) * 8
    data = values.astype(_BIG_ENDIAN_LONG).tobytes()
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def no_headers(n: int) -> pa.Array:
    offsets = pa.array(np.zeros(n + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array([], _HEADERS.value_type), type=_HEADERS)


#: The stored (timestamp, count) of each of a chunk's new keys, in order, ``None`` for a key the store does not hold:
#: one call per chunk, so that a run reads only the keys its input brings (``count._stored_counts``).
StoredCounts = Callable[[list[bytes]], list[tuple[int, int] | None]]


class TaskKeys:
    """Per distinct key of the task (an id in order of first appearance): count, timestamp, sink partition.

    ``stored`` seeds a new key's count and timestamp from the task's store when it is first seen; without it (a sink's
    keys only, ``window.py``'s and the chain's) every key starts at count 0 with no timestamp."""

    def __init__(self, partitions: int, stored: StoredCounts | None = None) -> None:
        self.stored = stored
        self.partitions = partitions
        self.keys = pa.array([], pa.binary())
        self.count = np.zeros(0, dtype=np.int64)
        #: The stored timestamp; ``LONG_MIN`` for a key the store does not hold (the record's own then wins).
        self.timestamp = np.zeros(0, dtype=np.int64)
        #: The store held the key when the task first saw it (``stored`` found it).
        self.held = np.zeros(0, dtype=bool)
        self.partition = np.zeros(0, dtype=np.int32)

    def ids(self, keys: pa.Array) -> np.ndarray:
        """The ids of a chunk's keys, new keys added (their stored count, in one ``stored`` call, and partition
        looked up once). Whatever ``stored`` raises leaves the keys as they were."""
        ids, seen = ids_with_new(keys, self.keys)
        if len(seen) > len(self.keys):
            raw = seen.slice(len(self.keys)).to_pylist()
            new = len(raw)
            counts = np.zeros(new, np.int64)
            timestamps = np.full(new, np.iinfo(np.int64).min, np.int64)
            held = np.zeros(new, dtype=bool)
            if self.stored is not None:
                for i, found in enumerate(self.stored(raw)):
                    if found is not None:
                        timestamps[i], counts[i] = found
                        held[i] = True
            self.count = np.concatenate([self.count, counts])
            self.held = np.concatenate([self.held, held])
            self.timestamp = np.concatenate([self.timestamp, timestamps])
            self.partition = np.concatenate(
                [self.partition, np.array([partition_for_key(k, self.partitions) for k in raw], np.int32)]
            )
            self.keys = seen
        return ids

    def partitions_of(self, keys: pa.Array) -> np.ndarray:
        """The default partitioner's partition of each key (a null key: ``UNASSIGNED``, as
        ``TaskOutputCollector.send`` leaves it when the default partitioner has none)."""
        if not keys.null_count:
            ids = self.ids(keys)  # first: it adds the chunk's new keys
            return np.asarray(self.partition[ids])
        present = np.flatnonzero(keys.is_valid().to_numpy(zero_copy_only=False))
        partitions = np.full(len(keys), UNASSIGNED, dtype=np.int32)
        ids = self.ids(keys.take(pa.array(present)))  # first: ``self.partition`` is read after it grows
        partitions[present] = self.partition[ids]
        return partitions


def send(
    plan: SinkPlan,
    collector: TaskOutputCollector,
    batch: pa.RecordBatch,
    partitions: np.ndarray,
    sequence: pa.Array,
    stamps: pa.Array,
    keys: pa.Array,
    values: pa.Array,
) -> None:
    """The chunk's sink records into their partitions' files, each partition's in production order (a shard's rows
    stamped with their positions)."""
    n = batch.num_rows
    positions = shard_positions(batch)
    table = pa.Table.from_arrays(
        [
            sequence,
            same_strings(plan.sink_topic, n),
            pa.array(partitions, pa.int32()),
            stamps,
            keys,
            values,
            batch.column("headers").cast(_HEADERS),
            same_strings(plan.sink_name, n),
            *([] if positions is None else _stamp(positions)),
        ],
        schema=OUTPUT_SCHEMA if positions is None else SHARD_OUTPUT_SCHEMA,
    )
    order = np.argsort(partitions, kind="stable")
    ordered = table.take(pa.array(order))
    # UNASSIGNED (-1) first: a null key's records, which the default partitioner leaves to the producer
    bounds = np.searchsorted(partitions[order], np.arange(UNASSIGNED, plan.sink_partitions + 1))
    for index, partition in enumerate(range(UNASSIGNED, plan.sink_partitions)):
        start, end = int(bounds[index]), int(bounds[index + 1])
        if end > start:
            collector.files.append_table((plan.sink_topic, partition), ordered.slice(start, end - start))
    collector.sent += n


def send_changes(
    collector: TaskChangelogCollector,
    store_name: str,
    changelog: TopicPartition,
    stamps: pa.Array,
    keys: pa.Array,
    values: pa.Array,
    positions: pa.Array | None = None,
) -> None:
    """A chunk's changelog records of one store, in write order, into the changelog partition's file: as
    ``TaskChangelogCollector.send`` writes each (no headers: a store write logs none); a shard's stamped with
    ``positions``."""
    n = len(keys)
    logged = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
    table = pa.Table.from_arrays(
        [
            logged,
            same_strings(store_name, n),
            same_strings(changelog.topic, n),
            pa.array(np.full(n, changelog.partition, dtype=np.int32)),
            stamps,
            keys,
            values,
            no_headers(n),
            *([] if positions is None else _stamp(positions)),
        ],
        schema=CHANGELOG_SCHEMA if positions is None else SHARD_CHANGELOG_SCHEMA,
    )
    collector.files.append_table((changelog.topic, changelog.partition), table)
    collector.sent += n


def shard_positions(rows: pa.RecordBatch | pa.Table) -> pa.Array | None:
    """The positions of a key shard's rows (:data:`POSITION`), or ``None`` for a whole task's."""
    if POSITION not in rows.schema.names:
        return None
    column = rows.column(POSITION)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _stamp(positions: pa.Array) -> list[pa.Array]:
    """The ``position`` and ``phase`` columns a shard's rows end with: a columnar shard writes every row while its
    record is processed."""
    return [positions, pa.array(np.full(len(positions), PROCESS, dtype=np.int8))]
