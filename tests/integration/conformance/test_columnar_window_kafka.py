"""The columnar windowed aggregate (``spark/columnar/window.py``) against Kafka Streams itself, late records included.

``test_dsl_programs_run.py`` proves the per-record path of two side-by-side programs equal to Kafka's
``TopologyTestDriver``; here each one's windowed-aggregate task runs over columns on the very records Kafka's driver
fed that task: the oracle's seeded inputs, some out of order, some past the grace and dropped. The task's sink
records (key, value, timestamp, in order), its drop count and the window store's entries in its live segments must
equal Kafka's.

* ``bytes-window-sum`` (re-key by the value's first byte → repartition ``rekeyed`` → 10 s tumbling windows, 5 min
  grace → a Long sum of the value lengths → ``toStream`` → ``selectKey(windowed.key())``) runs the per-update loop
  (``_LoopFold``); its task is sub-topology 1. The hand-off test runs it over columns against a live app, but with
  no late record (which records a live app drops behind a repartition topic depends on which upstream task wrote
  first). Kafka's driver runs both sub-topologies in one task with one repartition partition, writing each re-keyed
  record to the repartition topic as it comes, so that topic holds the input's records in input order with the
  value's first byte as key: staged here as the one partition of ``dsl-run-rekeyed-repartition``.
* ``bytes-window-count`` (10 s windows hopping by 5 s, 20 s grace → ``count()`` → ``toStream`` →
  ``selectKey(windowed.key())``) runs the count fold (``_CountFold``, no aggregator call); no repartition: its task
  (sub-topology 0) reads the source topic ``in`` as the oracle fed it. A record late by more than the grace can be
  dropped from one of its two windows and counted in the other.
"""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamproc.engine.task_id import TaskId
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, TaskWork, run_task
from streamproc.state import store_encoding
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_type import StoreType
from streamproc.storage import LocalObjectStore
from streamproc_dev.conformance.dsl_programs import PROGRAMS
from streamproc_dev.conformance.oracle import JVM_OPTIONS, ensure_oracle_jar
from tests.integration.conformance.test_dsl_programs_run import SEEDS, _records, _topics
from tests.unit.spark.test_columnar_count import Record, _stage

pytestmark = pytest.mark.integration

