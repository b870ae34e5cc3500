"""The task-wide stream times a key shard's windowed processors read (issue #29, docs/split.md).

A DSL time-windowed aggregate decides which windows are still open from its own ``observedStreamTime``: the running
maximum of the timestamps of every key's records that reached it (``engine/key_locality.py``); a session-windowed
aggregate decides late records the same way, and which sessions a merge finds from its session store's stream time,
which before a record equals ``max(restored, the processor's before that record)``. A key shard sees only its keys'
records, so each such processor is given the unsplit task's values instead, through its hooks: ``task_stream_time``
(the value with the record being processed) and, for a session aggregate, ``task_stream_time_before``.

A processor's task-wide value is the running maximum of the timestamps of the keyed records that reached it, in
the task's order. Where nothing but one-to-one processors stands between the sources and it, those are the keyed
records of the sources upstream of it, known to a shard in one of two ways:

- a shard that runs the task's whole ``PartitionGroup`` (``key_shards.ShardGate``) sees every record at its gate,
  owned or not: :meth:`TaskStreamTimes.track` keeps one cell per processor, which the gate advances for every keyed
  record of a source that feeds it, before it asks who owns the record (:func:`advance`);
- a shard that reads only its own records (``spark/owned_input.py``) computed every row's running maximum from the
  timestamp and key columns: :meth:`TaskStreamTimes.at_positions` reads it at each of its records' positions.

Where a stateless prefix may drop records on the way (a ``filter``, ``TaskWideValue.prefix``), the processor has a
``reach`` per source node on a path to it (:attr:`TaskStreamTimes.reaches`, ``spark/stream_time_prefix.py``): whether a
record of that source, by its key and value, passes the prefix. A shard runs it over the records it does not own (at its
gate, or over the columns before it processes one) and advances the processor's time with those that pass; its own
records advance it as they arrive at the processor, which is the hook's call (``task_stream_time(timestamp)``), so a
record's own prefix runs once, in its owner, as in the unsplit task. Only key-preserving steps make a prefix, so the
owner of a record is the same before and after it.

A stream-stream join's window stores need more than a time: each keeps its stream time and two seqnums, all
advanced by every key's puts (``TaskWideKind.STORE_PUTS``). Each shard reads every record, and its gate puts what it
does not own through :meth:`~streamproc.state.stores.WindowStore.observe_put` (:attr:`TaskStreamTimes.puts`), which
advances the store as that put would without writing it: the record itself where the window processor reads its
source directly, else each value the prefix before it brings it (:attr:`TaskStreamTimes.put_arrivals`,
``spark/stream_time_prefix.py``).

A session store's stream time is the processor's only if the record that advanced it put its session: a processing
exception handled at the aggregate (its initializer, merger or aggregator raised and the handler said continue) may
stop that put, and only the shard that owns the record sees it. :meth:`TaskStreamTimes.watch_handled` notes any
such exception; the shard says so in its report and the merge runs the task whole instead (``shard_merge``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode

if TYPE_CHECKING:
    from streamproc.engine.stream_task import StreamTask

#: ``ConsumerRecord.NO_TIMESTAMP``: no keyed record yet.
NO_TIMESTAMP = -1

#: Whether a source record (its deserialized key and value) passes a processor's stateless prefix and reaches it.
Reach = Callable[[Any, Any], bool]
#: The values a source record (its deserialized key and value) brings to a processor behind a prefix, in order.
Arrivals = Callable[[Any, Any], list[Any]]


def takes_task_stream_time(processor: object) -> bool:
    """Whether a processor can be given its task-wide stream time (it has the ``task_stream_time`` hook)."""
    return hasattr(processor, "task_stream_time")


@dataclass(frozen=True)
class TaskStreamTimes:
    """The processors of one task (by node name) that read a task-wide stream time, and the sources upstream of
    each."""

    processors: dict[str, Any]
    sources: dict[str, tuple[str, ...]]
    #: The processors behind a stateless prefix that may drop records: per source node on a path to each, whether
    #: a record of that source reaches it.
    reaches: dict[str, Mapping[str, Reach]] = field(default_factory=dict)
    #: The processors that put every record that reaches them into a window store keeping duplicates (a
    #: stream-stream join's window), with that store (see the module doc).
    puts: dict[str, Any] = field(default_factory=dict)
    #: Of those behind a prefix: per source node on a path to each, the values a record of that source brings it.
    put_arrivals: dict[str, Mapping[str, Arrivals]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        graph: ProcessorTopology,
        names: Iterable[str],
        reaches: Mapping[str, Mapping[str, Reach]] | None = None,
        puts: Mapping[str, Any] | None = None,
        put_arrivals: Mapping[str, Mapping[str, Arrivals]] | None = None,
    ) -> TaskStreamTimes | None:
        """The hooks of the processors ``names`` in ``graph`` (``None`` when there are none, and no ``puts``);
        ``reaches``: those behind a prefix that may drop records (see the module doc); ``puts``: the processors
        whose store's puts a shard counts at its gate, with the store; ``put_arrivals``: of those, the ones behind a
        prefix, with what each source's records bring them."""
        wanted = set(names)
        putting = dict(puts or {})
        if not wanted and not putting:
            return None
        nodes = {node.name: node for node in graph.nodes}
        processors: dict[str, Any] = {}
        for name in sorted(wanted):
            processor = nodes[name].processor
            if not takes_task_stream_time(processor):
                raise ValueError(f"processor {name} cannot be given its task-wide stream time")
            processors[name] = processor
        sources = {name: tuple(s.name for s in graph.sources if _reaches(s, name)) for name in (*processors, *putting)}
        kept = {name: reach for name, reach in (reaches or {}).items() if name in wanted}
        behind: dict[str, Mapping[str, Arrivals]] = {
            name: by_source for name, by_source in (put_arrivals or {}).items() if name in putting
        }
        return cls(processors, sources, kept, putting, behind)

    def track(self) -> dict[str, SourceTimes]:
        """Install hooks that read one cell per processor, ``[with the record, before it]``; returns, per source node
        name, the cells of the processors it feeds, which the gate advances (:meth:`SourceTimes.advance`)."""
        cells = {name: [NO_TIMESTAMP, NO_TIMESTAMP] for name in self.processors}
        for name, processor in self.processors.items():
            cell = cells[name]
            _install(processor, _advancing(cell) if name in self.reaches else _current(cell), _before(cell))
        fed: dict[str, SourceTimes] = {}
        for name, sources in self.sources.items():
            for source in sources:
                times = fed.setdefault(source, SourceTimes([], []))
                if name in self.puts:
                    times.observed.append((self.puts[name], self.put_arrivals.get(name, {}).get(source)))
                elif name in self.reaches:
                    times.prefixed.append((cells[name], self.reaches[name][source]))
                else:
                    times.cells.append(cells[name])
        return fed

    def at_positions(
        self,
        task: StreamTask,
        times: Sequence[int],
        before: Sequence[int],
        others: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        """Install hooks that read ``times`` and ``before``: per record the shard processes, in its order, the
        task-wide value with that record and before it (a shard of one source: every processor reads that source's
        running maximum). A processor behind a prefix that may drop records reads ``others[name]`` instead, per
        record the running maximum of the other shards' records that pass its prefix, and its own records' as they
        reach it."""
        assert not self.puts, "a shard counts the other shards' puts at its gate only"
        with_record, before_record = list(times), list(before)

        def value(timestamp: int) -> int:
            return with_record[task.records_processed]

        def previous() -> int:
            return before_record[task.records_processed]

        for name, processor in self.processors.items():
            if name in self.reaches:
                assert others is not None, "a processor behind a prefix is given the other shards' times"
                _install(processor, *_with_others(task, list(others[name])))
            else:
                _install(processor, value, previous)

    def watch_handled(self, graph: ProcessorTopology, also: Iterable[str] = ()) -> list[str]:
        """Watch the nodes of the processors whose store's stream time is derived from theirs (a session
        aggregate's): a processing exception handled there (the handler said continue) may have stopped the put of
        the record that advanced the stream time, after which the store's stream time is no longer the processor's.
        Likewise a join window's (:attr:`puts`): it forwards a record before it puts it, and an exception its
        children let through (a ``ClassCastException``, wrapped) is handled at it, so the put never happens, where
        the other shards counted it. ``also``: more nodes to watch (a prefix's, ``stream_time_prefix.watched_nodes``).
        Returns the list the watched nodes append their name to; the shard then says its task must run unsplit."""
        handled: list[str] = []
        extra = set(also)
        for node in graph.nodes:
            if (
                node.name in self.puts
                or node.name in extra
                or (node.name in self.processors and hasattr(node.processor, "task_stream_time_before"))
            ):
                node._handle = _watched(node, handled)  # type: ignore[method-assign]
        return handled


@dataclass(frozen=True, slots=True)
class SourceTimes:
    """The task-wide times one source feeds (``TaskStreamTimes.track``): the cells every keyed record of it advances,
    and those of processors behind a prefix, with their reach, which only the records that pass it advance."""

    cells: list[list[int]]
    prefixed: list[tuple[list[int], Reach]]
    #: The window stores (keeping duplicates) the source's keyed records are put into, each with what a record
    #: brings the processor that puts (``None``: the source feeds it directly, the record itself).
    observed: list[tuple[Any, Arrivals | None]] = field(default_factory=list)

    def advance(self, key: Any, value: Any, timestamp: int, owned: bool) -> None:
        """A keyed record of the source reached the gate (``owned``: this shard processes it, and advances the
        prefixed cells when it reaches their processor, and puts it into the observed stores)."""
        advance(self.cells, timestamp)
        if not owned:
            for cell, reach in self.prefixed:
                if reach(key, value):
                    advance((cell,), timestamp)
            for store, arrivals in self.observed:
                if arrivals is None:
                    store.observe_put(key, value, timestamp)
                else:
                    for arrived in arrivals(key, value):
                        store.observe_put(key, arrived, timestamp)


def advance(cells: Iterable[list[int]], timestamp: int) -> None:
    """A keyed record of a source reached the gate: each processor it feeds has its time before it, then with it."""
    for cell in cells:
        now = cell[0]
        cell[1] = now
        if timestamp > now:
            cell[0] = timestamp


def _install(processor: Any, value: Callable[[int], int], previous: Callable[[], int]) -> None:
    processor.task_stream_time = value
    if hasattr(processor, "task_stream_time_before"):
        processor.task_stream_time_before = previous


def _current(cell: list[int]) -> Callable[[int], int]:
    return lambda timestamp: cell[0]


def _before(cell: list[int]) -> Callable[[], int]:
    return lambda: cell[1]


def _advancing(cell: list[int]) -> Callable[[int], int]:
    """A processor behind a prefix: a record of this shard reached it, so it advances its time first."""

    def value(timestamp: int) -> int:
        advance((cell,), timestamp)
        return cell[0]

    return value


def _with_others(task: StreamTask, others: list[int]) -> tuple[Callable[[int], int], Callable[[], int]]:
    """The hooks of a processor behind a prefix in a shard reading only its own records: the other shards' records'
    running maximum at the record (``others``, per owned record), and this shard's own records' as they reach it."""
    own = [NO_TIMESTAMP, NO_TIMESTAMP]

    def value(timestamp: int) -> int:
        advance((own,), timestamp)
        return max(others[task.records_processed], own[0])

    def previous() -> int:
        return max(others[task.records_processed], own[1])

    return value, previous


def _watched(node: ProcessorNode, handled: list[str]) -> Callable[..., None]:
    handle = node._handle

    def watched(*args: Any, **kwargs: Any) -> None:
        handled.append(node.name)
        handle(*args, **kwargs)

    return watched


def _reaches(source: SourceNode, name: str) -> bool:
    stack: list[ProcessorNode] = list(source.children)
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        if node.name == name:
            return True
        if node.name not in seen:
            seen.add(node.name)
            stack.extend(node.children)
    return False


def keyed_running_max(timestamps: Any, keyed: Any) -> tuple[Any, Any]:
    """Per row (numpy arrays in the task's order): the largest timestamp of a keyed row up to and with it, and up to
    it (before it)."""
    import numpy as np

    if not len(timestamps):
        return timestamps, timestamps
    with_row = np.maximum.accumulate(np.where(keyed, timestamps, NO_TIMESTAMP))
    return with_row, np.concatenate(([NO_TIMESTAMP], with_row[:-1]))
