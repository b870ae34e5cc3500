"""The DSL's ``groupByKey().count()``/``aggregate``/``reduce`` (and stateless chains) of one task run over columns,
not one record at a time.

A task whose sub-topology is exactly ``source → KSTREAM-AGGREGATE (count) → KTABLE-TOSTREAM → sink`` over one input
partition gives, for every input record in offset order, one count update: the key's previous count + 1 and the
timestamp ``max(stored timestamp, record timestamp)`` (``KStreamAggregateProcessor.process``; the record's own for
a key the store does not hold). Nothing in that depends on another key, so the updates of a run of records are a
grouped cumulative count and a grouped cumulative maximum (``groups.py``), applied in offset order: Kafka
Streams' order, since one partition's records are processed in offset order. :func:`run_columnar_count` computes
them a chunk of records at a time (state per key carried between chunks) and writes what the per-record path
writes: the sink's records (key bytes, the count as a ``Long``, the new timestamp, the input's headers, the default
partitioner's partition), the store's changelog records (the count, stamped with the new timestamp, no headers), one
store ``put`` per distinct key at the end, and the task's :class:`~streamproc.engine.replay.ReplayResult`.

The DSL's ``aggregate(initializer, aggregator)`` and ``reduce(reducer)`` with any user functions, a ``Long`` store
and a ``Long`` sink value, take the same shape, but each update needs the user's function, so :class:`_LoopFold`
calls it once per record in offset order with the per-record path's arguments (``KStreamAggregateProcessor`` /
``KStreamReduceProcessor``: the initializer for a key the store does not hold, a key's first value as reduce's
aggregate), in one Python loop over the chunk without a ``Record``/``Change`` per record. Each key's aggregate and
timestamp are kept in lists by key id across chunks, seeded by the same batched store lookup as the count, and the
store is written once per key at the end; the sink and changelog rows are built as Arrow columns. A new aggregate
goes through the store's ``Long`` round trip (``output.stored_long``, shared with ``window.py``):
what the serializer rejects (past ``Long``'s range, a ``bool``, ``bytes``) fails the task at the aggregate node as
the store's ``put`` does per record; ``None`` is a tombstone (the key deleted, a changelog tombstone stamped with the
record's timestamp, a null sink value stamped with the update's timestamp). The first record that fails (the user's
function raising, the serializer, a stored value that is not a ``Long``, a chain function) ends the task with the
per-record path's error, in offset order. ``count()`` keeps its numpy path (:func:`counts_keys`).

The source may feed a stateless chain of the DSL's ``filter``/``filterNot``/``mapValues``/``selectKey``/``map``
first (``chain.py``: the user's functions once per record, a loop per node over the chunk's keys and values
as Python lists), which then feeds either the count (a mapped null value is dropped as ``KStreamAggregateProcessor``
drops it: its warning and a ``null_key_or_value`` drop; no key-changing step, which the DSL follows with a
repartition) or directly a sink with Bytes serdes and the default partitioner (``to(topic)`` or a repartition
topic's sink: the chain's key, mapped value, the record's timestamp and headers; the partition from the serialized
key, a null key's unassigned as the per-record collector leaves it). A user function that raises, a mapper that
returns null or no pair, or a key or value the sink's serializer rejects, fails the task with the per-record path's
error.

The input is the partition's staged range, then the records upstream tasks of the run wrote to it (a later stage's
repartition partition), in ``task_runner.upstream_records``' order and offsets (``task_input.task_batches``).

:func:`columnar_count_plan` decides, before anything is read or written, whether the task is plainly eligible; any
doubt runs the whole task per record (the reason logged on one line): another topology shape or serde, handlers or
a dead letter queue configured, several inputs, a global store, a null key or value or a negative timestamp in the
staged or upstream input (from the Parquet statistics of the segments and upstream objects). The checks that do not
depend on the shape are :func:`common_eligibility` and :func:`input_eligibility`, shared with other columnar paths.

The restored store is not scanned: a restored store may hold tens of millions of keys while a run brings a few
thousand, so the count reads only the keys its input brings, when a chunk first brings them (one ``get_many`` of the
bytes store per chunk, RocksDB's ``multiGet``). A stored value that is not a timestamped ``Long`` (not 16 bytes)
therefore cannot be found up front; it ends the run as it ends the per-record run, which reads the key's value at the
key's first record (``KStreamAggregateProcessor`` → ``get_for_update``) and fails there: the same error (the read's
own, through the default ``LogAndFail`` handler, :func:`~streamproc.spark.columnar.chain.processing_failure`) at the
first record in offset order whose key holds such a value, or whose chain function raised first, and nothing
published. Such a value under a key the input does not bring is read by neither path.

Set ``STREAMPROC_PER_RECORD_COUNT`` to a true value to force the per-record path (tests and the bench's
before/after). ``tests/unit/spark/test_columnar_count.py``, ``test_columnar_aggregate.py``, ``test_columnar_chain.py``
and ``test_columnar_rekey.py`` check with hypothesis that both paths give the same output and changelog files (byte
for byte), store contents and report, ``test_columnar_count.py`` that stored values that are not counts end both the
same way, and ``test_columnar_aggregate.py`` that tombstones, rejected aggregates and raising functions do.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.dsl.internals.kstream_aggregate import (
    NULL_KEY_OR_VALUE_MESSAGE,
    KStreamAggregateProcessor,
    KStreamReduceProcessor,
    count_initializer,
)
from streamproc.dsl.internals.processor_support import LOG as record_dropped_log
from streamproc.engine.deserialization_handler import LogAndFailExceptionHandler
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE, DroppedRecord
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.processing_handler import LogAndFailProcessingExceptionHandler
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition
from streamproc.engine.replay import ReplayResult
from streamproc.engine.serdes import LongDeserializer, LongSerializer
from streamproc.engine.stream_task import CommittableOffset, TaskConfig
from streamproc.engine.timestamp_extractor import ExtractRecordMetadataTimestamp, FailOnInvalidTimestamp
from streamproc.spark.columnar.cache import LastWrites
from streamproc.spark.columnar.chain import Failure, StatelessStep, processing_failure, run_chain
from streamproc.spark.columnar.groups import grouped_running_count, grouped_running_max, last_positions
from streamproc.spark.columnar.output import LONG_MAX as _LONG_MAX
from streamproc.spark.columnar.output import LONG_MIN as _LONG_MIN
from streamproc.spark.columnar.output import (
    StoredCounts,
    TaskKeys,
    longs,
    send,
    send_changes,
    shard_positions,
    stored_long,
)
from streamproc.spark.columnar.shape import (
    BYTES,
    PlainSerde,
    after_to_stream,
    plain_sink,
    plain_source,
    serialized,
    sink_serde,
    stateless_chain,
)
from streamproc.spark.columnar.shape import serde_is as _is
from streamproc.spark.columnar.shard_rows import ShardRows
from streamproc.spark.task_input import StagedRange, open_segment, open_upstream, task_batches
from streamproc.spark.task_output import (
    OUTPUT_SCHEMA,
    TaskChangelogCollector,
    TaskOutputCollector,
)
from streamproc.state.record_cache import RECORD_CACHE_OFF
from streamproc.state.stores import StateStore, TimestampedKeyValueStore
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import schema_fingerprint

logger = logging.getLogger(__name__)

#: Set to a true value to run every task per record (the columnar count is then never chosen).
PER_RECORD_ENV = "STREAMPROC_PER_RECORD_COUNT"

#: Records computed at a time: large enough that numpy's per-call cost vanishes, small enough to stay a few MB.
CHUNK_ROWS = 256 * 1024

#: A stored count: 8 bytes of timestamp, then the ``Long`` (``ts ‖ value``, ``store_encoding``).
_STORED_SIZE = 16
_STORED = struct.Struct(">qq")

_BIG_ENDIAN_LONG = np.dtype(">i8")


@dataclass(frozen=True, slots=True)
class CountPlan:
    """What the columnar count needs, all checked eligible by :func:`columnar_count_plan`."""

    input: StagedRange
    partition_time: int
    #: The count's store; ``None`` when the chain feeds the sink directly (no count).
    store: TimestampedKeyValueStore[bytes, int] | None
    #: The store's changelog partition, ``None`` when it does not log.
    changelog: TopicPartition | None
    sink_topic: str
    sink_name: str
    sink_partitions: int
    #: The count's (or aggregate's, reduce's) processor node (``KSTREAM-AGGREGATE-…``, ``KSTREAM-REDUCE-…``), which
    #: a stored value that is not a ``Long`` fails at, and a raising aggregator; ``None`` without a count.
    count_node: str | None
    #: The stateless nodes between the source and the count or sink, in order.
    steps: tuple[StatelessStep, ...] = ()
    #: Upstream output objects whose records follow the staged ones (``task_input.task_batches``).
    appended: tuple[str, ...] = ()
    #: An ``aggregate``/``reduce`` with the user's functions, folded by a Python loop (:class:`_LoopFold`); ``None``
    #: for ``count()`` (vectorised, ``_count``) or no aggregation.
    folds: KStreamAggregateProcessor | KStreamReduceProcessor | None = None
    #: The count's store is cached and the run emulates the record cache at one flush (``columnar/cache.py``).
    flushes_cache: bool = False
    #: How the source's keys and values are read (``shape.PlainSerde``: ByteArray or String).
    key_serde: PlainSerde = BYTES
    value_serde: PlainSerde = BYTES
    #: What the sink's key and value serializers write, for keys and values the chain maps (``shape.serialized``).
    sink_key_serde: PlainSerde = BYTES
    sink_value_serde: PlainSerde = BYTES

    def describe(self) -> str:
        """What runs over columns, for the task's log line."""
        if self.store is None:
            return "stateless chain to a sink (spark/columnar/count.py)"
        if self.folds is None:
            cache = ", its record cache flushed once at the end" if self.flushes_cache else ""
            return f"count{cache} (spark/columnar/count.py)"
        kind = "reduce" if isinstance(self.folds, KStreamReduceProcessor) else "aggregate"
        return f"{kind} with a Python loop fold (spark/columnar/count.py)"

    @property
    def rekeys(self) -> bool:
        """A step changes the key (``selectKey``/``map``): the sink writes and partitions by the chain's keys."""
        return any(step.rekey for step in self.steps)

    @property
    def changes_values(self) -> bool:
        """A step may forward another value (``mapValues``/``map``): the sink writes the chain's values, else the
        input's column as it is."""
        return any(step.changes_values for step in self.steps)


