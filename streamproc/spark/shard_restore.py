"""A key shard restores only the keys it owns (issue #29, docs/split.md "Restoring only a shard's keys").

Every store of a splittable sub-topology is read and written only at the key of the record being processed
(``engine/key_locality.py``), and a shard processes only the records whose keys it owns: an entry of another shard's
key is never read in this one. So a shard other than the first restores, of a key-value store's changelog, only the
records of its own keys, picked over the key column before any record is built. The first shard still restores
everything: its stores are the base of the task's store bundle (``shard_merge.py``), where a key no shard wrote keeps
its restored value, and its report gives the task's restore counts.

Which stores may be restored by key (:func:`restored_by_key`):

- key-value stores (plain and timestamped), whose changelog key is the store key. A window or session store's
  changelog is restored a batch at a time with the batch's latest time first (``SegmentedBytesStore.write_all``):
  which records survive a restore depends on the records of every key, so those stores are restored whole;
- the shard key's own store (``task_runner.shard_key``, the first by name), and a store whose key serializer is the
  same built-in serializer: the same key gives the same bytes there. A store with a serializer of its own (a
  Schema Registry serializer writes a subject's schema id, which is the topic's) is restored whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from streamproc.engine import serdes
from streamproc.engine.records import RawRecord
from streamproc.spark.columnar.output import TaskKeys
from streamproc.spark.owned_input import KeyOwners
from streamproc.spark.task_input import StagedRange, checked_batches
from streamproc.state.processor_state_manager import StoreDefinition
from streamproc.state.stores import KeyValueStore, TimestampedKeyValueStore
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import records_from_batch

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
        if isinstance(stores[name], (KeyValueStore, TimestampedKeyValueStore))
        and (name == names[0] or _same_builtin(stores[name].key_serde.serializer, first))
    )


def _same_builtin(serializer: object, first: object) -> bool:
    """Both are instances of exactly one serializer class of ``engine/serdes.py``, which writes a key's bytes
    whatever the topic."""
    kind = type(serializer)
    return kind is type(first) and kind.__module__ == serdes.__name__


def owned_changelog(store: ObjectStore, staged: StagedRange, owners: KeyOwners, *, task: str) -> Iterator[RawRecord]:
    """The changelog records of ``staged`` whose keys ``owners`` gives this shard (and null keys, which the restore
    counts and skips as it would), in offset order."""
    buckets = TaskKeys(owners.buckets)
    kept = skipped = 0
    for batch in checked_batches(store, staged, task=task):
        owned = owners.owns(batch.column("key"), buckets)
        rows = np.flatnonzero(owned)
        kept += len(rows)
        skipped += batch.num_rows - len(rows)
        if len(rows) == batch.num_rows:
            yield from records_from_batch(batch)
        elif len(rows):
            yield from records_from_batch(batch.take(pa.array(rows)))
    logger.info(
        "task [%s] shard %s restores %s of the %s records of %s-%s: its own keys'",
        task,
        owners.shard,
        kept,
        kept + skipped,
        staged.topic,
        staged.partition,
    )
