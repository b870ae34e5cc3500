"""Changelog records reduced to the last value per key restore exactly the store the full changelog restores."""

from __future__ import annotations

import random
import struct
from operator import itemgetter
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import serde_for
from streamproc.engine.task_id import TaskId
from streamproc.handoff.task_results import OutgoingRecord, table_rows
from streamproc.state.changelog_reduction import last_per_key, last_value_per_key, last_write_per_key
from streamproc.state.processor_state_manager import ProcessorStateManager, StoreDefinition
from streamproc.state.restore_plan import ChangelogState
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_type import StoreType

APP = "app"
TASK = TaskId(0, 0)
CHANGELOG = TopicPartition("app-counts-changelog", 0)
COUNTS = StoreDefinition("counts", StoreType.TIMESTAMPED_KEY_VALUE, serde_for("String"), serde_for("Long"))


def changelog(seed: int, n: int) -> list[OutgoingRecord]:
    """Counts per key as a count processor writes them, with deletes (tombstones) now and then."""
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    records = []
    for i in range(n):
        key = f"k{rng.randint(0, 40)}"
        if rng.random() < 0.05:
            counts.pop(key, None)
            value = None
        else:
            counts[key] = counts.get(key, 0) + 1
            value = struct.pack(">q", counts[key])
        records.append(OutgoingRecord(CHANGELOG.topic, 0, 1_000 + i * 7, key.encode(), value, ()))
    return records


def restored(state_dir: Path, records: list[OutgoingRecord]) -> list[tuple[object, object]]:
    state = ProcessorStateManager(TASK, [COUNTS], application_id=APP, state_directory=StateDirectory(state_dir, APP))
    state.initialize({CHANGELOG: ChangelogState(0, len(records))})
    raw = [
        ConsumerRecord.raw(r.topic, r.partition, offset, r.timestamp, r.key, r.value)
        for offset, r in enumerate(records)
    ]
    assert state.restore("counts", raw) == len(records)
    contents = list(state.store("counts").all())  # type: ignore[attr-defined]
    state.close()
    assert state.state_directory is not None
    state.state_directory.unlock()
    return contents


def test_reduced_changelog_restores_the_same_store(tmp_path: Path) -> None:
    full = changelog(seed=5, n=3_000)
    reduced = last_value_per_key(full)
    assert len(reduced) == len({r.key for r in full}) < len(full) // 20
    assert [r.key for r in reduced] == sorted({r.key for r in full}, key=lambda k: max(
        i for i, r in enumerate(full) if r.key == k))  # fmt: skip
    assert any(r.value is None for r in reduced)  # a delete that is the key's last write stays a tombstone
    expected = restored(tmp_path / "full", full)
    assert expected  # the comparison is not between two empty stores
    assert restored(tmp_path / "reduced", reduced) == expected


def test_reduction_keeps_each_keys_last_record_with_its_timestamp() -> None:
    a1 = OutgoingRecord("c", 0, 10, b"a", b"1", ())
    b1 = OutgoingRecord("c", 0, 11, b"b", b"1", ())
    a2 = OutgoingRecord("c", 0, 12, b"a", b"2", ())
    assert last_value_per_key([a1, b1, a2]) == [b1, a2]
    assert last_value_per_key([]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.sampled_from([b"a", b"b", b"", b"ccc", b"\x00"]),
                          st.one_of(st.none(), st.binary(max_size=4))), max_size=60))  # fmt: skip
def test_the_table_reduction_keeps_what_the_row_reduction_keeps(rows: list[tuple[int, bytes, bytes | None]]) -> None:
    table = pa.table(
        {"timestamp": [r[0] for r in rows], "key": [r[1] for r in rows], "value": [r[2] for r in rows],
         "headers": [[] for _ in rows]},
        schema=pa.schema([("timestamp", pa.int64()), ("key", pa.binary()), ("value", pa.binary()),
                          ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))]),
    )  # fmt: skip
    assert list(table_rows(last_write_per_key(table))) == last_per_key(list(table_rows(table)), itemgetter(1))