@dataclass(frozen=True, slots=True)
class _Shape:
    """The nodes the columnar path runs: the source, its stateless chain, the count (``None``: the chain feeds
    the sink directly) and the sink."""

    source: SourceNode
    steps: tuple[StatelessStep, ...]
    count: KStreamAggregateProcessor | KStreamReduceProcessor | None
    #: The count's node name, ``None`` with no count.
    count_node: str | None
    sink: SinkNode
    key: PlainSerde
    value: PlainSerde
    sink_key: PlainSerde
    sink_value: PlainSerde


def _shape(graph: ProcessorTopology, topic: str) -> _Shape | str:
    """The task's nodes, or why the sub-topology is not exactly source → [filter | filterNot | mapValues]* → either
    count/aggregate/reduce → toStream → sink or a sink."""
    nodes = graph.nodes
    plain = plain_source(graph, topic)
    if isinstance(plain, str):
        return plain
    source = plain.node
    chain = stateless_chain(source.children[0])
    if isinstance(chain, str):
        return chain
    steps, node = chain
    rekeyed = next((s.name for s in reversed(steps) if s.rekey), None)
    count: KStreamAggregateProcessor | KStreamReduceProcessor | None = None
    count_node: str | None = None
    if type(node) is not SinkNode and rekeyed is not None:
        return f"{rekeyed} changes the key and {node.name} is not a sink"
    if type(node) is not SinkNode:
        aggregate = node
        if type(aggregate) is not ProcessorNode or type(aggregate.processor) not in (
            KStreamAggregateProcessor,
            KStreamReduceProcessor,
        ):
            return (
                f"{aggregate.name} is not a DSL filter/filterNot/mapValues/selectKey/map, the DSL's "
                "KStreamAggregate/KStreamReduce or a sink"
            )
        processor = aggregate.processor
        assert isinstance(processor, KStreamAggregateProcessor | KStreamReduceProcessor)
        count = processor
        count_node = aggregate.name
        after = after_to_stream(aggregate)
        if isinstance(after, str):
            return after
        node = after
    expected = 2 + len(steps) + (0 if count is None else 2)
    if len(nodes) != expected:
        return f"{len(nodes)} processor nodes, not the {expected} of source → stateless chain → count/sink"
    sink = plain_sink(node)
    if isinstance(sink, str):
        return sink
    sink_key, sink_value = sink_serde(sink.key_serializer), sink_serde(sink.value_serializer)
    if sink_key is None or (sink_key != plain.key and rekeyed is None):  # the input's key bytes go to the sink
        return f"the sink's key serde is not the source's ({plain.key.name})"
    if count is not None:
        if not _is(sink.value_serializer, LongSerializer):
            return "the sink's value serde is not Long"
        sink_value = BYTES  # not used: the count's values are Longs
    elif sink_value is None or (sink_value != plain.value and not any(s.changes_values for s in steps)):
        return f"the sink's value serde is not the source's ({plain.value.name})"
    return _Shape(source, tuple(steps), count, count_node, sink, plain.key, plain.value, sink_key, sink_value)


