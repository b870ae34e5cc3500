"""The DSL's windowed ``aggregate``/``reduce``/``count`` (``TimeWindows``) of one task run a chunk of records at a time.

A task whose sub-topology is ``source → [filter | filterNot | mapValues]* → KSTREAM-AGGREGATE (windowed) →
KTABLE-TOSTREAM → [stateless chain]* → sink`` over one input partition updates, for every input record in offset
order, each window the record falls in that is still open (``KStreamWindowAggregate.process``): the window's
aggregate becomes ``aggregator(key, value, old)`` (``old`` the initializer's value for a window the store does not
hold), its timestamp ``max(stored timestamp, record timestamp)``, and a window whose end is at or before
``observed stream time - grace`` is skipped as expired (a ``expired_window`` drop, Kafka's warning). Each update is
logged to the store's changelog and sent on through ``toStream`` and the chain to the sink.

Per record, each update is a ``fetch`` from the window store, an aggregator call, a ``put`` (serialized, logged) and a
``Record``/``Change``/``Windowed`` forwarded through three nodes. Here the fold (``_LoopFold``) is one Python loop
over the chunk (the aggregator called once per update, in Kafka Streams' order, with the same arguments), the
windows' state in a dict, the store read once per window this task touches and written once per window at the end,
and the changelog and sink rows built as Arrow columns (``output.py``'s writers), so the files are byte for
byte the per-record path's. The chain after ``toStream`` (``select_key(lambda windowed, agg: windowed.key)``, say)
runs as ``chain.run_chain`` over the updates.

The DSL's windowed ``count()`` (aggregator ``counting_aggregator``, initializer ``count_initializer``:
:func:`counts_windows`) needs no call per update, so ``_CountFold`` computes the loop's updates for a whole chunk in
numpy: every (record, window start) in the loop's order (by record, then ascending start), the observed stream time
as the running maximum of the timestamps from the one carried over, the expired windows dropped (their warnings and
drops in order), the others grouped by window store key (ids in first-touch order, carried across chunks; the
restored store read once per window, when there is one), each update's count and timestamp the grouped running count
and maximum (``groups.py``, shared with ``count.py``) on top of the window's previous count and
timestamp. A store read that raises or a count past ``Long``'s range ends the chunk's updates where the loop's would
end. The task then logs ``folds the windowed count() over columns`` (DEBUG).

The store is written at the end, not put by put; that equals the per-record store only if no put of this run falls
in an expired segment. That holds when the store's retention is at least window size + grace (Kafka's DSL requires it)
and the restored store's stream time (its latest window start) is not after the input's earliest timestamp: every
window the processor accepts then starts after ``stream time - retention``. :func:`columnar_window_plan` checks both
(else the task runs per record); :meth:`~streamproc.state.stores.SegmentedBytesStore.write_final` then creates and
destroys the same segments the puts would have, in the same order.

A failure (the aggregator or a chain function raising, a value the store's or the sink's serializer rejects) ends
the task with the per-record path's error for the first failing update in Kafka Streams' order. Eligibility beyond
the shape is ``count``'s: see :func:`streamproc.spark.columnar.count.common_ineligibility`.
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

from streamproc.dsl.internals.kstream_aggregate import count_initializer, counting_aggregator
from streamproc.dsl.internals.kstream_window_aggregate import KStreamWindowAggregateProcessor
from streamproc.dsl.internals.processor_support import LOG as record_dropped_log
from streamproc.dsl.internals.windows import TimeWindows
from streamproc.engine.dropped_records import REASON_EXPIRED_WINDOW, DroppedRecord
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import ReplayResult
from streamproc.engine.serdes import ByteArraySerializer, LongDeserializer, LongSerializer, StringSerializer
from streamproc.engine.stream_task import CommittableOffset, TaskConfig
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.columnar.cache import LastWrites
from streamproc.spark.columnar.chain import Failure, StatelessStep, processing_failure, run_chain
from streamproc.spark.columnar.count import (
    TaskInputs,
    common_eligibility,
    input_eligibility,
    input_timestamp_range,
)
from streamproc.spark.columnar.groups import grouped_running_count, grouped_running_max, ids_with_new, last_positions
from streamproc.spark.columnar.output import LONG_MAX as _LONG_MAX
from streamproc.spark.columnar.output import LONG_MIN as _LONG_MIN
from streamproc.spark.columnar.output import TaskKeys, longs, send, send_changes, stored_long
from streamproc.spark.columnar.shape import (
    BYTES,
    PlainSerde,
    after_to_stream,
    plain_sink,
    plain_source,
    sink_serde,
    stateless_chain,
)
from streamproc.spark.columnar.shape import serde_is as _is
from streamproc.spark.task_input import StagedRange, task_batches
from streamproc.spark.task_output import TaskChangelogCollector, TaskOutputCollector
from streamproc.state.record_cache import RECORD_CACHE_OFF
from streamproc.state.stores import StateStore, TimestampedWindowStore, TimeWindow, Windowed
from streamproc.storage.object_store import ObjectStore

logger = logging.getLogger(__name__)

#: ``WindowKeySchema``'s suffix of a window store key: the window start (8 bytes), then seqnum 0 (4 bytes).
_START_AND_SEQNUM = np.dtype([("start", ">i8"), ("seqnum", ">i4")])
_BIG_ENDIAN_LONG = np.dtype(">i8")


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
    #: the store is cached and the run emulates the record cache at one flush (``columnar/cache.py``)
    flushes_cache: bool = False
    #: how the source's keys and values are read (``shape.PlainSerde``: ByteArray or String)
    key_serde: PlainSerde = BYTES
    value_serde: PlainSerde = BYTES
    #: what the sink's key serializer writes (the chain after ``toStream`` maps the keys)
    sink_key_serde: PlainSerde = BYTES

    def describe(self) -> str:
        """What runs over columns, for the task's log line."""
        cache = ", its record cache flushed once at the end" if self.flushes_cache else ""
        return f"windowed aggregate{cache} (spark/columnar/window.py)"


