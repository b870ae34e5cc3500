"""The process step's driver: plan + staged segments + the user's topology → one Spark task per Kafka Streams task.

Before Spark starts, the user's ``Topology.describe()`` must equal the plan's topology text (the first differing
line is named: a hand-off from another topology would corrupt the live application), every task's restores must be
readable (a fresh changelog restore), and the run must be one stage (stages joined by repartition topics come
next). Then ``sc.parallelize(work, len(work)).mapPartitions(...)`` gives each task its own Spark task (measured: one
element per partition, in order); each returns only its small report through ``collect()``.

Errors: a task whose input is bad, or whose processor fails, returns its error instead of a report (a retry would
fail the same way), and the driver raises it after every task has finished; anything else (an executor lost, the
injected failure of the retry test) fails the Spark task, which Spark retries up to ``spark.task.maxFailures``
(``local[N,M]``: M attempts). A retried task rewrites the same object names and publishes its report last.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamproc.engine.dead_letter_queue import exception_name
from streamproc.engine.describe_diff import first_difference
from streamproc.engine.internal_topics import internal_topic_prefix
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import SinkNodeSpec, Topology
from streamproc.engine.topology_loader import load_topology
from streamproc.errors import ConfigError, ProcessingError, RecordValidationError, StreamprocError
from streamproc.plan.run_plan import RunPlan
from streamproc.plan.run_plan import plan_id as plan_id  # defined with the plan; re-exported for older callers
from streamproc.plan.run_planner import GLOBAL_TASK
from streamproc.schema_registry.client import check_registries, collected
from streamproc.spark.global_stores import GlobalRestoreRange
from streamproc.spark.shard_merge import merge_shards
from streamproc.spark.task_output import UNASSIGNED, TaskObjects
from streamproc.spark.task_runner import InputRange, RestoreRange, TaskWork, run_task
from streamproc.spark.task_split import (
    MergeWork,
    Split,
    StageSplit,
    auto_refusals,
    log_refusals,
    split_refusals,
    split_stage,
)
from streamproc.state.record_cache import RECORD_CACHE_OFF, check_cached_stores, check_record_cache_mode
from streamproc.worker_processes import usable_cores, worker_pool

if TYPE_CHECKING:
    from pyspark import SparkContext

logger = logging.getLogger(__name__)

#: Spark setting naming one task whose attempt 0 fails after publishing its outputs (the retry tests): ``0_1``
#: raises in the task, ``0_1:crash`` kills its Python worker process (what a lost executor looks like to the task).
FAIL_FIRST_ATTEMPT_CONF = "spark.streamproc.failFirstAttempt"

#: Called with (tasks done, tasks in the stage) while the stage runs.
Progress = Callable[[int, int], None]

#: What an executor runs: a whole task or one key shard of it (``TaskWork``), or a split task's merge.
WorkItem = TaskWork | MergeWork

#: ``--master inline``: the tasks run one after another in this process, with the same task runner, files and
#: reports as on Spark, and no Spark started (no JVM, no Python workers, no retries).
INLINE_MASTER = "inline"
#: ``--master processes[N]``: the tasks run in N worker processes of this machine (``processes``: one per core),
#: with the same task runner, files and reports as on Spark, and no Spark started: no JVM, no Spark Python daemon,
#: no retries. On one machine that is the parallelism of ``local[N]`` for a fraction of the CPU (``bench/README.md``,
#: issue #28: Spark's JVM and Python workers cost 15 CPU-s of a 1 M record count that takes 4 CPU-s inline).
PROCESSES_MASTER = "processes"
_PROCESSES = re.compile(r"processes(?:\[([1-9][0-9]*)\])?")
#: ``streamproc run`` without ``--master`` starts a worker process per this many records of the window (input and
#: restores), at most one per core, and runs the window in its own process when that makes one or none. A worker
#: costs about 1.5 CPU-s before its first record (its interpreter and the task runner's imports: pyarrow, polars,
#: pandera, rocksdict), what the count processes 400 000 records in: below a million records a worker adds more CPU
#: than it saves wall time (``bench/README.md``, issue #28).
RECORDS_PER_WORKER = 1_000_000


def window_records(plan: RunPlan) -> int:
    """The records the process step reads: every planned range's and every store restore's."""
    return sum(r.end - r.start for r in plan.ranges) + sum(r.end - r.start for r in plan.restores)


def default_master(plan: RunPlan, cores: int | None = None) -> str:
    """``streamproc run``'s master when none is given: ``processes[N]`` with a worker per
    :data:`RECORDS_PER_WORKER` records of the window and at most one per core (``cores``: those it may use), or
    ``inline`` where that is one worker or none. Spark is for a cluster (``--master spark://…``, the Airflow DAGs'
    spark-submit), or ``local[N]`` by choice."""
    workers = min(cores or usable_cores(), window_records(plan) // RECORDS_PER_WORKER)
    return f"{PROCESSES_MASTER}[{workers}]" if workers > 1 else INLINE_MASTER


def processes_of(master: str | None) -> int | None:
    """N of ``processes[N]`` (the cores this process may use for ``processes``); ``None`` for any other master."""
    match = _PROCESSES.fullmatch(master or "")
    if match is None:
        return None
    return int(match.group(1)) if match.group(1) else usable_cores()


class InjectedFailure(RuntimeError):
    """The retry test's executor failure: not a ``StreamprocError``, so Spark retries the task."""


