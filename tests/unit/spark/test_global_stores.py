"""A run's global stores: every task gets every global-topic range of the plan, and a missing or unstaged range
stops the task before it processes, naming what to run; a Python worker bootstraps them once per run and its later
tasks of the run reuse them, with the same outputs; the bootstrap's drops reach one report of the run."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.records import ConsumerRecord, RawRecord
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import ManifestError
from streamproc.intervals import to_intervals
from streamproc.plan.run_plan import PlannedRestore
from streamproc.plan.run_planner import GLOBAL_TASK
from streamproc.spark.global_stores import GLOBAL_STATE_MANAGER, GlobalRestoreRange, bootstrap_global_stores
from streamproc.spark.job import task_work
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, TaskWork, run_task
from streamproc.storage.manifest import SegmentProof
from streamproc.storage.object_store import LocalObjectStore
from streamproc.storage.staging import SegmentLimits, stage_range
from tests.driver_programs import global_store_topology
from tests.integration.handoff.topologies import GLOBAL_JOIN_PRODUCTS, global_join
from tests.unit.spark.test_job import plan


def test_every_task_gets_every_global_range_and_no_task_gets_them_as_its_own_restores() -> None:
    restores = tuple(PlannedRestore(GLOBAL_TASK, "products-store", "products", p, 0, 4 + p, None) for p in range(2))
    work = task_work(plan(restores=restores), topology="m:f", store_uri="/s", counts={"in": 2, "out": 3})
    expected = tuple(GlobalRestoreRange("products-store", "products", p, 0, 4 + p) for p in range(2))
    assert [(w.task_id, w.global_restores, w.restores, w.reports_global_drops) for w in work] == [
        ("0_0", expected, (), True),  # the bootstrap's drops are the run's: one task reports them
        ("0_1", expected, (), False),
    ]


def test_a_missing_or_unstaged_global_range_is_an_error_naming_the_task(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "staging")
    options = {"object_store": store, "application_id": "app", "state_root": tmp_path / "s", "state_dir": None}
    with pytest.raises(ManifestError, match=r"task \[0_1\] global store\(s\) \['products-store'\]: the plan has no"):
        bootstrap_global_stores(global_join(), (), task="0_1", **options)  # type: ignore[arg-type]
    ranges = (GlobalRestoreRange("products-store", GLOBAL_JOIN_PRODUCTS, 0, 0, 3),)
    with pytest.raises(ManifestError, match=rf"task \[0_1\] input {GLOBAL_JOIN_PRODUCTS}-0 \[0, 3\).*streamproc fetch"):
        bootstrap_global_stores(global_join(), ranges, task="0_1", **options)  # type: ignore[arg-type]


def test_empty_global_ranges_need_nothing_staged(tmp_path: Path) -> None:
    """A global topic with nothing new since the checkpoint (or nothing at all) plans empty ranges: fetch stages
    nothing for them and the bootstrap applies nothing."""
    ranges = tuple(GlobalRestoreRange("products-store", GLOBAL_JOIN_PRODUCTS, p, 7 * p, 7 * p) for p in range(2))
    stores = bootstrap_global_stores(
        global_join(),
        ranges,
        object_store=LocalObjectStore(tmp_path / "staging"),
        application_id="app",
        state_root=tmp_path / "s",
        state_dir=None,
        task="0_0",
    )
    assert stores is not None and stores.restored == {"products-store": 0}
    stores.close()


_INTEGER = serde_for("Integer")
_MODULE = "tests.unit.spark.test_global_stores"


def amounts_lookup() -> tuple[Topology, TaskConfig]:
    """A persistent global store of 4-byte integers (``add_global_store``: reprocessed through ``KeepAmount`` at
    bootstrap, so an undecodable value goes to the handler, which continues) and orders looking it up."""
    return global_store_topology(persistent=True), TaskConfig(
        deserialization_exception_handler=LogAndContinueExceptionHandler()
    )


def stage_rows(
    store: LocalObjectStore, topic: str, partition: int, rows: list[tuple[str, bytes | None]]
) -> tuple[int, int]:
    records: list[RawRecord] = [
        ConsumerRecord.raw(topic, partition, o, 1_000 + o, k.encode(), v) for o, (k, v) in enumerate(rows)
    ]
    proof = SegmentProof(to_intervals(range(len(rows))), {})
    stage_range(store, topic, partition, 0, len(rows), records, proof, SegmentLimits(max_segment_records=3))
    return 0, len(rows)


def stage_amounts_and_orders(store: LocalObjectStore) -> list[GlobalRestoreRange]:
    """Two partitions of amounts (one value undecodable) and of orders, staged; returns the global ranges."""
    four = _INTEGER.serializer.serialize
    amounts = [
        [("a0", four("amounts", 10)), ("a1", b"abc")],
        [("a2", four("amounts", 12)), ("a3", four("amounts", 13))],
    ]
    for p in range(2):
        stage_rows(store, "orders", p, [(f"o{p}-{i}", f"a{i + p}".encode()) for i in range(4)])
    return [
        GlobalRestoreRange("amounts", "amounts", p, *stage_rows(store, "amounts", p, rows))
        for p, rows in enumerate(amounts)
    ]


@pytest.fixture
def staged(tmp_path: Path) -> Iterator[tuple[Path, list[GlobalRestoreRange]]]:
    """:func:`stage_amounts_and_orders` under ``tmp_path``; this process's global stores released before and after."""
    ranges = stage_amounts_and_orders(LocalObjectStore(tmp_path / "staging"))
    GLOBAL_STATE_MANAGER.release()
    yield tmp_path, ranges
    GLOBAL_STATE_MANAGER.release()


