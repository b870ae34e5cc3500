"""A task split into K key shards and merged (issue #29) publishes exactly what the unsplit task publishes.

For every sub-topology of the side-by-side DSL programs (``streamproc_dev/conformance/dsl_programs.py``) that the
executor splits (``spark/task_split.split_refusals``): stage generated records on each of its source topics (null
keys, tombstones, out-of-order and late timestamps), run its task once whole and once as K = 1..4 shards plus the
merge (``run_task`` with ``TaskWork.shard``, then ``merge_shards``), and compare: every output, changelog, DLQ and
drops object byte for byte, the stores entry for entry, and the reports but for what differs by run. Half the
examples first run an earlier window unsplit and restore the second run's stores from its changelog records, so a
split task also starts from restored state.

The columnar count's programs (``test_columnar_count``/``_aggregate``/``_chain``: Bytes serdes, one partition, no
null keys or values) are split too: there each shard folds only the rows it owns over columns
(``spark/columnar/shard_rows.py``), and the merged task must equal the whole columnar task the same way.
"""

from __future__ import annotations

import importlib
import io
import re
import tarfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from streamproc.engine.dead_letter_queue import HEADER_ERRORS_STACKTRACE_NAME
from streamproc.engine.key_shards import ShardSpec
from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler
from streamproc.engine.processor import ClassCastError
from streamproc.engine.processor_topology import SinkNode
from streamproc.engine.records import ConsumerRecord, RawRecord
from streamproc.engine.serdes import StringDeserializer, StringSerializer
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import LogAndSkipOnInvalidTimestamp
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_processor_topology, store_builders
from streamproc.errors import StreamprocError
from streamproc.intervals import to_intervals
from streamproc.spark import shard_merge
from streamproc.spark.columnar import count as columnar_count
from streamproc.spark.shard_merge import merge_shards
from streamproc.spark.task_output import TaskObjects
from streamproc.spark.task_runner import InputRange, RestoreRange, TaskWork, run_task
from streamproc.spark.task_shards import ShardObjects
from streamproc.spark.task_split import split_refusals
from streamproc.state.rocksdb_store import RocksDBKeyValueBytesStore
from streamproc.state.store_builders import store_definitions
from streamproc.storage import LocalObjectStore
from streamproc.storage.manifest import SegmentProof
from streamproc.storage.object_store import ObjectNotFoundError
from streamproc.storage.staging import SegmentLimits, stage_range
from streamproc_dev.conformance.dsl_programs import PROGRAMS

APP = "split-app"
SINK_PARTITIONS = 3
_MODULE = "tests.unit.spark.test_split_task"
#: The program the task runner loads (``program`` below) and whether its handlers continue: set per example (the
#: runs are inline, in this process).
_CURRENT: list[Any] = ["", False]


class _FoldedKeys(StringDeserializer):
    """A key deserializer of the user's whose keys are not their bytes: ``c`` reads as ``b`` and the empty key as
    null, so records with different key bytes share a store entry (a key shard must own both) and the store's key
    bytes are not the record's (a shard reading only its own records tells owners by deserializing each key)."""

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        text = super().deserialize(topic, data)
        return {"c": "b", "": None}.get(text, text) if text is not None else None


def folded_keys_count() -> Topology:
    from streamproc.dsl import Consumed, Produced, StreamsBuilder
    from streamproc.engine.serdes import Serde, serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    folded = Serde(text.serializer, _FoldedKeys())
    counts = b.stream("in", Consumed.with_(folded, text)).group_by_key().count()
    counts.to_stream().to("out", Produced.with_(text, serde_for("Long")))
    return b.build()


def short_sessions(concat: bool, filtered: bool = False) -> Topology:
    """Session windows of a 1 s gap with 500 ms grace: the generated timestamps make many sessions per key, merges,
    and records late by less than the store's retention past its fetch bound (the store's stream time decides which
    sessions a merge finds). ``concat``: an aggregator that fails on a null value (under the continuing handlers, a
    record that advanced the stream time may then put nothing); else a count. ``filtered``: behind a filter that
    drops values starting with ``b`` and fails on a null value (which records reach the aggregate, so its stream
    time, is the filter's: every shard runs it over the records it does not own)."""
    from streamproc.dsl import Consumed, Materialized, Produced, SessionWindows, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    stream = b.stream("in", Consumed.with_(text, text))
    if filtered:
        stream = stream.filter(lambda k, v: v[0] != "b")
    grouped = stream.group_by_key()
    sessions = grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(1_000, 500))
    table = (
        sessions.aggregate(
            lambda: "", lambda k, v, agg: agg + v, lambda k, a, b: a + b, materialized=Materialized.with_(text, text)
        )
        if concat
        else sessions.count()
    )
    produced = Produced.with_(text, text if concat else serde_for("Long"))
    table.to_stream().select_key(lambda windowed, value: windowed.key).to("out", produced)
    return b.build()


def _count_in_short_windows(stream: Any) -> None:
    """The windowed count this module's programs share: 1 s windows with 500 ms grace (records late by about a
    second expire or not by the exact stream time), each count sent to ``out`` under its record's key."""
    from streamproc.dsl import Grouped, Produced, TimeWindows
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    (
        stream.group_by_key(Grouped.with_(text, text))
        .windowed_by(TimeWindows.of_size_and_grace(1_000, 500))
        .count()
        .to_stream()
        .select_key(lambda windowed, count: windowed.key)
        .to("out", Produced.with_(text, serde_for("Long")))
    )


def filtered_short_windows() -> Topology:
    """A windowed count of 1 s windows with 500 ms grace behind a filter, a value mapper and a filterNot (the first
    and the mapper fail on a null value): records late by 1.2 s expire or not by the stream time of the records that
    passed the prefix, which each shard computes by running the prefix over the records it does not own."""
    from streamproc.dsl import Consumed, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    _count_in_short_windows(
        b.stream("in", Consumed.with_(text, text))
        .filter(lambda k, v: v[0] != "b")
        .map_values(lambda v: v + "!")
        .filter_not(lambda k, v: v.startswith("c"))
    )
    return b.build()


def _picks_c(key: str | None, value: str) -> bool:
    """The split's second predicate; ``c1`` is not the type it was written for (its ``ClassCastError`` is handled by
    the split's parent, the flatMapValues, which then forwards none of the record's later values)."""
    if value == "c1":
        raise ClassCastError("c1 is not a c value")
    return value.startswith("c")