def count_shape_refusal(graph: ProcessorTopology, topic: str) -> str | None:
    """Why the columnar count cannot take the sub-topology read from ``topic`` whatever the task's data and config,
    or ``None`` when it may: the driver asks before splitting under ``--split auto``, as a task the columnar count
    takes runs faster whole than as key shards (``spark/task_split.py``)."""
    shape = _shape(graph, topic)
    return shape if isinstance(shape, str) else None


def _input_clean(store: ObjectStore, staged: StagedRange, appended: tuple[str, ...], task: str) -> str | None:
    """Why the task's input (staged segments, then upstream output objects) may hold a null key or value or a
    negative timestamp (from the row groups' Parquet statistics, nothing decoded), or ``None`` when it cannot. An
    upstream object without the task output schema also runs the task per record (which reports it as it does)."""
    for name in staged.segments:
        unclean = _row_groups_clean(open_segment(store, name, task=task), f"segment {name}")
        if unclean is not None:
            return unclean
    for name in appended:
        try:
            parquet = open_upstream(store, name)
        except (pa.ArrowException, OSError, ValueError) as exc:
            return f"upstream object {name} is not readable Parquet ({exc})"
        if schema_fingerprint(parquet.schema_arrow) != _OUTPUT_FINGERPRINT:
            return f"upstream object {name} does not have the task output schema"
        unclean = _row_groups_clean(parquet, f"upstream object {name}")
        if unclean is not None:
            return unclean
    return None


_OUTPUT_FINGERPRINT = schema_fingerprint(OUTPUT_SCHEMA)


def input_timestamp_range(
    store: ObjectStore, staged: StagedRange, appended: tuple[str, ...], task: str
) -> tuple[int, int] | None:
    """The smallest and largest record timestamps of the task's input (staged segments and upstream objects), from
    the row groups' Parquet statistics; ``None`` for no records. Call it after :func:`input_eligibility` (every file
    then readable, every row group with timestamp statistics)."""
    files = [open_segment(store, name, task=task) for name in staged.segments]
    files += [open_upstream(store, name) for name in appended]
    bounds: tuple[int, int] | None = None
    for parquet in files:
        column = parquet.schema_arrow.names.index("timestamp")
        metadata = parquet.metadata
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            if row_group.num_rows:
                stats = row_group.column(column).statistics
                low, high = int(stats.min), int(stats.max)
                bounds = (low, high) if bounds is None else (min(bounds[0], low), max(bounds[1], high))
    return bounds


def _row_groups_clean(parquet: pq.ParquetFile, what_file: str) -> str | None:
    """Why a file's row groups may hold a null key or value or a negative timestamp, or ``None``."""
    metadata = parquet.metadata
    names = parquet.schema_arrow.names
    key, value, timestamp = (names.index(c) for c in ("key", "value", "timestamp"))
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        if row_group.num_rows == 0:
            continue
        for column, what in ((key, "key"), (value, "value")):
            stats = row_group.column(column).statistics
            if stats is None or not stats.has_null_count or stats.null_count != 0:
                return f"{what_file} may hold a null {what}"
        stats = row_group.column(timestamp).statistics
        if stats is None or not stats.has_min_max or stats.min < 0:
            return f"{what_file} may hold a negative timestamp"
    return None


