"""The columnar count under ``--record-cache flush-at-end``: the record cache's one flush, over columns.

Per record (``state/record_cache.py``) the count's cached store sends, at the task's commit, one changelog record and
one update per key, in the order of each key's last write, each exactly the key's last uncached write: the final
count, stamped with the largest timestamp folded in (the store's value timestamp), with the last record's headers.
``count()`` never writes a tombstone, so no entry is skipped, and a ``toStream`` sink sends no old value. So the
flush is the last row per key of what the uncached count writes, in the order of those rows, numbered again from
the collector's count: :class:`DeferredCollector` stands in for a collector while the chunks are counted, keeps only
each key's last row so far (memory bounded by the keys, not the records), and :meth:`DeferredCollector.flush`
hands the rows to the real collector as the flush would send them. ``tests/unit/spark/test_columnar_count.py``
checks that it gives the per-record path's files byte for byte.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamproc.state.changelog_reduction import last_write_per_key


class _DeferredFiles:
    """``_ParquetFiles.append_table`` for the chunk's slices, which ``send`` writes partition by partition."""

    def __init__(self) -> None:
        self.slices: list[pa.Table] = []

    def append_table(self, where: tuple[str, int], table: pa.Table) -> None:
        self.slices.append(table)


class DeferredCollector:
    """A collector's ``files`` and ``sent`` as the columnar senders use them; each key's last row kept."""

    def __init__(self, sent: int = 0) -> None:
        self.files = _DeferredFiles()
        self.sent = sent
        self.start = sent
        self.pending: pa.Table | None = None

    def fold_chunk(self) -> None:
        """Reduce what the chunk sent, with the rows kept so far, to each key's last row in production order."""
        slices = self.files.slices
        if not slices:
            return
        self.files.slices = []
        tables = slices if self.pending is None else [self.pending, *slices]
        table = pa.concat_tables(tables)
        table = table.take(pc.sort_indices(table.column("sequence")))  # send() grouped the chunk by partition
        self.pending = last_write_per_key(table)

    def flush(self, real: Any, sink_partitions: int | None = None) -> int:
        """Send the kept rows to ``real`` (an output or changelog collector), numbered from its count, in the order
        of the keys' last writes and, for an output collector (``sink_partitions``), grouped by partition as
        ``send`` writes them; returns how many."""
        self.fold_chunk()
        pending = self.pending
        self.pending = None
        if pending is None or pending.num_rows == 0:
            return 0
        n = pending.num_rows
        sequence = pa.array(np.arange(real.sent, real.sent + n, dtype=np.int64))
        index = pending.schema.get_field_index("sequence")
        pending = pending.set_column(index, pending.schema.field(index), sequence)
        if sink_partitions is None:
            first = pending.slice(0, 1)
            real.files.append_table((first.column("topic")[0].as_py(), first.column("partition")[0].as_py()), pending)
        else:
            partitions = pending.column("partition").to_numpy()
            order = np.argsort(partitions, kind="stable")
            ordered = pending.take(pa.array(order))
            bounds = np.searchsorted(partitions[order], np.arange(-1, sink_partitions + 1))
            topic = pending.column("topic")[0].as_py()
            for index, partition in enumerate(range(-1, sink_partitions)):
                start, end = int(bounds[index]), int(bounds[index + 1])
                if end > start:
                    real.files.append_table((topic, partition), ordered.slice(start, end - start))
        real.sent += n
        return int(n)
