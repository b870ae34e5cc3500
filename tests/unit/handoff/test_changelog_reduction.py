"""Changelog records reduced to the last value per key restore exactly the store the full changelog restores."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.serdes import serde_for
from streamproc.engine.task_id import TaskId
from streamproc.handoff.changelog_reduction import last_value_per_key
from streamproc.handoff.task_results import OutgoingRecord
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
