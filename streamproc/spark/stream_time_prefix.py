"""Which source records reach a windowed aggregate behind a stateless prefix (issue #29, docs/split.md).

A key shard of a time- or session-windowed aggregate is given the aggregate's stream time in the unsplit task: the
running maximum of the timestamps of every key's records that reached it (``engine/task_wide_times.py``). Where user
code stands between the source and the aggregate (``TaskWideValue.prefix``), which records reach it depends on that
code: a ``filter``'s predicate, on the values a ``mapValues`` or ``flatMapValues`` before it gives, on which branch
of a ``split`` takes the record, and on any of them raising. So a shard runs that prefix over the records it does
not own to know which of them reach the aggregate in their owner.

The prefix is every processor on a path from a source to the aggregate, each of them one of the DSL's
``filter``, ``filterNot``, ``mapValues``, ``flatMapValues``, ``split`` (its ``KStreamBranch`` and branches) and
``merge``. Each keeps the record's key and timestamp, so its owner is the same on both sides of the prefix, and a
record reaches the aggregate at its own timestamp however many of its values get there. Their functions are called
once more in every shard that does not own the record: the DSL's contract that a predicate or a mapper is a
function of its arguments is what makes that call give the owner's answer.

A record is run through the prefix as its task forwards it, depth first and in the children's order, until a value
of it reaches the aggregate; only the children on a path to it are visited. Exceptions route as the task routes
them (``ProcessorNode.failed``): one raised by a node is handled at that node, which drops the record there (the
continuing handler) or fails the task, and its other forwards do not happen; a ``ClassCastError`` is handled by the
node's parent instead, whose remaining forwards then do not happen either (under the source: the task fails). A
failed task fails split as unsplit, so a shard need only know that the record did not reach the aggregate.

Each source on a path to the aggregate has its own reach (its records start at its own children: two topics merged
after a filter on one of them). What stays unsplit (``task_split``): any other processor on a path (a Processor-API
processor).

A ``peek`` on a path is a pass-through whose action a shard that does not own the record need not (and must not:
it is the user's side effect) call, and a node's children off every path are not run either. Under the default
processing exception handler, which fails the task at any exception, a record either goes through the prefix
without one or fails the task, split as unsplit. Under one that may continue, an exception there stops the record
in its owner alone: a peek's action raising drops it at the peek (a ``ClassCastException`` at the peek's parent),
and a ``ClassCastException`` out of a child off every path stops its parent's later forwards. The other shards
count the record as reaching the aggregate, so every shard watches those nodes (:func:`watched_nodes`,
``TaskStreamTimes.watch_handled``), and a shard that handled an exception at one makes the merge run the task
whole. A source may forward off every path first: an exception that reaches it fails the task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from streamproc.dsl.internals.kstream_pass_through import KStreamPassThroughProcessor
from streamproc.dsl.internals.processors import KStreamBranch, KStreamFlatMapValues, KStreamPeek
from streamproc.engine.processor import ClassCastError
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.task_wide_times import Arrivals, Reach
from streamproc.spark.columnar.chain import StatelessStep, stateless_step

#: What a prefix node forwards for one record's key and value, lazily and in its task's order: the children on a
#: path to the aggregate, each with the value it gets. Iterating it runs the node's function and raises as it does.
Forwards = Callable[[Any, Any], Iterator[tuple[str, Any]]]

_KINDS = "a filter, filterNot, mapValues, flatMapValues, peek, split branch or merge"


@dataclass(frozen=True, slots=True)
class Prefix:
    """The processors between a source and ``target``: the source's children on a path to it (in forward order),
    and what each of those processors forwards. ``chain``: the same prefix when it is a single chain of filters and
    value mappers, which :func:`prefix_reach` runs without the walk."""

    target: str
    first: tuple[str, ...]
    forwards: Mapping[str, Forwards]
    chain: tuple[StatelessStep, ...] | None

    def reach(self) -> Reach:
        """Whether a source record (its key and value) reaches ``target`` (see the module doc): whether any of its
        values arrives there (:meth:`arrivals`)."""
        if self.chain is not None:
            return prefix_reach(self.chain)
        arrivals = self.arrivals()
        return lambda key, value: bool(arrivals(key, value))

    def arrivals(self) -> Arrivals:
        """The values of a source record (its key and value) that reach ``target``, in the order the task forwards
        them (a ``flatMapValues`` may give several; an exception stops the walk where it stops the record): what a
        join window processor behind the prefix puts (``TaskStreamTimes.puts``)."""
        target, forwards, first = self.target, self.forwards, self.first

        def walk(name: str, key: Any, value: Any, out: list[Any]) -> None:
            """Append what reaches the target through ``name``; raises ``_ToParent`` for a ``ClassCastError``."""
            if name == target:
                out.append(value)
                return
            try:
                for child, forwarded in forwards[name](key, value):
                    try:
                        walk(child, key, forwarded, out)
                    except _ToParent:  # the child's ClassCastError, handled here: this node's forwards stop
                        return
            except ClassCastError as error:
                raise _ToParent from error
            except Exception:  # noqa: BLE001 - handled at this node: the record is dropped here, or the task fails
                return

        def arrivals(key: Any, value: Any) -> list[Any]:
            out: list[Any] = []
            for child in first:
                try:
                    walk(child, key, value, out)
                except _ToParent:  # a ClassCastError under the source fails the task
                    break
            return out

        return arrivals


class _ToParent(Exception):
    """A ``ClassCastError`` on its way to the parent of the node that raised it."""


def stream_time_prefix(graph: ProcessorTopology, processor: str) -> dict[str, Prefix] | str:
    """Per source node on a path to ``processor`` in ``graph``, the prefix its records go through before it, or why
    a shard could not run them."""
    on_path = _on_path(graph, processor)
    nodes = [node for node in graph.nodes if node.name in on_path and node.name != processor]
    sources = [node for node in nodes if isinstance(node, SourceNode)]
    forwards: dict[str, Forwards] = {}
    for node in nodes:
        if isinstance(node, SourceNode):
            continue
        ahead = [child.name for child in node.children if child.name in on_path]
        found = _forwards(node, ahead)
        if isinstance(found, str):
            return found
        forwards[node.name] = found
    return {
        source.name: Prefix(
            processor,
            tuple(child.name for child in source.children if child.name in on_path),
            forwards,
            _chain(graph, source, processor, forwards),
        )
        for source in sources
    }


def watched_nodes(
    graph: ProcessorTopology, processors: Iterable[str], *, handler_fails: bool, puts: Iterable[str] = ()
) -> frozenset[str]:
    """The prefix nodes before ``processors`` where an exception handled in a record's owner alone may stop the
    record, which the other shards count as reaching the processor (see the module doc): under a handler that may
    continue, a peek (its action runs in the owner only) and the node a ``ClassCastException`` from it goes to, and a
    node that forwards to a child off every path before one on a path (a ``ClassCastException`` from that child
    stops the node's later forwards). ``puts``: join window processors, counted as putting every value that reaches
    them; a ``ClassCastException`` out of one (its store's serializer, say) is handled at its parent, which is then
    watched too (a source's fails the task). A shard that handled an exception at one says so, and the task runs
    whole."""
    if handler_fails:
        return frozenset()
    putting = list(puts)
    processors = [*processors, *putting]
    by_name = {node.name: node for node in graph.nodes}
    parents: dict[str, list[str]] = {}
    for node in graph.nodes:
        for child in node.children:
            parents.setdefault(child.name, []).append(node.name)
    watched: set[str] = set()
    for processor in processors:
        on_path = _on_path(graph, processor)
        for name in on_path - {processor}:
            node = by_name[name]
            if isinstance(node, SourceNode):
                continue
            if type(node.processor) is KStreamPeek:
                watched.add(name)
                watched.update(p for p in parents.get(name, ()) if not isinstance(by_name[p], SourceNode))
            elif not isinstance(node.processor, KStreamBranch) and _off_path_before(node, on_path) is not None:
                watched.add(name)
    for processor in putting:
        watched.update(p for p in parents.get(processor, ()) if not isinstance(by_name[p], SourceNode))
    return frozenset(watched)


def _forwards(node: ProcessorNode, ahead: list[str]) -> Forwards | str:
    """What ``node`` forwards to its children on a path (``ahead``, in its children's order), or why not known."""
    processor = node.processor if type(node) is ProcessorNode else None
    if isinstance(processor, KStreamPassThroughProcessor) or type(processor) is KStreamPeek:

        def passes(key: Any, value: Any) -> Iterator[tuple[str, Any]]:
            for child in ahead:
                yield child, value

        return passes
    if type(processor) is KStreamFlatMapValues:
        mapper = processor.mapper

        def flat_maps(key: Any, value: Any) -> Iterator[tuple[str, Any]]:
            for each in mapper(key, value):
                for child in ahead:
                    yield child, each

        return flat_maps
    if type(processor) is KStreamBranch:
        return _branches(processor, set(ahead))
    step = stateless_step(node)
    if step is None or step.rekey:
        return f"{node.name} is not {_KINDS}"
    return _step(step, ahead)


#: What :func:`_through` gives for a record a filter drops.
_DROPPED = object()


def _through(step: StatelessStep, key: Any, value: Any) -> Any:
    """The value a filter or value mapper forwards for a record, or ``_DROPPED``: the one rule both the walk and the
    chain's loop apply, so a step cannot mean one thing to one and another to the other."""
    if step.keep is None:
        return step.function(key, value) if step.with_key else step.function(value)
    return value if bool(step.function(key, value)) == step.keep else _DROPPED


def _step(step: StatelessStep, ahead: list[str]) -> Forwards:
    def forwards(key: Any, value: Any) -> Iterator[tuple[str, Any]]:
        value = _through(step, key, value)
        if value is _DROPPED:
            return
        for child in ahead:
            yield child, value

    return forwards


def _branches(branch: KStreamBranch, ahead: set[str]) -> Forwards:
    """``KStreamBranch``: the child of the first predicate that holds, else the default branch if there is one;
    the record goes on only where that child is on a path."""
    predicates, children = branch.predicates, branch.child_names

    def forwards(key: Any, value: Any) -> Iterator[tuple[str, Any]]:
        for index, predicate in enumerate(predicates):
            if predicate(key, value):
                if children[index] in ahead:
                    yield children[index], value
                return
        if len(children) > len(predicates) and children[len(predicates)] in ahead:
            yield children[len(predicates)], value

    return forwards


def _on_path(graph: ProcessorTopology, processor: str) -> set[str]:
    """``processor`` and every node on a path from a source to it."""
    parents: dict[str, list[str]] = {}
    for node in graph.nodes:
        for child in node.children:
            parents.setdefault(child.name, []).append(node.name)
    on_path = {processor}
    stack = [processor]
    while stack:
        for parent in parents.get(stack.pop(), []):
            if parent not in on_path:
                on_path.add(parent)
                stack.append(parent)
    return on_path


def _off_path_before(node: ProcessorNode, on_path: set[str]) -> str | None:
    """The first child of ``node`` off every path that comes before a child on one, if any."""
    off: str | None = None
    for child in node.children:
        if child.name not in on_path:
            off = off or child.name
        elif off is not None:
            return off
    return None


def _chain(
    graph: ProcessorTopology, source: SourceNode, target: str, forwards: Mapping[str, Forwards]
) -> tuple[StatelessStep, ...] | None:
    """The prefix's steps when it is one chain of filters and value mappers from ``source`` to ``target``."""
    steps: list[StatelessStep] = []
    by_name = {node.name: node for node in graph.nodes}
    current: ProcessorNode = source
    while True:
        ahead = [child for child in current.children if child.name == target or child.name in forwards]
        if len(ahead) != 1:
            return None
        (child,) = ahead
        if child.name == target:
            return tuple(steps)
        step = stateless_step(by_name[child.name])
        if step is None:
            return None
        steps.append(step)
        current = child


def prefix_reach(steps: Iterable[StatelessStep]) -> Reach:
    """Whether a source record (its key and value) passes a chain of ``steps``: a filter's predicate holds as its
    ``keep`` says, a value mapper gives the next step's value; a step that raises: it does not."""
    chain = tuple(steps)

    def reach(key: Any, value: Any) -> bool:
        try:
            for step in chain:
                value = _through(step, key, value)
                if value is _DROPPED:
                    return False
        except Exception:  # noqa: BLE001 - the owner's handler drops the record there, or fails the task
            return False
        return True

    return reach


def arrivals(graph: ProcessorTopology, processors: Iterable[str]) -> dict[str, dict[str, Arrivals]]:
    """Per processor of ``processors`` that does not read its sources directly (a join window behind a prefix), per
    source node on a path to it: the values of that source's records that reach it (:meth:`Prefix.arrivals`).
    Raises where a prefix cannot be run, which ``task_split`` refused before the split."""
    found: dict[str, dict[str, Arrivals]] = {}
    for name in processors:
        if reads_sources_directly(graph, name):
            continue
        prefixes = stream_time_prefix(graph, name)
        if isinstance(prefixes, str):
            raise ValueError(f"processor {name} cannot be given the puts of every key: {prefixes}")
        found[name] = {source: prefix.arrivals() for source, prefix in prefixes.items()}
    return found


def reads_sources_directly(graph: ProcessorTopology, processor: str) -> bool:
    """Whether every parent of ``processor`` is a source node (what reaches it is the source's record)."""
    parents = [node for node in graph.nodes if any(child.name == processor for child in node.children)]
    return bool(parents) and all(isinstance(node, SourceNode) for node in parents)


def reaches(graph: ProcessorTopology, processors: Iterable[str]) -> dict[str, dict[str, Reach]]:
    """Per processor of ``processors`` (each behind a prefix), per source node on a path to it: the reach of that
    source's records. Raises where a prefix cannot be run, which ``task_split`` refused before the split."""
    found: dict[str, dict[str, Reach]] = {}
    for name in processors:
        prefixes = stream_time_prefix(graph, name)
        if isinstance(prefixes, str):
            raise ValueError(f"processor {name} cannot be given its task-wide stream time: {prefixes}")
        found[name] = {source: prefix.reach() for source, prefix in prefixes.items()}
    return found