class _UnreadableCount(Exception):
    """A key's stored value is not a timestamped ``Long``; ``error``: what the store's read of it as a count raises."""

    def __init__(self, key: bytes, error: Exception) -> None:
        super().__init__(key, error)
        self.key = key
        self.error = error


def _stored_counts(store: TimestampedKeyValueStore[bytes, int], key_serde: PlainSerde = BYTES) -> StoredCounts:
    """The lookup :class:`TaskKeys` seeds a chunk's new keys with: one ``get_many`` of the store per call, each
    stored value as (timestamp, count). A value that is not 16 bytes (``ts ‖ Long``) raises :class:`_UnreadableCount`
    with the error the store's own read gives it (``get_for_update``, as ``KStreamAggregateProcessor`` reads the
    key, given the key as the source's deserializer reads it): the per-record path fails at the first record of that
    key (:func:`_unreadable_count_failure`)."""
    get_many = store.bytes_store.get_many
    unpack = _STORED.unpack

    def lookup(keys: list[bytes]) -> list[tuple[int, int] | None]:
        counts: list[tuple[int, int] | None] = []
        for key, stored in zip(keys, get_many(keys), strict=True):
            if stored is None:
                counts.append(None)
            elif len(stored) == _STORED_SIZE:
                counts.append(unpack(stored))
            else:
                try:
                    store.get_for_update(key_serde.of_bytes(key))
                except Exception as error:
                    raise _UnreadableCount(key, error) from error
                raise AssertionError(f"store {store.name}: a value of {len(stored)} bytes read as a timestamped Long")
        return counts

    return lookup


def _unreadable_count_failure(
    plan: CountPlan, batch: pa.RecordBatch, unreadable: _UnreadableCount, task: str
) -> Exception:
    """The error the per-record path ends the task with at the chunk's first record of a key whose stored value is not
    a count: the count node's read raised ``unreadable.error`` there, which the default ``LogAndFail`` handler turns
    into :func:`processing_failure`'s. The chunk's new keys are looked up in order of first appearance, so the first
    unreadable one is the first record that fails."""
    assert plan.count_node is not None
    keys = batch.column("key")
    position = pc.index(keys, pa.scalar(unreadable.key, keys.type)).as_py()
    return _failure(plan, batch, Failure(position, plan.count_node, unreadable.error), task)


#: Per input partition of a task: its staged range, its committed partition time and its upstream output objects
#: (``InputRange.appended``).
TaskInputs = tuple[tuple[StagedRange, int, tuple[str, ...]], ...]


def per_record_forced() -> bool:
    """:data:`PER_RECORD_ENV` is set to a true value: no task runs over columns (and ``--split auto`` then splits
    what it splits per record)."""
    return os.environ.get(PER_RECORD_ENV, "").strip().lower() not in ("", "0", "false", "no")


def common_eligibility(
    *,
    task: str,
    config: TaskConfig,
    inputs: TaskInputs,
    has_global_stores: bool,
) -> str | None:
    """Why a task cannot run over columns whatever its nodes, or ``None``: the checks every columnar path shares
    before it looks at the sub-topology (cheap: nothing read). Then the path checks its shape and calls
    :func:`input_eligibility` with the shape's source."""
    if per_record_forced():
        return f"{PER_RECORD_ENV} is set"
    if len(inputs) != 1:
        return f"{len(inputs)} input partitions, not one"
    if has_global_stores:
        return "the task has global stores"
    return handlers_refusal(config)


def handlers_refusal(config: TaskConfig) -> str | None:
    """Why no task under ``config`` runs over columns, whatever its nodes and input: a dead letter queue or an
    exception handler other than the default ``LogAndFail`` ones (they route a record the columnar loops would not
    route record by record); ``None`` when none is configured. ``--split auto`` asks it too."""
    if config.dead_letter_queue_topic is not None:
        return "a dead letter queue is configured"
    if type(config.deserialization_exception_handler) is not LogAndFailExceptionHandler:
        return "a deserialization exception handler is configured"
    if type(config.processing_exception_handler) is not LogAndFailProcessingExceptionHandler:
        return "a processing exception handler is configured"
    return None


def input_eligibility(
    *, task: str, config: TaskConfig, source: SourceNode, inputs: TaskInputs, object_store: ObjectStore
) -> str | None:
    """Why the (one) input partition's records cannot be read over columns for ``source``, or ``None``: the source's
    timestamp extractor must be the record-metadata one, and the staged segments and upstream objects must hold no
    null key or value and no negative timestamp (their Parquet statistics, read here; so call it last)."""
    extractor = source.timestamp_extractor or config.default_timestamp_extractor or FailOnInvalidTimestamp()
    if getattr(type(extractor), "extract", None) is not ExtractRecordMetadataTimestamp.extract:
        return "the timestamp extractor is not a record-metadata one"
    staged, _, appended = inputs[0]
    return _input_clean(object_store, staged, appended, task)