@dataclass(frozen=True, slots=True)
class _Shape:
    source: SourceNode
    before: tuple[StatelessStep, ...]
    aggregate: ProcessorNode
    after: tuple[StatelessStep, ...]
    sink: SinkNode
    key: PlainSerde
    value: PlainSerde
    sink_key: PlainSerde


def _shape(graph: ProcessorTopology, topic: str) -> _Shape | str:
    """The task's nodes, or why the sub-topology is not exactly source → chain → windowed aggregate → toStream →
    chain → sink."""
    nodes = graph.nodes
    plain = plain_source(graph, topic)
    if isinstance(plain, str):
        return plain
    source = plain.node
    chain = stateless_chain(source.children[0])
    if isinstance(chain, str):
        return chain
    before, aggregate = chain
    if any(step.rekey for step in before):
        return "a key-changing node comes before the aggregate"
    if type(aggregate) is not ProcessorNode or type(aggregate.processor) is not KStreamWindowAggregateProcessor:
        return f"{aggregate.name} is not the DSL's windowed aggregate"
    next_node = after_to_stream(aggregate)
    if isinstance(next_node, str):
        return next_node
    chain = stateless_chain(next_node)
    if isinstance(chain, str):
        return chain
    after, last = chain
    if not after:
        return "toStream feeds the sink directly (a Windowed key to a Bytes sink)"
    expected = 4 + len(before) + len(after)
    if len(nodes) != expected:
        return f"{len(nodes)} processor nodes, not the {expected} of source → chain → windowed aggregate → chain → sink"
    sink = plain_sink(last)
    if isinstance(sink, str):
        return sink
    sink_key = sink_serde(sink.key_serializer)
    if sink_key is None or not (
        _is(sink.value_serializer, LongSerializer) or _is(sink.value_serializer, ByteArraySerializer)
    ):
        return "the sink's serdes are not Bytes/ByteArray or String and Long or Bytes/ByteArray"
    return _Shape(source, tuple(before), aggregate, tuple(after), sink, plain.key, plain.value, sink_key)


