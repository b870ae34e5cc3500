"""A run's values as the plan, fetch and process steps make them, built directly: two input partitions (one never
committed before), one store's changelog restored, two tasks with drops and a dead letter queue."""

from __future__ import annotations

from typing import Any

from streamproc.fetch import FetchRange, RangeFetchResult
from streamproc.plan.run_plan import (
    OffsetCommitPreview,
    PlannedRange,
    PlannedRestore,
    PlannedStore,
    PlannedTask,
    RunPlan,
)


def sample_plan(application_id: str = "orders-app") -> RunPlan:
    store = PlannedStore("counts", f"{application_id}-counts-changelog", 1)
    return RunPlan(
        application_id=application_id,
        isolation_level="read_committed",
        start_mode="committed",
        end_mode="latest",
        start_policy="earliest",
        ranges=(
            PlannedRange(
                "orders", 0, 1200, 5000, internal=False, compacted=False, committed_offset=1200, partition_time=17
            ),
            PlannedRange(
                "orders", 1, 0, 300, internal=False, compacted=False, committed_offset=None, partition_time=-1
            ),
        ),  # fmt: skip
        tasks=(
            PlannedTask("0_0", 0, 0, ("orders-0",)),
            PlannedTask("0_1", 0, 1, ("orders-1",), stores=(store,)),
        ),
        stages=((0,),),
        commits=(OffsetCommitPreview("orders-0", 1200, 5000), OffsetCommitPreview("orders-1", None, 300)),
        checkpoint_files=(),
        purges=(),
        restores=(PlannedRestore("0_1", "counts", store.changelog_topic, 1, 40, 90, checkpoint_offset=40),),
    )


def sample_fetch(plan: RunPlan) -> list[RangeFetchResult]:
    restore = plan.restores[0]
    return [
        RangeFetchResult(FetchRange("orders", 0, 1200, 5000), 3, 0, 3790, 412_000, 1.25, 3790),
        RangeFetchResult(FetchRange("orders", 1, 0, 300), 0, 1, 300, 31_000, 0.5, 300),
        RangeFetchResult(
            FetchRange(restore.changelog_topic, restore.changelog_partition, restore.start, restore.end, True),
            1,
            0,
            50,
            2_000,
            0.125,
            50,
        ),  # fmt: skip
    ]


def sample_reports() -> list[dict[str, Any]]:
    return [
        {
            "task_id": "0_0",
            "records_processed": 3790,
            "dropped": {"deserialization-error": 3, "expired-window-record": 7},
            "dead_letter_queue": {"orders-dlq": 3},
            "stream_time": 1_700_000_000_000,
            "seconds": 2.5,
            "skipped": False,
        },
        {
            "task_id": "0_1",
            "records_processed": 300,
            "dropped": {},
            "dead_letter_queue": {},
            "stream_time": 1_700_000_000_500,
            "seconds": 0.75,
            "skipped": True,
        },
    ]