def branched_short_windows() -> Topology:
    """A windowed count of 1 s windows with 500 ms grace behind a flatMapValues (each value split at ``r``; it fails
    on a null value), a split whose second predicate raises a ``ClassCastError`` for ``c1``, a filter on the c branch
    and a merge of the a and c branches; the default branch goes to a sink. Which of a record's values reach the
    count, if any, decides its stream time, which each shard computes by running that prefix over the records it
    does not own."""
    from streamproc.dsl import Branched, Consumed, Named, Produced, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    branches = (
        b.stream("in", Consumed.with_(text, text))
        .flat_map_values(lambda v: v.split("r"))
        .split(Named.as_("pick-"))
        .branch(lambda k, v: v.startswith("a"), Branched.as_("a"))
        .branch(_picks_c, Branched.as_("c"))
        .default_branch(Branched.as_("rest"))
    )
    branches["pick-rest"].to("rest", Produced.with_(text, text))
    _count_in_short_windows(branches["pick-a"].merge(branches["pick-c"].filter(lambda k, v: len(v) > 2)))
    return b.build()


def _watch(key: str | None, value: str | None) -> None:
    """A peek's action that fails for one key's ``c1rapple`` (under the default handler the task fails there)."""
    if key == "user-17" and value == "c1rapple":
        raise ValueError("a watched value")


def peeked_short_windows() -> Topology:
    """``filtered_short_windows``'s count behind a peek (whose action may raise) and a filter that keeps null values:
    under the default processing exception handler a shard that does not own a record skips the peek's action (the
    record either passes it or fails the task); under one that continues, the action's failure stops the record in
    its owner alone, which says so, and the task runs whole after its shards."""
    from streamproc.dsl import Consumed, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    _count_in_short_windows(
        b.stream("in", Consumed.with_(text, text)).peek(_watch).filter(lambda k, v: v is None or v[0] != "b")
    )
    return b.build()


def merged_short_windows() -> Topology:
    """``filtered_short_windows``'s count over two topics merged, each through its own prefix: ``in`` a filter
    dropping ``b`` values, ``in-2`` a value mapper and a filter dropping values that start with ``c`` (both fail
    on a null value). A record's reach is its own source's prefix."""
    from streamproc.dsl import Consumed, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    one = b.stream("in", Consumed.with_(text, text)).filter(lambda k, v: v[0] != "b")
    two = (
        b.stream("in-2", Consumed.with_(text, text))
        .map_values(lambda v: v + "!")
        .filter(lambda k, v: not v.startswith("c"))
    )
    _count_in_short_windows(one.merge(two))
    return b.build()


def _pair(left: str, right: str) -> str:
    """The joiner of :func:`short_join`: ``c1`` on either side is not the type it was written for. Under the
    continuing handlers its failure is handled at the join, and the window processor that forwarded the record
    still puts it (its store's stream time and seqnums advance as in the unsplit task)."""
    if "c1" in (left, right):
        raise ClassCastError("c1 is not a joinable value")
    return f"{left}/{right}"


def short_join(self_join: bool = False, prefixed: bool = False) -> Topology:
    """A stream-stream inner join of ``in`` and ``in-2`` within 1 s either way, 500 ms grace (each window store
    keeps 2.5 s): which of a key's records the other side's fetch still finds, and which puts the store refuses as
    expired, depend on each window store's stream time, which every key's records advance; a record with a null
    value is put (the change-logging layer's seqnum advances, the store's does not) and joins nothing; the seqnums
    in the store and changelog keys count every key's puts. ``self_join``: ``in`` joined with itself, one topic
    feeding both window stores. ``prefixed``: each side behind a stateless prefix, whose output is what its window
    stores take (``in``: each value split at ``r``, ``apple`` made null; ``in-2``: ``b`` values filtered out, a peek
    that fails for one key's value)."""
    from streamproc.dsl import Consumed, JoinWindows, Produced, StreamJoined, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    text = serde_for("String")
    b = StreamsBuilder()
    left = b.stream("in", Consumed.with_(text, text))
    right = left if self_join else b.stream("in-2", Consumed.with_(text, text))
    if prefixed:
        left = left.flat_map_values(lambda v: v.split("r")).map_values(lambda v: None if v == "apple" else v)
        right = right.filter(lambda k, v: v is None or v[0] != "b").peek(_watch)
    joined = left.join(
        right, _pair, JoinWindows.of_time_difference_and_grace(1_000, 500), StreamJoined.with_(text, text, text)
    )
    joined.to("out", Produced.with_(text, text))
    return b.build()


class _PickySerializer(StringSerializer):
    """A value serializer of the user's for a join's window store that takes ``x`` for the wrong type."""

    def serialize(self, topic: str, data: str | None) -> bytes | None:
        if data == "x":
            raise ClassCastError("x is not a joinable value")
        return super().serialize(topic, data)


def picky_join() -> Topology:
    """``in``'s values split at ``r`` and joined with ``in-2`` within 1 s, its window store's serializer refusing
    ``x`` with a ``ClassCastError``: handled at the window's parent, the flatMapValues, which then forwards none of
    the record's later values."""
    from streamproc.dsl import Consumed, JoinWindows, Produced, StreamJoined, StreamsBuilder
    from streamproc.engine.serdes import Serde, serde_for

    text = serde_for("String")
    picky = Serde(_PickySerializer(), text.deserializer)
    b = StreamsBuilder()
    left = b.stream("in", Consumed.with_(text, text)).flat_map_values(lambda v: v.split("r"))
    right = b.stream("in-2", Consumed.with_(text, text))
    windows = JoinWindows.of_time_difference_and_grace(1_000, 500)
    left.join(right, _pair, windows, StreamJoined.with_(text, picky, text)).to("out", Produced.with_(text, text))
    return b.build()


