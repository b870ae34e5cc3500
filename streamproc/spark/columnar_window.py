"""The DSL's windowed ``aggregate``/``reduce``/``count`` (``TimeWindows``) of one task run a chunk of records at a time.

A task whose sub-topology is ``source → [filter | filterNot | mapValues]* → KSTREAM-AGGREGATE (windowed) →
KTABLE-TOSTREAM → [stateless chain]* → sink`` over one input partition updates, for every input record in offset
order, each window the record falls in that is still open (``KStreamWindowAggregate.process``): the window's
aggregate becomes ``aggregator(key, value, old)`` (``old`` the initializer's value for a window the store does not
hold), its timestamp ``max(stored timestamp, record timestamp)``, and a window whose end is at or before
``observed stream time - grace`` is skipped as expired (a ``expired_window`` drop, Kafka's warning). Each update is
logged to the store's changelog and sent on through ``toStream`` and the chain to the sink.

Per record, each update is a ``fetch`` from the window store, an aggregator call, a ``put`` (serialized, logged) and a
``Record``/``Change``/``Windowed`` forwarded through three nodes. Here the fold is one Python loop over the chunk
(the aggregator called once per update, in Kafka Streams' order, with the same arguments), the windows' state in a
dict, the store read once per window this task touches and written once per window at the end, and the changelog and
sink rows built as Arrow columns (``columnar_count.py``'s writers), so the files are byte for byte the per-record
path's. The chain after ``toStream`` (``select_key(lambda windowed, agg: windowed.key)``, say) runs as
``columnar_chain.run_chain`` over the updates.

The store is written at the end, not put by put; that equals the per-record store only if no put of this run falls
in an expired segment. That holds when the store's retention is at least window size + grace (Kafka's DSL requires it)
and the restored store's stream time (its latest window start) is not after the input's earliest timestamp: every
window the processor accepts then starts after ``stream time - retention``. :func:`columnar_window_plan` checks both
(else the task runs per record); :meth:`~streamproc.state.stores.SegmentedBytesStore.write_final` then creates and
destroys the same segments the puts would have, in the same order.

A failure (the aggregator or a chain function raising, a value the store's or the sink's serializer rejects) ends
the task with the per-record path's error for the first failing update in Kafka Streams' order. Eligibility beyond
the shape is ``columnar_count``'s: see :func:`streamproc.spark.columnar_count.common_ineligibility`.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamproc.dsl.internals.kstream_window_aggregate import KStreamWindowAggregateProcessor
from streamproc.dsl.internals.processor_support import LOG as record_dropped_log
from streamproc.dsl.internals.processors import KTableToStream
from streamproc.dsl.internals.windows import TimeWindows
from streamproc.engine.dropped_records import REASON_EXPIRED_WINDOW, DroppedRecord
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import ReplayResult
from streamproc.engine.serdes import ByteArrayDeserializer, ByteArraySerializer, LongDeserializer, LongSerializer
from streamproc.engine.stream_task import CommittableOffset, TaskConfig
from streamproc.engine.topology_builder import _default_partitioner
from streamproc.spark import columnar_count
from streamproc.spark.columnar_chain import Failure, StatelessStep, processing_failure, run_chain, stateless_step
from streamproc.spark.columnar_count import (
    TaskInputs,
    common_eligibility,
    input_earliest_timestamp,
    input_eligibility,
)
from streamproc.spark.columnar_output import TaskKeys, longs, no_headers, same_strings, send
from streamproc.spark.task_input import StagedRange, task_batches
from streamproc.spark.task_output import CHANGELOG_SCHEMA, TaskChangelogCollector, TaskOutputCollector
from streamproc.state.stores import StateStore, TimestampedWindowStore, TimeWindow, Windowed
from streamproc.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: ``WindowKeySchema``'s suffix of a window store key: the window start (8 bytes), then seqnum 0 (4 bytes).
_START_AND_SEQNUM = np.dtype([("start", ">i8"), ("seqnum", ">i4")])


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """What the columnar windowed aggregate needs, all checked eligible by :func:`columnar_window_plan`."""

    input: StagedRange
    appended: tuple[str, ...]
    partition_time: int
    store: TimestampedWindowStore[bytes, Any]
    changelog: TopicPartition | None
    processor: KStreamWindowAggregateProcessor
    aggregate_node: str
    windows: TimeWindows
    sink_topic: str
    sink_name: str
    sink_partitions: int
    #: the sink's value serializer is ``LongSerializer`` (else ``ByteArraySerializer``)
    sink_long_values: bool
    #: the stateless nodes between the source and the aggregate, and after ``toStream``, in order
    before: tuple[StatelessStep, ...] = ()
    after: tuple[StatelessStep, ...] = ()
    #: the store held segments after restore (else no window needs reading from it)
    restored: bool = False


def _is(function: object, cls: type) -> bool:
    return type(getattr(function, "__self__", None)) is cls


def _chain(node: Any) -> tuple[list[StatelessStep], Any, str | None]:
    """The stateless steps from ``node`` on, the first node that is not one, or why the chain is not a line."""
    steps: list[StatelessStep] = []
    while (step := stateless_step(node)) is not None:
        if len(node.children) != 1:
            return steps, node, f"{node.name} does not feed exactly one node"
        steps.append(step)
        node = node.children[0]
    return steps, node, None


@dataclass(frozen=True, slots=True)
class _Shape:
    source: SourceNode
    before: tuple[StatelessStep, ...]
    aggregate: ProcessorNode
    after: tuple[StatelessStep, ...]
    sink: SinkNode


def _shape(graph: ProcessorTopology, topic: str) -> _Shape | str:
    """The task's nodes, or why the sub-topology is not exactly source → chain → windowed aggregate → toStream →
    chain → sink."""
    nodes = graph.nodes
    source = nodes[0] if nodes else None
    if type(source) is not SourceNode or source.topics != (topic,) or len(source.children) != 1:
        return "the first node is not a plain source of the input topic with one child"
    before, aggregate, why = _chain(source.children[0])
    if why is not None:
        return why
    if any(step.rekey for step in before):
        return "a key-changing node comes before the aggregate"
    if type(aggregate) is not ProcessorNode or type(aggregate.processor) is not KStreamWindowAggregateProcessor:
        return f"{aggregate.name} is not the DSL's windowed aggregate"
    if len(aggregate.children) != 1:
        return f"{aggregate.name} does not feed only toStream"
    to_stream = aggregate.children[0]
    if type(to_stream) is not ProcessorNode or type(to_stream.processor) is not KTableToStream:
        return f"{to_stream.name} is not KTABLE-TOSTREAM"
    if len(to_stream.children) != 1:
        return f"{to_stream.name} does not feed only one node"
    after, sink, why = _chain(to_stream.children[0])
    if why is not None:
        return why
    if not after:
        return "toStream feeds the sink directly (a Windowed key to a Bytes sink)"
    expected = 4 + len(before) + len(after)
    if len(nodes) != expected:
        return f"{len(nodes)} processor nodes, not the {expected} of source → chain → windowed aggregate → chain → sink"
    if type(sink) is not SinkNode or sink.partitioner is not _default_partitioner:
        return f"{sink.name} is not a sink to a fixed topic with the default partitioner"
    if not _is(source.key_deserializer, ByteArrayDeserializer) or not _is(
        source.value_deserializer, ByteArrayDeserializer
    ):
        return "the source's serdes are not Bytes/ByteArray"
    if not _is(sink.key_serializer, ByteArraySerializer) or not (
        _is(sink.value_serializer, LongSerializer) or _is(sink.value_serializer, ByteArraySerializer)
    ):
        return "the sink's serdes are not Bytes/ByteArray and Long or Bytes/ByteArray"
    return _Shape(source, tuple(before), aggregate, tuple(after), sink)


def columnar_window_plan(
    *,
    task: str,
    graph: ProcessorTopology,
    config: TaskConfig,
    inputs: TaskInputs,
    object_store: ObjectStore,
    stores: dict[str, StateStore] | Any,
    has_global_stores: bool,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
) -> WindowPlan | str:
    """The task's :class:`WindowPlan` when it is plainly a DSL windowed aggregation, else why not (one line).

    ``inputs``: per input partition its staged range, its committed partition time and its upstream objects."""
    common = common_eligibility(task=task, config=config, inputs=inputs, has_global_stores=has_global_stores)
    if common is not None:
        return common
    staged, partition_time, appended = inputs[0]
    shape = _shape(graph, staged.topic)
    if isinstance(shape, str):
        return shape
    processor = shape.aggregate.processor
    assert isinstance(processor, KStreamWindowAggregateProcessor)
    windows = processor.windows
    if type(windows) is not TimeWindows:
        return f"{shape.aggregate.name}'s windows are not TimeWindows"
    partitions = collector.partition_counts.get(shape.sink.topic)
    if partitions is None or partitions <= 0:
        return f"the partition count of sink topic {shape.sink.topic} is not known"
    found = stores.get(processor.store_name)
    if type(found) is not TimestampedWindowStore or set(stores) != {processor.store_name}:
        return f"the task's stores are not exactly the aggregate's timestamped window store {processor.store_name}"
    store: TimestampedWindowStore[bytes, Any] = found
    if store.retain_duplicates or store.window_size_ms != windows.size_ms:
        return f"store {store.name} keeps duplicates or its window size is not the windows' size"
    if not _is(store.key_serde.serializer.serialize, ByteArraySerializer) or not (
        _is(store.value_serde.serializer.serialize, LongSerializer)
        and _is(store.value_serde.deserializer.deserialize, LongDeserializer)
    ):
        return f"store {store.name}'s serdes are not Bytes/ByteArray and Long"
    segments = store.segments
    if segments.retention_ms < windows.size_ms + windows.grace_ms:
        return f"store {store.name}'s retention is shorter than window size + grace"
    context = store.context
    changelog = None if context is None else context.changelog_partition
    if changelog is not None and (context is None or context.sink is not changelog_collector):
        return f"store {store.name} logs somewhere other than the task's changelog files"
    unclean = input_eligibility(task=task, config=config, source=shape.source, inputs=inputs, object_store=object_store)
    if unclean is not None:
        return unclean
    restored = bool(segments.segment_ids())
    earliest = input_earliest_timestamp(object_store, staged, appended, task)
    if restored and earliest is not None and segments.observed_stream_time > earliest:
        return (
            f"store {store.name}'s stream time {segments.observed_stream_time} is after the input's earliest "
            f"timestamp {earliest} (a put could fall in an expired segment)"
        )
    return WindowPlan(
        staged,
        appended,
        partition_time,
        store,
        changelog,
        processor,
        shape.aggregate.name,
        windows,
        shape.sink.topic,
        shape.sink.name,
        partitions,
        _is(shape.sink.value_serializer, LongSerializer),
        shape.before,
        shape.after,
        restored,
    )


@dataclass(slots=True)
class _Updates:
    """One chunk's window updates in Kafka Streams' order: the record (an index into the fold's input), the window
    start, the new aggregate and its timestamp; and the aggregator's failure, if any (no update from it on;
    ``Failure.position`` is then the failing record's index into the fold's input)."""

    records: list[int]
    starts: list[int]
    values: list[Any]
    timestamps: list[int]
    failure: Failure | None = None


class _Fold:
    """The windows' state across chunks, the processor's observed stream time, the drops and the puts' starts."""

    def __init__(self, plan: WindowPlan) -> None:
        self.plan = plan
        #: (key, window start) → (aggregate, timestamp), or ``None`` (the store holds nothing for the window)
        self.windows: dict[tuple[bytes, int], tuple[Any, int] | None] = {}
        self.observed_stream_time = -1  # ``ConsumerRecord.NO_TIMESTAMP``: the processor's, fresh each task
        #: every put's window start, in order, a chunk at a time (the store is written from them at the end)
        self.put_starts: list[np.ndarray] = []
        self.drops: list[DroppedRecord] = []

    def fold(
        self, keys: list[bytes], values: list[Any], stamps: list[int], offsets: list[int], steps: list[int]
    ) -> _Updates:
        """``KStreamWindowAggregateProcessor.process`` for each record (``offsets``/``steps``: its offset and its
        task step, for a drop), its puts and forwards collected as updates."""
        plan = self.plan
        size, advance, grace = plan.windows.size_ms, plan.windows.advance_ms, plan.windows.grace_ms
        tumbling = advance == size
        initializer, aggregator = plan.processor.initializer, plan.processor.aggregator
        fetch = plan.store.fetch_at if plan.restored else None
        windows = self.windows
        observed = self.observed_stream_time
        out = _Updates([], [], [], [])
        records, starts, news, new_stamps = out.records, out.starts, out.values, out.timestamps
        i = 0
        try:
            for i, (key, value, timestamp) in enumerate(zip(keys, values, stamps, strict=True)):
                if timestamp > observed:
                    observed = timestamp
                close_time = observed - grace
                if tumbling:
                    first = timestamp - timestamp % size
                else:
                    first = (max(0, timestamp - size + advance) // advance) * advance
                for start in range(first, timestamp + 1, advance):
                    if start + size <= close_time:
                        self._expired(offsets[i], steps[i], timestamp, start, close_time, observed)
                        continue
                    window = (key, start)
                    if window in windows:
                        current = windows[window]
                    else:
                        current = None
                        if fetch is not None and (stored := fetch(key, start)) is not None:
                            current = (stored.value, stored.timestamp)
                    if current is None:
                        old = initializer()
                        new_timestamp = timestamp
                    else:
                        old, stored_timestamp = current
                        new_timestamp = timestamp if timestamp > stored_timestamp else stored_timestamp
                    new = aggregator(key, value, old)
                    if type(new) is not int or not _LONG_MIN <= new <= _LONG_MAX:
                        new = self._stored(new)
                    windows[window] = None if new is None else (new, new_timestamp)
                    records.append(i)
                    starts.append(start)
                    news.append(new)
                    new_stamps.append(new_timestamp)
        except Exception as exc:
            out.failure = Failure(i, plan.aggregate_node, exc)
        self.observed_stream_time = observed
        self.put_starts.append(np.asarray(starts, dtype=np.int64))
        return out

    def _stored(self, value: Any) -> Any:
        """A new aggregate as the store round-trips it (``LongSerializer`` then ``LongDeserializer``): ``None`` as
        it is (a tombstone), an ``int`` subclass as an ``int``; what the serializer rejects raises its error (the
        aggregate node's failure, as per record, where the store's ``put`` serializes)."""
        if value is None:
            return None
        name = self.plan.store.name
        return LongDeserializer().deserialize(name, LongSerializer().serialize(name, value))

    def _expired(self, offset: int, step: int, timestamp: int, start: int, close: int, observed: int) -> None:
        """``record_dropped`` of ``KStreamWindowAggregateProcessor``: Kafka's warning and an ``expired_window`` drop."""
        topic, partition = self.plan.input.topic, self.plan.input.partition
        record_dropped_log.warning(
            "%s topic=[%s] partition=[%s] offset=[%s]",
            f"Skipping record for expired window. timestamp=[{timestamp}] window=[{start},"
            f"{start + self.plan.windows.size_ms}) expiration=[{close}] streamTime=[{observed}]",
            topic,
            partition,
            offset,
        )
        self.drops.append(DroppedRecord(topic, partition, offset, REASON_EXPIRED_WINDOW, step))


def run_columnar_window(
    plan: WindowPlan,
    object_store: ObjectStore,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    *,
    task: str,
    appended_counts: dict[str, int],
) -> ReplayResult:
    """Run the planned task over its input (see the module docstring) and return the task's result;
    ``appended_counts`` gets the upstream records read, as the per-record path counts them."""
    topic, partition = plan.input.topic, plan.input.partition
    fold = _Fold(plan)
    sink_keys = TaskKeys({}, plan.sink_partitions)
    processed = 0
    last_offset = -1
    max_timestamp = UNKNOWN
    for batch in _input_batches(object_store, plan, task, appended_counts):
        n = batch.num_rows
        offsets = batch.column("offset")
        keys = batch.column("key").to_pylist()
        values = batch.column("value").to_pylist()
        chain_failure: Failure | None = None
        if plan.before:
            chain = run_chain(plan.before, keys, values)
            positions, keys, values, chain_failure = chain.positions, chain.keys, chain.values, chain.failure
        else:
            positions = list(range(n))
        stamps_all = batch.column("timestamp").to_numpy()
        where = np.asarray(positions, dtype=np.int64)  # fold index → position in the chunk
        offsets_list = offsets.to_numpy()[where].tolist()
        updates = fold.fold(keys, values, stamps_all[where].tolist(), offsets_list, (where + processed).tolist())
        rows = where[np.asarray(updates.records, dtype=np.int64)]  # update → position in the chunk
        sent, failure = _after(plan, batch, rows, updates)
        if failure is None and updates.failure is not None:
            failure = Failure(int(where[updates.failure.position]), updates.failure.node, updates.failure.error)
        if failure is None:
            failure = chain_failure
        if failure is not None:
            offset = offsets[failure.position].as_py()
            raise processing_failure(task, failure.node, topic, partition, offset, failure.error)
        _log_changes(plan, changelog_collector, batch, rows, updates)
        if sent is not None:
            _send_updates(plan, collector, batch, sink_keys, *sent)
        processed += n
        last_offset = int(offsets[-1].as_py())
        max_timestamp = max(max_timestamp, int(stamps_all.max()))
    _write_store(plan, fold)
    partition_time = max(plan.partition_time, max_timestamp)
    counts: dict[str, int] = {}
    for drop in fold.drops:
        counts[drop.reason] = counts.get(drop.reason, 0) + 1
    tp = TopicPartition(topic, partition)
    return ReplayResult(
        records_processed=processed,
        steps=processed,
        stream_time=partition_time,
        skip_steps=(),
        dropped_counts=counts,
        dropped=tuple(fold.drops),
        committable_offsets={} if processed == 0 else {tp: CommittableOffset(last_offset + 1, partition_time)},
        punctuations=0,
    )


def _input_batches(
    object_store: ObjectStore, plan: WindowPlan, task: str, counts: dict[str, int]
) -> Iterator[pa.RecordBatch]:
    """The input's records, staged then upstream, ``CHUNK_ROWS`` at a time, in the per-record path's order and
    offsets (``task_input.task_batches``)."""
    return task_batches(
        object_store,
        plan.input,
        plan.appended,
        task=task,
        batch_size=columnar_count.CHUNK_ROWS,
        counts=counts,
    )


#: the sent updates: rows in the chunk, serialized keys and values, timestamps
_Sent = tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]


