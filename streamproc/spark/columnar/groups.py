"""The grouped running folds the columnar paths share (``count.py``'s count per key,
``window.py``'s count per window): ids for the groups a task has seen, and per position the running count
and the running maximum within its group, so an aggregate that only counts and keeps the largest timestamp is
computed for a whole chunk in numpy, in position (offset) order, without a Python step per record."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def ids_with_new(values: pa.Array, seen: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each value's index in ``seen`` extended by the values it lacks, in order of first appearance; returns the
    indices and the extended ``seen`` (the new values are its tail, from ``len(seen)`` on). First appearance order
    makes a group's id order the order in which the task first touched the groups. One hash pass over the values
    (a dictionary encoding), then only their distinct ones are looked up in ``seen``."""
    encoded = pc.dictionary_encode(values)
    distinct = encoded.dictionary
    found = pc.fill_null(pc.index_in(distinct, value_set=seen), -1).to_numpy(zero_copy_only=False)
    ids_of_distinct = found.astype(np.int64)
    new = ids_of_distinct < 0
    if new.any():
        ids_of_distinct[new] = len(seen) + np.arange(int(new.sum()), dtype=np.int64)
        seen = pa.concat_arrays([seen, distinct.filter(pa.array(new))])
    ids: np.ndarray = ids_of_distinct[encoded.indices.to_numpy(zero_copy_only=False)]
    return ids, seen


def grouped_running_max(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per position, the maximum of ``values`` so far among the positions of the same group (in position order)."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    distinct, ranks = np.unique(values[order], return_inverse=True)
    width = np.int64(len(distinct))
    # group-major composite: a running maximum never carries over from one group to the next
    composite = sorted_groups.astype(np.int64) * width + ranks
    running = np.maximum.accumulate(composite) - sorted_groups.astype(np.int64) * width
    out = np.empty_like(values)
    out[order] = distinct[running]
    return out


def grouped_running_count(groups: np.ndarray) -> np.ndarray:
    """Per position, how many positions of the same group there are up to and including it."""
    n = len(groups)
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    lengths = np.diff(np.r_[starts, n])
    within = np.arange(n, dtype=np.int64) - np.repeat(starts, lengths) + 1
    out = np.empty(n, dtype=np.int64)
    out[order] = within
    return out


def last_positions(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct groups and, for each, its last position: where a group's state after the chunk is read."""
    distinct, last_from_end = np.unique(groups[::-1], return_index=True)
    return distinct, len(groups) - 1 - last_from_end
