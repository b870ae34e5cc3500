"""The driver's side of splitting a task into key shards (issue #29, docs/split.md): which tasks, into how many, and
the two waves a stage then runs in.

``--split off`` runs every task whole, as before. ``--split N`` splits every task of a sub-topology this executor
can split into N shards. ``--split auto`` (the default) is to split only where shards pay (:func:`auto_refusals`): a
task processed per record whose shards each read only their own records (``spark/owned_input.py``: one input
partition, a poll that cannot drop a record, record-metadata timestamps), whose processing reads and writes a
store (a count, reduce or aggregate, windowed or not, a table: measured to pay; a stateless chain's does not yet,
:data:`AUTO_SPLITS_STATELESS`), in a stage whose tasks leave cores idle (``cores // tasks`` ≥ 2), with at least
:data:`AUTO_RECORDS_PER_SHARD` records per shard. A task the columnar path takes runs whole (it is faster whole
than its shards and their merge), and so does one whose shards would each read its whole input.

What this executor splits: a sub-topology that ``split_decisions`` calls splittable (stateless chains, grouped
count/reduce/aggregate, table sources, materialized table filter and mapValues, table-table and stream-table and
global-table joins, inner stream-stream joins, time- and session-windowed aggregates, declared Processor-API
processors) whose task-wide values it computes (:func:`_uncomputed`: a windowed or session aggregate's stream time
when nothing but one-to-one processors or a chain of filters and value mappers lies before it, and a session
store's, ``engine/task_wide_times.py``; a window store's at the merge; every put into a join window, which a shard
counts at its gate, behind a stateless prefix too; the task's stream time, which a shard reading every record polls
as the task does), and whose persistent stores are key-value, window or session stores that log every write to a
changelog of their own (the merge rebuilds the task's store from shard 0's and the other shards' changelog records,
``spark/shard_merge.py``). Everything else runs unsplit, and the log says why, once per sub-topology. A shard that
finds at run time that it cannot stand for its keys (a punctuation scheduled, an exception handled at a session
aggregate) says so, and the merge runs the task whole instead.

A stage with split tasks runs in two waves on the same executors: first every unsplit task and every shard (each
its own work item, so K shards of one task use K cores), then one merge per split task.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from streamproc.engine.key_locality import TaskWideKind, TaskWideValue, split_decisions, unsplit_message
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_wide_times import takes_task_stream_time
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import (
    build_processor_topology,
    build_stores,
    global_store_builders,
    store_builders,
)
from streamproc.errors import ConfigError
from streamproc.spark.stream_time_prefix import stream_time_prefix
from streamproc.state.store_builders import store_definitions
from streamproc.state.store_type import StoreType

logger = logging.getLogger(__name__)

#: ``--split``: ``auto``, ``off`` or a shard count.
Split = Literal["auto", "off"] | int

#: Planned input records per shard below which ``auto`` does not split a task: each shard pays a task's fixed costs
#: (its restore, its stores' open and bundle) and the merge reads and writes every output again.
AUTO_RECORDS_PER_SHARD = 250_000
#: Whether ``auto`` also splits sub-topologies without a store (stateless chains). Not yet: measured on this
#: machine's 2 idle cores (``bench.split_curve``, docs/split.md), 1 M records of one partition with String serdes, a
#: ``filter`` and ``mapValues`` to a sink per record, the process step as 2 shards took 1.31× less wall at 1.39× the
#: CPU, a saving of a second in a ``streamproc run`` whose fetch and hand-off alone take 6 s: a stateless record's
#: processing is small beside its reading, which every shard pays, and the merge rewrites every output. A store's
#: reads and writes are the larger part: a count's or an aggregate's split pays (the process step 1.30-1.41× at
#: 1.34-1.36× the CPU, ``run`` over 2 M records 1.18-1.25×), as a windowed aggregate's does. ``--split N`` splits a
#: stateless one on request.
AUTO_SPLITS_STATELESS = False
#: The application id the driver builds a sub-topology's graph with to look at its source and stores (only changelog
#: names depend on it, and nothing here reads them).
_LOOKING = "streamproc-split-auto"
#: The store kinds the merge rebuilds from changelog records (a window or session store's expired segments are
#: settled with the task's stream time, ``SegmentedBytesStore.settle``).
_MERGED_STORE_TYPES = (
    StoreType.KEY_VALUE,
    StoreType.TIMESTAMPED_KEY_VALUE,
    StoreType.WINDOW,
    StoreType.TIMESTAMPED_WINDOW,
    StoreType.SESSION,
)


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
    """Per sub-topology that makes tasks: why its tasks run unsplit here, or ``None`` when they may be split. The
    application's processing exception handler does not decide it: where one that continues could stop a record in
    its owner alone, the shard watches for it and the task then runs whole (``stream_time_prefix.watched_nodes``)."""
    refusals: dict[int, str | None] = {}
    reused = topology.source_topic_changelogs
    for decision in split_decisions(topology):
        if not decision.splittable:
            refusals[decision.subtopology] = unsplit_message(decision)
            continue
        missing = [
            why for value in decision.task_wide_values if (why := _uncomputed(topology, decision.subtopology, value))
        ]
        if missing:
            values = "; ".join(missing)
            refusals[decision.subtopology] = (
                f"{_unsplit_prefix(decision.subtopology)}its shards would need "
                f"task-wide values computed before the split ({values}), which the executor does not compute yet"
            )
            continue
        refusals[decision.subtopology] = _store_refusal(topology, decision.subtopology, reused)
    return refusals


def _uncomputed(topology: Topology, subtopology: int, value: TaskWideValue) -> str | None:
    """Why the executor does not give a shard ``value`` (its description), or ``None`` where it does: a windowed
    processor's own stream time when the sources' keyed records are its records, or reach it through a stateless
    prefix each shard can run over the records it does not own (``engine/task_wide_times.py``,
    ``spark/stream_time_prefix.py``), and a window store's stream time at the merge (``SegmentedBytesStore.settle``;
    ``_store_refusal`` checks the store)."""
    if value.kind is TaskWideKind.STORE_STREAM_TIME and not value.per_record:
        return None
    if value.kind is TaskWideKind.TASK_STREAM_TIME:  # a shard reading every record polls it as the task does
        return None
    if value.kind is TaskWideKind.STORE_PUTS:  # a shard reading every record counts the others' puts at its gate
        graph = build_processor_topology(topology, subtopology, application_id=_LOOKING)
        prefixes = stream_time_prefix(graph, value.processor)  # run over the records a shard does not own
        if isinstance(prefixes, str):
            return f"{value.describe()}, which a shard counts only behind a stateless prefix: {prefixes}"
        return None
    spec = topology.node(value.processor)
    try:
        processor = spec.supplier()  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - a supplier that fails here declares nothing
        return value.describe()
    if value.kind is TaskWideKind.STORE_STREAM_TIME:  # at every record: derived from the processor's (a session's)
        hooked = takes_task_stream_time(processor) and hasattr(processor, "task_stream_time_before")
    else:
        hooked = takes_task_stream_time(processor)
    if not hooked:
        return value.describe()
    if value.prefix:
        graph = build_processor_topology(topology, subtopology, application_id=_LOOKING)
        prefixes = stream_time_prefix(graph, value.processor)
        if isinstance(prefixes, str):
            return f"{value.describe()}, which a shard cannot: {prefixes}"
    return None


def task_wide_values(topology: Topology, subtopology: int) -> tuple[TaskWideValue, ...]:
    """What a shard of ``subtopology`` is given: the processors whose stream time is task-wide get hooks
    (``engine/task_wide_times.py``); a processor that reads the task's stream time needs a shard that reads every
    record (its ``PartitionGroup`` then polls as the task's does)."""
    for decision in split_decisions(topology):
        if decision.subtopology == subtopology:
            return decision.task_wide_values
    return ()


def reads_task_stream_time(values: Sequence[TaskWideValue]) -> bool:
    """Whether a declared Processor-API processor reads the task's stream time (``current_stream_time_ms``)."""
    return any(v.kind is TaskWideKind.TASK_STREAM_TIME for v in values)


def _store_refusal(topology: Topology, subtopology: int, reused: Mapping[str, str]) -> str | None:
    for definition in store_definitions(store_builders(topology, subtopology)):
        why = None
        if definition.store_type not in _MERGED_STORE_TYPES:
            kind = definition.store_type.value
            why = f"is a {kind} store; the merge rebuilds key-value, window and session stores only"
        elif definition.persistent and definition.name in reused:
            why = (
                f"reuses its source topic {reused[definition.name]} as changelog (topology.optimization=all), so its "
                "writes are not logged and the merge could not rebuild it from the shards' changelog records"
            )
        elif definition.persistent and not definition.logged:
            why = "has logging disabled, so the merge could not rebuild it from the shards' changelog records"
        if why is not None:
            return f"{_unsplit_prefix(subtopology)}store {definition.name} {why}"
    return None


def auto_refusals(
    topology: Topology, config: TaskConfig, refusals: Mapping[int, str | None] | None = None
) -> dict[int, str | None]:
    """Per sub-topology: why ``--split auto`` runs its tasks whole, or ``None`` where key shards pay (see the module
    doc). ``refusals``: :func:`split_refusals`'s, when already computed; a sub-topology refused there stays so.

    Decided from the topology and config alone, before any input is read: a task the columnar path may take runs
    whole (unless every task runs per record: ``STREAMPROC_PER_RECORD_COUNT``, a handler or dead letter queue
    configured, global stores, ``columnar.handlers_refusal``); so does one whose shards could not
    each read only their own records (``owned_input.owned_reading``, the task runner's own rule). What only the data
    tells (a negative timestamp, a String key that is not UTF-8) makes a shard read every record, as with
    ``--split N``."""
    from streamproc.spark.columnar import count_shape_refusal, handlers_refusal, per_record_forced, window_shape_refusal
    from streamproc.spark.owned_input import owned_reading

    # what keeps every task of the run off the columnar paths, whatever its shape
    per_record = per_record_forced() or handlers_refusal(config) is not None or bool(global_store_builders(topology))
    verdicts: dict[int, str | None] = {}
    for subtopology, refusal in (split_refusals(topology) if refusals is None else refusals).items():
        if refusal is not None:
            verdicts[subtopology] = refusal
            continue
        graph = build_processor_topology(topology, subtopology, application_id=_LOOKING)
        stores = build_stores(topology, subtopology)
        why: str | None
        if reads_task_stream_time(task_wide_values(topology, subtopology)):
            why = "a declared processor reads the task's stream time, so each shard would read every record"
        elif len(graph.source_topics) != 1:
            why = f"its tasks read {len(graph.source_topics)} topics, so each shard would read every record"
        elif not per_record and (
            count_shape_refusal(graph, graph.source_topics[0]) is None
            or window_shape_refusal(graph, graph.source_topics[0]) is None
        ):
            why = "the columnar path may take its tasks, which run faster whole than as shards and a merge"
        elif not AUTO_SPLITS_STATELESS and not stores:
            why = "it holds no store, and a stateless task's shards do not pay yet on two cores (docs/split.md)"
        else:
            first = stores[min(stores)] if stores else None
            reading = owned_reading(graph.source(graph.source_topics[0]), config, first)
            why = None if not isinstance(reading, str) else f"each shard would read every record: {reading}"
        verdicts[subtopology] = None if why is None else f"{_auto_prefix(subtopology)}{why}; --split N splits anyway"
    return verdicts


def _unsplit_prefix(subtopology: int) -> str:
    return f"sub-topology {subtopology} runs unsplit (one shard per task): "


def _auto_prefix(subtopology: int) -> str:
    return f"sub-topology {subtopology} runs unsplit under --split auto (one shard per task): "


def parallelism_lines(topology: Topology, plan: Any, split: Split, config: TaskConfig) -> list[str]:
    """The plan's preview of how each sub-topology's tasks will run (``plan``: a ``RunPlan``): how many tasks, the
    most planned records one reads, and whether each runs as key shards under ``split``, or why not; shown before
    anything is fetched (``streamproc run``'s plan, the Airflow plan step's log). ``config``: the application's, as
    its topology factory gave it (``auto`` looks at its timestamp extractor)."""
    records = {r.name: r.end - r.start for r in plan.ranges}
    appended = {r.name for r in plan.ranges if r.internal}
    refusals = auto_refusals(topology, config) if split == "auto" else split_refusals(topology)
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
        why = refusal.removeprefix(_unsplit_prefix(subtopology)).removeprefix(_auto_prefix(subtopology))
        return "one core per task: " + why
    if split == "off":
        return "one core per task (key shards possible; --split off)"
    if split != "auto":
        return f"each task as {split} key shards, then a merge"
    return (
        f"key shards where cores would idle and a task has {AUTO_RECORDS_PER_SHARD} planned records per shard (each "
        "shard reads only its own records), then a merge"
    )


def log_refusals(refusals: Mapping[int, str | None], split: Split) -> None:
    """The unsplit line, once per sub-topology that runs unsplit (none with ``--split off``: nothing splits)."""
    if split == "off":
        return
    for _subtopology, refusal in sorted(refusals.items()):
        if refusal is not None:
            logger.info("%s", refusal)


def shard_count(split: Split, task_records: int, tasks_in_stage: int, cores: int) -> int:
    """How many key shards one task that may be split runs as under ``split`` (1: unsplit)."""
    if split == "off":
        return 1
    if split != "auto":
        return int(split)
    spare = cores // max(tasks_in_stage, 1)
    return max(1, min(spare, task_records // AUTO_RECORDS_PER_SHARD))


def plan_shards(
    stages: Sequence[Sequence[Any]], refusals: Mapping[int, str | None], split: Split, cores: int
) -> dict[str, int]:
    """Task id → shard count, for every task that runs as 2 or more shards (``stages``: each stage's TaskWork;
    ``refusals``: :func:`auto_refusals` under ``auto``, else :func:`split_refusals`), from the planned records
    alone: what the run starts with (:class:`StageSplit` counts what earlier stages appended as each stage starts).
    """
    return {task: count for tasks in stages for task, count in stage_shards(tasks, refusals, split, cores, {}).items()}


def stage_shards(
    tasks: Sequence[Any],
    refusals: Mapping[int, str | None],
    split: Split,
    cores: int,
    appended: Mapping[tuple[str, int], int],
) -> dict[str, int]:
    """One stage's :func:`plan_shards`: a task's records are its planned ones plus ``appended``, what earlier stages
    wrote to its input partitions."""
    counts: dict[str, int] = {}
    for work in tasks:
        if refusals.get(work.subtopology, "unknown") is not None:
            continue
        records = sum(r.end - r.start + appended.get((r.topic, r.partition), 0) for r in work.inputs)
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
    #: The threads the merge may keep busy (``shard_merge.merge_shards``): the wave's cores over its merges.
    threads: int = 1

    @property
    def task_id(self) -> str:
        return str(self.work.task_id)


def shard_work(work: Any, count: int) -> list[Any]:
    """The ``count`` shard work items of ``work`` (a TaskWork): only shard 0 reports the run's global drops."""
    return [
        dataclasses.replace(work, shard=ShardSpec(i, count), reports_global_drops=work.reports_global_drops and i == 0)
        for i in range(count)
    ]


@dataclass
class StageSplit:
    """Each stage's shard counts, decided as the stage starts: a task reading a repartition topic has, besides its
    planned records, what the earlier stages appended (counted from their reports' outputs), which ``auto`` weighs
    as any other input (a re-key then an aggregate over one partition is the common case)."""

    refusals: Mapping[int, str | None]
    split: Split
    cores: int
    appended: Counter[tuple[str, int]] = dataclasses.field(default_factory=Counter)

    def shards(self, tasks: Sequence[Any]) -> dict[str, int]:
        return stage_shards(tasks, self.refusals, self.split, self.cores, self.appended)

    def saw(self, reports: Sequence[dict[str, Any]]) -> None:
        """Count what a finished stage's tasks wrote (``outputs``: ``topic+partition`` → records)."""
        for report in reports:
            for name, records in report.get("outputs", {}).items():
                topic, _, partition = name.rpartition("+")
                self.appended[(topic, int(partition))] += records

    def widest(self, stages: Sequence[Sequence[Any]]) -> int:
        """The most work items a wave may run at once: under ``auto`` with a sub-topology that may split, a stage
        may split once the earlier ones' outputs are counted, up to the cores."""
        planned = widest_wave(stages, plan_shards(stages, self.refusals, self.split, self.cores))
        if self.split == "auto" and any(refusal is None for refusal in self.refusals.values()):
            return max(planned, self.cores)
        return planned


def split_stage(
    run_stage: Callable[[Any], list[dict[str, Any]]], split: StageSplit
) -> Callable[[Any], list[dict[str, Any]]]:
    """``run_stage`` (a job's runner of one ``Stage``) with the stage's split tasks run as shards, then merged."""

    def run(stage: Any) -> list[dict[str, Any]]:
        shards = split.shards(stage.tasks)
        reports = _run_split(run_stage, stage, shards, split.cores)
        split.saw(reports)
        return reports

    return run


def _run_split(
    run_stage: Callable[[Any], list[dict[str, Any]]], stage: Any, shards: Mapping[str, int], cores: int
) -> list[dict[str, Any]]:
    split = [w for w in stage.tasks if w.task_id in shards]
    if not split:
        return run_stage(stage)
    first = [item for w in stage.tasks for item in (shard_work(w, shards[w.task_id]) if w in split else [w])]
    for w in split:
        logger.info("task [%s] runs as %d key shards", w.task_id, shards[w.task_id])
    reports = run_stage(dataclasses.replace(stage, tasks=tuple(first)))
    # a task done before (its report exists) answers for each of its shards: keep one
    whole = {r["task_id"]: r for r in reports if "shard" not in r}
    merges = tuple(MergeWork(w, shards[w.task_id], max(1, cores // len(split))) for w in split)
    for report in run_stage(dataclasses.replace(stage, tasks=merges)):
        whole[report["task_id"]] = report
    return list(whole.values())
