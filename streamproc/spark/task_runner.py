"""One Kafka Streams task of a plan, run to the end of its planned ranges: what one Spark task executes.

Nothing here imports Spark: :func:`run_task` takes a :class:`TaskWork` (small, picklable, built by the driver) and
returns the task's report, so it is tested directly and run identically inside a Spark executor.

Steps: skip when the task's report exists (a re-run); check every input and changelog range is staged; bootstrap the
global stores from the global topics' ranges, or reuse those this Python worker bootstrapped for an earlier task of
the run (``spark/global_stores.py``); restore the stores
(``ProcessorStateManager`` into RocksDB under the executor's local directory, from the plan's changelog ranges); run
the task (``AssignedStreamsTasks``: restoring → running → to the end of its inputs); publish outputs, changelog
records, drops and the store bundle; publish the report last (the commit marker).

**Commit point.** In a batch a commit is a point where outputs, changelog records, offsets and partition times are
durable and a retry could resume from there. This job commits once, at the task's end: the inputs are staged and
the outputs deterministic, so a retried task re-runs from its planned start and rewrites the same objects, which is
cheaper and simpler than snapshotting RocksDB at intermediate points; the report (offsets, partition times, counts)
is the commit record the hand-off reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import heapq
import itertools
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.assigned_streams_tasks import AssignedStreamsTasks, TaskInputs
from streamproc.engine.key_locality import TaskWideKind, punctuation_refusal
from streamproc.engine.key_shards import ShardGate, ShardKey, ShardSpec, processing_stamps, store_shard_key
from streamproc.engine.processing_handler import fails_at_every_error
from streamproc.engine.records import NULL_SIZE, ConsumerRecord, RawRecord, TimestampType, TopicPartition
from streamproc.engine.replay import PartitionInput
from streamproc.engine.slotted_init import build_slotted
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.engine.task_wide_times import TaskStreamTimes
from streamproc.engine.topology_builder import build_processor_topology, store_builders
from streamproc.engine.topology_loader import load_topology
from streamproc.engine.validation import ValidatingSourceNode, prevalidated
from streamproc.errors import ProcessingError, StateError
from streamproc.spark.columnar import columnar_plan
from streamproc.spark.global_stores import GlobalRestoreRange, GlobalStoresKey, worker_global_stores
from streamproc.spark.owned_input import KeyOwners, OwnedInput, owned_input, translated_drops
from streamproc.spark.shard_restore import owned_changelog, restored_by_key
from streamproc.spark.stream_time_prefix import arrivals as prefix_arrivals
from streamproc.spark.stream_time_prefix import reaches as prefix_reaches
from streamproc.spark.stream_time_prefix import watched_nodes
from streamproc.spark.task_input import BATCH_ROWS, StagedRange, merged_upstream, read_records, staged_range
from streamproc.spark.task_output import (
    TaskChangelogCollector,
    TaskObjects,
    TaskOutputCollector,
    bundle_bytes,
    drops_bytes,
    publish_file,
    report_bytes,
)
from streamproc.spark.task_schemas import DEAD_LETTER_QUEUE, DROPS, check_file, check_report
from streamproc.spark.task_shards import (
    ShardChangelogCollector,
    ShardObjects,
    ShardOutputCollector,
    keep_restored_segments,
    shard_drops_bytes,
)
from streamproc.spark.task_split import reads_task_stream_time, task_wide_values
from streamproc.state.offset_checkpoint import OffsetCheckpoint
from streamproc.state.processor_state_manager import ProcessorStateManager, StoreDefinition
from streamproc.state.record_cache import RECORD_CACHE_FLUSH_AT_END, RecordCaches, cached_store_names
from streamproc.state.restore_plan import ChangelogState
from streamproc.state.state_directory import StateDirectory
from streamproc.state.store_builders import store_definitions
from streamproc.state.store_layout import checkpoint_path, task_directory
from streamproc.storage.object_store import ObjectStore, load_store

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InputRange:
    """One input partition of the task: ``[start, end)`` and the committed partition time (-1: none)."""

    topic: str
    partition: int
    start: int
    end: int
    partition_time: int
    #: Output objects of upstream tasks (earlier stages) for this partition, in upstream ``TaskId`` order: their
    #: records follow the staged ones, at offsets ``end``, ``end + 1``, ... (see :func:`upstream_records`).
    appended: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RestoreRange:
    """One store's changelog ``[start, end)`` to restore before processing."""

    store: str
    topic: str
    partition: int
    start: int
    end: int
    #: The offset the state directory's ``.checkpoint`` had for this changelog when planning (``None``: no entry).
    checkpoint_offset: int | None = None


