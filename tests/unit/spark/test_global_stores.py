"""A task's global stores: every task gets every global-topic range of the plan, and a missing or unstaged range
stops the task before it processes, naming what to run."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamproc.errors import ManifestError
from streamproc.plan.run_plan import PlannedRestore
from streamproc.plan.run_planner import GLOBAL_TASK
from streamproc.spark.global_stores import GlobalRestoreRange, bootstrap_global_stores
from streamproc.spark.job import task_work
from streamproc.storage.object_store import LocalObjectStore
from tests.integration.handoff.topologies import GLOBAL_JOIN_PRODUCTS, global_join
from tests.unit.spark.test_job import plan


def test_every_task_gets_every_global_range_and_no_task_gets_them_as_its_own_restores() -> None:
    restores = tuple(PlannedRestore(GLOBAL_TASK, "products-store", "products", p, 0, 4 + p, None) for p in range(2))
    work = task_work(plan(restores=restores), topology="m:f", store_uri="/s", counts={"in": 2, "out": 3})
    expected = tuple(GlobalRestoreRange("products-store", "products", p, 0, 4 + p) for p in range(2))
    assert [(w.task_id, w.global_restores, w.restores) for w in work] == [
        ("0_0", expected, ()),
        ("0_1", expected, ()),
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