def check_topology(plan: RunPlan, topology: Topology, reference: str) -> None:
    """Refuse a topology whose ``describe()`` differs from the plan's, naming the first differing line."""
    if plan.topology is None:
        raise ConfigError(
            "the plan was made without a topology (from --input-topic), so the process step cannot check that "
            f"{reference} is the application's topology; re-plan with --topology describe.txt"
        )
    difference = first_difference(plan.topology, str(topology.describe()))
    if difference is not None:
        got = "(end)" if difference.actual is None else difference.actual.strip()
        want = "(end)" if difference.expected is None else difference.expected.strip()
        raise ConfigError(
            f"topology {reference} is not the plan's topology: line {difference.line} of describe() is {got!r} where "
            f"the plan has {want!r}{'; only the order of its nodes differs' if difference.same_structure else ''}; "
            "process with the topology the plan was made from"
        )
    check_source_topic_changelogs(plan, topology, reference)


def check_source_topic_changelogs(plan: RunPlan, topology: Topology, reference: str) -> None:
    """Refuse a plan that restores a store from another topic than the topology's: a table source store that reuses
    its source topic as changelog (``topology.optimization=all``) restores from that topic, which describe() does not
    show, so a plan made from the text alone names a changelog topic the application never created."""
    reused = topology.source_topic_changelogs
    for task in plan.tasks:
        for store in task.stores:
            source = reused.get(store.name)
            planned = store.changelog_topic
            if source is not None and planned != source:
                ours = f"restores it from its source topic {source} (topology.optimization=all)"
            elif source is None and f"{planned}-{store.changelog_partition}" in task.source_partitions:
                ours = "gives it its own changelog topic (no topology.optimization)"
            else:
                continue
            raise ConfigError(
                f"task [{task.task_id}] store {store.name}: the plan restores it from {planned} but {reference} "
                f"{ours}; make the plan with the application's --topology-optimization (streamproc run does it)"
            )


def partition_counts(plan: RunPlan, extra: Mapping[str, int]) -> dict[str, int]:
    """Partition counts the sinks need: the output topics' the plan read from the cluster, every planned topic's (the
    plan lists all its partitions), then ``extra`` (``--partitions``)."""
    counts: dict[str, int] = dict(plan.sink_partitions)
    for r in plan.ranges:
        counts[r.topic] = max(counts.get(r.topic, 0), r.partition + 1)
    for topic, count in extra.items():
        if count < 1:
            raise ConfigError(f"--partitions {topic}={count}: a topic has at least one partition")
        counts[topic] = count
    return counts


def check_sink_counts(plan: RunPlan, topology: Topology, counts: Mapping[str, int]) -> None:
    """Every static sink topic needs its partition count before anything runs (the sink partitions as Kafka's
    producer does); a missing one would otherwise fail, or under a continue handler silently drop, every record."""
    internal = set(topology.internal_topics)
    prefix = internal_topic_prefix(plan.application_id, topology.topology_name)
    missing = sorted(
        {
            f"{prefix}-{spec.topic}" if spec.topic in internal else spec.topic
            for spec in topology.nodes
            if isinstance(spec, SinkNodeSpec) and spec.topic is not None and spec.topic_extractor is None
        }
        - set(counts)
    )
    if missing:
        options = " ".join(f"--partitions {topic}=N" for topic in missing)
        raise ConfigError(
            f"the partition counts of output topics {missing} are not known (they did not exist when the plan was "
            f"made); create them and plan again, or pass {options} with each topic's partition count"
        )


