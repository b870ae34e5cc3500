"""The columnar path: a task whose sub-topology is one of a few DSL shapes runs over Arrow columns, not per record.

The task runner asks one question, :func:`columnar_plan`: can this task run over columns, and if not, why. Each
fold recognises its shape and refuses with a reason at the first doubt, so any task it takes gives the per-record
path's files, store and report byte for byte:

- ``count``: ``groupByKey().count()``, ``aggregate``/``reduce`` with the user's functions, or a stateless chain
  straight to a sink, over one partition (``chain`` runs the chain's user functions a loop per node);
- ``window``: the windowed ``aggregate``/``reduce``/``count`` with ``TimeWindows``;
- ``groups`` (grouped running folds), ``output`` (sink and changelog columns) and ``shape`` (the node shapes both
  recognise) are shared by the two.

A key shard of a split task (issue #29) runs the columnar count over the rows it owns (``shard_rows``); the windowed
fold is never split (its sub-topologies need task-wide stream times, ``spark/task_split.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.replay import ReplayResult
from streamproc.spark.columnar.count import (
    CountPlan,
    columnar_count_plan,
    count_shape_refusal,
    handlers_refusal,
    per_record_forced,
    run_columnar_count,
)
from streamproc.spark.columnar.window import WindowPlan, columnar_window_plan, run_columnar_window, window_shape_refusal
from streamproc.spark.task_output import TaskChangelogCollector, TaskOutputCollector
from streamproc.storage.object_store import ObjectStore


@dataclass(frozen=True, slots=True)
class ColumnarTask:
    """A task the columnar path takes: the fold's plan, and where the task reads and writes."""

    plan: CountPlan | WindowPlan
    object_store: ObjectStore
    collector: TaskOutputCollector
    changelog_collector: TaskChangelogCollector
    task: str
    #: The key shard of a split task this runs, ``None``: the whole task.
    shard: ShardSpec | None = None

    def describe(self) -> str:
        """What runs over columns, for the task's log line."""
        described = self.plan.describe()
        return described if self.shard is None else f"{described}, key shard {self.shard}"

    def run(self, appended_counts: dict[str, int]) -> ReplayResult:
        """Run the task over its input; ``appended_counts`` gets the upstream records read, as the per-record path
        counts them."""
        where = (self.object_store, self.collector, self.changelog_collector)
        if isinstance(self.plan, CountPlan):
            return run_columnar_count(
                self.plan, *where, task=self.task, appended_counts=appended_counts, shard=self.shard
            )
        return run_columnar_window(self.plan, *where, task=self.task, appended_counts=appended_counts)


def columnar_plan(**facts: Any) -> ColumnarTask | str:
    """The task as the columnar path runs it, or why it runs per record (one line naming each fold's reason).

    ``facts`` are the task's (``task``, ``graph``, ``config``, ``inputs``, ``object_store``, ``stores``,
    ``has_global_stores``, ``collector``, ``changelog_collector``, and ``shard`` for a key shard of a split task);
    the first fold that takes the task wins.
    """
    shard: ShardSpec | None = facts.pop("shard", None)
    plan: CountPlan | WindowPlan | str = columnar_count_plan(**facts)
    if shard is not None:
        if isinstance(plan, str):
            return f"a key shard runs the columnar count only, and not the columnar count: {plan}"
        if plan.flushes_cache:
            return "a key shard runs without the record cache"
    elif isinstance(plan, str):
        window = columnar_window_plan(**facts)
        if isinstance(window, str):
            return f"not the columnar count: {plan}; not the columnar windowed aggregate: {window}"
        plan = window
    return ColumnarTask(
        plan, facts["object_store"], facts["collector"], facts["changelog_collector"], task=facts["task"], shard=shard
    )


__all__ = [
    "ColumnarTask",
    "columnar_plan",
    "count_shape_refusal",
    "handlers_refusal",
    "per_record_forced",
    "window_shape_refusal",
]