def window_shape_refusal(graph: ProcessorTopology, topic: str) -> str | None:
    """Why the columnar windowed aggregate cannot take the sub-topology read from ``topic`` whatever the task's data
    and config, or ``None`` when it may (the driver's ``--split auto`` leaves such tasks whole, as for the count)."""
    shape = _shape(graph, topic)
    return shape if isinstance(shape, str) else None


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
    cached_stores: frozenset[str] = frozenset(),
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
    if not shape.key.writes(store.key_serde.serializer.serialize) or not (
        _is(store.value_serde.serializer.serialize, LongSerializer)
        and _is(store.value_serde.deserializer.deserialize, LongDeserializer)
    ):
        return f"store {store.name}'s serdes are not the source's key serde ({shape.key.name}) and Long"
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
    bounds = input_timestamp_range(object_store, staged, appended, task)
    earliest = None if bounds is None else bounds[0]
    if restored and earliest is not None and segments.observed_stream_time > earliest:
        return (
            f"store {store.name}'s stream time {segments.observed_stream_time} is after the input's earliest "
            f"timestamp {earliest} (a put could fall in an expired segment)"
        )
    flushes_cache = store.name in cached_stores and config.record_cache != RECORD_CACHE_OFF
    if flushes_cache:
        # the flush puts each window in the order of last writes, after the newest: every window must still be live
        # then (its segment not before the newest window's minus the retention), which the input's span bounds
        if not counts_windows(processor):
            return "a windowed aggregate other than count() under the record cache runs per record"
        span = 0 if bounds is None else bounds[1] - bounds[0]
        if span + windows.size_ms + segments.segment_interval_ms >= segments.retention_ms:
            return (
                f"under the record cache, the input's span ({span} ms) could put a flushed window of store "
                f"{store.name} in an expired segment"
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
        flushes_cache,
        shape.key,
        shape.value,
        shape.sink_key,
    )


@dataclass(slots=True)
class _Updates:
    """One chunk's window updates in Kafka Streams' order: the record (an index into the fold's input), the window
    start, the new aggregate and its timestamp; and the aggregator's failure, if any (no update from it on;
    ``Failure.position`` is then the failing record's index into the fold's input). ``store_keys``: the updates'
    window store keys when the fold built them already (else the changelog builds them)."""

    records: np.ndarray
    starts: np.ndarray
    values: list[Any] | np.ndarray
    timestamps: np.ndarray
    failure: Failure | None = None
    store_keys: pa.Array | None = None
    #: the updates' window ids (the count fold's, first-touch order): the record cache keeps each window's last
    ids: np.ndarray | None = None


#: a window store entry to write at the end: store key, ``ts ‖ Long`` or ``None`` (a tombstone), window start
_Entry = tuple[bytes, bytes | None, int]


class _Fold:
    """What every fold of a task carries across chunks: the processor's observed stream time, the drops and the
    puts' starts (the store is written from them at the end)."""

    def __init__(self, plan: WindowPlan) -> None:
        self.plan = plan
        self.observed_stream_time = -1  # ``ConsumerRecord.NO_TIMESTAMP``: the processor's, fresh each task
        #: every put's window start, in order, a chunk at a time (the store is written from them at the end)
        self.put_starts: list[np.ndarray] = []
        self.drops: list[DroppedRecord] = []

    def entries(self) -> list[_Entry]:
        """Each window this task updated, in the order the task first updated it, with its last aggregate."""
        raise NotImplementedError

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

    def _stored(self, value: Any) -> Any:
        """A new aggregate as the store round-trips it (``output.stored_long``): what the serializer rejects
        raises its error (the aggregate node's failure, as per record, where the store's ``put`` serializes)."""
        return stored_long(self.plan.store.name, value)