class _StampedCount:
    """A declared key-local Processor-API processor: counts per key in its store and forwards the count with the
    task's stream time (``current_stream_time_ms``, which a shard must see as the task does); ``punctuate``: it also
    schedules a stream-time punctuation that forwards a marker (against the promise: the task then runs whole)."""

    def __init__(self, punctuate: bool) -> None:
        self.punctuate = punctuate

    def init(self, context: Any) -> None:
        from streamproc.engine.punctuation_queue import PunctuationType

        self.context = context
        self.store = context.get_state_store("stamped")
        if self.punctuate:
            context.schedule(5_000, PunctuationType.STREAM_TIME, self._tick)

    def _tick(self, timestamp: int) -> None:
        from streamproc.engine.records import Record

        self.context.forward(Record("tick", f"tick@{timestamp}", timestamp))

    def process(self, record: Any) -> None:
        from streamproc.engine.records import Record

        if record.key is None:
            return
        count = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, count)
        stamped = f"{count}@{self.context.current_stream_time_ms()}"
        self.context.forward(Record(record.key, stamped, record.timestamp, record.headers))

    def close(self) -> None:
        """Nothing to release."""


def stamped_count(punctuate: bool) -> Topology:
    """Source → a declared key-local processor (a persistent key-value store ``stamped``) → sink, String serdes."""
    from streamproc.engine.serdes import serde_for
    from streamproc.state.store_builders import Stores

    text, long = serde_for("String"), serde_for("Long")
    t = Topology()
    t.add_source("in", "in", key_deserializer=text.deserializer, value_deserializer=text.deserializer)
    t.add_processor("stamp", lambda: _StampedCount(punctuate), "in", key_local=True)
    t.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("stamped"), text, long), "stamp")
    t.add_sink("out", "out", "stamp", key_serializer=text.serializer, value_serializer=text.serializer)
    return t


#: The side-by-side programs and this module's own.
_PROGRAMS = {
    **PROGRAMS,
    "folded-keys-count": folded_keys_count,
    "short-sessions-count": lambda: short_sessions(False),
    "short-sessions-concat": lambda: short_sessions(True),
    "filtered-short-sessions": lambda: short_sessions(False, filtered=True),
    "filtered-short-windows": filtered_short_windows,
    "branched-short-windows": branched_short_windows,
    "peeked-short-windows": peeked_short_windows,
    "merged-short-windows": merged_short_windows,
    "short-join": short_join,
    "short-self-join": lambda: short_join(self_join=True),
    "short-prefixed-join": lambda: short_join(prefixed=True),
    "picky-join": picky_join,
    "declared-processor": lambda: stamped_count(False),
    "declared-processor-punctuating": lambda: stamped_count(True),
}


def program() -> Topology | tuple[Topology, TaskConfig]:
    topology = _PROGRAMS[_CURRENT[0]]()
    if not _CURRENT[1]:
        return topology
    # drops at the poll (negative timestamps, every shard sees them) and at processing (a failing lambda, to the DLQ)
    return topology, TaskConfig(
        default_timestamp_extractor=LogAndSkipOnInvalidTimestamp(),
        processing_exception_handler=LogAndContinueProcessingExceptionHandler(),
        dead_letter_queue_topic="split-dlq",
    )


def _splittable() -> list[tuple[str, int]]:
    cases = []
    for name, build in sorted(_PROGRAMS.items()):
        for subtopology, refusal in sorted(split_refusals(build()).items()):
            if refusal is None:
                cases.append((name, subtopology))
    return cases


CASES = _splittable()

_KEYS = st.sampled_from(["a", "b", "c", "d", "user-17", "", None])  # of 2 shards, "d" and "" are in shard 1
_VALUES = st.sampled_from(["apple", "banana", "cherry", "avocado", "b", "c1", "apricot", "berry", "c1rapple", None])


@st.composite
def _records(draw: st.DrawFn) -> list[tuple[str | None, str | None, int]]:
    """Timestamps mostly rising, some out of order, some late by minutes, some jumps of 90 s (past a window store's
    retention: segments expire), some late by a millisecond less or more than a grace (500 ms, 2 s: whether a
    record's window is still open then depends on the exact stream time); null keys and tombstones."""
    rows = []
    now = 1_000_000
    for _ in range(draw(st.integers(0, 40))):
        move = draw(st.sampled_from([0, 1, 250, 499, 1_000, 90_000, -300, -499, -501, -1_200, -1_999, -2_001,
                                     -600_000, None]))  # fmt: skip
        if move is None:  # negative: dropped at the poll when the handlers continue, else the task fails
            timestamp = -1
        elif move >= 0:
            now += move
            timestamp = now
        else:
            timestamp = max(0, now + move)
        rows.append((draw(_KEYS), draw(_VALUES), timestamp))
    return rows


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _stage(store: LocalObjectStore, topic: str, records: list[RawRecord], start: int) -> int:
    offsets = [r.offset for r in records]
    end = offsets[-1] + 1 if offsets else start
    gaps = sorted(set(range(start, end)) - set(offsets))
    proof = SegmentProof(to_intervals(offsets), {"control": to_intervals(gaps)} if gaps else {})
    stage_range(store, topic, 0, start, end, records, proof, SegmentLimits(max_segment_records=16))
    return end


def _work(root: Path, plan: str, subtopology: int, inputs: tuple[InputRange, ...], restores: tuple[RestoreRange, ...],
          counts: dict[str, int], topology: str = f"{_MODULE}:program") -> TaskWork:  # fmt: skip
    return TaskWork(
        plan_id=plan,
        application_id=APP,
        task_id=f"{subtopology}_0",
        subtopology=subtopology,
        topology=topology,
        store_uri=str(root),
        inputs=inputs,
        restores=restores,
        partition_counts=counts,
        local_dir=str(root.parent),
    )


def _published(root: Path, plan: str, task: str, columnar: bool) -> dict[str, Any]:
    """Every Parquet object of the task, as bytes; with ``columnar`` (the whole task ran over columns, a shard runs
    per record) the DLQ as rows without the stack trace header: the columnar chain calls a failing function from
    its own loop, so its traceback's frames are not the per-record path's (a difference of the columnar path, the
    same against ``STREAMPROC_PER_RECORD_COUNT``, not of the split)."""
    prefix = root / TaskObjects(plan, TaskId.parse(task)).prefix
    objects: dict[str, Any] = {str(p.relative_to(prefix)): p.read_bytes() for p in sorted(prefix.rglob("*.parquet"))}
    if columnar:
        rows = pq.read_table(prefix / "dlq.parquet").to_pylist()
        for row in rows:
            row["headers"] = [h for h in row["headers"] if h["key"] != HEADER_ERRORS_STACKTRACE_NAME]
        objects["dlq.parquet"] = rows
    return objects


