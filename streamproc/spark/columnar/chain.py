"""A stateless chain of the DSL's ``filter``/``filterNot``/``mapValues``/``selectKey``/``map`` run a chunk of records
at a time.

The columnar count (``count.py``) runs a task whose source feeds such a chain before its count or sink.
Per record, each node's ``process`` calls the user's function and forwards a new ``Record``; here the chunk's keys
and values are Python lists and each node is one loop over them: the same function called with the same arguments
(``KStreamFilter``: ``predicate(key, value)``, its truth value; ``KStreamMapValues``: ``mapper(key, value)`` or
``mapper(value)``; ``KStreamMap``, which ``selectKey`` and ``map`` build: ``mapper(key, value)``, a null result an
error, the result unpacked as the new key and value), once per record that reaches the node, in offset order, with
no ``Record``, ``forward`` or collector frame in between. After a ``KStreamMap`` the chain carries the new keys
(the DSL repartitions before any later aggregation, so only a sink can follow in the same task).

The functions of different nodes interleave differently than per record (node by node rather than record by
record), which a pure function cannot tell; after a failure, a node before the failing one may have run on later
records of the chunk (each still at most once), which per record it would not have (the task fails either way and
publishes nothing).

A function that raises ends the task with the error the per-record path raises with the default ``LogAndFail``
processing handler (:func:`processing_failure`). Per record, the first failure in offset order wins, and a record
before it has run through every node; so when node ``j`` raises at a record, the chain goes on with the records
before it only (:class:`ChainResult`), and a later node failing at an earlier record replaces the failure. Nothing is
called twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import not_
from typing import Any

from streamproc.dsl.internals.processors import (
    NULL_KEY_VALUE_MAPPER_MESSAGE,
    KStreamFilter,
    KStreamMap,
    KStreamMapValues,
)
from streamproc.engine.dropped_records import REASON_PROCESSING_EXCEPTION
from streamproc.engine.processing_handler import (
    FAIL_ON_PROCESSING_ERROR_MESSAGE,
    PROCESSING_ERROR_MESSAGE,
    PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG,
)
from streamproc.engine.processor import ClassCastError
from streamproc.engine.processor_topology import ProcessorNode
from streamproc.engine.stream_task import process_failure_message
from streamproc.errors import ProcessingError, StreamsError, TopologyError

logger = logging.getLogger(__name__)
_HANDLER_LOG = logging.getLogger("streamproc.engine.processing_handler")
_NODE_LOG = logging.getLogger("streamproc.engine.processor_topology")


@dataclass(frozen=True, slots=True)
class StatelessStep:
    """One node of the chain: a ``KStreamFilter`` (``keep`` is what the predicate's truth value must be), a
    ``KStreamMapValues`` (``keep`` is ``None``) or a ``KStreamMap`` (``rekey``: the function returns the new key and
    value)."""

    name: str
    function: Callable[..., Any]
    keep: bool | None
    with_key: bool
    rekey: bool = False
    #: With ``rekey``: ``function`` is ``selectKey``'s selector (returns the key only; the value stays).
    selects_key: bool = False

    @property
    def changes_values(self) -> bool:
        """The step may forward another value than it got (``mapValues``, ``map``)."""
        return self.keep is None and not self.selects_key


def stateless_step(node: ProcessorNode) -> StatelessStep | None:
    """The step ``node`` runs, or ``None`` when it is not exactly a DSL filter/filterNot/mapValues/selectKey/map
    node."""
    if type(node) is not ProcessorNode:
        return None
    processor = node.processor
    if type(processor) is KStreamFilter:
        return StatelessStep(node.name, processor.predicate, not processor.filter_not, True)
    if type(processor) is KStreamMapValues:
        return StatelessStep(node.name, processor.mapper, None, processor.with_key)
    if type(processor) is KStreamMap:
        if processor.key_selector is not None:  # selectKey: the value stays; the selector is called alone
            return StatelessStep(node.name, processor.key_selector, None, True, rekey=True, selects_key=True)
        return StatelessStep(node.name, processor.mapper, None, True, rekey=True)
    return None


@dataclass(frozen=True, slots=True)
class Failure:
    """The first record (in offset order) whose processing raised: its position in the chunk, the node, the error."""

    position: int
    node: str
    error: Exception


@dataclass(slots=True)
class ChainResult:
    """The records that came out of the chain: positions in the chunk (ascending), keys and values; and the first
    failure, if any (then only records before it are here)."""

    positions: list[int]
    keys: list[Any]
    values: list[Any]
    failure: Failure | None


def run_chain(steps: Sequence[StatelessStep], keys: list[Any], values: list[Any]) -> ChainResult:
    """Run the chunk's records (``keys[i], values[i]`` at position ``i``) through ``steps`` (see module docstring)."""
    positions = list(range(len(keys)))
    failure: Failure | None = None
    for step in steps:
        function = step.function
        out: list[Any] = []
        append = out.append
        new_keys: list[Any] = []
        try:
            if step.selects_key:
                for k, v in zip(keys, values, strict=True):
                    append(function(k, v))
            elif step.rekey:
                add_key = new_keys.append
                for k, v in zip(keys, values, strict=True):
                    pair = function(k, v)
                    if pair is None:
                        raise TopologyError(NULL_KEY_VALUE_MAPPER_MESSAGE)
                    key, value = pair  # as KStreamMap unpacks it: anything but a pair fails here
                    add_key(key)
                    append(value)
            elif step.keep is None:
                if step.with_key:
                    for k, v in zip(keys, values, strict=True):
                        append(function(k, v))
                else:
                    for v in values:
                        append(function(v))
            else:
                for k, v in zip(keys, values, strict=True):
                    append(not function(k, v))  # ``not`` inside the loop: a failing ``__bool__`` fails here
        except Exception as exc:
            done = len(out)
            failure = Failure(positions[done], step.name, exc)
            positions, keys, values = positions[:done], keys[:done], values[:done]
            del new_keys[done:]  # a key whose value did not come out with it
        if step.selects_key:
            keys = out
        elif step.rekey:
            keys, values = new_keys, out
        elif step.keep is None:
            values = out
        else:
            flags = out if not step.keep else list(map(not_, out))
            positions = list(compress(positions, flags))
            keys = list(compress(keys, flags))
            values = list(compress(values, flags))
    return ChainResult(positions, keys, values, failure)


def processing_failure(task: str, node: str, topic: str, partition: int, offset: int, error: Exception) -> Exception:
    """The error the per-record path ends the task with when processor ``node`` raised ``error`` for the record at
    ``offset``, with the default ``LogAndFail`` processing handler: the handler's and the node's log lines, then
    Kafka's "Exception caught in process" ``StreamsException`` caused by the error (``StreamTask``'s
    ``_processing_failure``). A sink's serializer error is its parent node's (the sink lets it through to the
    parent's handler), so ``node`` is then the chain's last node.

    A ``ClassCastError`` out of a user function is handled by the node's parent per record, which the chain does not
    reproduce: a clear error then.
    """
    if isinstance(error, ClassCastError):
        return ProcessingError(
            f"processor {node} raised a ClassCastError for {topic}-{partition} offset {offset}, which the columnar "
            "path does not replay; set STREAMPROC_PER_RECORD_COUNT=1 to run the task per record",
            task_id=task,
        )
    _HANDLER_LOG.error(
        PROCESSING_ERROR_MESSAGE,
        node,
        task,
        topic,
        partition,
        offset,
        exc_info=error,
    )
    _NODE_LOG.error(FAIL_ON_PROCESSING_ERROR_MESSAGE, PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG)
    failure = StreamsError(
        process_failure_message(task, node, topic, partition, offset),
        reason=REASON_PROCESSING_EXCEPTION,
        topic=topic,
        partition=partition,
        offset=offset,
        task_id=task,
    )
    failure.__cause__ = error
    return failure
