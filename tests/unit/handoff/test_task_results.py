"""A finished task's objects as the hand-off reads them: what it counts without building a record per row."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from streamproc.engine.task_id import TaskId
from streamproc.handoff.task_results import TaskResults
from streamproc.spark.task_output import CHANGELOG_SCHEMA, TaskObjects
from streamproc.storage.object_store import LocalObjectStore
from tests.unit.plan.test_run_plan import rekey_plan


def test_changelog_records_older_than_a_cutoff_are_counted_as_the_records_say(tmp_path: Path) -> None:
    """``changelog_older_than`` (the retention warning's count, on the timestamp column) agrees with counting
    :meth:`TaskResults.changelog`'s records one by one, at and around every timestamp of the object."""
    store = LocalObjectStore(tmp_path / "store")
    plan = rekey_plan(rep_committed=(0, 0))
    task = plan.tasks[-1]
    results = TaskResults(task, TaskObjects("p", TaskId.parse(task.task_id)), {}, store)
    stamps = [5, -3, 5, 1_767_225_600_000, 0, 7, 5]
    rows = {
        "sequence": list(range(len(stamps))),
        "store": ["s"] * len(stamps),
        "topic": ["app-s-changelog"] * len(stamps),
        "partition": [0] * len(stamps),
        "timestamp": stamps,
        "key": [b"k%d" % i for i in range(len(stamps))],
        "value": [None if i % 3 == 0 else b"v" for i in range(len(stamps))],
        "headers": [[] for _ in stamps],
    }
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(rows, schema=CHANGELOG_SCHEMA), sink)
    store.put(results.objects.changelog("app-s-changelog", 0), sink.getvalue().to_pybytes())
    for cutoff in (-10, -3, 0, 5, 6, 8, 1_767_225_600_000, 1_767_225_600_001):
        expected = sum(1 for r in results.changelog("app-s-changelog", 0) if r.timestamp < cutoff)
        assert results.changelog_older_than("app-s-changelog", 0, cutoff) == expected
