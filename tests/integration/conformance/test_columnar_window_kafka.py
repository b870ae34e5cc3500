"""The columnar windowed aggregate (``spark/columnar_window.py``) against Kafka Streams itself, late records included.

``test_dsl_programs_run.py`` proves the per-record path of ``bytes-window-sum`` (re-key by the value's first byte →
repartition ``rekeyed`` → 10 s tumbling windows, 5 min grace → a Long sum of the value lengths → ``toStream`` →
``selectKey(windowed.key())``) equal to Kafka's ``TopologyTestDriver``; the hand-off test runs it over columns
against a live app, but with no late record (which records a live app drops behind a repartition topic depends on
which upstream task wrote first). Here its windowed-aggregate task (sub-topology 1) runs over columns on the very
records Kafka's driver fed its repartition topic: the oracle's seeded inputs, some out of order, some past the grace
and dropped. The task's sink records (key, value, timestamp, in order), its drop count and the window store's entries
in its live segments must equal Kafka's.

Kafka's driver runs both sub-topologies in one task with one repartition partition, writing each re-keyed record to
the repartition topic as it comes, so that topic holds the input's records in input order with the value's first
byte as key: staged here as the one partition of ``dsl-run-rekeyed-repartition``.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import tempfile
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
from streamproc_dev.conformance.oracle import JVM_OPTIONS, ensure_oracle_jar
from tests.integration.conformance.test_dsl_programs_run import PROGRAMS, SEEDS, _records, _topics
from tests.unit.spark.test_columnar_count import _stage

pytestmark = pytest.mark.integration

PROGRAM = "bytes-window-sum"
APP = "dsl-run"  # the oracle's application id: Kafka's repartition topic is dsl-run-rekeyed-repartition
REPARTITION = f"{APP}-rekeyed-repartition"
STORE, SINK = "sums", "sums"
RETENTION_MS = 10_000 + 300_000  # the DSL's default: window size + grace


@pytest.fixture(scope="module")
def kafka_runs() -> dict[str, Any]:
    """Kafka's ``TopologyTestDriver`` answers for the program on every seed (oracle mode ``dsl-run``, one JVM)."""
    inputs, tables, outputs = _topics(PROGRAMS[PROGRAM]())
    runs = [
        {
            "id": f"dsl/{PROGRAM}/{seed}",
            "registry": "dsl",
            "program": PROGRAM,
            "records": _records(seed, PROGRAM, inputs, tables),
            "outputs": outputs,
        }
        for seed in SEEDS
    ]
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


def _store_entries(root: Path, plan: str, scratch: Path) -> list[list[str]]:
    """The window store's raw entries in the task's store bundle that Kafka's ``all()`` reads: those of windows
    starting after ``observedStreamTime - retention`` (the latest window start put; an expired window can still sit in
    a live segment)."""
    bundle = root / TaskObjects(plan, TaskId.parse("1_0")).stores
    with tarfile.open(fileobj=io.BytesIO(bundle.read_bytes())) as tar:
        tar.extractall(scratch / "bundle", filter="data")
    entries: list[tuple[bytes, bytes]] = []
    for current in sorted((scratch / "bundle").rglob("CURRENT")):  # each segment is a RocksDB directory
        db = RocksDBKeyValueBytesStore(STORE, current.parent, StoreType.TIMESTAMPED_WINDOW)
        try:
            entries.extend(db.range(None, None))
        finally:
            db.close()
    starts = [store_encoding.parse_window_store_key(key).window_start for key, _ in entries]
    live = max(starts, default=0) - RETENTION_MS + 1
    live_entries = [entry for entry, start in zip(entries, starts, strict=True) if start >= live]
    return sorted([key.hex(), value.hex()] for key, value in live_entries)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_columnar_window_aggregate_gives_kafkas_results(
    kafka_runs: dict[str, Any], seed: int, tmp_path: Path
) -> None:
    records, kafka = kafka_runs[f"dsl/{PROGRAM}/{seed}"]
    assert "error" not in kafka, kafka["error"]
    assert kafka["dropped"] > 0, "no record is late past the grace: the data tests no drop"
    root = tmp_path / "store"
    rekeyed = [(value.encode()[:1], value.encode(), timestamp, ()) for _topic, _key, value, timestamp in records]
    start, end = _stage(LocalObjectStore(root), REPARTITION, rekeyed, 0)
    plan = "00000000000000d1"
    report = run_task(
        TaskWork(
            plan_id=plan,
            application_id=APP,
            task_id="1_0",
            subtopology=1,
            topology="tests.integration.handoff.dsl_handoff_programs:bytes_window_sum",
            store_uri=str(root),
            inputs=(InputRange(REPARTITION, 0, start, end, -1),),
            restores=(),
            partition_counts={SINK: 1},
            local_dir=str(tmp_path),
        )
    )
    assert report["execution"] == "columnar"
    rows = pq.read_table(root / TaskObjects(plan, TaskId.parse("1_0")).output(SINK, 0)).to_pylist()
    ours = [[r["key"].hex(), r["value"].hex(), r["timestamp"]] for r in sorted(rows, key=lambda r: r["sequence"])]
    assert ours == kafka["outputs"][SINK]
    assert sum(report["dropped"].values()) == kafka["dropped"], report["dropped"]
    assert _store_entries(root, plan, tmp_path) == sorted(kafka["stores"][STORE]["entries"])