def _after(
    plan: WindowPlan, batch: pa.RecordBatch, rows: np.ndarray, updates: _Updates
) -> tuple[_Sent | None, Failure | None]:
    """The updates through ``toStream``, the chain after it and the sink's serializers: the sent updates (their
    rows in the chunk, serialized keys and values, timestamps), or the first failure among them (``position``: its
    row in the chunk). A serializer's failure is the chain's last node's, as per record."""
    if not len(rows):
        return None, None
    size = plan.windows.size_ms
    windows = {start: TimeWindow(start, start + size) for start in set(updates.starts)}  # immutable: shared
    keys: list[Any] = [
        Windowed(key, windows[start])
        for key, start in zip(batch.column("key").take(pa.array(rows)).to_pylist(), updates.starts, strict=True)
    ]
    chain = run_chain(plan.after, keys, updates.values)
    picked = chain.positions
    serialized_keys, key_failure = _serialized(plan, ByteArraySerializer(), chain.keys, picked)
    value_serializer = LongSerializer() if plan.sink_long_values else ByteArraySerializer()
    serialized_values, value_failure = _serialized(plan, value_serializer, chain.values, picked)
    failures = [f for f in (chain.failure, key_failure, value_failure) if f is not None]
    if failures:
        first = min(failures, key=lambda f: (f.position, f is not chain.failure))
        node = first.node if first is chain.failure else plan.after[-1].name
        return None, Failure(int(rows[first.position]), node, first.error)
    update_index = np.asarray(picked, dtype=np.int64)
    stamps = np.asarray(updates.timestamps, dtype=np.int64)[update_index]
    return (rows[update_index], serialized_keys, serialized_values, stamps), None


