"""Which sub-topologies may run one task's records as K key shards, and why the others may not (issue #29).

A task's records, once in ``PartitionGroup`` order, can be split by key into K shards processed in parallel (each in
the task's order) only where every store is read and written at the key of the record being processed: then no
shard ever needs another shard's state, and the shards' stores have disjoint keys. This module decides that per
sub-topology, from the built :class:`~streamproc.engine.topology.Topology` alone (the Python objects, not the
``describe()`` text), and says what a shard needs that is *task-wide*: values that depend on every key's records
and so must be computed once before the split (a running maximum over positions) or combined at the merge.

How a processor says what it does
    The DSL's processors declare it themselves: each processor class has ``key_locality() -> KeyLocality`` (the
    module beside the code that knows what the processor reads and writes; the engine imports nothing from the
    DSL). A Processor-API processor declares nothing, so its sub-topology runs unsplit, unless the program gives
    the user's promise when it adds it: ``Topology.add_processor(..., key_local=True)`` or
    ``KStream.process(..., key_local=True)`` / ``process_values(..., key_local=True)``. The promise
    (:data:`PROCESSOR_API_KEY_LOCAL`) is: the processor reads and writes its stores only at the key of the record it
    is processing, keeps nothing in the processor object from one record to the next, forwards records only under
    that key, schedules no punctuation and never reads the wall clock (``current_system_time_ms``). It may read the
    task's stream time (``current_stream_time_ms``): that is precomputed. streamproc cannot check the promise
    before running; the executor checks what it can (a punctuation scheduled, see docs/split.md).

Anything unknown runs unsplit (the safe default): a processor whose class does not declare, a supplier that fails.

Global stores
    A global store never makes a sub-topology unsplittable, at any key it is read: Kafka Streams hands a stream task
    only a read-only view of it (``ProcessorContextImpl#getStateStore`` → ``getReadOnlyStore``, 4.2), and
    streamproc bootstraps it to the plan's end before any task runs (``spark/global_stores.py``), so within a run
    it is a constant, the same in every shard; it is not task state and is never in a task's store bundle. (Live,
    the global thread may update it while a task runs; a batch already sees it as of the plan, split or not.)

Why a split at the source's key is a split at every store's key
    In the DSL an operation that may change the key (``map``, ``selectKey``, ``flatMap``, ``groupBy``, ``process``)
    makes the next stateful operation read through a repartition topic, which starts a new sub-topology; so inside
    one sub-topology every store is keyed by the key the task's records arrive with (or a ``Windowed`` key made from
    it). The analysis does not rely on that alone: a processor that may change the key (``changes_key``) upstream of
    a stateful processor in the same sub-topology (``selectKey`` then ``process``, for one) makes it unsplittable.

Task-wide times (:class:`TaskWideValue`)
    The DSL's windowed processors do not read the task's stream time: each keeps its *own* ``observedStreamTime``,
    the running maximum of the timestamps of the records that reached *that* processor
    (``AbstractKStreamTimeWindowAggregateProcessor#updateObservedStreamTime``, ``KStreamSessionWindowAggregate``'s
    own field, 4.2). And every segmented store (window, session, join window) keeps its own ``observedStreamTime``,
    the maximum timestamp put into it across all keys, which bounds what a fetch returns
    (``AbstractRocksDBSegmentedBytesStore#getActualFrom``), which puts are dropped as expired and which segments are
    deleted. A shard sees only its keys' records, so these are computed before the split from the records in
    task order: cheaply when only one-to-one processors lie between the sources and the processor
    (:attr:`Forwarding.ONE_TO_ONE`), by running the stateless processors in between first when there are some
    (:attr:`TaskWideValue.prefix`), and not at all when a stateful processor decides which records get there (then
    the sub-topology runs unsplit).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from streamproc.engine.topology import ProcessorNodeSpec, SinkNodeSpec, SourceNodeSpec, Topology

if TYPE_CHECKING:
    from streamproc.engine.stream_task import StreamTask

logger = logging.getLogger(__name__)


class Forwarding(enum.Enum):
    """What decides the records a processor forwards: how far a task-wide time can be known before the split."""

    #: Every record with a non-null key goes on with its key and timestamp unchanged, one for one, and no user code
    #: runs (a merge, a branch's pass-through, ``toStream``, a table source, a join's window processor).
    ONE_TO_ONE = "one-to-one"
    #: User code per record, from that record alone (``filter``, ``mapValues``, ``flatMap``, ``branch``, ...):
    #: running it over the task's records before the split tells which records go on.
    PER_RECORD = "per-record"
    #: What it forwards depends on its stores: only the shards know.
    STATEFUL = "stateful"


class TaskWideKind(enum.Enum):
    """The kinds of task-wide time a key-local processor reads."""

    #: A DSL processor's own ``observedStreamTime``: the running maximum over the records that reached it.
    PROCESSOR_STREAM_TIME = "processor stream time"
    #: A segmented store's ``observedStreamTime``: the maximum timestamp put into it, across all keys.
    STORE_STREAM_TIME = "store stream time"
    #: The task's stream time (``PartitionGroup``), what ``ProcessorContext#current_stream_time_ms`` returns.
    TASK_STREAM_TIME = "task stream time"
    #: Every put into a window store that keeps duplicates (a stream-stream join's): its ``observedStreamTime`` and
    #: its two seqnums (``RocksDBWindowStore``'s and ``ChangeLoggingWindowBytesStore``'s), each advanced by every
    #: key's puts; the seqnums are written into the store and changelog keys.
    STORE_PUTS = "store puts"


@dataclass(frozen=True, slots=True)
class StreamTimeNeed:
    """A task-wide time a processor reads, as the processor declares it (the analysis binds its node name).

    ``per_record``: a shard needs the value at every record's position; otherwise only the merge needs it (from the
    shards' final values), e.g. to delete the segments the unsplit task would have deleted.
    """

    kind: TaskWideKind
    rule: str
    store: str | None = None
    per_record: bool = True


#: A DSL windowed processor's own ``observedStreamTime`` (``AbstractKStreamTimeWindowAggregateProcessor``,
#: ``KStreamSessionWindowAggregate``): updated after the null-key check, so only keyed records advance it.
OBSERVED_STREAM_TIME = StreamTimeNeed(
    TaskWideKind.PROCESSOR_STREAM_TIME,
    "running maximum of the timestamps of the records with a non-null key that reach it",
)


@dataclass(frozen=True, slots=True)
class KeyLocality:
    """What a processor declares about the keys it touches (see the module docstring)."""

    key_local: bool
    forwarding: Forwarding
    #: why not, when not key-local (names the store or the behaviour)
    reason: str = ""
    #: the records it forwards may carry another key than the one it processed
    changes_key: bool = False
    needs: tuple[StreamTimeNeed, ...] = ()

    @classmethod
    def one_to_one(cls) -> KeyLocality:
        return cls(True, Forwarding.ONE_TO_ONE)

    @classmethod
    def per_record(cls, *, changes_key: bool = False) -> KeyLocality:
        return cls(True, Forwarding.PER_RECORD, changes_key=changes_key)

    @classmethod
    def stateful(cls, *needs: StreamTimeNeed) -> KeyLocality:
        return cls(True, Forwarding.STATEFUL, needs=needs)

    @classmethod
    def not_key_local(cls, reason: str) -> KeyLocality:
        return cls(False, Forwarding.STATEFUL, reason=reason)


@runtime_checkable
class DeclaresKeyLocality(Protocol):
    """A processor that says what it touches (the DSL's processors)."""

    def key_locality(self) -> KeyLocality: ...


#: The Processor-API promise ``add_processor(..., key_local=True)`` stands for (module docstring): key-local, what it
#: forwards unknown (so no processor stream time downstream of it can be precomputed), the task's stream time read.
PROCESSOR_API_KEY_LOCAL = KeyLocality.stateful(
    StreamTimeNeed(
        TaskWideKind.TASK_STREAM_TIME,
        "the running maximum of the timestamps of the task's records in processing order (PartitionGroup's stream "
        "time, current_stream_time_ms)",
    )
)


@dataclass(frozen=True, slots=True)
class TaskWideValue:
    """A task-wide time a shard of a sub-topology needs: which, read by which processor, computed how.

    ``processor`` is the processor whose input records define the value; ``prefix`` lists the stateless processors
    between the sources and it that must run over the task's records before the split to know which records reach
    it (empty: the source records in task order tell).
    """

    kind: TaskWideKind
    processor: str
    rule: str
    store: str | None = None
    per_record: bool = True
    prefix: tuple[str, ...] = ()

    def describe(self) -> str:
        what = f"{self.kind.value} of {self.store}" if self.store is not None else f"{self.kind.value}"
        text = f"{what} (at {self.processor}): {self.rule}"
        if not self.per_record:
            text += "; needed at the merge only"
        if self.prefix:
            text += f"; run {', '.join(self.prefix)} before the split to know which records reach {self.processor}"
        return text


@dataclass(frozen=True, slots=True)
class SplitDecision:
    """Whether one sub-topology's tasks may be split into key shards; ``reason`` says why (or why not)."""

    subtopology: int
    splittable: bool
    reason: str
    #: what the shards need computed before the split (or combined at the merge), when splittable
    task_wide_values: tuple[TaskWideValue, ...] = ()


def declared_key_locality(topology: Topology, name: str) -> KeyLocality | str:
    """A processor node's :class:`KeyLocality`: the program's promise, else the processor's own declaration; or the
    reason it has none (text naming the processor)."""
    spec = topology.node(name)
    if not isinstance(spec, ProcessorNodeSpec):
        raise ValueError(f"{name} is not a processor node")
    if topology.declared_key_local(name):
        return PROCESSOR_API_KEY_LOCAL
    try:
        processor = spec.supplier()
    except Exception as exc:  # a supplier that cannot make a processor here declares nothing
        return f"processor {name}: its supplier failed ({exc}), so what it touches is unknown"
    declare = getattr(processor, "key_locality", None)
    if callable(declare):
        locality = declare()
        if isinstance(locality, KeyLocality):
            return locality
    kind = f"{type(processor).__module__}.{type(processor).__qualname__}"
    return (
        f"Processor API processor {name} ({kind}): streamproc cannot see which keys its code reads and writes, whether "
        "it keeps state between records, schedules punctuations or reads the wall clock; if it touches state only at "
        "the key of the record it processes, declare it key-local (add_processor(..., key_local=True), "
        "KStream.process(..., key_local=True))"
    )


def split_decisions(topology: Topology) -> tuple[SplitDecision, ...]:
    """One :class:`SplitDecision` per sub-topology that makes tasks (global stores make none), by id."""
    groups = topology.node_groups()
    global_ids = topology.global_node_groups()
    return tuple(decide(topology, gid, names) for gid, names in sorted(groups.items()) if gid not in global_ids)


def decide(topology: Topology, subtopology: int, names: Sequence[str]) -> SplitDecision:
    """The decision for one sub-topology (``names``: its nodes in insertion order)."""
    blockers: list[str] = []
    localities: dict[str, KeyLocality] = {}
    parents: dict[str, tuple[str, ...]] = {}
    for name in names:
        spec = topology.node(name)
        if isinstance(spec, SourceNodeSpec):
            # a pandera value_schema may drop a record at the source (the processing handler decides)
            localities[name] = KeyLocality.per_record() if spec.value_schema is not None else KeyLocality.one_to_one()
            continue
        parents[name] = spec.predecessors
        if isinstance(spec, SinkNodeSpec):
            continue
        declared = declared_key_locality(topology, name)
        if isinstance(declared, str):
            blockers.append(declared)
            continue
        localities[name] = declared
        if not declared.key_local:
            blockers.append(f"{name}: {declared.reason}")
    processors = [n for n in names if isinstance(topology.node(n), ProcessorNodeSpec) and n in localities]
    values: list[TaskWideValue] = []
    for name in processors:
        locality = localities[name]
        stores = topology.stores_of(name)
        if not locality.key_local or not (stores or locality.needs or locality.forwarding is Forwarding.STATEFUL):
            continue
        upstream = [n for n in names if n in _ancestors(name, parents)]
        changers = [n for n in upstream if localities.get(n, _UNKNOWN).changes_key]
        if changers:
            blockers.append(
                f"{name}: its stores are keyed by the key its records carry, which {', '.join(changers)} may have "
                "changed upstream in the same sub-topology, so a split by the task's record keys would not be a "
                "split by its store keys"
            )
        for need in locality.needs:
            value, blocker = _bind(name, need, upstream, localities)
            values.append(value)
            if blocker is not None:
                blockers.append(blocker)
    if blockers:
        return SplitDecision(subtopology, False, "; ".join(blockers))
    all_stores = sorted({s for n in processors for s in topology.stores_of(n)})
    if all_stores:
        reason = (
            f"key-local: every store ({', '.join(all_stores)}) is read and written at the key of the record processed"
        )
    else:
        reason = "key-local: no store and no processor state"
    return SplitDecision(subtopology, True, reason, tuple(values))


_UNKNOWN = KeyLocality.not_key_local("unknown")


def _ancestors(name: str, parents: Mapping[str, tuple[str, ...]]) -> set[str]:
    seen: set[str] = set()
    stack = list(parents.get(name, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(parents.get(node, ()))
    return seen


def _bind(
    name: str, need: StreamTimeNeed, upstream: Sequence[str], localities: Mapping[str, KeyLocality]
) -> tuple[TaskWideValue, str | None]:
    """The need of processor ``name`` as a :class:`TaskWideValue`, and why it cannot be precomputed, if it cannot.

    The task's stream time and merge-only values do not depend on which records reach the processor; the others do.
    """
    if need.kind is TaskWideKind.TASK_STREAM_TIME or not need.per_record:
        return TaskWideValue(need.kind, name, need.rule, need.store, need.per_record), None
    stateful = [n for n in upstream if localities.get(n, _UNKNOWN).forwarding is Forwarding.STATEFUL]
    prefix = tuple(n for n in upstream if localities.get(n, _UNKNOWN).forwarding is Forwarding.PER_RECORD)
    value = TaskWideValue(need.kind, name, need.rule, need.store, need.per_record, prefix)
    if not stateful:
        return value, None
    what = f"the {need.kind.value} of {need.store}" if need.store is not None else f"the {need.kind.value}"
    return value, (
        f"{name}: {what} it reads is task-wide and cannot be computed before the split: which records reach {name} "
        f"depends on the state of {', '.join(stateful)}"
    )


def unsplit_message(decision: SplitDecision) -> str:
    """The log line for a sub-topology whose tasks run unsplit (the executor logs it once per sub-topology)."""
    return f"sub-topology {decision.subtopology} runs unsplit (one shard per task): {decision.reason}"


def log_unsplit(decisions: Iterable[SplitDecision], log: logging.Logger = logger) -> None:
    """Log :func:`unsplit_message` once for each sub-topology that runs unsplit."""
    for decision in decisions:
        if not decision.splittable:
            log.info("%s", unsplit_message(decision))


def punctuation_refusal(subtopology: int, task: StreamTask) -> SplitDecision | None:
    """What the executor checks of a key-local promise that the topology cannot show: that no processor of a split
    sub-topology scheduled a punctuation (after ``init``, and again when a shard ends: ``schedule`` may be called
    from ``process`` too). A punctuator runs at a stream time or wall-clock time every key advances, over whatever
    state it reads, so a shard would fire it at other times than the task; the task then runs unsplit."""
    if task.schedules_registered == 0:
        return None
    nodes = sorted({*task.stream_time_punctuation_queue.nodes(), *task.system_time_punctuation_queue.nodes()})
    who = ", ".join(nodes) if nodes else "a processor"
    return SplitDecision(
        subtopology,
        False,
        f"{who}: scheduled a punctuation, which fires at times every key's records advance (the key-local promise "
        "excludes punctuations)",
    )