def task_work(
    plan: RunPlan,
    *,
    topology: str,
    store_uri: str,
    counts: Mapping[str, int],
    store_options: Mapping[str, Any] | None = None,
    fail_first_attempt: str | None = None,
    state_dir: str | None = None,
    streams_settings: Mapping[str, str] | None = None,
    record_cache: str = RECORD_CACHE_OFF,
) -> list[TaskWork]:
    """One :class:`TaskWork` per planned task, in task order; refuses what this job cannot run.

    Inputs carry no upstream outputs yet: :func:`with_upstream` adds them stage by stage. A plan whose restores
    start from an existing state directory's checkpoint needs that directory (``state_dir``): each task copies its
    task directory from there before restoring the rest of the changelog.
    """
    ranges = {r.name: r for r in plan.ranges}
    restores: dict[str, list[RestoreRange]] = {}
    global_restores: list[GlobalRestoreRange] = []
    for restore in plan.restores:
        if restore.checkpoint_offset is not None and not restore.local_state_wiped and state_dir is None:
            raise ConfigError(
                f"task [{restore.task_id}] store {restore.store}: the plan restores from checkpoint offset "
                f"{restore.checkpoint_offset} of an existing state directory; pass --state-dir with the directory "
                "the plan was made with (readable by every executor), or re-plan without --state-dir so that stores "
                "restore from their changelog's start"
            )
        if restore.task_id == GLOBAL_TASK:
            checkpoint = None if restore.local_state_wiped else restore.checkpoint_offset
            global_restores.append(
                GlobalRestoreRange(
                    restore.store,
                    restore.changelog_topic,
                    restore.changelog_partition,
                    restore.start,
                    restore.end,
                    checkpoint,
                )
            )
            continue
        restores.setdefault(restore.task_id, []).append(
            RestoreRange(
                restore.store,
                restore.changelog_topic,
                restore.changelog_partition,
                restore.start,
                restore.end,
                restore.checkpoint_offset,
            )
        )
    work: list[TaskWork] = []
    for index, task in enumerate(plan.tasks):
        inputs = []
        for name in task.source_partitions:
            r = ranges.get(name)
            if r is None:
                raise ConfigError(f"task [{task.task_id}] reads {name}, which the plan has no range for; re-plan")
            inputs.append(InputRange(r.topic, r.partition, r.start, r.end, r.partition_time))
        work.append(
            TaskWork(
                plan_id=plan_id(plan),
                application_id=plan.application_id,
                task_id=task.task_id,
                subtopology=task.subtopology,
                topology=topology,
                store_uri=store_uri,
                inputs=tuple(inputs),
                restores=tuple(restores.get(task.task_id, ())),
                partition_counts=dict(counts),
                store_options=dict(store_options or {}),
                state_dir=state_dir,
                streams_settings=dict(streams_settings or {}),
                fail_before_report=(fail_first_attempt or "").partition(":")[0] == task.task_id,
                crash_before_report=fail_first_attempt == f"{task.task_id}:crash",
                global_restores=tuple(global_restores),
                # the global bootstrap's drops are the run's: one report carries them (spark/global_stores.py)
                reports_global_drops=index == 0 and bool(global_restores),
                record_cache=record_cache,
            )
        )
    return work


def stages(plan: RunPlan, work: Sequence[TaskWork]) -> list[list[TaskWork]]:
    """``work`` split by the plan's stages (sub-topology ids per stage), in stage order (no stages: one)."""
    if not plan.stages:
        return [list(work)]
    by_sub = {sub: index for index, stage in enumerate(plan.stages) for sub in stage}
    result: list[list[TaskWork]] = [[] for _ in plan.stages]
    for item in work:
        if item.subtopology not in by_sub:
            raise ConfigError(f"task [{item.task_id}]: sub-topology {item.subtopology} is in no stage of the plan")
        result[by_sub[item.subtopology]].append(item)
    return result


def with_upstream(work: TaskWork, upstream: Mapping[tuple[str, int], Sequence[str]]) -> TaskWork:
    """``work`` with the output objects earlier stages wrote to its input partitions appended to those inputs."""
    inputs = tuple(
        dataclasses.replace(r, appended=tuple(upstream.get((r.topic, r.partition), ()))) for r in work.inputs
    )
    return dataclasses.replace(work, inputs=inputs)


