"""State benchmarks: changelog restore into RocksDB vs a bare rocksdict loop; store get/put in a task vs a dict.

1. **Restore**: the same changelog records (``ConsumerRecord`` s) restored by ``ProcessorStateManager.restore`` into
   the RocksDB store, and written by a bare ``rocksdict`` loop (``db.put(key, value)`` with the WAL disabled) into a
   DB opened with the same options. The goal is a throughput ratio (restore / bare) of at least 0.7.
2. **Store access in a task**: a ``StreamTask`` whose processor does one ``get`` and one ``put`` per record on the
   task's store (in memory, then RocksDB) vs the same processor on a plain ``dict``; per-record cost and ratio.

Only ratios measured in the same run mean anything; nothing is asserted about time. Run with
``pytest bench/test_bench_state.py -m bench -s`` (``STREAMPROC_BENCH_RECORDS`` sets the size) or as a script
(``--record`` writes ``bench/results/state.json`` with the machine description).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rocksdict import Rdict  # noqa: E402

from streamproc.engine.processor import Processor, ProcessorContext  # noqa: E402
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode  # noqa: E402
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition  # noqa: E402
from streamproc.engine.serdes import serde_for  # noqa: E402
from streamproc.engine.stream_task import StreamTask  # noqa: E402
from streamproc.engine.task_id import TaskId  # noqa: E402
from streamproc.state.changelog_collector import ChangelogCollector  # noqa: E402
from streamproc.state.processor_state_manager import ProcessorStateManager, StoreDefinition  # noqa: E402
from streamproc.state.restore_plan import ChangelogState  # noqa: E402
from streamproc.state.rocksdb_store import kafka_streams_options, write_options  # noqa: E402
from streamproc.state.state_directory import StateDirectory  # noqa: E402
from streamproc.state.store_type import StoreType  # noqa: E402

RECORDS = 300_000
KEYS = 50_000
APP = "bench"
TASK = TaskId(0, 0)
RawRecord = ConsumerRecord[bytes | None, bytes | None]


def changelog_records(total: int, topic: str) -> list[RawRecord]:
    return [
        ConsumerRecord.raw(topic, 0, offset, 1_700_000_000_000 + offset, b"key-%08d" % (offset % KEYS), b"v" * 40)
        for offset in range(total)
    ]


def bare_rocksdict(records: list[RawRecord], path: Path) -> float:
    db = Rdict(str(path), kafka_streams_options())
    write = write_options()
    put = db.put
    start = time.perf_counter()
    for record in records:
        put(record.key, record.value, write)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def restore(records: list[RawRecord], state_dir: Path, store_type: StoreType) -> float:
    definition = StoreDefinition("s", store_type, serde_for("String"), serde_for("ByteArray"))
    manager = ProcessorStateManager(
        TASK, [definition], application_id=APP, state_directory=StateDirectory(state_dir, APP)
    )
    changelog = TopicPartition(f"{APP}-s-changelog", 0)
    manager.initialize({changelog: ChangelogState(0, len(records))})
    start = time.perf_counter()
    restored = manager.restore("s", records)
    elapsed = time.perf_counter() - start
    assert restored == len(records)
    manager.close()
    assert manager.state_directory is not None
    manager.state_directory.unlock()
    return elapsed


class GetPut(Processor):
    """One get and one put per record: a running count per key."""

    def __init__(self, store: Callable[[ProcessorContext], Any]) -> None:
        self.make_store = store

    def init(self, context: ProcessorContext) -> None:
        self.store = self.make_store(context)

    def process(self, record: Record[Any, Any]) -> None:
        store = self.store
        old = store.get(record.key)
        store.put(record.key, 1 if old is None else old + 1)


class DictStore:
    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        return self.data.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.data[key] = value


def run_task(total: int, stores: dict[str, object], use_dict: bool, attach: ProcessorStateManager | None) -> float:
    def make(context: ProcessorContext) -> Any:
        return DictStore() if use_dict else context.get_state_store("s")

    source = SourceNode("source", ["in"], lambda _t, d: d.decode() if d else None, lambda _t, d: d)
    node = ProcessorNode("count", GetPut(make))
    source.add_child(node)
    tp = TopicPartition("in", 0)
    task = StreamTask(TASK, ProcessorTopology([source, node]), [tp], stores=stores)
    if attach is not None:
        attach.attach(task.context)
    task.initialize_topology()
    records = [ConsumerRecord.raw("in", 0, i, i, b"k%06d" % (i % KEYS), b"x") for i in range(total)]
    start = time.perf_counter()
    for begin in range(0, total, 1000):
        task.add_records(tp, records[begin : begin + 1000])
        while task.process():
            pass
    return time.perf_counter() - start


def task_store(total: int, state_dir: Path, persistent: bool) -> float:
    definition = StoreDefinition(
        "s", StoreType.KEY_VALUE, serde_for("String"), serde_for("Long"), persistent=persistent
    )
    manager = ProcessorStateManager(
        TASK,
        [definition],
        application_id=APP,
        state_directory=StateDirectory(state_dir, APP) if persistent else None,
        collector=ChangelogCollector(TASK),
    )
    manager.initialize({TopicPartition(f"{APP}-s-changelog", 0): ChangelogState(0, 0)})
    elapsed = run_task(total, dict(manager.stores), False, manager)
    manager.close()
    if manager.state_directory is not None:
        manager.state_directory.unlock()
    return elapsed


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def measure(total: int = RECORDS) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="streamproc-bench-state-"))
    try:
        records = changelog_records(total, f"{APP}-s-changelog")
        first_bare = bare_rocksdict(records, work / "bare")
        plain = restore(records, work / "plain", StoreType.KEY_VALUE)
        timestamped = restore(records, work / "ts", StoreType.TIMESTAMPED_KEY_VALUE)
        bare = min(first_bare, bare_rocksdict(records, work / "bare2"))
        task_total = max(total // 3, 1)
        dict_time = run_task(task_total, {}, True, None)
        memory_time = task_store(task_total, work / "mem", False)
        rocks_time = task_store(task_total, work / "rocks", True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "benchmark": "state_restore_and_store_access",
        "restore_records": total,
        "bare_rocksdict_records_per_second": round(total / bare),
        "restore_plain_records_per_second": round(total / plain),
        "restore_timestamped_records_per_second": round(total / timestamped),
        "restore_plain_over_bare_throughput": round(bare / plain, 2),
        "restore_timestamped_over_bare_throughput": round(bare / timestamped, 2),
        "task_records": task_total,
        "task_dict_us_per_record": round(dict_time / task_total * 1e6, 2),
        "task_in_memory_store_us_per_record": round(memory_time / task_total * 1e6, 2),
        "task_rocksdb_store_us_per_record": round(rocks_time / task_total * 1e6, 2),
        "task_in_memory_over_dict_time": round(memory_time / dict_time, 2),
        "task_rocksdb_over_dict_time": round(rocks_time / dict_time, 2),
        "machine": machine(),
    }


def report(result: dict[str, Any]) -> str:
    return (
        f"restore {result['restore_records']} records: bare rocksdict "
        f"{result['bare_rocksdict_records_per_second']:,} rec/s, restore plain "
        f"{result['restore_plain_records_per_second']:,} rec/s ({result['restore_plain_over_bare_throughput']}x of "
        f"bare, goal >= 0.7x), timestamped {result['restore_timestamped_records_per_second']:,} rec/s "
        f"({result['restore_timestamped_over_bare_throughput']}x)\n"
        f"task get+put per record over {result['task_records']} records: dict {result['task_dict_us_per_record']} us, "
        f"in-memory store {result['task_in_memory_store_us_per_record']} us "
        f"({result['task_in_memory_over_dict_time']}x), RocksDB store {result['task_rocksdb_store_us_per_record']} us "
        f"({result['task_rocksdb_over_dict_time']}x)"
    )


@pytest.mark.bench
def test_bench_state() -> None:
    from bench.conftest import record

    result = measure(int(os.environ.get("STREAMPROC_BENCH_RECORDS", RECORDS)))
    print(report(result))
    record("state", result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=RECORDS)
    parser.add_argument("--record", action="store_true", help="write bench/results/state.json")
    args = parser.parse_args()
    result = measure(args.records)
    print(report(result))
    if args.record:
        path = ROOT / "bench" / "results" / "state.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"recorded in {path}")


if __name__ == "__main__":
    main()