class _LoopFold(_Fold):
    """Any aggregator: one Python loop over the chunk calling it once per update, the windows' state in a dict."""

    def __init__(self, plan: WindowPlan) -> None:
        super().__init__(plan)
        #: (key, window start) → (aggregate, timestamp), or ``None`` (the store holds nothing for the window)
        self.windows: dict[tuple[bytes, int], tuple[Any, int] | None] = {}

    def fold(
        self, keys: list[Any], values: list[Any], stamps: list[int], offsets: list[int], steps: list[int]
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
        records: list[int] = []
        starts: list[int] = []
        news: list[Any] = []
        new_stamps: list[int] = []
        failure: Failure | None = None
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
            failure = Failure(i, plan.aggregate_node, exc)
        self.observed_stream_time = observed
        put_starts = np.asarray(starts, dtype=np.int64)
        self.put_starts.append(put_starts)
        return _Updates(
            np.asarray(records, dtype=np.int64), put_starts, news, np.asarray(new_stamps, dtype=np.int64), failure
        )

    def entries(self) -> list[_Entry]:
        pack = struct.Struct(">qq").pack
        to_bytes = self.plan.key_serde.to_bytes  # the loop's keys are the deserializer's objects
        return [
            (to_bytes(key) + struct.pack(">qi", start, 0), None if state is None else pack(state[1], state[0]), start)
            for (key, start), state in self.windows.items()
        ]


class _CountFold(_Fold):
    """The DSL's windowed ``count()``: the loop's updates computed for a whole chunk in numpy.

    A count update needs no aggregator call: a window's count is its previous count (stored, else 0) + how many
    records of the task fell in it so far, its timestamp the running maximum of theirs and the stored one
    (``groups``). Windows are groups identified by their window store key (key ‖ start ‖ seqnum 0), ids in
    the order the task first touched them, which is also the loop's dict order (``_write_store``'s input)."""

    def __init__(self, plan: WindowPlan) -> None:
        super().__init__(plan)
        #: per window id: its window store key, start, count and timestamp (``LONG_MIN``: no stored timestamp)
        self.store_keys = pa.array([], pa.binary())
        self.starts = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        self.timestamps = np.zeros(0, dtype=np.int64)

    def fold(self, keys: pa.Array, stamps: np.ndarray, offsets: np.ndarray, steps: np.ndarray) -> _Updates:
        """What :meth:`_LoopFold.fold` gives with ``counting_aggregator`` for the records ``keys``/``stamps``
        (``offsets``/``steps``: each record's offset and task step, for a drop)."""
        if not len(stamps):
            return _Updates(*(np.zeros(0, dtype=np.int64),) * 4)
        grace = self.plan.windows.grace_ms
        observed = np.maximum.accumulate(np.maximum(stamps, self.observed_stream_time))
        records, starts = self._record_windows(stamps)
        expired = starts + self.plan.windows.size_ms <= observed[records] - grace
        live = np.flatnonzero(~expired)
        updated, update_starts = records[live], starts[live]
        store_keys = window_store_keys(keys.take(pa.array(updated)), update_starts)
        ids, first_new = self._window_ids(store_keys, update_starts)
        fetched = self._fetch_new(first_new) if self.plan.restored else None
        olds = self.counts[ids]
        running = grouped_running_count(ids)
        counts = olds + running  # wraps where it overflows: that update fails (below), none after it is kept
        stamps_of_updates = np.maximum(grouped_running_max(ids, stamps[updated]), self.timestamps[ids])
        failure, kept = self._first_failure(fetched, ids, olds, running, updated)
        end = len(expired) if kept == len(live) else int(live[kept])  # the loop's position of the failing update
        for e in np.flatnonzero(expired[:end]).tolist():
            r = int(records[e])
            observed_then = int(observed[r])
            self._expired(
                int(offsets[r]), int(steps[r]), int(stamps[r]), int(starts[e]), observed_then - grace, observed_then
            )
        self.observed_stream_time = int(observed[-1])
        self.put_starts.append(update_starts[:kept])
        if failure is None:
            distinct, last = last_positions(ids)  # each window's state after its last update of the chunk
            self.counts[distinct] = counts[last]
            self.timestamps[distinct] = stamps_of_updates[last]
        return _Updates(
            updated[:kept],
            update_starts[:kept],
            counts[:kept],
            stamps_of_updates[:kept],
            failure,
            store_keys[:kept],
            ids[:kept],
        )

    def _record_windows(self, stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every (record, window start) of the chunk in the loop's order: by record, then ascending start
        (``TimeWindows.windows_for``: tumbling one window, hopping ``first..timestamp`` step ``advance``)."""
        size, advance = self.plan.windows.size_ms, self.plan.windows.advance_ms
        if advance == size:
            return np.arange(len(stamps), dtype=np.int64), stamps - stamps % size
        first = (np.maximum(0, stamps - size + advance) // advance) * advance
        per_record = (stamps - first) // advance + 1
        records = np.repeat(np.arange(len(stamps), dtype=np.int64), per_record)
        begins = np.cumsum(per_record) - per_record
        return records, first[records] + (np.arange(len(records), dtype=np.int64) - begins[records]) * advance

    def _window_ids(self, store_keys: pa.Array, starts: np.ndarray) -> tuple[np.ndarray, int]:
        """The updates' window ids and the first id new in this chunk; a new window starts with count 0 and no
        timestamp (the restored store's are read by :meth:`_fetch_new`)."""
        known = len(self.store_keys)
        ids, self.store_keys = ids_with_new(store_keys, self.store_keys)
        new = len(self.store_keys) - known
        if new:
            self.counts = np.concatenate([self.counts, np.zeros(new, dtype=np.int64)])
            self.timestamps = np.concatenate([self.timestamps, np.full(new, _LONG_MIN, dtype=np.int64)])
            self.starts = np.concatenate([self.starts, np.zeros(new, dtype=np.int64)])
            self.starts[ids] = starts
        return ids, known

    def _fetch_new(self, first_new: int) -> tuple[int, Exception] | None:
        """The restored store's count and timestamp of each window from ``first_new`` on, read once, in first-touch
        order as the loop reads them; a read that raises (a stored value not a ``Long``) ends the reads: returns
        that window's id and the error."""
        fetch, of_bytes = self.plan.store.fetch_at, self.plan.key_serde.of_bytes  # the store reads the key object
        store_keys = self.store_keys.slice(first_new).to_pylist()
        starts = self.starts[first_new:].tolist()
        for window, (store_key, start) in enumerate(zip(store_keys, starts, strict=True), start=first_new):
            try:
                stored = fetch(of_bytes(store_key[: -_START_AND_SEQNUM.itemsize]), start)
            except Exception as exc:
                return window, exc
            if stored is not None:
                self.counts[window] = stored.value
                self.timestamps[window] = stored.timestamp
        return None

    def _first_failure(
        self,
        fetched: tuple[int, Exception] | None,
        ids: np.ndarray,
        olds: np.ndarray,
        running: np.ndarray,
        updated: np.ndarray,
    ) -> tuple[Failure | None, int]:
        """The first update that fails in the loop's order (a store read raising, or a count past ``Long``'s range,
        which the store's serializer rejects) and how many updates come before it (all of them: no failure)."""
        failing: list[tuple[int, Exception | None]] = []
        if fetched is not None:
            failing.append((int(np.argmax(ids == fetched[0])), fetched[1]))
        overflow = olds > _LONG_MAX - running
        if overflow.any():
            failing.append((int(np.argmax(overflow)), None))
        if not failing:
            return None, len(ids)
        at, error = min(failing, key=lambda f: f[0])
        if error is None:
            try:
                self._stored(int(olds[at]) + int(running[at]))
            except Exception as exc:
                error = exc
        assert error is not None
        return Failure(int(updated[at]), self.plan.aggregate_node, error), at

    def entries(self) -> list[_Entry]:
        stored = np.empty((len(self.counts), 2), dtype=_BIG_ENDIAN_LONG)
        stored[:, 0], stored[:, 1] = self.timestamps, self.counts
        raw = stored.tobytes()
        return [
            (store_key, raw[16 * i : 16 * i + 16], start)
            for i, (store_key, start) in enumerate(zip(self.store_keys.to_pylist(), self.starts.tolist(), strict=True))
        ]


def counts_windows(processor: KStreamWindowAggregateProcessor) -> bool:
    """The processor is the DSL's windowed ``count()`` (``TimeWindowedKStream._supplier``'s initializer and adder)."""
    return processor.aggregator is counting_aggregator and processor.initializer is count_initializer


def window_store_keys(keys: pa.Array, starts: np.ndarray) -> pa.Array:
    """``WindowKeySchema``'s store keys: each key, then its window start (8 bytes) and seqnum 0 (4 bytes)."""
    n = len(starts)
    suffix = np.zeros(n, dtype=_START_AND_SEQNUM)
    suffix["start"] = starts
    suffixes = pa.Array.from_buffers(pa.binary(12), n, [None, pa.py_buffer(suffix.tobytes())]).cast(pa.binary())
    joined: pa.Array = pc.binary_join_element_wise(keys, suffixes, pa.scalar(b"", pa.binary()))
    return joined


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
    fold: _LoopFold | _CountFold = _CountFold(plan) if counts_windows(plan.processor) else _LoopFold(plan)
    if isinstance(fold, _CountFold):
        logger.debug("task [%s] folds the windowed count() over columns, no aggregator call per update", task)
    sink_keys = TaskKeys(plan.sink_partitions)
    # each window's last update kept until the one flush of the record cache (columnar/cache.py)
    last_writes = LastWrites() if plan.flushes_cache else None
    processed = 0
    last_offset = -1
    max_timestamp = UNKNOWN
    for batch in _input_batches(object_store, plan, task, appended_counts):
        n = batch.num_rows
        offsets = batch.column("offset")
        updates, where, chain_failure = _fold_chunk(plan, fold, batch, processed)
        rows = where[updates.records]  # update → position in the chunk
        if last_writes is not None:  # the chain after toStream runs at the flush, on the flushed updates
            sent, failure = None, None
            if len(rows):
                _keep_last(last_writes, batch, rows, updates)
        else:
            sent, failure = _after(plan, batch, rows, updates)
        if failure is None and updates.failure is not None:
            failure = Failure(int(where[updates.failure.position]), updates.failure.node, updates.failure.error)
        if failure is None:
            failure = chain_failure
        if failure is not None:
            offset = offsets[failure.position].as_py()
            raise processing_failure(task, failure.node, topic, partition, offset, failure.error)
        if last_writes is None:
            _log_changes(plan, changelog_collector, batch, rows, updates)
        if sent is not None:
            _send_updates(plan, collector, batch, sink_keys, *sent)
        processed += n
        last_offset = int(offsets[-1].as_py())
        max_timestamp = max(max_timestamp, int(pc.max(batch.column("timestamp")).as_py()))
    if last_writes is not None:
        _flush(plan, last_writes, collector, changelog_collector, sink_keys, task)
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
    batches = task_batches(
        object_store,
        plan.input,
        plan.appended,
        task=task,
        batch_size=columnar_count.CHUNK_ROWS,
        counts=counts,
    )
    if plan.key_serde == BYTES and plan.value_serde == BYTES:
        return batches
    return (columnar_count.read_as(batch, plan.key_serde, plan.value_serde) for batch in batches)


def _fold_chunk(
    plan: WindowPlan, fold: _LoopFold | _CountFold, batch: pa.RecordBatch, processed: int
) -> tuple[_Updates, np.ndarray, Failure | None]:
    """The chunk through the chain before the aggregate, then the fold: the updates, each fold input's position in
    the chunk and the chain's failure. The count fold takes the key column as it is (its chain changes no key) and
    never needs the records' keys and values as Python objects unless a chain runs."""
    keys: list[Any] | None = None
    values: list[Any] | None = None
    chain_failure: Failure | None = None
    if plan.before:
        key_objects = plan.key_serde.objects(batch.column("key"))
        chain = run_chain(plan.before, key_objects, plan.value_serde.objects(batch.column("value")))
        where = np.asarray(chain.positions, dtype=np.int64)
        keys, values, chain_failure = chain.keys, chain.values, chain.failure
    else:
        where = np.arange(batch.num_rows, dtype=np.int64)
    stamps = batch.column("timestamp").to_numpy()[where]
    offsets = batch.column("offset").to_numpy()[where]
    steps = where + processed
    if isinstance(fold, _CountFold):
        key_column = batch.column("key").take(pa.array(where)) if plan.before else batch.column("key")
        return fold.fold(key_column, stamps, offsets, steps), where, chain_failure
    if keys is None or values is None:
        keys, values = plan.key_serde.objects(batch.column("key")), plan.value_serde.objects(batch.column("value"))
    return fold.fold(keys, values, stamps.tolist(), offsets.tolist(), steps.tolist()), where, chain_failure


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
    values = updates.values.tolist() if isinstance(updates.values, np.ndarray) else updates.values
    sent = _through_after(plan, batch.column("key").take(pa.array(rows)), updates.starts, values)
    if isinstance(sent, Failure):
        return None, Failure(int(rows[sent.position]), sent.node, sent.error)
    update_index, serialized_keys, serialized_values = sent
    return (rows[update_index], serialized_keys, serialized_values, updates.timestamps[update_index]), None


def _through_after(
    plan: WindowPlan, record_keys: pa.Array, starts: np.ndarray, values: list[Any]
) -> tuple[np.ndarray, pa.Array, pa.Array] | Failure:
    """Updates (their records' keys, window starts, aggregates) as ``Windowed`` records through the chain after
    ``toStream`` and the sink's serializers: the indexes of the updates sent with their serialized keys and values,
    or the first failure (``position``: the update's index)."""
    size = plan.windows.size_ms
    start_list = starts.tolist()
    windows = {start: TimeWindow(start, start + size) for start in set(start_list)}  # immutable: shared
    keys: list[Any] = [
        Windowed(key, windows[start])
        for key, start in zip(plan.key_serde.objects(record_keys), start_list, strict=True)
    ]
    chain = run_chain(plan.after, keys, values)
    picked = chain.positions
    key_serializer = StringSerializer() if plan.sink_key_serde.string else ByteArraySerializer()
    serialized_keys, key_failure = _serialized(plan, key_serializer, chain.keys, picked)
    value_serializer = LongSerializer() if plan.sink_long_values else ByteArraySerializer()
    serialized_values, value_failure = _serialized(plan, value_serializer, chain.values, picked)
    failures = [f for f in (chain.failure, key_failure, value_failure) if f is not None]
    if failures:
        first = min(failures, key=lambda f: (f.position, f is not chain.failure))
        node = first.node if first is chain.failure else plan.after[-1].name
        return Failure(first.position, node, first.error)
    return np.asarray(picked, dtype=np.int64), serialized_keys, serialized_values


def _serialized(
    plan: WindowPlan,
    serializer: LongSerializer | ByteArraySerializer | StringSerializer,
    items: list[Any],
    picked: list[int],
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
    elif type(serializer) is StringSerializer and all(type(x) is str for x in items):
        try:
            return pa.array(items, pa.string()).cast(pa.binary()), None
        except (pa.ArrowException, UnicodeEncodeError):
            pass  # an unpaired surrogate: the serializer writes it as ``?``
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
    keys = updates.store_keys
    if keys is None:
        keys = window_store_keys(batch.column("key").take(pa.array(rows)), updates.starts)
    stamps = updates.timestamps
    if isinstance(updates.values, np.ndarray):
        values = longs(updates.values)
    elif all(v is not None for v in updates.values):
        values = longs(np.asarray(updates.values, dtype=np.int64))
    else:
        tombstones = np.asarray([v is None for v in updates.values])
        stamps = np.where(tombstones, batch.column("timestamp").to_numpy()[rows], stamps)
        serialize = LongSerializer().serialize
        values = pa.array([serialize(plan.store.name, v) for v in updates.values], pa.binary())
    send_changes(changelog_collector, plan.store.name, plan.changelog, pa.array(stamps, pa.int64()), keys, values)


def _keep_last(last_writes: LastWrites, batch: pa.RecordBatch, rows: np.ndarray, updates: _Updates) -> None:
    """The chunk's window updates for the record cache: each window's last one replaces the one it had."""
    assert updates.ids is not None and updates.store_keys is not None  # the count fold's
    take = pa.array(rows)
    last_writes.add(
        updates.ids,
        pa.table(
            {
                "store_key": updates.store_keys,
                "key": batch.column("key").take(take),
                "start": pa.array(updates.starts, pa.int64()),
                "count": pa.array(updates.values, pa.int64()),
                "timestamp": pa.array(updates.timestamps, pa.int64()),
                "headers": batch.column("headers").take(take),
                "offset": batch.column("offset").take(take),
            }
        ),
    )


def _flush(
    plan: WindowPlan,
    last_writes: LastWrites,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    sink_keys: TaskKeys,
    task: str,
) -> None:
    """The record cache's flush at the task's commit (``CachingWindowStore.putAndMaybeForward``): each window's
    changelog record, then its update through ``toStream``, the chain and the sink, in the order of the windows'
    last writes. A chain function or serializer that fails there fails the task at the flushed update's record, as
    the flush's record context is that record's."""
    rows = last_writes.table()
    n = 0 if rows is None else rows.num_rows
    if rows is not None and n:
        counts = rows.column("count").to_numpy()
        stamps = rows.column("timestamp").to_numpy()
        if plan.changelog is not None:
            send_changes(
                changelog_collector,
                plan.store.name,
                plan.changelog,
                pa.array(stamps, pa.int64()),
                rows.column("store_key").combine_chunks(),
                longs(counts),
            )
        starts = rows.column("start").to_numpy()
        sent = _through_after(plan, rows.column("key").combine_chunks(), starts, counts.tolist())
        if isinstance(sent, Failure):
            offset = rows.column("offset")[sent.position].as_py()
            topic, partition = plan.input.topic, plan.input.partition
            raise processing_failure(task, sent.node, topic, partition, offset, sent.error)
        picked, keys, values = sent
        headers = pa.RecordBatch.from_arrays([rows.column("headers").combine_chunks().take(pa.array(picked))],
                                             names=["headers"])  # fmt: skip
        sequence = pa.array(np.arange(collector.sent, collector.sent + len(picked), dtype=np.int64))
        partitions = sink_keys.partitions_of(keys)
        send(plan, collector, headers, partitions, sequence, pa.array(stamps[picked], pa.int64()), keys, values)
    logger.info("task [%s] flushed the record cache: %s updates forwarded", task, n)


def _write_store(plan: WindowPlan, fold: _LoopFold | _CountFold) -> None:
    """Each window this task updated, its last aggregate (``ts ‖ Long``) or a tombstone, written once; the segments
    created and destroyed as the puts one by one would have (``SegmentedBytesStore.write_final``)."""
    entries = fold.entries()
    if not entries:
        return
    plan.store.segments.write_final(np.concatenate(fold.put_starts), entries)
    if plan.store.context is not None:
        plan.store.context.written = True