def _serialized(
    plan: WindowPlan, serializer: LongSerializer | ByteArraySerializer, items: list[Any], picked: list[int]
) -> tuple[pa.Array, Failure | None]:
    """``items`` as the sink's serializer writes them, as a binary column; or the first item it rejects
    (``Failure.position``: that item's update index, from ``picked``)."""
    if type(serializer) is LongSerializer and all(type(x) is int for x in items):
        try:
            return longs(np.array(items, dtype=np.int64)), None
        except OverflowError:
            pass
    elif type(serializer) is ByteArraySerializer and all(type(x) is bytes for x in items):
        return pa.array(items, pa.binary()), None
    out: list[bytes | None] = []
    for item, update in zip(items, picked, strict=True):
        try:
            out.append(serializer.serialize(plan.sink_topic, item))
        except Exception as exc:
            return pa.array(out, pa.binary()), Failure(update, "", exc)
    return pa.array(out, pa.binary()), None


def _send_updates(
    plan: WindowPlan,
    collector: TaskOutputCollector,
    batch: pa.RecordBatch,
    sink_keys: TaskKeys,
    rows: np.ndarray,
    keys: pa.Array,
    values: pa.Array,
    stamps: np.ndarray,
) -> None:
    """The sent updates into the sink's partition files: key, value, the aggregate's timestamp, the record's
    headers, the default partitioner's partition."""
    n = len(rows)
    if not n:
        return
    headers = pa.RecordBatch.from_arrays([batch.column("headers").take(pa.array(rows))], names=["headers"])
    sequence = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
    send(plan, collector, headers, sink_keys.partitions_of(keys), sequence, pa.array(stamps, pa.int64()), keys, values)