@dataclass(frozen=True, slots=True)
class TaskWork:
    """Everything an executor needs to run one task (sent to it pickled; a few hundred bytes)."""

    plan_id: str
    application_id: str
    task_id: str
    subtopology: int
    topology: str
    store_uri: str
    inputs: tuple[InputRange, ...]
    restores: tuple[RestoreRange, ...] = ()
    partition_counts: Mapping[str, int] = field(default_factory=dict)
    store_options: Mapping[str, Any] = field(default_factory=dict)
    local_dir: str | None = None
    #: The application's ``state.dir`` the plan was made with: the task starts from a copy of its task directory
    #: there (stores and ``.checkpoint``) and restores the rest of the changelog; ``None``: from empty stores.
    state_dir: str | None = None
    #: The application's settings (``--streams-config``/``--streams-setting``): the topology factory's and its serdes'
    #: (a registry's credentials among them: never in a repr or a log line).
    streams_settings: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Raise after publishing everything but the report (the retry test's injected executor failure).
    fail_before_report: bool = False
    #: With ``fail_before_report``: kill the Python worker instead of raising (the driver's ``_run_partition``).
    crash_before_report: bool = False
    #: Every global store's topic ranges (the same for every task): restored before the task processes, once per
    #: Python worker and run (``spark/global_stores.py``).
    global_restores: tuple[GlobalRestoreRange, ...] = ()
    #: This task's report carries the global bootstrap's drops (``global_dropped``): the driver sets it on one task
    #: of the run, so they are counted once however many workers bootstrap.
    reports_global_drops: bool = False
    #: ``--record-cache`` (``state/record_cache.py``): ``off``, or ``flush-at-end`` (the DSL stores' cache, one flush).
    record_cache: str = "off"
    #: Run only this key shard of the task (issue #29, ``engine/key_shards.py``): publish the shard's stamped objects
    #: for the merge (``spark/shard_merge.py``) instead of the task's; ``None``: the whole task.
    shard: ShardSpec | None = None


#: Allocations of container objects between two young-generation collections while a task runs (CPython's
#: default is 700). A task allocates a few objects per record (raw record, record, rows) that reference counting
#: frees; at 700 the collector ran every ~100 records and cost ~15 % of a pass-through task (build_slotted alone:
#: 0.29 µs a record with it, 0.10 µs without). Cycles are still collected, just less often; memory stays bounded.
TASK_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def _young_collections_spaced() -> Iterator[None]:
    """Raise the young-generation threshold to :data:`TASK_GC_THRESHOLD` for the task, then restore it."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], TASK_GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@_young_collections_spaced()
def run_task(work: TaskWork, *, attempt: int = 0) -> dict[str, Any]:
    """Run ``work``'s task to the end of its ranges and publish its objects; returns its report (see module doc)."""
    started = time.monotonic()
    task_id = TaskId.parse(work.task_id)
    store = load_store(work.store_uri, **dict(work.store_options))
    objects = TaskObjects(work.plan_id, task_id)
    if store.exists(objects.report):
        report: dict[str, Any] = json.loads(store.get(objects.report))
        logger.info("task [%s] already done (report %s exists): skipped", task_id, objects.report)
        return {**report, "skipped": True}
    if work.shard is not None:
        objects = ShardObjects(work.plan_id, task_id, work.shard)
        if store.exists(objects.report):
            report = json.loads(store.get(objects.report))
            logger.info("task [%s] shard %s already done: skipped", task_id, work.shard)
            return {**report, "skipped": True}
    topology, config = load_topology(work.topology, work.streams_settings)
    config = dataclasses.replace(config, application_id=work.application_id, record_cache=work.record_cache)

    staged_inputs = {
        (r.topic, r.partition): staged_range(store, r.topic, r.partition, r.start, r.end, task=work.task_id)
        for r in work.inputs
    }
    staged_restores = {
        r.store: staged_range(store, r.topic, r.partition, r.start, r.end, task=work.task_id) for r in work.restores
    }

    work_dir = Path(tempfile.mkdtemp(prefix=f"streamproc-{task_id}-", dir=work.local_dir))
    try:
        for sub in ("state", "outputs", "changelogs"):
            (work_dir / sub).mkdir()
        state_directory = StateDirectory(work_dir / "state", work.application_id)
        gate = None if work.shard is None else ShardGate(work.shard)
        changelog_collector = (
            TaskChangelogCollector(task_id, work_dir / "changelogs")
            if gate is None
            else ShardChangelogCollector(task_id, work_dir / "changelogs", gate)
        )
        reused = topology.source_topic_changelogs  # table stores restored from their source topic, unlogged
        definitions = [
            dataclasses.replace(d, changelog_topic=reused[d.name]) if d.name in reused else d
            for d in store_definitions(store_builders(topology, work.subtopology))
        ]
        state = ProcessorStateManager(
            task_id,
            definitions,
            application_id=work.application_id,
            state_directory=state_directory,
            collector=changelog_collector,
        )
        # a source-topic changelog restores up to the committed offset, which the plan made the range's end
        changelogs = {
            TopicPartition(r.topic, r.partition): ChangelogState(
                r.start, r.end, group_committed_offset=r.end if r.store in reused else None
            )
            for r in work.restores
        }
        tasks = AssignedStreamsTasks(log_prefix=f"stream-thread [spark-{work.plan_id}] ")
        copied = work.state_dir is not None and copy_task_directory(work, task_id, state_directory)
        if work.state_dir is not None:
            check_checkpoint(work, state_directory.task_dir_path(task_id))
        try:
            global_key = GlobalStoresKey(
                work.plan_id, work.application_id, work.topology, work.store_uri, work.global_restores, work.state_dir
            )
            global_stores, global_bootstrapped = worker_global_stores(
                global_key,
                topology,
                object_store=store,
                local_dir=work.local_dir,
                task=work.task_id,
                deserialization_exception_handler=config.deserialization_exception_handler,
            )
            state.initialize(changelogs)
            # a shard but the first restores its own keys of these once it knows its owners (shard_restore.py)
            by_key = restored_by_key(state.stores, definitions) if work.shard and work.shard.index else frozenset()
            restored = {
                r.store: state.restore(r.store, read_records(store, staged_restores[r.store], task=work.task_id))
                for r in work.restores
                if r.store not in by_key
            }
            restored_segments = {} if gate is None else keep_restored_segments(state.stores)
            handled_at: list[str] = []  # where a shard's task-wide store times may no longer hold (task_wide_times)
            runs_whole: str | None = None  # why the merge must run the task whole instead
            collector = (
                TaskOutputCollector(work.partition_counts, work_dir / "outputs", task_id)
                if gate is None
                else ShardOutputCollector(work.partition_counts, work_dir / "outputs", task_id, gate)
            )
            appended_counts: dict[str, int] = {}
            graph = build_processor_topology(topology, work.subtopology, application_id=work.application_id)
            # over columns when the columnar path takes the task (spark/columnar/), else per record
            facts: dict[str, Any] = {
                "task": work.task_id,
                "graph": graph,
                "config": config,
                "inputs": tuple(
                    (staged_inputs[(r.topic, r.partition)], r.partition_time, r.appended) for r in work.inputs
                ),
                "object_store": store,
                "stores": state.stores,
                "has_global_stores": global_stores is not None,
                "collector": collector,
                "changelog_collector": changelog_collector,
                "cached_stores": frozenset(cached_store_names(definitions, state.stores)),
            }
            # a key shard over columns keeps the rows it owns (columnar/shard_rows.py); per record, the gate sits
            # on the source nodes
            columnar = columnar_plan(**facts, shard=work.shard)
            if not isinstance(columnar, str):
                logger.info("task [%s] runs the columnar %s", task_id, columnar.describe())
                if by_key:
                    assert work.shard is not None
                    restored.update(_restore_own_keys(work, store, state, staged_restores, by_key, work.shard, None))
                try:
                    result = columnar.run(appended_counts)
                except Exception as exc:
                    tasks.log_task_failure(task_id, exc)  # as the per-record loop logs a task's failure
                    raise
                state.flush()  # the task's commit
                if gate is not None:
                    gate.drop_stamps = processing_stamps(result.dropped)
            else:
                logger.debug("task [%s] runs per record, %s", task_id, columnar)
                partitions = [TopicPartition(r.topic, r.partition) for r in work.inputs]
                stores = dict(state.stores) if global_stores is None else {**state.stores, **global_stores.read_only}
                task = StreamTask(task_id, graph, partitions, config=config, stores=stores, collector=collector)
                if config.record_cache == RECORD_CACHE_FLUSH_AT_END:  # cached stores replaced by their caching views
                    task.record_caches = RecordCaches.install(
                        stores, cached_store_names(definitions, stores), task.context
                    )
                state.attach(task.context)
                own: OwnedInput | str = "the whole task"
                if gate is not None:
                    values = task_wide_values(topology, work.subtopology)
                    windowed = [v for v in values if v.kind is TaskWideKind.PROCESSOR_STREAM_TIME]
                    puts = {
                        v.processor: stores[v.store]
                        for v in values
                        if v.kind is TaskWideKind.STORE_PUTS and v.store is not None
                    }
                    stream_times = TaskStreamTimes.of(
                        graph,
                        (v.processor for v in windowed),
                        prefix_reaches(graph, (v.processor for v in windowed if v.prefix)),
                        puts,
                        prefix_arrivals(graph, puts),
                    )
                    own = (
                        "a declared processor reads the task's stream time, which only a shard reading every record has"
                        if reads_task_stream_time(values)
                        else "a join window store's stream time and seqnums count every key's puts, which a shard "
                        "counts at its gate from every record"
                        if puts
                        else _owned_input(
                            work, store, staged_inputs, graph, config, state.stores, definitions, gate, stream_times
                        )
                    )
                    positions, keyed, others = (
                        (None, None, None)
                        if isinstance(own, str)
                        else (own.positions.tolist(), (own.keyed_times, own.keyed_before), own.others_times)
                    )
                    if by_key:
                        owners = None if isinstance(own, str) else own.key_owners
                        own_keys = _restore_own_keys(work, store, state, staged_restores, by_key, gate.shard, owners)
                        restored.update(own_keys)
                    gate.install(task, shard_key(state.stores, definitions), positions, stream_times, keyed, others)
                    if not isinstance(own, str):  # every event is the shard's own, at its record's step
                        assert isinstance(collector, ShardOutputCollector)
                        assert isinstance(changelog_collector, ShardChangelogCollector)
                        collector.stamp_by_step(task, own.positions)
                        changelog_collector.stamp_by_step(task, own.positions)
                    if stream_times is not None:
                        handled_at = stream_times.watch_handled(
                            graph,
                            watched_nodes(
                                graph,
                                (v.processor for v in windowed if v.prefix),
                                handler_fails=fails_at_every_error(config.processing_exception_handler),
                                puts=puts,
                            ),
                        )
                inputs = tuple(
                    PartitionInput(
                        TopicPartition(r.topic, r.partition),
                        _checked_ahead(
                            graph.source(r.topic),
                            itertools.chain(
                                read_records(store, staged_inputs[(r.topic, r.partition)], task=work.task_id),
                                upstream_records(store, r, appended_counts),
                            )
                            if isinstance(own, str)
                            else own.records(
                                store,
                                staged_inputs[(r.topic, r.partition)],
                                upstream_records(store, r, appended_counts),
                                task=work.task_id,
                            ),
                        ),
                        r.partition_time,
                    )
                    for r in work.inputs
                )
                tasks.add_new_task(task, TaskInputs(inputs, frozenset(changelogs)))
                tasks.add_to_restoring(task_id)
                tasks.update_restored(changelogs)
                tasks.run_to_end()
                result = tasks.close()[task_id]
                state.flush()  # the task's commit: stores that log on flush (the suppress buffer) log now
                punctuating = None if gate is None else punctuation_refusal(work.subtopology, task)
                if punctuating is not None:  # the key-local promise excludes it: the task runs whole after all
                    runs_whole = punctuating.reason
                if not isinstance(own, str):  # what every shard reports alike, from the whole input
                    assert gate is not None
                    (r,) = work.inputs
                    result = translated_drops(result, gate.drop_stamps)
                    result = own.whole_result(result, TopicPartition(r.topic, r.partition), r.partition_time)
        except BaseException:
            tasks.close(clean=False)  # processors closed, nothing committed: no report, nothing counts as done
            raise
        finally:
            if state.plan is not None:
                state.close()  # the Python worker is reused between Spark tasks: never leave RocksDB open
            # the global stores stay open for the worker's next task of the run (spark/global_stores.py)
            state_directory.unlock()

        written: dict[str, int] = {}
        outputs = collector.files.close()
        for (topic, partition), path in outputs.items():
            written[objects.output(topic, partition)] = publish_file(store, objects.output(topic, partition), path)
        for (topic, partition), path in changelog_collector.files.close().items():
            written[objects.changelog(topic, partition)] = publish_file(
                store, objects.changelog(topic, partition), path
            )
        dead_letters = collector.dead_letter_file()
        if gate is None:
            check_file(DEAD_LETTER_QUEUE, dead_letters, objects.dead_letter_queue, work.task_id)
        written[objects.dead_letter_queue] = publish_file(store, objects.dead_letter_queue, dead_letters)
        if gate is None:
            drops = drops_bytes(result.dropped)
            check_file(DROPS, drops, objects.drops, work.task_id)
        else:  # every drop the shard kept, with its stamp (the merge checks the task's drops)
            drops = shard_drops_bytes(result.dropped, gate.drop_stamps if config.keep_drop_events else ())
        store.put(objects.drops, drops)
        written[objects.drops] = len(drops)
        # of a split task, shard 0's stores are the merge's base (spark/shard_merge.py); the others' are not needed
        if any(d.persistent for d in definitions) and (work.shard is None or work.shard.index == 0):
            bundle = bundle_bytes(state_directory.task_dir(task_id))
            store.put(objects.stores, bundle)
            written[objects.stores] = len(bundle)
        if work.fail_before_report:
            raise ProcessingError(
                f"injected failure before the report of attempt {attempt} (outputs published, report not)",
                task_id=work.task_id,
            )
        report = {
            "plan_id": work.plan_id,
            "task_id": work.task_id,
            "subtopology": work.subtopology,
            "attempt": attempt,
            "records_processed": result.records_processed,
            "steps": result.steps,
            "skip_steps": len(result.skip_steps),
            "dropped": dict(sorted(result.dropped_counts.items())),
            "stream_time": result.stream_time,
            "punctuations": result.punctuations,
            "offsets": {
                str(tp): {"next_offset": c.offset, "partition_time": c.partition_time}
                for tp, c in sorted(result.committable_offsets.items())
            },
            "inputs": {
                f"{r.topic}-{r.partition}": {"start": r.start, "end": r.end, "records": r.records, "bytes": r.bytes}
                for r in staged_inputs.values()
            },
            "restored": dict(sorted(restored.items())),
            "global_restored": {} if global_stores is None else dict(sorted(global_stores.restored.items())),
            "global_bootstrapped": global_bootstrapped,
            # the run's global drops (task -1_-1), in the one report the driver chose for them
            "global_dropped": {}
            if global_stores is None or not work.reports_global_drops
            else dict(sorted(global_stores.dropped.items())),
            "restored_from_state_dir": copied,
            # which way the records ran: over columns (spark/columnar/) or one record at a time
            "execution": "per record" if isinstance(columnar, str) else "columnar",
            "appended": dict(sorted(appended_counts.items())),
            "outputs": {f"{t}+{p}": n for (t, p), n in sorted(collector.files.counts.items())},
            "dead_letter_queue": dict(sorted(collector.dead_letter_counts.items())),
            "changelogs": {f"{t}+{p}": n for (t, p), n in sorted(changelog_collector.files.counts.items())},
            "objects": dict(sorted(written.items())),
            "bytes_read": sum(r.bytes for r in (*staged_inputs.values(), *staged_restores.values())),
            "bytes_written": sum(written.values()),
            "seconds": round(time.monotonic() - started, 3),
        }
        if work.shard is not None:
            report["shard"] = str(work.shard)
            report["restored_segments"] = restored_segments
            if handled_at:
                runs_whole = (
                    f"a processing exception was handled at {handled_at[0]}: the record that failed may have stopped "
                    "there, where the other shards, which do not see the failure, count it as going on (into a "
                    "windowed aggregate's or a store's task-wide stream time, a join window's seqnums)"
                )
            if runs_whole is not None:
                report["runs_whole"] = runs_whole
        check_report(report)
        store.put(objects.report, report_bytes(report))
        logger.info(
            "task [%s] processed %s records, dropped %s, stream time %s; %s output records",
            task_id,
            result.records_processed,
            report["dropped"],
            result.stream_time,
            collector.sent,
        )
        return {**report, "skipped": False}
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def _owned_input(
    work: TaskWork,
    store: ObjectStore,
    staged_inputs: Mapping[tuple[str, int], StagedRange],
    graph: Any,
    config: Any,
    stores: Mapping[str, Any],
    definitions: Sequence[StoreDefinition],
    gate: ShardGate,
    stream_times: TaskStreamTimes | None,
) -> OwnedInput | str:
    """A per-record shard's own rows when it may read only those (``owned_input.py``); else why it runs the task's
    whole ``PartitionGroup``."""
    if len(work.inputs) != 1:
        own: OwnedInput | str = f"{len(work.inputs)} input partitions"
    else:
        (r,) = work.inputs
        names = sorted(d.name for d in definitions)
        own = owned_input(
            store=store,
            staged=staged_inputs[(r.topic, r.partition)],
            appended=r.appended,
            graph=graph,
            config=config,
            first_store=stores[names[0]] if names else None,
            shard=gate.shard,
            task=work.task_id,
            stream_times=stream_times is not None,
            reaches=None if stream_times is None else stream_times.reaches,
        )
    if isinstance(own, str):
        logger.debug("task [%s] shard %s reads every record: %s", work.task_id, gate.shard, own)
    else:
        logger.debug("task [%s] shard %s reads only its %d records", work.task_id, gate.shard, len(own.positions))
    return own


def _restore_own_keys(
    work: TaskWork,
    store: ObjectStore,
    state: ProcessorStateManager,
    staged_restores: Mapping[str, StagedRange],
    by_key: frozenset[str],
    shard: ShardSpec,
    owners: KeyOwners | None,
) -> dict[str, int]:
    """Restore the stores ``by_key`` names with only the keys the shard owns (``shard_restore.py``): by ``owners``
    where the shard balanced its own (``owned_input.py``), else by the gate's ``murmur2 mod K``."""
    rule = owners or KeyOwners.murmur2(shard)
    return {
        r.store: state.restore(
            r.store, owned_changelog(store, staged_restores[r.store], rule, state.store(r.store), task=work.task_id)
        )
        for r in work.restores
        if r.store in by_key
    }


def shard_key(stores: Mapping[str, Any], definitions: Sequence[StoreDefinition]) -> ShardKey | None:
    """What a shard's records are split by: the key as the task's first store (by name) serializes it, the bytes
    that address the key's entry; ``None`` (round-robin by position) for a task without stores.

    Every store of a splittable sub-topology is read and written at the record's key (``engine/key_locality.py``);
    a store's serde is the one that decides which keys share an entry (a join's two stores address a key alike, as
    co-partitioning needs).
    """
    names = sorted(d.name for d in definitions)
    return store_shard_key(stores[names[0]]) if names else None


def copy_task_directory(work: TaskWork, task_id: TaskId, state_directory: StateDirectory) -> bool:
    """Copy the task's directory of ``work.state_dir`` (stores and ``.checkpoint``, no ``.lock``) to where the task
    opens its stores; ``False`` when the state directory has none for this task (it starts empty, as Kafka's would).
    """
    assert work.state_dir is not None
    source = task_directory(Path(work.state_dir), work.application_id, task_id)
    if not source.is_dir():
        return False
    target = state_directory.task_dir_path(task_id)
    state_directory.ensure_app_dir()
    try:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock"), dirs_exist_ok=True)
    except OSError as exc:
        raise StateError(
            f"task [{task_id}] cannot copy its state directory {source} ({exc}); the directory given with "
            "--state-dir must be readable by every executor"
        ) from exc
    logger.info("task [%s] starts from a copy of %s", task_id, source)
    return True


def check_checkpoint(work: TaskWork, task_dir: Path) -> None:
    """The copied ``.checkpoint`` must be the one the plan read: the restore ranges were staged from it, so a
    state directory that moved on since planning would be restored from the wrong offsets."""
    path = checkpoint_path(task_dir)
    entries = OffsetCheckpoint(path).read() if path.exists() else None
    for r in work.restores:
        found = None if entries is None else entries.get(TopicPartition(r.topic, r.partition))
        if found != r.checkpoint_offset:
            raise StateError(
                f"task [{work.task_id}] store {r.store}: the checkpoint in {work.state_dir} has offset {found} for "
                f"changelog {r.topic}-{r.partition}, the plan was made with {r.checkpoint_offset}; the state "
                "directory changed since the plan was made: re-plan with the same --state-dir, fetch, then process"
            )


def _checked_ahead(source: object, records: Iterator[RawRecord]) -> Iterator[RawRecord]:
    """The records of a source with a ``value_schema`` have their values validated in batches ahead of processing."""
    return prevalidated(source, records) if isinstance(source, ValidatingSourceNode) else records


def _output_rows(store: ObjectStore, name: str) -> Iterator[tuple[int, bytes | None, bytes | None, Any]]:
    """(timestamp, key, value, headers) of one upstream output object, in production order, a batch at a time."""
    parquet = pq.ParquetFile(pa.BufferReader(store.get(name)))
    for batch in parquet.iter_batches(columns=["timestamp", "key", "value", "headers"]):
        columns = [batch.column(i).to_pylist() for i in range(4)]
        yield from zip(*columns, strict=True)


def greedy_upstream_records(store: ObjectStore, r: InputRange, counts: dict[str, int]) -> Iterator[RawRecord]:
    """The rule of :func:`upstream_records`, record by record: ``heapq.merge`` of the upstream objects' rows.

    Several upstream tasks' records are interleaved deterministically (docs/semantics.md): always the head with the
    smallest timestamp next, ties to the upstream task first in ``TaskId`` order; each task's own records keep their
    production order (what a consumer of the live topic could see if the producers kept pace with each other). Not
    on the task's path (a Python merge step and a record built field by field per record); the tests check
    :func:`upstream_records` and ``task_input.task_batches`` against it.
    """
    if not r.appended:
        return
    streams = [_output_rows(store, name) for name in r.appended]
    offset = r.end
    name = f"{r.topic}-{r.partition}"
    for timestamp, key, value, headers in heapq.merge(*streams, key=lambda row: row[0]):
        yield ConsumerRecord.raw(
            r.topic,
            r.partition,
            offset,
            timestamp,
            key,
            value,
            headers=tuple((h["key"], h["value"]) for h in headers),
        )
        offset += 1
        counts[name] = counts.get(name, 0) + 1


def upstream_records(store: ObjectStore, r: InputRange, counts: dict[str, int]) -> Iterator[RawRecord]:
    """The records earlier stages' tasks wrote to ``r``'s partition, as the partition's next offsets, in
    :func:`greedy_upstream_records`' order.

    The order is ``task_input.merged_upstream``'s (the greedy merge as a stable sort, a batch of each upstream
    object at a time) and the records are built a batch at a time as the staged ones are (``build_slotted`` over
    Arrow's columns, :func:`~streamproc.storage.segments.records_from_batch`): the record-by-record merge was
    ≈ 2 CPU-s per million records of a repartitioned stage (the ``window`` workload's second sub-topology), a
    heap step, a key call and a record built field by field each. ``counts`` gets the records of each batch once
    the batch has been handed out whole (the same total when the records are read to the end, as a task does).
    """
    if not r.appended:
        return
    offset = r.end
    name = f"{r.topic}-{r.partition}"
    for table in merged_upstream(store, r.appended, columns=["timestamp", "key", "value", "headers"]):
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            n = batch.num_rows
            if n == 0:
                continue
            headers = batch.column("headers")
            if len(headers.flatten()) == 0:
                header_column: list[Any] = [()] * n
            else:
                header_column = [tuple((h["key"], h["value"]) for h in row) for row in headers.to_pylist()]
            key, value = batch.column("key"), batch.column("value")
            columns = (
                [r.topic] * n,
                [r.partition] * n,
                list(range(offset, offset + n)),
                batch.column("timestamp").to_pylist(),
                [TimestampType.CREATE_TIME] * n,
                key.to_pylist(),
                value.to_pylist(),
                header_column,
                [None] * n,
                pc.fill_null(pc.binary_length(key), NULL_SIZE).to_pylist(),
                pc.fill_null(pc.binary_length(value), NULL_SIZE).to_pylist(),
            )
            yield from build_slotted(ConsumerRecord, columns)
            offset += n
            counts[name] = counts.get(name, 0) + n