def _store_entries(root: Path, plan: str, task: str, scratch: Path, stores: dict[str, Any]) -> dict[str, list[Any]]:
    path = root / TaskObjects(plan, TaskId.parse(task)).stores
    if not path.exists():
        return {}
    target = scratch / f"bundle-{plan}"
    with tarfile.open(fileobj=io.BytesIO(path.read_bytes())) as tar:
        tar.extractall(target, filter="data")
    entries: dict[str, Any] = {}
    for name, kind in stores.items():
        if kind.segmented:  # one RocksDB per segment, <store>/<store>.<segment start>: which exist, and their entries
            segments = sorted((target / name).iterdir()) if (target / name).exists() else []
            entries[name] = {path.name: _entries(name, path, kind) for path in segments}
        else:
            entries[name] = _entries(name, target / "rocksdb" / name, kind)
    return entries


def _entries(name: str, path: Path, kind: Any) -> list[tuple[bytes, bytes]]:
    db = RocksDBKeyValueBytesStore(name, path, kind)
    try:
        return list(db.range(None, None))
    finally:
        db.close()


def _comparable(report: dict[str, Any], columnar: bool) -> dict[str, Any]:
    plan = report["plan_id"]
    volatile = ("stores.tar", "dlq.parquet") if columnar else ("stores.tar",)
    objects = {
        name.replace(plan, "PLAN"): size for name, size in report["objects"].items() if not name.endswith(volatile)
    }
    differ = ("plan_id", "seconds", "objects", "bytes_written", "shards", "skipped", "attempt", "execution")
    return {k: v for k, v in report.items() if k not in differ} | {"objects": objects}


def _run_split(work: TaskWork, count: int, threads: int = 1 + shard_merge.MERGE_THREADS) -> dict[str, Any]:
    for index in range(count):
        run_task(_shard(work, ShardSpec(index, count)))
    return merge_shards(work, count, threads=threads)


def _shard(work: TaskWork, shard: ShardSpec) -> TaskWork:
    return TaskWork(**{**_fields(work), "shard": shard})


def _fields(work: TaskWork) -> dict[str, Any]:
    return {name: getattr(work, name) for name in TaskWork.__dataclass_fields__}


def _outcome(run: Any) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return run(), None
    except StreamprocError as exc:
        return None, type(exc).__name__