def _log_changes(
    plan: WindowPlan, changelog_collector: TaskChangelogCollector, batch: pa.RecordBatch, rows: np.ndarray,
    updates: _Updates,
) -> None:  # fmt: skip
    """Every update's changelog record (``ChangeLoggingTimestampedWindowBytesStore``): the window store key (key,
    window start, seqnum 0), the serialized aggregate (no timestamp prefix) stamped with its timestamp, or a
    tombstone stamped with the record's timestamp; no headers."""
    n = len(rows)
    if plan.changelog is None or not n:
        return
    suffix = np.zeros(n, dtype=_START_AND_SEQNUM)
    suffix["start"] = updates.starts
    suffixes = pa.Array.from_buffers(pa.binary(12), n, [None, pa.py_buffer(suffix.tobytes())]).cast(pa.binary())
    keys = pc.binary_join_element_wise(batch.column("key").take(pa.array(rows)), suffixes, pa.scalar(b"", pa.binary()))
    stamps = np.asarray(updates.timestamps, dtype=np.int64)
    if all(v is not None for v in updates.values):
        values = longs(np.asarray(updates.values, dtype=np.int64))
    else:
        tombstones = np.asarray([v is None for v in updates.values])
        stamps = np.where(tombstones, batch.column("timestamp").to_numpy()[rows], stamps)
        serialize = LongSerializer().serialize
        values = pa.array([serialize(plan.store.name, v) for v in updates.values], pa.binary())
    logged = pa.array(np.arange(changelog_collector.sent, changelog_collector.sent + n, dtype=np.int64))
    table = pa.Table.from_arrays(
        [
            logged,
            same_strings(plan.store.name, n),
            same_strings(plan.changelog.topic, n),
            pa.array(np.full(n, plan.changelog.partition, dtype=np.int32)),
            pa.array(stamps, pa.int64()),
            keys,
            values,
            no_headers(n),
        ],
        schema=CHANGELOG_SCHEMA,
    )
    changelog_collector.files.append_table((plan.changelog.topic, plan.changelog.partition), table)
    changelog_collector.sent += n


def _write_store(plan: WindowPlan, fold: _Fold) -> None:
    """Each window this task updated, its last aggregate (``ts ‖ Long``) or a tombstone, written once; the segments
    created and destroyed as the puts one by one would have (``SegmentedBytesStore.write_final``)."""
    if not fold.windows:
        return
    pack = struct.Struct(">qq").pack
    entries = [
        (key + struct.pack(">qi", start, 0), None if state is None else pack(state[1], state[0]), start)
        for (key, start), state in fold.windows.items()
    ]
    plan.store.segments.write_final(np.concatenate(fold.put_starts), entries)
    if plan.store.context is not None:
        plan.store.context.written = True