def record_upstream(
    reports: Sequence[dict[str, Any]], upstream: dict[tuple[str, int], list[str]], read: set[str]
) -> None:
    """Remember, per (topic, partition) a later stage reads, the output objects of ``reports``' tasks (task order)."""
    for report in sorted(reports, key=lambda r: TaskId.parse(r["task_id"])):
        objects = TaskObjects(report["plan_id"], TaskId.parse(report["task_id"]))
        for name in report["outputs"]:
            topic, _, partition_text = name.rpartition("+")
            if topic not in read:
                continue
            partition = int(partition_text)
            if partition == UNASSIGNED:
                raise ProcessingError(
                    f"sent records with a null key to {topic}, which a later stage reads: the producer would choose "
                    "their partition at random, so no batch can replay them; give the sink a partitioner or a key",
                    task_id=report["task_id"],
                )
            upstream.setdefault((topic, partition), []).append(objects.output(topic, partition))


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage's tasks, ready to run: their inputs carry what earlier stages wrote to them (``appended``)."""

    number: int  # from 1
    count: int  # stages in the run
    tasks_before: int  # tasks of the earlier stages (for progress over the whole run)
    tasks: tuple[WorkItem, ...]


def run_stages(
    plan: RunPlan, work: Sequence[TaskWork], run_stage: Callable[[Stage], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The stage hand-over: run ``work``'s stages in order with ``run_stage`` (Spark here; one process in
    ``bench/engine_only.py``), each stage's tasks given the output objects earlier stages' reports name for their
    input partitions (:func:`with_upstream`, :func:`record_upstream`). Returns every report, in stage order."""
    read = {r.topic for r in plan.ranges}
    reports: list[dict[str, Any]] = []
    upstream: dict[tuple[str, int], list[str]] = {}
    staged = stages(plan, work)
    for number, tasks in enumerate(staged, start=1):
        stage = Stage(number, len(staged), len(reports), tuple(with_upstream(item, upstream) for item in tasks))
        stage_reports = run_stage(stage)
        record_upstream(stage_reports, upstream, read)
        reports.extend(stage_reports)
    return reports


def _run_partition(items: Iterable[WorkItem]) -> Iterator[dict[str, Any]]:
    """The Spark task: run each (in practice: the one) task of this partition; return its report or its error."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    local_dirs = os.environ.get("SPARK_LOCAL_DIRS", "")
    local_dir = local_dirs.split(",")[0] or None
    for work in items:
        if isinstance(work, MergeWork):
            try:
                merged = dataclasses.replace(work.work, local_dir=local_dir)
                yield merge_shards(merged, work.shards, attempt=attempt, threads=work.threads)
            except StreamprocError as exc:
                logging.getLogger(__name__).error("task [%s] failed: %s", work.task_id, exc)
                yield {"task_id": work.task_id, "error": error_text(exc)}
            continue
        if work.shard is not None:  # the retry tests inject their failure into whole tasks and merges only
            work = dataclasses.replace(work, fail_before_report=False, crash_before_report=False)
        inject, crash = work.fail_before_report and attempt == 0, work.crash_before_report
        work = dataclasses.replace(work, local_dir=local_dir, fail_before_report=False, crash_before_report=False)
        if inject:
            try:
                run_task(dataclasses.replace(work, fail_before_report=True), attempt=attempt)
            except ProcessingError as exc:
                if crash:
                    os._exit(1)
                raise InjectedFailure(str(exc)) from exc
        try:
            yield run_task(work, attempt=attempt)
        except StreamprocError as exc:
            logging.getLogger(__name__).error("task [%s] failed: %s", work.task_id, exc)
            yield {"task_id": work.task_id, "error": error_text(exc)}


def error_text(exc: BaseException) -> str:
    """The task's error line: the error, then the user's exception behind it (a processor's or a failed schema's)."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, StreamprocError) and not isinstance(cause, RecordValidationError):
        return str(exc)
    return f"{exc}; caused by {exception_name(cause)}: {cause}"


def _module_root(reference: str) -> str | None:
    """The directory to put on the executors' ``PYTHONPATH`` so that ``MODULE`` of ``MODULE:FUNCTION`` imports."""
    module = reference.partition(":")[0]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    depth = len(module.split("."))
    if spec.submodule_search_locations is not None:  # a package: origin is its __init__.py
        depth += 1
    return str(Path(spec.origin).resolve().parents[depth - 1])


#: The driver JVM's flags when streamproc starts it (``spark.driver.extraJavaOptions`` unless the user sets it):
#: the C1 compiler only and the serial collector. The driver schedules one Spark task per Kafka Streams task and
#: relays small reports (in ``local[N]`` it is the executor too, but the records flow between the Python workers
#: and the store, never through the JVM), so C2's compilations and G1's threads bought nothing: measured on 1 M
#: records (``bench/profiles/run.py``), the JVM's CPU went from 8.1 to 4.1 seconds with these flags.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_context(master: str | None, conf: Mapping[str, str], *, python_path: Sequence[str] = ()) -> SparkContext:
    """A ``SparkContext`` on ``master`` bound to loopback, its Python workers on this interpreter.

    ``master`` ``None``: the one ``spark-submit --master`` chose when the driver runs under ``spark-submit`` (its
    gateway is already up, so :data:`DRIVER_JAVA_OPTIONS` cannot apply), else ``local[*]``.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if python_path:
        existing = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*python_path, *existing]))
    from pyspark import SparkConf, SparkContext

    under_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    spark_conf = SparkConf().setAppName("streamproc process")
    if master is not None or not under_submit:
        spark_conf.setMaster(master or "local[*]")
    # Loopback unless the deployment says otherwise: a driver whose executors run on other hosts names the address
    # they reach it by (SPARK_LOCAL_HOSTNAME, or spark-submit's --conf spark.driver.host) and binds SPARK_LOCAL_IP.
    local_ip = os.environ["SPARK_LOCAL_IP"]
    spark_conf.setIfMissing("spark.driver.host", os.environ.get("SPARK_LOCAL_HOSTNAME") or local_ip)
    spark_conf.setIfMissing("spark.driver.bindAddress", local_ip)
    spark_conf.setIfMissing("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
    # On a cluster, wait for the executors the run asked for (``spark.cores.max``; Spark waits at most its
    # ``maxRegisteredResourcesWaitingTime``, 30 s) before the first stage: ``--split auto`` counts the cores as the
    # context starts, and key shards handed out before every executor registered would queue on the first ones.
    spark_conf.setIfMissing("spark.scheduler.minRegisteredResourcesRatio", "1.0")
    spark_conf = (
        spark_conf.set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")  # the CLI draws its own progress bar
        .set("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    )
    for key, value in conf.items():
        spark_conf.set(key, value)
    return SparkContext.getOrCreate(spark_conf)


def _watch(sc: SparkContext, total: int, progress: Progress, done: threading.Event) -> None:
    tracker = sc.statusTracker()
    while not done.wait(0.5):
        completed = 0
        for job_id in tracker.getActiveJobsIds():
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    completed += stage.numCompletedTasks
        progress(completed, total)


def run_tasks(sc: SparkContext, work: Sequence[WorkItem], *, progress: Progress | None = None) -> list[dict[str, Any]]:
    """Run every task of ``work`` as its own Spark task; returns the reports in task order (raises a task's error)."""
    if not work:
        return []
    done = threading.Event()
    watcher = None
    if progress is not None:
        watcher = threading.Thread(target=_watch, args=(sc, len(work), progress, done), daemon=True)
        watcher.start()
    try:
        reports: list[dict[str, Any]] = sc.parallelize(list(work), len(work)).mapPartitions(_run_partition).collect()
    except Exception as exc:  # py4j's error: the Python traceback of the last failed attempt, as text
        last = [line for line in str(exc).splitlines() if line.strip()]
        cause = next(
            (line for line in reversed(last) if "Error" in line or "Exception" in line), last[-1] if last else ""
        )
        raise ProcessingError(
            f"the Spark job failed after its retries: {cause.strip()}; tasks without a report are not done, "
            "re-run the same command to run only those"
        ) from exc
    finally:
        done.set()
        if watcher is not None:
            watcher.join()
    if progress is not None:
        progress(len(work), len(work))
    return _reported(reports)


def run_inline(work: Sequence[WorkItem], *, progress: Progress | None = None) -> list[dict[str, Any]]:
    """Run every task of ``work`` in this process, one after another (``--master inline``): the Spark task's body
    (:func:`_run_partition`, attempt 0) without Spark; returns the reports in task order (raises a task's error)."""
    reports = []
    for done, report in enumerate(_run_partition(work), start=1):
        reports.append(report)
        if progress is not None:
            progress(done, len(work))
    return _reported(reports)


def _run_one(work: WorkItem) -> dict[str, Any]:
    """A worker process's share of ``--master processes``: one task, the Spark task's body at attempt 0."""
    [report] = _run_partition([work])
    return report


def run_in_processes(
    work: Sequence[WorkItem], pool: ProcessPoolExecutor, *, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Run every task of ``work`` in ``pool``'s worker processes (``--master processes[N]``), a task at a time each;
    returns the reports in task order (raises a task's error once every task has ended).

    A task's error is its report's, as on Spark. A worker that dies (killed, out of memory) ends the stage: the
    tasks with a report are done and a re-run of the same command runs only the others.
    """
    reports: dict[int, dict[str, Any]] = {}
    futures = {pool.submit(_run_one, item): index for index, item in enumerate(work)}
    for done, future in enumerate(as_completed(futures), start=1):
        index = futures[future]
        try:
            reports[index] = future.result()
        except BrokenProcessPool:
            lost = sorted(work[i].task_id for i in range(len(work)) if i not in reports)
            raise ProcessingError(
                f"a worker process died (killed, or out of memory) before task(s) {', '.join(lost)} reported; "
                "the tasks with a report are done: re-run the same command to run the others"
            ) from None
        except Exception as exc:  # the injected failure of the retry tests, or a bug: the task's error
            reports[index] = {"task_id": work[index].task_id, "error": error_text(exc)}
        if progress is not None:
            progress(done, len(work))
    return _reported([reports[index] for index in range(len(work))])


def _reported(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stage's reports, or the first task error among them (every failed task's error logged)."""
    failed = [r for r in reports if "error" in r]
    if failed:
        for report in failed[1:]:
            logger.error("%s", report["error"])
        raise ProcessingError(
            f"{len(failed)} of {len(reports)} task(s) failed; the first: {failed[0]['error']}"
            if len(failed) > 1
            else failed[0]["error"]
        )
    return reports


def _offset(progress: Progress | None, done: int, total: int) -> Progress | None:
    """A stage's progress as progress over every task of the run."""
    if progress is None:
        return None
    report = progress

    def stage_progress(completed: int, _stage_total: int) -> None:
        report(done + completed, total)

    return stage_progress


def unwaited_cores(master: str, cores_max: str | None, split: Split, cores: int) -> str | None:
    """What to warn of when key shards are counted and handed out on a standalone master that did not wait for its
    executors: Spark waits for registered executors (``minRegisteredResourcesRatio``) only when ``spark.cores.max``
    says how many cores to wait for; without it, ``--split`` sees the cores registered as the context started."""
    if split == "off" or not master.startswith("spark://") or cores_max:
        return None
    return (
        f"--split {split} on {master} without spark.cores.max: Spark does not wait for the executors to register, "
        f"so key shards are planned for the {cores} core(s) registered now and may queue on the first executors; "
        "set --conf spark.cores.max to the cores this run should take"
    )


def _run_on_spark(
    plan: RunPlan,
    work: Sequence[TaskWork],
    master: str | None,
    settings: Mapping[str, str],
    topology: str,
    progress: Progress | None,
    split: Split = "off",
    refusals: Mapping[int, str | None] | None = None,
) -> list[dict[str, Any]]:
    """Every stage's tasks as Spark tasks, on a Spark context started for them and stopped after."""
    root = _module_root(topology)
    sc = spark_context(master, settings, python_path=[root] if root else [])
    splittable = any(refusal is None for refusal in (refusals or {}).values())
    unwaited = unwaited_cores(sc.master or "", sc.getConf().get("spark.cores.max"), split, sc.defaultParallelism)
    if unwaited and splittable:
        logger.warning("%s", unwaited)
    stage_split = StageSplit(refusals or {}, split, sc.defaultParallelism)

    def run_stage(stage: Stage) -> list[dict[str, Any]]:
        logger.info(
            "Processing stage %d of %d: %d task(s) of plan %s on %s",
            stage.number,
            stage.count,
            len(stage.tasks),
            plan_id(plan),
            sc.master,
        )
        return run_tasks(sc, stage.tasks, progress=_offset(progress, stage.tasks_before, len(work)))

    try:
        return run_stages(plan, work, split_stage(run_stage, stage_split))
    finally:
        sc.stop()


def process(
    plan: RunPlan,
    *,
    store_uri: str,
    topology: str,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    partitions: Mapping[str, int] | None = None,
    store_options: Mapping[str, Any] | None = None,
    state_dir: str | None = None,
    progress: Progress | None = None,
    streams_settings: Mapping[str, str] | None = None,
    split: Split = "auto",
    record_cache: str = RECORD_CACHE_OFF,
) -> list[dict[str, Any]]:
    """The process step: check the topology against the plan, then run every task on Spark (see the module doc).

    ``split`` (``--split``, ``spark/task_split.py``): ``off`` runs every task whole; ``N`` or ``auto`` runs the
    tasks of the sub-topologies this executor can split as key shards in parallel, merged back into each task's
    objects (issue #29).

    ``streams_settings`` are the application's (its topology factory's and its serdes'): every task gets them with
    its work, so executors need no file of the driver's; every Schema Registry the serdes were configured for must
    answer before Spark starts.

    ``record_cache`` (``--record-cache``, ``state/record_cache.py``): ``off`` sends every update; ``flush-at-end``
    emulates the DSL stores' record cache flushed once, at each task's commit. The flush's order is the whole
    task's, so its tasks run whole (no key shards)."""
    check_record_cache_mode(record_cache)
    with collected() as registries:
        user_topology, config = load_topology(topology, streams_settings)
    check_registries(registries)
    check_topology(plan, user_topology, topology)
    settings = dict(conf or {})
    counts = partition_counts(plan, partitions or {})
    check_sink_counts(plan, user_topology, counts)
    work = task_work(
        plan,
        topology=topology,
        store_uri=store_uri,
        counts=counts,
        store_options=store_options,
        fail_first_attempt=settings.get(FAIL_FIRST_ATTEMPT_CONF),
        state_dir=state_dir,
        streams_settings=streams_settings,
        record_cache=record_cache,
    )
    check_cached_stores(user_topology, record_cache)
    if record_cache != RECORD_CACHE_OFF and split != "off":
        logger.info("--record-cache %s: every task runs whole (the cache's flush order is the task's)", record_cache)
        split = "off"
    refusals = split_refusals(user_topology)
    if split == "auto":  # only where shards would pay: per record, each shard reading only its own records
        refusals = auto_refusals(user_topology, config, refusals)
    log_refusals(refusals, split)
    if master == INLINE_MASTER:

        def run_stage_inline(stage: Stage) -> list[dict[str, Any]]:
            logger.info("Processing stage %d of %d: %d task(s) of plan %s in this process (--master inline)",
                        stage.number, stage.count, len(stage.tasks), plan_id(plan))  # fmt: skip
            return run_inline(stage.tasks, progress=_offset(progress, stage.tasks_before, len(work)))

        reports = run_stages(plan, work, split_stage(run_stage_inline, StageSplit(refusals, split, 1)))
    elif (processes := processes_of(master)) is not None:
        stage_split = StageSplit(refusals, split, processes)
        widest = stage_split.widest(stages(plan, work)) if work else 1
        # one pool for every stage: each worker imports the task runner once, not once per stage
        with worker_pool(min(processes, widest)) as pool:

            def run_stage_in_processes(stage: Stage) -> list[dict[str, Any]]:
                logger.info("Processing stage %d of %d: %d task(s) of plan %s in %d worker process(es) (--master "
                            "%s)", stage.number, stage.count, len(stage.tasks), plan_id(plan),
                            min(processes, widest), master)  # fmt: skip
                return run_in_processes(stage.tasks, pool, progress=_offset(progress, stage.tasks_before, len(work)))

            reports = run_stages(plan, work, split_stage(run_stage_in_processes, stage_split))
    else:
        reports = _run_on_spark(plan, work, master, settings, topology, progress, split, refusals)
    reports.sort(key=lambda r: TaskId.parse(r["task_id"]))
    for report in reports:
        logger.info(
            "task [%s] %s: %s records processed, dropped %s, stream time %s",
            report["task_id"],
            "already done" if report.get("skipped") else f"done ({report.get('execution', 'per record')})",
            report["records_processed"],
            report["dropped"],
            report["stream_time"],
        )
    global_dropped = {k: n for r in reports for k, n in r.get("global_dropped", {}).items()}
    if global_dropped:
        logger.info("global stores: the bootstrap dropped %s record(s) (task -1_-1)", global_dropped)
    return reports