APP = "dsl-run"  # the oracle's application id: Kafka's repartition topic is dsl-run-rekeyed-repartition
HANDOFF_PROGRAMS = "tests.integration.handoff.dsl_handoff_programs"
COUNT_FOLD = "folds the windowed count() over columns"  # columnar_window's DEBUG line for the count fold
#: the record's offset in Kafka's expired-window warning (one per window a record is dropped from)
_EXPIRED_WINDOW_OFFSET = re.compile(r"Skipping record for expired window\..* offset=\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class WindowProgram:
    """A side-by-side program's windowed-aggregate task, and how its input is staged from the oracle's records."""

    #: ``MODULE:FUNCTION`` of the Python twin, as ``run_task`` loads it
    topology: str
    task: str
    #: the topic the task reads, with the key of its record for an oracle input record's key and value
    input_topic: str
    input_key: Callable[[str, str], bytes]
    store: str
    sink: str
    #: the DSL's default: window size + grace
    retention_ms: int
    #: the windowed ``count()``: the task must run the count fold
    count_fold: bool
    #: how many windows each record falls in (window size / advance)
    windows_per_record: int = 1
    #: the seeds on which some record is dropped from fewer than all its windows: counted in a later one
    partial_drop_seeds: frozenset[int] = frozenset()


WINDOW_PROGRAMS = {
    "bytes-window-sum": WindowProgram(
        f"{HANDOFF_PROGRAMS}:bytes_window_sum",
        "1_0",
        f"{APP}-rekeyed-repartition",
        lambda key, value: value.encode()[:1],
        "sums",
        "sums",
        10_000 + 300_000,
        count_fold=False,
    ),
    "bytes-window-count": WindowProgram(
        f"{HANDOFF_PROGRAMS}:bytes_window_count",
        "0_0",
        "in",
        lambda key, value: key.encode(),
        "counts",
        "counts",
        10_000 + 20_000,
        count_fold=True,
        windows_per_record=2,
        partial_drop_seeds=frozenset({7, 1234}),
    ),
}


@pytest.fixture(scope="module")
def kafka_runs() -> dict[str, Any]:
    """Kafka's ``TopologyTestDriver`` answers for every program and seed (oracle mode ``dsl-run``, one JVM)."""
    runs: list[dict[str, Any]] = []
    for program in WINDOW_PROGRAMS:
        inputs, tables, outputs = _topics(PROGRAMS[program]())
        runs.extend(
            {
                "id": f"dsl/{program}/{seed}",
                "registry": "dsl",
                "program": program,
                "records": _records(seed, program, inputs, tables),
                "outputs": outputs,
            }
            for seed in SEEDS
        )
    with tempfile.TemporaryDirectory(prefix="streamproc-columnar-window-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps({"runs": runs}), encoding="utf-8")
        proc = subprocess.run(
            ["java", *JVM_OPTIONS, "-jar", str(ensure_oracle_jar()), "dsl-run", str(path)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-4000:]
    answers: dict[str, Any] = json.loads(proc.stdout)["runs"]
    return {run["id"]: (run["records"], answers[run["id"]]) for run in runs}


def _store_entries(root: Path, plan: str, program: WindowProgram, scratch: Path) -> list[list[str]]:
    """The window store's raw entries in the task's store bundle that Kafka's ``all()`` reads: those of windows
    starting after ``observedStreamTime - retention`` (the latest window start put; an expired window can still sit in
    a live segment)."""
    bundle = root / TaskObjects(plan, TaskId.parse(program.task)).stores
    with tarfile.open(fileobj=io.BytesIO(bundle.read_bytes())) as tar:
        tar.extractall(scratch / "bundle", filter="data")
    entries: list[tuple[bytes, bytes]] = []
    for current in sorted((scratch / "bundle").rglob("CURRENT")):  # each segment is a RocksDB directory
        db = RocksDBKeyValueBytesStore(program.store, current.parent, StoreType.TIMESTAMPED_WINDOW)
        try:
            entries.extend(db.range(None, None))
        finally:
            db.close()
    starts = [store_encoding.parse_window_store_key(key).window_start for key, _ in entries]
    live = max(starts, default=0) - program.retention_ms + 1
    live_entries = [entry for entry, start in zip(entries, starts, strict=True) if start >= live]
    return sorted([key.hex(), value.hex()] for key, value in live_entries)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(WINDOW_PROGRAMS))
def test_the_columnar_window_aggregate_gives_kafkas_results(
    kafka_runs: dict[str, Any], name: str, seed: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    program = WINDOW_PROGRAMS[name]
    records, kafka = kafka_runs[f"dsl/{name}/{seed}"]
    assert "error" not in kafka, kafka["error"]
    assert kafka["dropped"] > 0, "no record is late past the grace: the data tests no drop"
    root = tmp_path / "store"
    staged: list[Record] = [
        (program.input_key(key, value), value.encode(), timestamp, ()) for _topic, key, value, timestamp in records
    ]
    start, end = _stage(LocalObjectStore(root), program.input_topic, staged, 0)
    plan = "00000000000000d1"
    task = TaskId.parse(program.task)
    with caplog.at_level(logging.DEBUG, logger="streamproc.spark.columnar.window"):
        report = run_task(
            TaskWork(
                plan_id=plan,
                application_id=APP,
                task_id=program.task,
                subtopology=task.subtopology,
                topology=program.topology,
                store_uri=str(root),
                inputs=(InputRange(program.input_topic, 0, start, end, -1),),
                restores=(),
                partition_counts={program.sink: 1},
                local_dir=str(tmp_path),
            )
        )
    assert report["execution"] == "columnar"
    assert (COUNT_FOLD in caplog.text) == program.count_fold, caplog.text
    dropped_from = Counter(_EXPIRED_WINDOW_OFFSET.findall(caplog.text))  # offset → windows it was dropped from
    partial = any(n < program.windows_per_record for n in dropped_from.values())
    assert partial == (seed in program.partial_drop_seeds), dropped_from
    rows = pq.read_table(root / TaskObjects(plan, task).output(program.sink, 0)).to_pylist()
    ours = [[r["key"].hex(), r["value"].hex(), r["timestamp"]] for r in sorted(rows, key=lambda r: r["sequence"])]
    assert ours == kafka["outputs"][program.sink]
    assert sum(report["dropped"].values()) == kafka["dropped"], report["dropped"]
    assert _store_entries(root, plan, program, tmp_path) == sorted(kafka["stores"][program.store]["entries"])