@pytest.mark.parametrize(("name", "subtopology"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), count=st.integers(1, 4), restore=st.booleans(), handlers=st.booleans())
def test_a_split_task_publishes_what_the_unsplit_task_publishes(
    tmp_path_factory: pytest.TempPathFactory, name: str, subtopology: int, data: st.DataObject, count: int,
    restore: bool, handlers: bool,
) -> None:  # fmt: skip
    _CURRENT[:] = [name, handlers]
    topology = _PROGRAMS[name]()
    graph = build_processor_topology(topology, subtopology, application_id=APP)
    counts = {n.topic: SINK_PARTITIONS for n in graph.nodes if isinstance(n, SinkNode)}
    definitions = store_definitions(store_builders(topology, subtopology))
    scratch = tmp_path_factory.mktemp("split")
    root = scratch / "store"
    store = LocalObjectStore(root)
    task = f"{subtopology}_0"
    windows = [data.draw(_records()) for _ in range(2 if restore else 1)]
    starts = dict.fromkeys(graph.source_topics, 0)
    restores: tuple[RestoreRange, ...] = ()
    for number, window in enumerate(windows):
        inputs = []
        for topic in graph.source_topics:
            rows = window if topic == graph.source_topics[0] else data.draw(_records())
            start = starts[topic]
            records = [
                ConsumerRecord.raw(topic, 0, start + i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(rows)
            ]
            end = _stage(store, topic, records, start)
            inputs.append(InputRange(topic, 0, start, end, -1))
            starts[topic] = end
        work = _work(root, f"{number:015x}a", subtopology, tuple(inputs), restores, counts)
        if number < len(windows) - 1:  # the earlier window: its changelog records are the next run's restores
            first, error = _outcome(lambda work=work: run_task(work))
            if error is not None:
                return
            restores = _restores(store, root, work, definitions)
            continue
        whole, whole_error = _outcome(lambda work=work: run_task(work))
        split_work = _work(root, f"{number:015x}b", subtopology, tuple(inputs), restores, counts)
        chunk = data.draw(st.sampled_from([1, 3, shard_merge.MERGE_CHUNK_ROWS]), label="merge chunk rows")
        threads = data.draw(st.sampled_from([1, 1 + shard_merge.MERGE_THREADS]), label="merge threads")
        with pytest.MonkeyPatch.context() as patch:  # files merged a chunk at a time write the same bytes
            patch.setattr(shard_merge, "MERGE_CHUNK_ROWS", chunk)
            split, split_error = _outcome(lambda w=split_work, t=threads: _run_split(w, count, t))
        assert split_error == whole_error
        event("the task failed" if whole is None else "compared" if whole["outputs"] else "compared, no outputs")
        if whole is None or split is None:
            return
        if "shards" not in split:  # a shard was unsure of its task-wide times (shard_merge._run_unsplit)
            event("ran whole after its shards")
        columnar = whole["execution"] == "columnar"
        assert _comparable(split, columnar) == _comparable(whole, columnar)
        assert _published(root, split_work.plan_id, task, columnar) == _published(root, work.plan_id, task, columnar)
        kinds = {d.name: d.store_type for d in definitions if d.persistent}
        assert _store_entries(root, split_work.plan_id, task, scratch, kinds) == _store_entries(
            root, work.plan_id, task, scratch, kinds
        )
        assert not list((root / "process" / split_work.plan_id / "shards").rglob("*.parquet"))


def _restores(store: LocalObjectStore, root: Path, work: TaskWork, definitions: Any) -> tuple[RestoreRange, ...]:
    """Stage the changelog records ``work``'s run published as each logged store's changelog partition 0."""
    objects = TaskObjects(work.plan_id, TaskId.parse(work.task_id))
    restores = []
    for definition in definitions:
        if not definition.logged:
            continue
        topic = f"{APP}-{definition.name}-changelog"
        path = root / objects.changelog(topic, 0)
        rows = pq.read_table(path).to_pylist() if path.exists() else []
        records = [ConsumerRecord.raw(topic, 0, i, r["timestamp"], r["key"], r["value"]) for i, r in enumerate(rows)]
        end = _stage(store, topic, records, 0)
        restores.append(RestoreRange(definition.name, topic, 0, 0, end))
    return tuple(restores)


#: Sessions of a 1 s gap and 500 ms grace (store retention 1.5 s). Keys ``a`` and ``b`` fall in different shards of 3
#: (each key its own bucket, and each bucket its own shard: ``owned_input.balanced_owners``).
#: ``a``'s late record at 3.8 s merges with its session at 3 s only if the store's stream time is below 4.5 s: the
#: unsplit task's store has seen ``b``'s records, ``a``'s shard has not.
_LATE_MERGE = [("a", "x", 3_000), ("b", "x", 4_000), ("b", "x", 5_000), ("a", "x", 3_800)]


@pytest.mark.parametrize(
    ("name", "handlers", "rows"),
    [
        # the store's stream time at the late record is 5 s (b's puts): a's session at 3 s is past the fetch bound
        ("short-sessions-count", False, _LATE_MERGE),
        # b's record at 5 s advances the stream time but fails in the aggregator (a null value) and puts nothing:
        # the store's stream time stays 4 s and a's session at 3 s is found; a shard cannot know, so the task runs
        # whole after its shards
        ("short-sessions-concat", True, [*_LATE_MERGE[:2], ("b", None, 5_000), _LATE_MERGE[3]]),
    ],
    ids=["store-time-from-other-keys", "advancing-record-failed"],
)
def test_a_split_session_aggregate_finds_the_sessions_the_unsplit_task_finds(
    tmp_path: Path, name: str, handlers: bool, rows: list[tuple[str, str | None, int]]
) -> None:
    """Which sessions a merge finds depends on the session store's stream time, which other keys' records advance
    (``KStreamSessionWindowAggregateProcessor.task_stream_time_before``)."""
    _CURRENT[:] = [name, handlers]
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    records = [ConsumerRecord.raw("in", 0, i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(rows)]
    inputs = (InputRange("in", 0, 0, _stage(store, "in", records, 0), -1),)
    whole = run_task(_work(root, "000000000000000a", 0, inputs, (), {"out": SINK_PARTITIONS}))
    split = _run_split(_work(root, "000000000000000b", 0, inputs, (), {"out": SINK_PARTITIONS}), 3)
    assert ("shards" in split) is (not handlers)
    assert _comparable(split, False) == _comparable(whole, False)
    assert _published(root, "000000000000000b", "0_0", False) == _published(root, "000000000000000a", "0_0", False)


_KEYS_OF_SHARDS = ("a", "b", "c", "d", "user-17")


def _whole_as_split(tmp_path: Path, staged: dict[str, list[tuple[str, str | None, int]]], count: int) -> dict[str, Any]:
    """Stage each topic's rows (key, value, timestamp; offsets from 0), run the task whole and as ``count`` key
    shards merged, check that both publish the same bytes, report the same and leave the same store entries, and
    return the whole run's report."""
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    inputs = []
    for topic, rows in staged.items():
        records = [ConsumerRecord.raw(topic, 0, i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(rows)]
        inputs.append(InputRange(topic, 0, 0, _stage(store, topic, records, 0), -1))
    counts = {"out": SINK_PARTITIONS, "rest": SINK_PARTITIONS}
    whole = run_task(_work(root, "000000000000000a", 0, tuple(inputs), (), counts))
    split = _run_split(_work(root, "000000000000000b", 0, tuple(inputs), (), counts), count)
    assert split["shards"] == count
    assert _comparable(split, False) == _comparable(whole, False)
    assert _published(root, "000000000000000b", "0_0", False) == _published(root, "000000000000000a", "0_0", False)
    definitions = store_definitions(store_builders(_PROGRAMS[_CURRENT[0]](), 0))
    kinds = {d.name: d.store_type for d in definitions if d.persistent}
    entries = _store_entries(root, "000000000000000a", "0_0", tmp_path, kinds)
    assert _store_entries(root, "000000000000000b", "0_0", tmp_path, kinds) == entries
    return whole


@pytest.mark.parametrize("count", [2, 3])
def test_a_split_task_whose_peek_failed_in_the_owner_runs_whole(tmp_path: Path, count: int) -> None:
    """Under a continuing processing exception handler, user-17's ``c1rapple`` at 10 s fails the peek's action in
    its owner alone and stops there, so the count's stream time stays at 8 s; the other shards, which skip the action,
    would count it, and expire the records at 7.4 s. The owner watches the peek (``stream_time_prefix
    .watched_nodes``) and says so, and the merge runs the task whole."""
    _CURRENT[:] = ["peeked-short-windows", True]
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    rows: list[tuple[str, str | None, int]] = [("z", "apple", -1), ("user-17", "c1rapple", 10_000)]
    rows += [(key, "apple", 7_400) for key in _KEYS_OF_SHARDS if key != "user-17"]
    rows += [("a", "apple", 8_000)]
    records = [ConsumerRecord.raw("in", 0, i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(rows)]
    inputs = (InputRange("in", 0, 0, _stage(store, "in", records, 0), -1),)
    whole = run_task(_work(root, "000000000000000a", 0, inputs, (), {"out": SINK_PARTITIONS}))
    split = _run_split(_work(root, "000000000000000b", 0, inputs, (), {"out": SINK_PARTITIONS}), count)
    assert "shards" not in split
    assert _comparable(split, False) == _comparable(whole, False)
    assert _published(root, "000000000000000b", "0_0", False) == _published(root, "000000000000000a", "0_0", False)
    assert sum(whole["outputs"].values()) == 5  # nothing at 7.4 s expired


@pytest.mark.parametrize("count", [2, 3])
def test_a_split_join_whose_window_refused_a_value_in_the_owner_runs_whole(tmp_path: Path, count: int) -> None:
    """Under a continuing handler, a's ``xrapple`` gives the join window ``x``, whose serializer raises a
    ``ClassCastError``: handled at the flatMapValues, so ``apple`` is never put in a's owner, while the other shards,
    which count a's puts from the prefix's values, would count it (and number d's put after it one higher). The
    window's parent is watched (``stream_time_prefix.watched_nodes``): the task runs whole after its shards."""
    _CURRENT[:] = ["picky-join", True]
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    staged = {"in": [("a", "xrapple", 1_000), ("d", "v", 1_500)], "in-2": [("d", "w", 1_600), ("a", "y", 1_100)]}
    inputs = []
    for topic, rows in staged.items():
        records = [ConsumerRecord.raw(topic, 0, i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(rows)]
        inputs.append(InputRange(topic, 0, 0, _stage(store, topic, records, 0), -1))
    whole = run_task(_work(root, "000000000000000a", 0, tuple(inputs), (), {"out": SINK_PARTITIONS}))
    split = _run_split(_work(root, "000000000000000b", 0, tuple(inputs), (), {"out": SINK_PARTITIONS}), count)
    assert "shards" not in split
    assert _comparable(split, False) == _comparable(whole, False)
    assert _published(root, "000000000000000b", "0_0", False) == _published(root, "000000000000000a", "0_0", False)
    assert sum(whole["outputs"].values()) == 1  # d's v/w; a's y finds no apple


@pytest.mark.parametrize("count", [2, 3])
def test_a_split_join_fetches_and_numbers_by_the_puts_of_every_key(tmp_path: Path, count: int) -> None:
    """A join's fetch of the other side's window store is bounded by that store's stream time, which every key's
    puts advance: d's left record at 13 s makes a's at 10 s too old for a's right record at 11 s (13 s - 2.5 s
    retention + 1 ms), though within 1 s of it; and d's null value before puts nothing into the left store but moves
    its change-logging seqnum, so a's store and changelog keys are numbered apart. a and d are in different shards of 2
    and 3: each counts the other's puts at its gate (``WindowStore.observe_put``)."""
    _CURRENT[:] = ["short-join", False]
    staged = {
        "in": [("d", None, 9_000), ("a", "x", 10_000), ("d", "z", 13_000)],
        "in-2": [("d", "w", 13_100), ("a", "y", 11_000)],
    }
    whole = _whole_as_split(tmp_path, staged, count)
    assert sum(whole["outputs"].values()) == 1  # z/w; a's y finds no x
    assert whole["changelogs"] == {
        f"{APP}-KSTREAM-JOINTHIS-0000000004-store-changelog+0": 3,
        f"{APP}-KSTREAM-JOINOTHER-0000000005-store-changelog+0": 2,
    }


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize(
    ("name", "handlers", "dropped_value"),
    [
        ("filtered-short-windows", False, "banana"),
        ("filtered-short-windows", True, "banana"),
        ("filtered-short-windows", True, None),
        ("branched-short-windows", False, "berry"),
        ("branched-short-windows", True, "berry"),
        ("branched-short-windows", True, None),
        ("branched-short-windows", True, "c1rapple"),
        ("peeked-short-windows", False, "banana"),
    ],
    ids=[
        "filtered-out",
        "filtered-out-gated",
        "failing-filter-gated",
        "branched-out",
        "branched-out-gated",
        "failing-flat-map-gated",
        "class-cast-to-parent-gated",
        "peeked-filtered-out",
    ],
)
def test_a_split_filtered_windowed_count_keeps_the_stream_time_of_what_passes_the_filter(
    tmp_path: Path, count: int, name: str, handlers: bool, dropped_value: str | None
) -> None:
    """Every key's record at 10 s reaches no aggregate: it stops at the filter (a ``b`` value, or a null one, on
    which the filter fails and the continuing handler drops it), or behind the flatMapValues and split (``berry``'s
    values all go to the default branch; a null value fails the flatMapValues; ``c1rapple``'s first value ``c1``
    makes the split raise a ``ClassCastError``, which its parent handles, so ``apple`` is never forwarded). The
    aggregate's stream time stays below 8 s and no window of the records at 7.4 and 8 s expires. A shard that
    advanced it by the other shards' records that never reach the aggregate would drop them as expired (500 ms
    grace). The last record, at 6.5 s, expires by the 8 s of the record of its own key before it (its own shard's),
    not by the 7.4 s of the others. With the handlers, a first record with a negative timestamp (dropped at the
    poll) makes the shards read every record; without, they read only their own."""
    _CURRENT[:] = [name, handlers]
    rows: list[tuple[str, str | None, int]] = [("z", "apple", -1)] if handlers else []
    rows += [(key, dropped_value, 10_000) for key in _KEYS_OF_SHARDS]
    rows += [(key, "apple", 7_400) for key in _KEYS_OF_SHARDS if key != "a"]
    rows += [("a", "apple", 8_000), ("a", "avocado", 6_500)]
    whole = _whole_as_split(tmp_path, {"in": rows}, count)
    counted = sum(n for partition, n in whole["outputs"].items() if partition.startswith("out+"))
    assert counted == len(_KEYS_OF_SHARDS)  # the window at 6.5 s expired


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize(
    ("name", "handlers"),
    [
        ("filtered-short-windows", False),
        ("filtered-short-windows", True),
        ("branched-short-windows", False),
        ("branched-short-windows", True),
        ("peeked-short-windows", False),
    ],
)
def test_a_split_filtered_windowed_count_expires_by_what_other_shards_pass_through(
    tmp_path: Path, count: int, name: str, handlers: bool
) -> None:
    """The other direction of the test above: ``d``'s ``apple`` at 10 s passes the prefix and reaches the aggregate,
    so ``a``'s record at 8 s comes after its window closed (1 s windows, 500 ms grace) and is dropped as late.
    ``a``'s shard (not ``d``'s, of 2 or 3) knows it only by running the prefix over ``d``'s record; one that skipped
    it, or found that it stops (a peek taken for a drop), would count ``a``'s."""
    _CURRENT[:] = [name, handlers]
    rows: list[tuple[str, str | None, int]] = [("z", "apple", -1)] if handlers else []
    rows += [("d", "apple", 10_000), ("a", "apple", 8_000), ("a", "apricot", 10_100)]
    whole = _whole_as_split(tmp_path, {"in": rows}, count)
    counted = sum(n for partition, n in whole["outputs"].items() if partition.startswith("out+"))
    assert counted == 2  # d's and a's at 10.1 s: a's at 8 s was late


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize(
    ("staged", "late"),
    [
        ({"in": [("a", "banana", 11_000), ("a", "apple", 8_000)], "in-2": [("d", "apple", 10_000)]}, True),
        ({"in": [("a", "banana", 11_000), ("a", "apple", 8_000)], "in-2": [("d", "cherry", 10_000)]}, False),
        ({"in": [("d", "banana", 11_000)], "in-2": [("a", "cherry", 11_500), ("a", "apple", 9_900)]}, False),
    ],
    ids=["in-2-passes", "in-2-stops", "in-stops"],
)
def test_a_split_count_of_two_merged_topics_reaches_by_each_records_own_prefix(
    tmp_path: Path, count: int, staged: dict[str, list[tuple[str, str | None, int]]], late: bool
) -> None:
    """Two topics merged, each behind its own prefix (``in``: a filter dropping ``b`` values; ``in-2``: a value
    mapper and a filter dropping ``c`` values). The task takes the partition with the lower head timestamp first.

    - ``d``'s record at 10 s on ``in-2`` comes first; only if it passes (``apple``, not ``cherry``) is ``a``'s record
      at 8 s on ``in`` late (after ``a``'s own ``banana`` at 11 s, which ``in``'s filter drops). ``in``'s prefix
      would pass ``cherry``.
    - ``d``'s ``banana`` at 11 s on ``in`` stops at ``in``'s filter, and ``a``'s ``cherry`` at 11.5 s at ``in-2``'s,
      so ``a``'s record at 9.9 s is on time. ``in-2``'s prefix would pass ``banana``, making it late.

    A shard that ran another source's prefix, or none, would count or drop ``a``'s record unlike the task."""
    _CURRENT[:] = ["merged-short-windows", False]
    whole = _whole_as_split(tmp_path, dict(staged), count)
    assert whole["dropped"] == ({"expired_window": 1} if late else {})


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize(
    ("name", "handlers", "negative"),
    [
        ("group-by-key-reduce-named", False, False),
        ("group-by-key-reduce-named", True, True),
        ("table-table-joins", False, False),
        ("filtered-short-windows", False, False),
        ("filtered-short-windows", True, True),
        ("short-sessions-count", False, False),
        ("short-sessions-count", True, True),
        ("short-join", False, False),
        ("short-self-join", False, False),
    ],
    ids=[
        "owned-input",
        "gated",
        "two-inputs-gated",
        "window-store",
        "window-store-gated",
        "session-store",
        "session-store-gated",
        "join-window-stores",
        "self-join-window-stores",
    ],
)
def test_a_shard_but_the_first_restores_only_the_keys_it_owns(
    tmp_path: Path, count: int, name: str, handlers: bool, negative: bool
) -> None:
    """A second run restores every key-value, window or session store from the first run's changelog. Shard 0
    restores all of it (its stores are the bundle's base); every other shard only its own keys' records, by the rule
    that routes its records: balanced buckets where it reads only its own rows, ``murmur2 mod K`` where it reads
    every row (a negative timestamp, dropped at the poll; two input topics; a join's window stores). The second
    run's records fall in the first run's windows and sessions (1 s windows, a 1 s gap, joins within 1 s), so each
    adds to what its shard restored. The split
    still publishes what the whole task does, so no shard lacked a key it processed, nor read a window or session
    its restore dropped."""
    _CURRENT[:] = [name, handlers]
    topology = _PROGRAMS[name]()
    graph = build_processor_topology(topology, 0, application_id=APP)
    counts = {n.topic: SINK_PARTITIONS for n in graph.nodes if isinstance(n, SinkNode)}
    definitions = store_definitions(store_builders(topology, 0))
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    keys = [*_KEYS_OF_SHARDS, *(f"user-{n}" for n in range(40))]
    windows = [
        [(key, f"v{n}", 1_000 + n) for n, key in enumerate(keys * 2)],
        [(key, f"w{n}", 1_050 + n) for n, key in enumerate(keys[::3])] + ([("a", "late", -1)] if negative else []),
    ]
    restores: tuple[RestoreRange, ...] = ()
    for number, rows in enumerate(windows):
        inputs = []
        for topic in graph.source_topics:
            records = [ConsumerRecord.raw(topic, 0, 100 * number + i, ts, _encode(k), _encode(v))
                       for i, (k, v, ts) in enumerate(rows)]  # fmt: skip
            inputs.append(InputRange(topic, 0, 100 * number, _stage(store, topic, records, 100 * number), -1))
        work = _work(root, f"{number:015x}a", 0, tuple(inputs), restores, counts)
        whole = run_task(work)
        if number == 0:  # its changelog records are the next run's restores
            restores = _restores(store, root, work, definitions)
    split_work = _work(root, "000000000000001b", 0, tuple(inputs), restores, counts)
    shards = [run_task(_shard(split_work, ShardSpec(index, count))) for index in range(count)]
    split = merge_shards(split_work, count)
    assert _comparable(split, False) == _comparable(whole, False)
    assert _published(root, split_work.plan_id, "0_0", False) == _published(root, "000000000000001a", "0_0", False)
    kinds = {d.name: d.store_type for d in definitions if d.persistent}
    assert _store_entries(root, split_work.plan_id, "0_0", tmp_path, kinds) == _store_entries(
        root, "000000000000001a", "0_0", tmp_path, kinds
    )
    logged = {d.name for d in definitions if d.logged}
    assert logged and set(whole["restored"]) == logged
    assert shards[0]["restored"] == whole["restored"] == split["restored"]
    for store_name, records in whole["restored"].items():
        others = [report["restored"][store_name] for report in shards[1:]]
        assert all(0 < restored < records for restored in others), (store_name, records, others)
        assert sum(others) < records  # disjoint keys, shard 0's among them


@pytest.mark.parametrize("threads", [1, 1 + shard_merge.MERGE_THREADS])
@pytest.mark.parametrize("lost", ["output", "changelog", "stores"])
def test_a_merge_that_fails_publishes_no_report_and_the_next_attempt_merges(
    tmp_path: Path, lost: str, threads: int
) -> None:
    """The merge works on outputs, changelogs and the store bundle side by side or in turn (``merge_shards``): a
    failure in any of them is the merge's failure, named, with no task report published, and the shards' objects
    stay for the next attempt, which merges what the unsplit task publishes."""
    _CURRENT[:] = ["short-sessions-count", False]
    root = tmp_path / "store"
    store = LocalObjectStore(root)
    records = [ConsumerRecord.raw("in", 0, i, ts, _encode(k), _encode(v)) for i, (k, v, ts) in enumerate(_LATE_MERGE)]
    inputs = (InputRange("in", 0, 0, _stage(store, "in", records, 0), -1),)
    counts = {"out": SINK_PARTITIONS}
    whole = run_task(_work(root, "000000000000000a", 0, inputs, (), counts))
    work = _work(root, "000000000000000b", 0, inputs, (), counts)
    for index in range(2):
        run_task(_shard(work, ShardSpec(index, 2)))
    shard = ShardObjects(work.plan_id, TaskId.parse(work.task_id), ShardSpec(0, 2))
    names = {
        "output": next(n for n in store.list(shard.prefix) if "/outputs/" in n),
        "changelog": next(n for n in store.list(shard.prefix) if "/changelogs/" in n),
        "stores": shard.stores,
    }
    kept = store.get(names[lost])
    store.delete(names[lost])
    with pytest.raises(ObjectNotFoundError, match=re.escape(names[lost])):
        merge_shards(work, 2, threads=threads)
    assert not store.exists(TaskObjects(work.plan_id, TaskId.parse(work.task_id)).report)
    assert store.exists(shard.report)
    store.put(names[lost], kept)
    merged = merge_shards(work, 2, threads=threads)
    assert merged["shards"] == 2
    assert _comparable(merged, False) == _comparable(whole, False)
    assert _published(root, work.plan_id, "0_0", False) == _published(root, "000000000000000a", "0_0", False)


#: Programs the columnar count takes whole (``spark/columnar/count.py``): a count, user aggregates
#: and reduces after a chain that drops null values (tombstones, a raising aggregator) and a chain to a sink.
COLUMNAR_PROGRAMS = [
    "tests.unit.spark.test_columnar_count:count_logged",
    "tests.unit.spark.test_columnar_aggregate:sum_lengths_after_a_chain",
    "tests.unit.spark.test_columnar_aggregate:tombstones_after_a_chain",
    "tests.unit.spark.test_columnar_aggregate:reduce_lengths",
    "tests.unit.spark.test_columnar_aggregate:raises",
    f"{_MODULE}:chain_to_sink",
]


def _program(spec: str) -> Any:
    """The topology factory ``module:function`` names (the task runner loads the same)."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


_BYTE_KEYS = st.sampled_from([b"a", b"b", b"user-000017", b"", b"\x00\xff", b"k" * 40, b"c", b"d"])
_BYTE_VALUES = st.sampled_from([b"x", b"\x02yz", b"abc", b"four", b"", b"\x01", b"seven77"])
_BYTE_ROWS = st.lists(st.tuples(_BYTE_KEYS, _BYTE_VALUES, st.integers(0, 5_000)), max_size=60)


def chain_to_sink() -> Topology:
    """A stateless chain to a sink (no store: its records go to shards round-robin by position)."""
    from streamproc.dsl import Consumed, Produced, StreamsBuilder
    from streamproc.engine.serdes import serde_for

    raw = serde_for("ByteArray")
    b = StreamsBuilder()
    b.stream("clicks", Consumed.with_(raw, raw)).filter(lambda k, v: v != b"x").map_values(lambda v: v + b"!").to(
        "out", Produced.with_(raw, raw)
    )
    return b.build()


# imported now: a test module imported inside a running @given would nest its own
_PROGRAM_MODULES = [importlib.import_module(p.partition(":")[0]) for p in COLUMNAR_PROGRAMS if ":chain_" not in p]


@pytest.mark.parametrize("program", COLUMNAR_PROGRAMS, ids=[p.rpartition(":")[2] for p in COLUMNAR_PROGRAMS])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    windows=st.lists(_BYTE_ROWS, min_size=1, max_size=2), count=st.integers(1, 4), chunk=st.sampled_from([1, 3, 256])
)
def test_a_columnar_task_split_publishes_what_it_publishes_whole(
    tmp_path_factory: pytest.TempPathFactory, program: str, windows: list[list[tuple[bytes, bytes, int]]], count: int,
    chunk: int,
) -> None:  # fmt: skip
    topology = _program(program)()
    assert split_refusals(topology) == {0: None}
    graph = build_processor_topology(topology, 0, application_id=APP)
    counts = {n.topic: SINK_PARTITIONS for n in graph.nodes if isinstance(n, SinkNode)}
    definitions = store_definitions(store_builders(topology, 0))
    scratch = tmp_path_factory.mktemp("split-columnar")
    root = scratch / "store"
    store = LocalObjectStore(root)
    (topic,) = graph.source_topics
    before = columnar_count.CHUNK_ROWS
    columnar_count.CHUNK_ROWS = chunk
    try:
        start = 0
        restores: tuple[RestoreRange, ...] = ()
        for number, window in enumerate(windows):
            records = [ConsumerRecord.raw(topic, 0, start + i, ts, k, v) for i, (k, v, ts) in enumerate(window)]
            end = _stage(store, topic, records, start)
            inputs = (InputRange(topic, 0, start, end, -1),)
            start = end
            work = _work(root, f"{number:015x}a", 0, inputs, restores, counts, program)
            whole, whole_error = _outcome(lambda work=work: run_task(work))
            if number < len(windows) - 1:  # the earlier window: its changelog records are the next run's restores
                if whole_error is not None:
                    return
                restores = _restores(store, root, work, definitions)
                continue
            split_work = _work(root, f"{number:015x}b", 0, inputs, restores, counts, program)
            shards = [
                _outcome(lambda w=split_work, i=i: run_task(_shard(w, ShardSpec(i, count)))) for i in range(count)
            ]
            split, split_error = _outcome(lambda w=split_work: merge_shards(w, count))
            if whole_error is not None:  # the shard that owns the first failing record fails as the whole task did
                assert whole_error in {error for _report, error in shards}
                assert split_error is not None
                return
            event(f"compared, {count} shards" if whole and whole["outputs"] else "compared, no outputs")
            assert whole is not None and split is not None, split_error
            assert whole["execution"] == "columnar"
            assert all(report is not None and report["execution"] == "columnar" for report, _error in shards)
            assert _comparable(split, False) == _comparable(whole, False)
            assert _published(root, split_work.plan_id, "0_0", False) == _published(root, work.plan_id, "0_0", False)
            kinds = {d.name: d.store_type for d in definitions if d.persistent}
            assert _store_entries(root, split_work.plan_id, "0_0", scratch, kinds) == _store_entries(
                root, work.plan_id, "0_0", scratch, kinds
            )
    finally:
        columnar_count.CHUNK_ROWS = before
