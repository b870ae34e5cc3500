"""A key shard restores only the keys it owns (issue #29, docs/split.md "Landed: a shard restores its own keys").

Every store of a splittable sub-topology is read and written only at the key of the record being processed
(``engine/key_locality.py``), and a shard processes only the records whose keys it owns: an entry of another shard's
key is never read in this one. So a shard other than the first restores, of a store's changelog, only the records of
its own keys, picked over the key column before any record is built. The first shard still restores everything: its
stores are the base of the task's store bundle (``shard_merge.py``), where a key no shard wrote keeps its restored
value, and its report gives the task's restore counts.

Which stores may be restored by key (:func:`restored_by_key`):

- key-value stores (plain and timestamped), whose changelog key is the store key;
- RocksDB window stores and RocksDB session stores, whose changelog key is the store key and a suffix that begins
  with the record's segment time (a window's start and a sequence number; a session's end and start). A window
  store keeping duplicates (a stream-stream join's) is restored the same way: its restore writes each changelog
  key, the change-logging layer's seqnum in it, as the store key, whole or by key alike. Their restore writes a
  batch at a time after raising the store's stream time to the batch's latest segment time
  (``SegmentedBytesStore.write_all``), so which records survive depends on every key's. A shard raises it, before
  each batch of its own records, to the latest segment time of every record read so far (never past the whole
  changelog's latest): it may drop more of its own records than the whole restore does, but only records that the
  stream time at the restore's end expires, and every read of these stores is bounded by that
  (``observedStreamTime - retention + 1``: a window store's ``fetch``, ``fetch_at`` and ``all``, a session store's
  ``findSessions`` and ``fetchSession``, as Kafka Streams bounds them, ``SegmentedBytesStore.get``). In-memory
  window and session stores are restored whole: they expire record by record;
- of those, the shard key's own store (``task_runner.shard_key``, the first by name), and a store whose key
  serializer is the same built-in serializer: the same key gives the same bytes there. A store with a serializer of
  its own (a Schema Registry serializer writes the topic's subject's schema id) is restored whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamproc.engine import serdes
from streamproc.engine.records import RawRecord
from streamproc.spark.columnar.output import TaskKeys
from streamproc.spark.owned_input import HASHED_ROWS, KeyOwners
from streamproc.spark.task_input import StagedRange, checked_batches
from streamproc.state.processor_state_manager import StoreDefinition
from streamproc.state.store_encoding import SESSION_KEY_SUFFIX, WINDOW_KEY_SUFFIX, latest_segment_time, record_keys
from streamproc.state.stores import (
    KeyValueStore,
    SessionStore,
    StateStore,
    TimestampedKeyValueStore,
    WindowStore,
)
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import kept_records

logger = logging.getLogger(__name__)


def restored_by_key(stores: Mapping[str, Any], definitions: Sequence[StoreDefinition]) -> frozenset[str]:
    """The stores a shard may restore by key (see the module doc); the shard key is the first store's by name."""
    names = sorted(d.name for d in definitions)
    if not names:
        return frozenset()
    first = stores[names[0]].key_serde.serializer
    return frozenset(
        name
        for name in names
        if _key_suffix(stores[name]) is not None
        and (name == names[0] or _same_builtin(stores[name].key_serde.serializer, first))
    )


def _key_suffix(store: object) -> int | None:
    """The bytes a changelog key of ``store`` holds after the store key, ``None`` where it is restored whole."""
    if isinstance(store, (KeyValueStore, TimestampedKeyValueStore)):
        return 0
    if isinstance(store, WindowStore) and store.persistent:
        return WINDOW_KEY_SUFFIX
    if isinstance(store, SessionStore) and store.persistent:
        return SESSION_KEY_SUFFIX
    return None


def _same_builtin(serializer: object, first: object) -> bool:
    """Both are instances of exactly one serializer class of ``engine/serdes.py``, which writes a key's bytes
    whatever the topic."""
    kind = type(serializer)
    return kind is type(first) and kind.__module__ == serdes.__name__


def owned_changelog(
    store: ObjectStore, staged: StagedRange, owners: KeyOwners, target: StateStore, *, task: str
) -> Iterator[RawRecord]:
    """The changelog records of ``staged`` whose keys ``owners`` gives this shard (and null keys, which the restore
    counts and skips as it would), in offset order, for ``target`` (one of :func:`restored_by_key`'s).

    The keys of :data:`~streamproc.spark.owned_input.HASHED_ROWS` records are bucketed at once (a look-up of every key
    seen so far per row group was the cost ``owned_input`` shed the same way); each batch then raises a window or
    session store's stream time and gives its records in turn, as before."""
    suffix = _key_suffix(target)
    assert suffix is not None, f"{target.name} is restored whole"
    buckets = TaskKeys(owners.buckets)
    kept = skipped = 0
    #: Batches read but not given yet, each with the keys its owners are bucketed by (``None``: every record, a
    #: batch with a key too short for the suffix, where the store's restore fails as a whole one would).
    pending: list[tuple[pa.RecordBatch, pa.Array | None]] = []
    pending_rows = 0

    def given() -> Iterator[RawRecord]:
        nonlocal kept, skipped, pending_rows
        bucketed = [keys for _, keys in pending if keys is not None]
        owned = owners.owns(pa.concat_arrays(bucketed), buckets) if bucketed else np.zeros(0, dtype=bool)
        start = 0
        for batch, keys in pending:
            if keys is None:
                rows = np.arange(batch.num_rows)
            else:
                rows = np.flatnonzero(owned[start : start + len(keys)])
                start += len(keys)
                if suffix:
                    assert isinstance(target, (WindowStore, SessionStore))
                    latest = latest_segment_time(batch.column("key"), suffix)
                    if latest is not None:
                        target.segments.advance_stream_time(latest)
            kept += len(rows)
            skipped += batch.num_rows - len(rows)
            yield from kept_records(batch, rows)
        pending.clear()
        pending_rows = 0

    for batch in checked_batches(store, staged, task=task):
        keys = batch.column("key")
        if suffix:
            lengths = pc.fill_null(pc.binary_length(keys), suffix)
            short = pc.any(pc.less(lengths, suffix)).as_py()
            pending.append((batch, None if short else record_keys(keys, suffix)))
        else:
            pending.append((batch, keys))
        pending_rows += batch.num_rows
        if pending_rows >= HASHED_ROWS:
            yield from given()
    yield from given()
    logger.info(
        "task [%s] shard %s restores %s of the %s records of %s-%s: its own keys'",
        task,
        owners.shard,
        kept,
        kept + skipped,
        staged.topic,
        staged.partition,
    )