def global_work(root: Path, plan_id: str, partition: int, ranges: list[GlobalRestoreRange]) -> TaskWork:
    return TaskWork(
        plan_id=plan_id,
        application_id="global-app",
        task_id=f"1_{partition}",
        subtopology=1,  # the global store is sub-topology 0
        topology=f"{_MODULE}:amounts_lookup",
        store_uri=str(root / "staging"),
        inputs=(InputRange("orders", partition, 0, 4, -1),),
        partition_counts={"out": 1},
        local_dir=str(root),
        global_restores=tuple(ranges),
        reports_global_drops=partition == 0,
    )


def task_outputs(root: Path, plan_id: str, partition: int) -> list[tuple[str, str]]:
    table = pq.read_table(root / "staging" / TaskObjects(plan_id, TaskId(1, partition)).output("out", 0))
    return [(k.decode(), v.decode()) for k, v in zip(*table.select(["key", "value"]).to_pydict().values(), strict=True)]


EXPECTED = [
    [("o0-0", "a0=10"), ("o0-1", "a1=null"), ("o0-2", "a2=12"), ("o0-3", "a3=13")],
    [("o1-0", "a1=null"), ("o1-1", "a2=12"), ("o1-2", "a3=13"), ("o1-3", "a4=null")],
]


def test_a_worker_bootstraps_a_runs_global_stores_once_and_its_tasks_reuse_them(
    staged: tuple[Path, list[GlobalRestoreRange]], caplog: pytest.LogCaptureFixture
) -> None:
    """Two tasks of a run in one process: the first bootstraps (the undecodable amount dropped), the second reads
    the same stores; outputs as when each task bootstraps its own. Another run's key closes and deletes them and
    bootstraps again."""
    root, ranges = staged
    before = GLOBAL_STATE_MANAGER.bootstraps
    with caplog.at_level(logging.INFO, logger="streamproc.spark.global_stores"):
        first, second = (run_task(global_work(root, "00000000000000a1", p, ranges)) for p in range(2))
    assert GLOBAL_STATE_MANAGER.bootstraps == before + 1
    assert [m for m in caplog.messages if "restored global stores" in m] == [
        "task [1_0] restored global stores {'amounts': 3}; 1 record(s) dropped by the deserialization exception handler"
    ]
    assert (first["global_bootstrapped"], second["global_bootstrapped"]) == (True, False)
    assert first["global_restored"] == second["global_restored"] == {"amounts": 3}
    assert [task_outputs(root, "00000000000000a1", p) for p in range(2)] == EXPECTED
    current = GLOBAL_STATE_MANAGER.current
    assert current is not None and current.directory is not None and current.directory.parent == root
    shared_directory = current.directory

    # each task bootstrapping its own (as before the worker shared them) gives the same outputs
    for p in range(2):
        GLOBAL_STATE_MANAGER.release()
        alone = run_task(global_work(root, "00000000000000b1", p, ranges))
        assert alone["global_bootstrapped"] and task_outputs(root, "00000000000000b1", p) == EXPECTED[p]
    assert GLOBAL_STATE_MANAGER.bootstraps == before + 3
    assert not shared_directory.exists()  # released: closed and deleted

    # another run (another key) bootstraps again, after deleting the previous run's stores
    previous = GLOBAL_STATE_MANAGER.current
    assert previous is not None and previous.directory is not None and previous.directory.exists()
    other = run_task(dataclasses.replace(global_work(root, "00000000000000c1", 1, ranges), application_id="other-app"))
    assert other["global_bootstrapped"] and GLOBAL_STATE_MANAGER.bootstraps == before + 4
    assert not previous.directory.exists()


def test_the_bootstraps_drops_reach_one_report_of_the_run(staged: tuple[Path, list[GlobalRestoreRange]]) -> None:
    """The undecodable amount is dropped by every bootstrap, but counted once: in the designated task's report,
    whichever task bootstrapped (here the designated one runs second and reuses the stores)."""
    root, ranges = staged
    second, first = (run_task(global_work(root, "00000000000000d1", p, ranges)) for p in (1, 0))
    assert (first["global_bootstrapped"], second["global_bootstrapped"]) == (False, True)
    assert (first["global_dropped"], second["global_dropped"]) == ({"deserialization": 1}, {})
    assert first["dropped"] == second["dropped"] == {}  # the task's own drops: none
    published: dict[str, Any] = {}
    for p, report in ((0, first), (1, second)):
        name = TaskObjects("00000000000000d1", TaskId(1, p)).report
        published[report["task_id"]] = LocalObjectStore(root / "staging").get(name)
    assert b'"deserialization": 1' in published["1_0"] and b'"global_dropped": {}' in published["1_1"]