def columnar_count_plan(
    *,
    task: str,
    graph: ProcessorTopology,
    config: TaskConfig,
    inputs: TaskInputs,
    object_store: ObjectStore,
    stores: Mapping[str, StateStore],
    has_global_stores: bool,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    cached_stores: frozenset[str] = frozenset(),
) -> CountPlan | str:
    """The task's :class:`CountPlan` when it is plainly a DSL count or chain to a sink, else the reason it is not (one
    line): :func:`common_eligibility`, the shape (``_shape``), the sink and store, then :func:`input_eligibility`.
    """
    common = common_eligibility(task=task, config=config, inputs=inputs, has_global_stores=has_global_stores)
    if common is not None:
        return common
    staged, partition_time, appended = inputs[0]
    shape = _shape(graph, staged.topic)
    if isinstance(shape, str):
        return shape
    source, steps, sink = shape.source, shape.steps, shape.sink
    partitions = collector.partition_counts.get(sink.topic)
    if partitions is None or partitions <= 0:
        return f"the partition count of sink topic {sink.topic} is not known"
    store: TimestampedKeyValueStore[bytes, int] | None = None
    changelog: TopicPartition | None = None
    if shape.count is None:
        if stores:
            return f"the task has stores ({', '.join(sorted(stores))}) but no count"
    else:
        store_name = shape.count.store_name
        found = stores.get(store_name)
        if type(found) is not TimestampedKeyValueStore or set(stores) != {store_name}:
            return f"the task's stores are not exactly the count's timestamped key-value store {store_name}"
        store = found
        if not shape.key.writes(store.key_serde.serializer.serialize) or not (
            _is(store.value_serde.serializer.serialize, LongSerializer)
            and _is(store.value_serde.deserializer.deserialize, LongDeserializer)
        ):
            return f"store {store.name}'s serdes are not the source's key serde ({shape.key.name}) and Long"
        context = store.context
        changelog = None if context is None else context.changelog_partition
        if changelog is not None and (context is None or context.sink is not changelog_collector):
            return f"store {store.name} logs somewhere other than the task's changelog files"
    flushes_cache = store is not None and store.name in cached_stores and config.record_cache != RECORD_CACHE_OFF
    if flushes_cache and shape.count is not None and not counts_keys(shape.count):
        return (
            "an aggregate or reduce under the record cache runs per record (a tombstone's flush depends on the store)"
        )
    unclean = input_eligibility(task=task, config=config, source=source, inputs=inputs, object_store=object_store)
    if unclean is not None:
        return unclean
    return CountPlan(
        staged,
        partition_time,
        store,
        changelog,
        sink.topic,
        sink.name,
        partitions,
        shape.count_node,
        steps,
        appended,
        None if shape.count is None or counts_keys(shape.count) else shape.count,
        flushes_cache,
        shape.key,
        shape.value,
        shape.sink_key,
        shape.sink_value,
    )


def counts_keys(processor: KStreamAggregateProcessor | KStreamReduceProcessor) -> bool:
    """The processor is the DSL's ``count()`` (its adder and initializer), which ``_count`` folds in numpy; any other
    ``aggregate``/``reduce`` calls the user's functions in :class:`_LoopFold`."""
    return (
        type(processor) is KStreamAggregateProcessor
        and processor.counting
        and processor.initializer is count_initializer
    )


def _batches(plan: CountPlan, store: ObjectStore, task: str, counts: dict[str, int] | None) -> Iterator[pa.RecordBatch]:
    """The input's offset, timestamp, key and headers columns (and values when the chain or sink needs them),
    ``CHUNK_ROWS`` at a time, staged then upstream records, in the per-record path's order and offsets
    (``task_input.task_batches``)."""
    with_values = bool(plan.steps) or plan.store is None or plan.folds is not None
    columns = ("offset", "timestamp", "key", "headers", *(("value",) if with_values else ()))
    batches = task_batches(
        store, plan.input, plan.appended, task=task, columns=columns, batch_size=CHUNK_ROWS, counts=counts
    )
    if plan.key_serde == BYTES and (plan.value_serde == BYTES or not with_values):
        return batches
    return (read_as(batch, plan.key_serde, plan.value_serde) for batch in batches)


