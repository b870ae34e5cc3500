"""The rows of a chunk that one key shard of a split task owns, over columns (issue #29, docs/split.md).

A task the columnar count takes reads one partition in offset order, which is its processing order: a row's position
in the task's order is its index in the input. So a columnar shard need not run the task's ``PartitionGroup`` as a
per-record shard does (``engine/key_shards.py``): it keeps the rows it owns, each with its position, and folds only
those. Ownership is the gate's rule, so a task's shards split its records the same way whichever path runs them:
``partition_for_key(key, K)`` of the key bytes the store addresses (the count's store key serde is ``ByteArray``, so
the record's key as it is), or round-robin by position for a sub-topology without stores.

The kept rows carry their position in a :data:`POSITION` column; the sink and changelog columns
(``output.send``/``send_changes``) stamp what they write from it, ``(position, PROCESS)``, as the shard collectors
stamp a per-record shard's rows, and the merge (``spark/shard_merge.py``) orders all shards' rows on the stamp.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from streamproc.engine.key_shards import ShardSpec
from streamproc.spark.columnar.output import POSITION, TaskKeys


class ShardRows:
    """Picks a shard's rows out of each chunk of a task's input, in order (see the module doc)."""

    def __init__(self, shard: ShardSpec, *, by_key: bool) -> None:
        self.shard = shard
        #: each distinct key's owner, computed once (a task's keys repeat): murmur2 modulo the shard count, which is
        #: what ``TaskKeys`` computes as a key's partition
        self._owners = TaskKeys(shard.count) if by_key else None

    def owned(self, batch: pa.RecordBatch, first_position: int) -> pa.RecordBatch:
        """``batch``'s rows this shard owns (``first_position``: the position of its first row), with
        :data:`POSITION`."""
        positions = np.arange(first_position, first_position + batch.num_rows, dtype=np.int64)
        count = self.shard.count
        if self._owners is None:
            owners = positions % count
        else:  # a null key (no bytes to hash) goes round-robin, as the gate sends it
            owners = self._owners.partitions_of(batch.column("key")).astype(np.int64)
            owners = np.where(owners < 0, positions % count, owners)
        kept = np.flatnonzero(owners == self.shard.index)
        rows = batch if len(kept) == batch.num_rows else batch.take(pa.array(kept))
        return rows.append_column(POSITION, pa.array(positions[kept], pa.int64()))
