"""PE-1's ``ClassCastException`` path in ``ProcessorNode.process`` (ordering.md §7, §11 q7).

Kafka Streams 4.2 wraps a ``ClassCastException`` thrown by a node's processor in a ``StreamsException`` with a serde
hint and does *not* hand it to that node's processing handler: the enclosing node (the one whose ``forward`` called
it) handles it like any other exception, and a source lets it reach the task. In streamproc a processor raises
``streamproc.engine.processor.ClassCastError`` for that routing; a plain ``TypeError`` is handled where it is raised.
Confirmed against Kafka's ``TopologyTestDriver`` by ``tests/integration/conformance/test_oracle_class_cast.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProcessingExceptionResponse,
)
from streamproc.engine.processor import ClassCastError, Processor, ProcessorContext
from streamproc.engine.records import Record
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.topology import Topology
from streamproc.errors import StreamsError
from streamproc.testing import TASK_ID, TopologyTestDriver

STRING = serde_for("String")
CAST_PREFIX = "ClassCastException invoking processor: {node}. Do the Processor's input types match"


class Recorder(ProcessingExceptionHandler):
    """Notes every call, answers as ``inner``."""

    def __init__(self, inner: ProcessingExceptionHandler) -> None:
        self.inner = inner
        self.calls: list[tuple[str, Exception, Any]] = []

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse:
        self.calls.append((context.processor_node_id, exception, None if record is None else record.value))
        return self.inner.handle_error(context, record, exception)


class Forwarder(Processor):
    def __init__(self, name: str, events: list[str]) -> None:
        self.name = name
        self.events = events
        self.context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        self.events.append(f"{self.name}:{record.value}")
        self.context.forward(record)
        self.events.append(f"{self.name}-after:{record.value}")


class Failing(Processor):
    def __init__(self, name: str, events: list[str], error: type[Exception]) -> None:
        self.name = name
        self.events = events
        self.error = error

    def process(self, record: Record[Any, Any]) -> None:
        self.events.append(f"{self.name}:{record.value}")
        raise self.error(f"{self.name} fails")


class Sink(Processor):
    def __init__(self, name: str, events: list[str]) -> None:
        self.name = name
        self.events = events

    def process(self, record: Record[Any, Any]) -> None:
        self.events.append(f"{self.name}:{record.value}")


def _supplier(cls: type[Forwarder] | type[Sink], name: str, events: list[str]) -> Callable[[], Processor]:
    return lambda: cls(name, events)


def _run(
    chain: list[str], error: type[Exception], inner: ProcessingExceptionHandler
) -> tuple[list[str], Recorder, list[StreamsError], int]:
    """``source -> chain[0] -> ... -> chain[-1] -> [fail, sibling]``; pipes ``a`` then ``b``."""
    events: list[str] = []
    topology = Topology()
    topology.add_source("source", "in", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    parent = "source"
    for name in chain:
        topology.add_processor(name, _supplier(Forwarder, name, events), parent)
        parent = name
    topology.add_processor("fail", lambda: Failing("fail", events, error), parent)
    topology.add_processor("sibling", lambda: Sink("sibling", events), parent)
    handler = Recorder(inner)
    failures: list[StreamsError] = []
    with TopologyTestDriver(topology, TaskConfig(processing_exception_handler=handler)) as driver:
        topic = driver.create_input_topic("in", STRING.serializer, STRING.serializer)
        for value in ("a", "b"):
            try:
                topic.pipe_input("k", value, 1)
            except StreamsError as exc:
                failures.append(exc)
        dropped = driver._tasks[TASK_ID].dropped.total
    return events, handler, failures, dropped


def test_class_cast_in_a_child_goes_to_the_parent_handler_as_a_streams_error() -> None:
    events, handler, failures, dropped = _run(["parent"], ClassCastError, LogAndContinueProcessingExceptionHandler())
    assert [(node, value) for node, _, value in handler.calls] == [("parent", "a"), ("parent", "b")]
    exception = handler.calls[0][1]
    assert isinstance(exception, StreamsError)
    assert isinstance(exception.__cause__, ClassCastError)
    assert exception.kafka_message.startswith(CAST_PREFIX.format(node="fail"))
    assert "key: str, and value: str." in exception.kafka_message
    # RESUME at the parent: its forward loop was left at the failing child, so the sibling after it and the
    # parent's own code after forward never run; one drop per record (PE-2 at the parent).
    assert events == ["parent:a", "fail:a", "parent:b", "fail:b"]
    assert failures == []
    assert dropped == 2


def test_fail_at_the_parent_names_the_parent() -> None:
    _, handler, failures, dropped = _run(["parent"], ClassCastError, LogAndFailProcessingExceptionHandler())
    assert [node for node, _, _ in handler.calls] == ["parent", "parent"]
    assert [f.kafka_message for f in failures] == [
        "Exception caught in process. taskId=0_0, processor=parent, topic=in, partition=0, offset=0",
        "Exception caught in process. taskId=0_0, processor=parent, topic=in, partition=0, offset=1",
    ]
    cause = failures[0].__cause__
    assert isinstance(cause, StreamsError) and isinstance(cause.__cause__, ClassCastError)
    assert dropped == 0


def test_a_child_of_the_source_lets_it_reach_the_task_unhandled() -> None:
    events, handler, failures, dropped = _run([], ClassCastError, LogAndContinueProcessingExceptionHandler())
    assert handler.calls == []
    assert [f.kafka_message.startswith(CAST_PREFIX.format(node="fail")) for f in failures] == [True, True]
    assert [(f.topic, f.partition, f.offset) for f in failures] == [("in", 0, 0), ("in", 0, 1)]
    assert events == ["fail:a", "fail:b"]
    assert dropped == 0


def test_a_grandchild_cast_is_handled_by_its_own_parent_not_further_up() -> None:
    events, handler, _, dropped = _run(["outer", "inner"], ClassCastError, LogAndContinueProcessingExceptionHandler())
    assert [node for node, _, _ in handler.calls] == ["inner", "inner"]
    # inner returned normally after RESUME, so outer goes on after its forward
    assert events[:4] == ["outer:a", "inner:a", "fail:a", "outer-after:a"]
    assert dropped == 2


@pytest.mark.parametrize("error", [RuntimeError, ValueError, KeyError, TypeError])
def test_other_exceptions_are_still_handled_at_the_failing_node(error: type[Exception]) -> None:
    events, handler, _, dropped = _run(["parent"], error, LogAndContinueProcessingExceptionHandler())
    assert [node for node, _, _ in handler.calls] == ["fail", "fail"]
    assert isinstance(handler.calls[0][1], error)
    # PE-2: the failing node returns, its sibling still receives the record, the parent goes on
    assert events[:4] == ["parent:a", "fail:a", "sibling:a", "parent-after:a"]
    assert dropped == 2