def read_as(batch: pa.RecordBatch, key: PlainSerde, value: PlainSerde) -> pa.RecordBatch:
    """``batch`` with its key and value columns as the source's serdes read them (``PlainSerde.column``)."""
    names = batch.schema.names
    arrays = [
        key.column(column) if name == "key" else value.column(column) if name == "value" else column
        for name, column in zip(names, batch.columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def run_columnar_count(
    plan: CountPlan,
    object_store: ObjectStore,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    *,
    task: str,
    appended_counts: dict[str, int] | None = None,
    shard: ShardSpec | None = None,
) -> ReplayResult:
    """Run the planned task over its input (see the module docstring) and return the task's result;
    ``appended_counts`` gets the upstream records read, as ``task_runner.upstream_records`` counts them.

    With ``shard``, only the rows that key shard owns are folded and written, stamped with their positions
    (``shard_rows.py``); the result's counts, offsets and stream time are still the whole task's."""
    if shard is not None and plan.flushes_cache:
        raise AssertionError("a task under the record cache runs whole (job.process sets --split off)")
    owned = None if shard is None else ShardRows(shard, by_key=plan.store is not None)
    state = TaskKeys(plan.sink_partitions, None if plan.store is None else _stored_counts(plan.store, plan.key_serde))
    fold = None if plan.folds is None else _LoopFold(plan, state, task)
    touched = np.zeros(0, dtype=bool)
    processed = 0
    last_offset = -1
    max_timestamp = UNKNOWN
    drops: list[DroppedRecord] = []
    with_values = bool(plan.steps) or plan.store is None or fold is not None
    # each key's last row kept until the one flush of the record cache (columnar/cache.py)
    last_writes = LastWrites() if plan.flushes_cache else None
    for chunk in _batches(plan, object_store, task, appended_counts):
        batch = chunk if owned is None else owned.owned(chunk, processed)
        n = batch.num_rows
        keys: list[Any] | None = None
        if plan.steps:
            chain = run_chain(
                plan.steps, plan.key_serde.objects(batch.column("key")), plan.value_serde.objects(batch.column("value"))
            )
            positions, values, failure = chain.positions, chain.values, chain.failure
            keys = chain.keys if plan.rekeys else None
        else:
            values = plan.value_serde.objects(batch.column("value")) if with_values else []
            positions, failure = list(range(n)), None
        if plan.store is not None:
            if plan.steps:
                positions, values = _drop_null_values(plan, batch, positions, values, processed, drops)
            rows = batch if len(positions) == n else batch.take(pa.array(positions, pa.int64()))
            if rows.num_rows and fold is not None:  # the records before the chain's failure: one may fail first
                fold.fold(rows, values)
                fold.send(collector, changelog_collector)
            elif rows.num_rows:  # the records before the chain's failure, if any: one may fail first, at the count
                touched = _count(plan, rows, state, touched, collector, changelog_collector, task, last_writes)
            if failure is not None:
                raise _failure(plan, batch, failure, task)
        else:
            mapped = values if plan.changes_values else None
            serialized_keys, serialized, failure = _serialized(plan, positions, keys, mapped, failure)
            if failure is not None:
                raise _failure(plan, batch, failure, task)
            rows = batch if len(positions) == n else batch.take(pa.array(positions, pa.int64()))
            if rows.num_rows:
                _sink(plan, rows, serialized_keys, serialized, state, collector)
        processed += chunk.num_rows
        last_offset = int(chunk.column("offset")[-1].as_py())
        max_timestamp = max(max_timestamp, int(pc.max(chunk.column("timestamp")).as_py()))
    if fold is not None:
        fold.write_store()
    elif plan.store is not None:
        _write_store(plan.store, state, touched)
    if last_writes is not None:
        _flush(plan, last_writes, collector, changelog_collector, task)
    partition_time = max(plan.partition_time, max_timestamp)
    tp = TopicPartition(plan.input.topic, plan.input.partition)
    counts: dict[str, int] = {}
    for drop in drops:
        counts[drop.reason] = counts.get(drop.reason, 0) + 1
    return ReplayResult(
        records_processed=processed,
        steps=processed,
        stream_time=partition_time,
        skip_steps=(),
        dropped_counts=counts,
        dropped=tuple(drops),
        committable_offsets={} if processed == 0 else {tp: CommittableOffset(last_offset + 1, partition_time)},
        punctuations=0,
    )


def _drop_null_values(
    plan: CountPlan,
    batch: pa.RecordBatch,
    positions: list[int],
    values: list[object],
    processed: int,
    drops: list[DroppedRecord],
) -> tuple[list[int], list[object]]:
    """The positions whose mapped value is not null, and those values; each null one dropped as
    ``KStreamAggregateProcessor`` drops it (its warning, a ``null_key_or_value`` drop at the record's offset and
    step: ``processed`` + its index, or a shard's row's own position)."""
    if all(v is not None for v in values):
        return positions, values
    offsets = batch.column("offset")
    at = shard_positions(batch)  # a shard's rows: each one's step in the task's order
    topic, partition = plan.input.topic, plan.input.partition
    kept: list[int] = []
    kept_values: list[object] = []
    for position, value in zip(positions, values, strict=True):
        if value is not None:
            kept.append(position)
            kept_values.append(value)
            continue
        offset = offsets[position].as_py()
        record_dropped_log.warning(
            "%s topic=[%s] partition=[%s] offset=[%s]", NULL_KEY_OR_VALUE_MESSAGE, topic, partition, offset
        )
        step = processed + position if at is None else at[position].as_py()
        drops.append(DroppedRecord(topic, partition, offset, REASON_NULL_KEY_OR_VALUE, step))
    return kept, kept_values


def _serialized(
    plan: CountPlan, positions: list[int], keys: list[Any] | None, values: list[Any] | None, failure: Failure | None
) -> tuple[pa.Array | None, pa.Array | None, Failure | None]:
    """The sink's keys and values (``None``: the input's, unchanged bytes) as its ``ByteArray`` or ``String``
    serializers write them (``shape.serialized``), the key first as ``SinkNode.process`` does; a key or value they
    reject (only a mapped one can be rejected) is the first failure when it comes before the chain's (the caller then
    raises it: what comes before it is not sent)."""
    first = failure
    columns: list[pa.Array | None] = []
    for items, serde in ((keys, plan.sink_key_serde), (values, plan.sink_value_serde)):
        if items is None:
            columns.append(None)
            continue
        column, at, error = serialized(serde, plan.sink_topic, items)
        columns.append(column)
        if (
            at is not None
            and error is not None
            and (first is None or first is failure or positions[at] < first.position)
        ):
            first = Failure(positions[at], plan.steps[-1].name, error)  # on one record, the key's comes first
    return columns[0], columns[1], first


def _failure(plan: CountPlan, batch: pa.RecordBatch, failure: Failure, task: str) -> Exception:
    offset = batch.column("offset")[failure.position].as_py()
    return processing_failure(
        task,
        failure.node,
        plan.input.topic,
        plan.input.partition,
        offset,
        failure.error,
    )


def _count(
    plan: CountPlan,
    batch: pa.RecordBatch,
    state: TaskKeys,
    touched: np.ndarray,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    task: str,
    last_writes: LastWrites | None = None,
) -> np.ndarray:
    """One chunk's count updates: sent to the sink and the changelog (or, under the record cache, kept in
    ``last_writes`` until its flush); returns which keys the task has touched. A new key whose stored value is not a
    count fails the task as the per-record path does at its first record."""
    store = plan.store
    assert store is not None
    n = batch.num_rows
    keys = batch.column("key")
    try:
        ids = state.ids(keys)
    except _UnreadableCount as unreadable:
        raise _unreadable_count_failure(plan, batch, unreadable, task)  # noqa: B904 (its cause: the read's error)
    record_ts = batch.column("timestamp").to_numpy()
    counts = state.count[ids] + grouped_running_count(ids)
    timestamps = np.maximum(grouped_running_max(ids, record_ts), state.timestamp[ids])
    distinct, last = last_positions(ids)  # each key's state after its last record of the chunk
    state.count[distinct] = counts[last]
    state.timestamp[distinct] = timestamps[last]
    if len(touched) < len(state.count):
        touched = np.concatenate([touched, np.zeros(len(state.count) - len(touched), dtype=bool)])
    touched[ids] = True
    values = longs(counts)
    stamps = pa.array(timestamps, pa.int64())
    if last_writes is not None:
        chunk = {"key": keys, "timestamp": stamps, "value": values, "headers": batch.column("headers")}
        last_writes.add(ids, pa.table({**chunk, "partition": pa.array(state.partition[ids], pa.int32())}))
        return touched
    sequence = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
    send(plan, collector, batch, state.partition[ids], sequence, stamps, keys, values)
    if plan.changelog is not None:
        send_changes(changelog_collector, store.name, plan.changelog, stamps, keys, values, shard_positions(batch))
    return touched


def _flush(
    plan: CountPlan,
    last_writes: LastWrites,
    collector: TaskOutputCollector,
    changelog_collector: TaskChangelogCollector,
    task: str,
) -> None:
    """The record cache's flush at the task's commit: each key's changelog record and update, in the order of the
    keys' last writes (``columnar/cache.py``)."""
    rows = last_writes.table()
    n = 0 if rows is None else rows.num_rows
    if rows is not None and n:
        assert plan.store is not None
        stamps, keys, values = rows.column("timestamp"), rows.column("key"), rows.column("value")
        sequence = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
        partitions = rows.column("partition").to_numpy()
        send(plan, collector, rows, partitions, sequence, stamps, keys, values)
        if plan.changelog is not None:
            send_changes(changelog_collector, plan.store.name, plan.changelog, stamps, keys, values)
    logger.info("task [%s] flushed the record cache: %s updates forwarded", task, n)


def _sink(
    plan: CountPlan,
    batch: pa.RecordBatch,
    mapped_keys: pa.Array | None,
    values: pa.Array | None,
    state: TaskKeys,
    collector: TaskOutputCollector,
) -> None:
    """One chunk's records straight to the sink: key (the input's or the chain's), mapped value, the record's
    timestamp and headers; the partition from the serialized key (a null key: unassigned, as
    ``TaskOutputCollector.send`` leaves it when the default partitioner has none)."""
    n = batch.num_rows
    keys = batch.column("key") if mapped_keys is None else mapped_keys
    sequence = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
    stamps = batch.column("timestamp")
    partitions = state.partitions_of(keys)
    value_column = batch.column("value") if values is None else values
    send(plan, collector, batch, partitions, sequence, stamps, keys, value_column)


def _write_store(store: TimestampedKeyValueStore[bytes, int], state: TaskKeys, touched: np.ndarray) -> None:
    """One ``put`` per key the task counted: its final timestamp and count."""
    written = np.flatnonzero(touched)
    if not len(written):
        return
    stored = np.empty((len(written), 2), dtype=_BIG_ENDIAN_LONG)
    stored[:, 0] = state.timestamp[written]
    stored[:, 1] = state.count[written]
    raw = stored.tobytes()
    keys = state.keys.take(pa.array(written)).to_pylist()
    store.bytes_store.write_all([(key, raw[i * _STORED_SIZE : (i + 1) * _STORED_SIZE]) for i, key in enumerate(keys)])
    if store.context is not None:
        store.context.written = True


def _no_aggregator(key: Any, value: Any, aggregate: Any) -> Any:
    raise AssertionError("a reduce has no aggregator")


class _LoopFold:
    """``aggregate``/``reduce`` with the user's functions: ``KStreamAggregateProcessor.process`` /
    ``KStreamReduceProcessor.process`` for each record of a chunk in one Python loop, the function called once per
    record in offset order with the per-record path's arguments, no ``Record``/``Change`` per record.

    Each key's aggregate and timestamp live in lists indexed by the key's :class:`TaskKeys` id (``None``: the store
    holds nothing for the key: never held or deleted by a tombstone), seeded from the store once, when a chunk first
    brings the key (``TaskKeys.ids``' batched lookup), and written to the store once per key at the end
    (:meth:`write_store`): what the per-record puts leave, since only this task writes the store. Every new aggregate
    goes through the store's ``Long`` round trip (``output.stored_long``), so what the serializer rejects fails
    here, at the aggregate node, as the store's ``put`` fails per record."""

    def __init__(self, plan: CountPlan, state: TaskKeys, task: str) -> None:
        assert plan.store is not None and plan.folds is not None and plan.count_node is not None
        self.plan = plan
        self.store = plan.store
        self.state = state
        self.task = task
        self.node = plan.count_node
        self.processor = plan.folds
        #: per key id: its aggregate (``None``: the store holds nothing for the key) and that aggregate's timestamp
        self.aggregates: list[Any] = []
        self.timestamps: list[int] = []
        #: per key id: the task put it (its final aggregate, or a delete, is written at the end)
        self.touched: list[bool] = []
        #: the last folded chunk: its rows, key ids, new aggregates and their timestamps (:meth:`send` writes them)
        self._rows: pa.RecordBatch | None = None
        self._ids = np.zeros(0, dtype=np.int64)
        self._news: list[int | None] = []
        self._stamps: list[int] = []

    def fold(self, rows: pa.RecordBatch, values: list[Any]) -> None:
        """Fold ``rows`` (records that reach the aggregate, in offset order; ``values``: theirs as the aggregate
        gets them). The first record that fails (a stored value that is not a timestamped ``Long``, at its key's
        first record; the user's function raising; a new aggregate the store's serializer rejects) raises the
        per-record path's error, after the records before it are folded."""
        keys = rows.column("key")
        try:
            ids = self.state.ids(keys)
        except _UnreadableCount as unreadable:
            # the keys first seen before it are readable (looked up in order of first appearance): fold the
            # records before its first one, which may fail first
            at = pc.index(keys, pa.scalar(unreadable.key, keys.type)).as_py()
            if at:
                self.fold(rows.slice(0, at), values[:at])
            raise _unreadable_count_failure(self.plan, rows, unreadable, self.task)  # noqa: B904 (the read's error)
        known = len(self.aggregates)
        if len(self.state.held) > known:
            held = self.state.held[known:].tolist()
            counts = self.state.count[known:].tolist()
            self.aggregates.extend(c if h else None for c, h in zip(counts, held, strict=True))
            self.timestamps.extend(self.state.timestamp[known:].tolist())
            self.touched.extend([False] * (len(held)))
        news: list[int | None] = []
        stamps: list[int] = []
        key_objects = self.plan.key_serde.objects(keys)
        failure = self._loop(ids.tolist(), key_objects, values, rows.column("timestamp").to_pylist(), news, stamps)
        if failure is not None:
            raise _failure(self.plan, rows, failure, self.task)
        self._rows, self._ids, self._news, self._stamps = rows, ids, news, stamps

    def _loop(
        self, ids: list[int], keys: list[Any], values: list[Any], record_stamps: list[int], news: list[int | None],
        stamps: list[int],
    ) -> Failure | None:  # fmt: skip
        """The per-record updates, appended to ``news``/``stamps``; the first failure (position in the chunk), if
        any."""
        aggregates, timestamps, touched = self.aggregates, self.timestamps, self.touched
        topic = self.store.serde_topic
        processor = self.processor
        reducer = processor.reducer if isinstance(processor, KStreamReduceProcessor) else None
        initializer: Callable[[], Any] = count_initializer  # a reduce calls neither
        aggregator: Callable[[Any, Any, Any], Any] = _no_aggregator
        if isinstance(processor, KStreamAggregateProcessor):
            initializer, aggregator = processor.initializer, processor.aggregator
        try:
            for k, key, value, timestamp in zip(ids, keys, values, record_stamps, strict=True):
                old = aggregates[k]
                if reducer is not None:  # KStreamReduceProcessor.process: the key's first value is its aggregate
                    if old is None:
                        new, new_timestamp = value, timestamp
                    else:
                        new = reducer(old, value)
                        stored = timestamps[k]
                        new_timestamp = timestamp if timestamp > stored else stored
                else:  # KStreamAggregateProcessor.process
                    if old is None:
                        old = initializer()
                        new_timestamp = timestamp
                    else:
                        stored = timestamps[k]
                        new_timestamp = timestamp if timestamp > stored else stored
                    new = aggregator(key, value, old)
                if type(new) is not int or not _LONG_MIN <= new <= _LONG_MAX:
                    new = stored_long(topic, new)  # the store's put: raises what its serializer rejects
                aggregates[k] = new
                timestamps[k] = new_timestamp
                touched[k] = True
                news.append(new)
                stamps.append(new_timestamp)
        except Exception as exc:
            return Failure(len(news), self.node, exc)  # the records before it each gave an update
        return None

    def send(self, collector: TaskOutputCollector, changelog_collector: TaskChangelogCollector) -> None:
        """The last folded chunk's updates: each to the sink (key, the new aggregate as a ``Long`` or null for a
        tombstone, its timestamp, the record's headers) and to the changelog (the same value, stamped with its
        timestamp, a tombstone with the record's: ``timestamped_key_value_write``)."""
        rows = self._rows
        assert rows is not None
        n = rows.num_rows
        keys = rows.column("key")
        sink_stamps = pa.array(self._stamps, pa.int64())
        if None not in self._news:
            values = longs(np.asarray(self._news, dtype=np.int64))
            change_stamps = sink_stamps
        else:
            serialize = LongSerializer().serialize
            values = pa.array([serialize(self.plan.sink_topic, v) for v in self._news], pa.binary())
            tombstones = np.fromiter((v is None for v in self._news), dtype=bool, count=n)
            record_stamps = rows.column("timestamp").to_numpy()
            change_stamps = pa.array(np.where(tombstones, record_stamps, np.asarray(self._stamps, np.int64)))
        sequence = pa.array(np.arange(collector.sent, collector.sent + n, dtype=np.int64))
        send(self.plan, collector, rows, self.state.partition[self._ids], sequence, sink_stamps, keys, values)
        if self.plan.changelog is not None:
            changelog = self.plan.changelog
            positions = shard_positions(rows)
            send_changes(changelog_collector, self.store.name, changelog, change_stamps, keys, values, positions)

    def write_store(self) -> None:
        """One write per key the task put: its final aggregate (``ts ‖ Long``), or a delete after a tombstone."""
        written = [k for k, put in enumerate(self.touched) if put]
        if not written:
            return
        keys = self.state.keys.take(pa.array(written, pa.int64())).to_pylist()
        pack = _STORED.pack
        aggregates, timestamps = self.aggregates, self.timestamps
        self.store.bytes_store.write_all(
            [
                (key, None if aggregates[k] is None else pack(timestamps[k], aggregates[k]))
                for key, k in zip(keys, written, strict=True)
            ]
        )
        if self.store.context is not None:
            self.store.context.written = True
