"""The columnar count under ``--record-cache flush-at-end``: the record cache's one flush, over columns.

Per record (``state/record_cache.py``) the count's cached store sends, at the task's commit, one changelog record and
one update per key, in the order of each key's last write, each exactly the key's last uncached write: the final
count, stamped with the largest timestamp folded in (the store's value timestamp), with the last record's headers.
``count()`` never writes a tombstone, so no entry is skipped, and a ``toStream`` sink sends no old value. So the
flush is the last row per key of what the uncached count would write, in the order of those rows, numbered from the
collectors' counts. :class:`LastWrites` keeps those rows chunk by chunk by key id (``output.TaskKeys``): a chunk
brings each of its keys' last row (``groups.last_positions``), which replaces the row the key had, and goes to the
end; memory is bounded by the keys, not the records, and no row is sorted or hashed again.
``tests/unit/spark/test_record_cache_flush.py`` checks it gives the per-record path's files byte for byte.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from streamproc.spark.columnar.groups import last_positions


class LastWrites:
    """Each key's (window's) last row so far, in the order of those rows, by key id; the rows' columns are the
    caller's (the count: key, timestamp, value, headers, partition; the windowed count: the window's too)."""

    def __init__(self) -> None:
        self.ids = np.zeros(0, dtype=np.int64)
        self.rows: pa.Table | None = None

    def add(self, ids: np.ndarray, chunk: pa.Table) -> None:
        """A chunk's rows (in write order, ``ids`` their key ids): its keys' last rows replace theirs."""
        distinct, last = last_positions(ids)
        order = np.sort(last)  # the chunk's last rows in write order
        rows = chunk.take(pa.array(order))
        chunk_ids = ids[order]
        if self.rows is None:
            self.ids, self.rows = chunk_ids, rows
            return
        kept = ~np.isin(self.ids, distinct, assume_unique=True)
        self.ids = np.concatenate([self.ids[kept], chunk_ids])
        self.rows = pa.concat_tables([self.rows.filter(pa.array(kept)), rows])

    def table(self) -> pa.Table | None:
        """The rows kept (``None`` before the first chunk), the key with its last write at the end."""
        return self.rows
