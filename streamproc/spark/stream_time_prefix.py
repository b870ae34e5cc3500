"""Which source records reach a windowed aggregate behind a stateless prefix (issue #29, docs/split.md).

A key shard of a time- or session-windowed aggregate is given the aggregate's stream time in the unsplit task: the
running maximum of the timestamps of every key's records that reached it (``engine/task_wide_times.py``). Where user
code stands between the source and the aggregate (``TaskWideValue.prefix``), which records reach it depends on that
code: a ``filter``'s predicate, on the values a ``mapValues`` before it gives, and on any of them raising. So a shard
runs that prefix over the records it does not own to know which of them reach the aggregate in their owner.

Only a chain of the DSL's ``filter``, ``filterNot`` and ``mapValues`` from the source is run
(``columnar/chain.StatelessStep``: the calls the per-record nodes make), each record's steps in order. Each keeps
the record's key, so its owner is the same on both sides of the prefix. Their functions are called once more in
every shard that does not own the record: the DSL's contract that a predicate or a value mapper is a function of its
arguments is what makes that call give the owner's answer.

A step that raises means the record does not reach the aggregate: in its owner the processing exception handler
either drops it at that node (continue) or fails the task (fail), which fails the split task as it fails the
unsplit one. Any other processor between the source and the aggregate (a ``peek``, whose action may raise in the
owner alone; a branch, a ``flatMapValues``, a Processor-API processor), or more than one path to it, and the
sub-topology runs unsplit (``task_split``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.task_wide_times import Reach
from streamproc.spark.columnar.chain import StatelessStep, stateless_step


def prefix_steps(graph: ProcessorTopology, processor: str) -> tuple[StatelessStep, ...] | str:
    """The steps a source record goes through before ``processor`` in ``graph``, in order, or why a shard could
    not run them."""
    parents: dict[str, list[ProcessorNode]] = {}
    for node in graph.nodes:
        for child in node.children:
            parents.setdefault(child.name, []).append(node)
    steps: list[StatelessStep] = []
    current = processor
    while True:
        above = parents.get(current, [])
        if len(above) != 1:
            return f"{current} is reached from {len(above)} processors, not along one chain from a source"
        (parent,) = above
        if isinstance(parent, SourceNode):
            return tuple(reversed(steps))
        step = stateless_step(parent)
        if step is None or step.rekey:
            return f"{parent.name} is not a filter, filterNot or mapValues"
        steps.append(step)
        current = parent.name


def prefix_reach(steps: Iterable[StatelessStep]) -> Reach:
    """Whether a source record (its key and value) passes ``steps``: a filter's predicate holds as its ``keep``
    says, a value mapper gives the next step's value; a step that raises: it does not."""
    chain = tuple(steps)

    def reach(key: Any, value: Any) -> bool:
        try:
            for step in chain:
                if step.keep is None:
                    value = step.function(key, value) if step.with_key else step.function(value)
                elif (not step.function(key, value)) == step.keep:
                    return False
        except Exception:  # noqa: BLE001 - the owner's handler drops the record there, or fails the task
            return False
        return True

    return reach


def reaches(graph: ProcessorTopology, processors: Iterable[str]) -> dict[str, Reach]:
    """The reach of each of ``processors`` (each behind a prefix). Raises where a prefix cannot be run, which
    ``task_split`` refused before the split."""
    found: dict[str, Reach] = {}
    for name in processors:
        steps = prefix_steps(graph, name)
        if isinstance(steps, str):
            raise ValueError(f"processor {name} cannot be given its task-wide stream time: {steps}")
        found[name] = prefix_reach(steps)
    return found
