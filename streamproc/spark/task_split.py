"""The driver's side of splitting a task into key shards (issue #29, docs/split.md): which tasks, into how many, and
the two waves a stage then runs in.

``--split off`` runs every task whole, as before. ``--split N`` splits every task of a sub-topology this executor
can split into N shards; ``--split auto`` (the default) only where it pays: a stage whose tasks leave cores idle
(``cores // tasks`` ≥ 2) and a task with at least :data:`AUTO_RECORDS_PER_SHARD` planned input records per shard
(every shard reads and orders the whole task's input, so a small task gains nothing) — and for now nowhere
(:data:`AUTO_SPLIT_PAYS`: measured, this slice's shards do not pay yet).

What this executor splits (the first slice of #29): a sub-topology that ``split_decisions`` calls splittable with no
task-wide values (stateless chains, grouped count/reduce/aggregate, table sources, materialized table filter and
mapValues, table-table and stream-table and global-table joins), whose persistent stores are key-value stores that
log every write to a changelog of their own (the merge rebuilds the task's store from shard 0's and the other
shards' changelog records, ``spark/shard_merge.py``). Everything else runs unsplit, and the log says why, once per
sub-topology.

A stage with split tasks runs in two waves on the same executors: first every unsplit task and every shard (each
its own work item, so K shards of one task use K cores), then one merge per split task.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from streamproc.engine.key_locality import split_decisions, unsplit_message
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import store_builders
from streamproc.errors import ConfigError
from streamproc.state.store_builders import store_definitions
from streamproc.state.store_type import StoreType

logger = logging.getLogger(__name__)

#: ``--split``: ``auto``, ``off`` or a shard count.
Split = Literal["auto", "off"] | int

#: Planned input records per shard below which ``auto`` does not split a task: each shard reads, deserializes and
#: orders the whole task's input (``engine/key_shards.py``), so a shard must have enough of its own to process.
AUTO_RECORDS_PER_SHARD = 250_000
#: Whether ``auto`` splits at all. Not yet: measured on 2 busy cores (a DSL count, String serdes, one partition of
#: 400 000 records run per record), a shard took 7.2-8.4 s where the whole task took 9.1 s (every shard reads,
#: deserializes and orders the whole input, and gates every record) and the merge 4.3 s (sorting the stamped rows,
#: rebuilding the store from the other shard's changelog records): 2 shards in 2 processes took 22 s wall. ``auto``
#: so runs every task whole until the shards stop paying for the task's whole input (docs/split.md, "The rest");
#: ``--split N`` splits on request. Since shards of a columnar task run over columns and the merge sorts once
#: (1 M records, K = 2, bench/README.md): over columns 0.47× the whole task's wall (the merge rewrites every output,
#: more than the columnar task costs); per record, with shards reading only their own records (``owned_input.py``),
#: 1.38× for the count and 1.46× for a Python aggregate, at 1.2-1.3× the CPU. ``auto`` would have to tell those apart
#: before the task's input is read.
AUTO_SPLIT_PAYS = False
#: The store kinds the merge rebuilds from changelog records (segmented stores need task-wide stream times).
_MERGED_STORE_TYPES = (StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KEY_VALUE)


def parse_split(text: str) -> Split:
    """``--split``'s value: ``auto``, ``off`` or a shard count ≥ 1 (1 is ``off``)."""
    if text in ("auto", "off"):
        return text  # type: ignore[return-value]
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError(f"--split {text}: give auto, off or a number of key shards per task (at least 1)")
    return count


def split_refusals(topology: Topology) -> dict[int, str | None]:
    """Per sub-topology that makes tasks: why its tasks run unsplit here, or ``None`` when they may be split."""
    refusals: dict[int, str | None] = {}
    reused = topology.source_topic_changelogs
    for decision in split_decisions(topology):
        if not decision.splittable:
            refusals[decision.subtopology] = unsplit_message(decision)
            continue
        if decision.task_wide_values:
            values = "; ".join(v.describe() for v in decision.task_wide_values)
            refusals[decision.subtopology] = (
                f"sub-topology {decision.subtopology} runs unsplit (one shard per task): its shards would need "
                f"task-wide values computed before the split ({values}), which the executor does not compute yet"
            )
            continue
        refusals[decision.subtopology] = _store_refusal(topology, decision.subtopology, reused)
    return refusals


def _store_refusal(topology: Topology, subtopology: int, reused: Mapping[str, str]) -> str | None:
    for definition in store_definitions(store_builders(topology, subtopology)):
        why = None
        if definition.store_type not in _MERGED_STORE_TYPES:
            why = f"is a {definition.store_type.value} store; the merge rebuilds key-value stores only"
        elif definition.persistent and definition.name in reused:
            why = (
                f"reuses its source topic {reused[definition.name]} as changelog (topology.optimization=all), so its "
                "writes are not logged and the merge could not rebuild it from the shards' changelog records"
            )
        elif definition.persistent and not definition.logged:
            why = "has logging disabled, so the merge could not rebuild it from the shards' changelog records"
        if why is not None:
            return f"sub-topology {subtopology} runs unsplit (one shard per task): store {definition.name} {why}"
    return None


def parallelism_lines(topology: Topology, plan: Any, split: Split) -> list[str]:
    """The plan's preview of how each sub-topology's tasks will run (``plan``: a ``RunPlan``): how many tasks, the
    most planned records one reads, and whether each runs as key shards under ``split``, or why not; shown before
    anything is fetched (``streamproc run``'s plan, the Airflow plan step's log)."""
    records = {r.name: r.end - r.start for r in plan.ranges}
    appended = {r.name for r in plan.ranges if r.internal}
    refusals = split_refusals(topology)
    tasks: dict[int, list[Any]] = {}
    for task in plan.tasks:
        tasks.setdefault(task.subtopology, []).append(task)
    lines = [f"Parallelism (--split {split}):"]
    for subtopology, members in sorted(tasks.items()):
        most = max(sum(records.get(p, 0) for p in t.source_partitions) for t in members)
        more = (
            " (plus what earlier stages append)"
            if any(p in appended for t in members for p in t.source_partitions)
            else ""
        )
        head = f"  sub-topology {subtopology}: {len(members)} task(s), at most {most} planned records each{more}; "
        lines.append(head + _split_verdict(refusals.get(subtopology, "unknown"), split, subtopology))
    return lines


def _split_verdict(refusal: str | None, split: Split, subtopology: int) -> str:
    if refusal is not None:
        prefix = f"sub-topology {subtopology} runs unsplit (one shard per task): "
        return "one core per task: " + refusal.removeprefix(prefix)
    if split == "off":
        return "one core per task (key shards possible; --split off)"
    if split != "auto":
        return f"each task as {split} key shards, then a merge"
    if not AUTO_SPLIT_PAYS:
        return (
            "one core per task: key shards possible, but --split auto splits nothing yet (each shard reads and orders "
            "its whole task's input, so they do not pay, docs/split.md); --split N splits on request"
        )
    return f"key shards where cores would idle and a task has {AUTO_RECORDS_PER_SHARD} records per shard"


def log_refusals(refusals: Mapping[int, str | None], split: Split) -> None:
    """The unsplit line, once per sub-topology that runs unsplit (none with ``--split off``: nothing splits)."""
    if split == "off":
        return
    for _subtopology, refusal in sorted(refusals.items()):
        if refusal is not None:
            logger.info("%s", refusal)


def shard_count(split: Split, task_records: int, tasks_in_stage: int, cores: int) -> int:
    """How many key shards one splittable task runs as (1: unsplit)."""
    if split == "off":
        return 1
    if split != "auto":
        return int(split)
    if not AUTO_SPLIT_PAYS:
        return 1
    spare = cores // max(tasks_in_stage, 1)
    return max(1, min(spare, task_records // AUTO_RECORDS_PER_SHARD))


def plan_shards(
    stages: Sequence[Sequence[Any]], refusals: Mapping[int, str | None], split: Split, cores: int
) -> dict[str, int]:
    """Task id → shard count, for every task that runs as 2 or more shards (``stages``: each stage's TaskWork)."""
    counts: dict[str, int] = {}
    for tasks in stages:
        for work in tasks:
            if refusals.get(work.subtopology, "unknown") is not None:
                continue
            records = sum(r.end - r.start for r in work.inputs)
            count = shard_count(split, records, len(tasks), cores)
            if count > 1:
                counts[work.task_id] = count
    return counts


def widest_wave(stages: Sequence[Sequence[Any]], shards: Mapping[str, int]) -> int:
    """The most work items any wave runs at once (the worker processes worth starting)."""
    return max((sum(shards.get(w.task_id, 1) for w in tasks) for tasks in stages), default=1)


@dataclass(frozen=True, slots=True)
class MergeWork:
    """The last step of a split task: merge its ``shards`` shards into the task's objects (``shard_merge.py``)."""

    work: Any  # the task's TaskWork
    shards: int

    @property
    def task_id(self) -> str:
        return str(self.work.task_id)


def shard_work(work: Any, count: int) -> list[Any]:
    """The ``count`` shard work items of ``work`` (a TaskWork): only shard 0 reports the run's global drops."""
    return [
        dataclasses.replace(work, shard=ShardSpec(i, count), reports_global_drops=work.reports_global_drops and i == 0)
        for i in range(count)
    ]


def split_stage(
    run_stage: Callable[[Any], list[dict[str, Any]]], shards: Mapping[str, int]
) -> Callable[[Any], list[dict[str, Any]]]:
    """``run_stage`` (a job's runner of one ``Stage``) with the stage's split tasks run as shards, then merged."""

    def run(stage: Any) -> list[dict[str, Any]]:
        split = [w for w in stage.tasks if w.task_id in shards]
        if not split:
            return run_stage(stage)
        first = [item for w in stage.tasks for item in (shard_work(w, shards[w.task_id]) if w in split else [w])]
        for w in split:
            logger.info("task [%s] runs as %d key shards", w.task_id, shards[w.task_id])
        reports = run_stage(dataclasses.replace(stage, tasks=tuple(first)))
        # a task done before (its report exists) answers for each of its shards: keep one
        whole = {r["task_id"]: r for r in reports if "shard" not in r}
        merges = tuple(MergeWork(w, shards[w.task_id]) for w in split)
        for report in run_stage(dataclasses.replace(stage, tasks=merges)):
            whole[report["task_id"]] = report
        return list(whole.values())

    return run
