"""The bulk replay loop (``bulk_replay.process_buffered``) against ``StreamTask.process``, record at a time.

The property test replays the same random input three times, ``replay(..., bulk=True)`` with the compiled loop
(``_bulk_kernel.c``), with the Python loop (``STREAMPROC_PURE_PYTHON_REPLAY``), and ``bulk=False``, and compares
every observable: the processing order with each record's context, stream time and system time as the processor
sees them, punctuations, the replay result (steps, stream time, skip steps, drops with their positions, committable
offsets and partition times), the task's state afterwards, and the error if the task fails. The inputs cover
several partitions of one or two topics, timestamps in a narrow range (ties are frequent) including negative ones,
corrupt records, every timestamp extractor kind, both deserialization and processing handlers, processors that
fail or forward with a new timestamp, sources with one or two children, stream-time punctuations (also registered
mid-run), restored partition times, and buffer sizes from 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamproc.engine import bulk_replay
from streamproc.engine.bulk_replay import PURE_PYTHON_ENV, ineligibility, process_buffered
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler, LogAndFailExceptionHandler
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionResponse,
)
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
)
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import StreamprocError
from tests.unit.engine.builders import A0, CORRUPT, Recorder, make_task, raw, string_deserializer

NOW = 1_000_000


class ValueTimestampExtractor:
    """A user extractor (not record-metadata): the timestamp is in the value, ``'t<ms>'``; else the broker's."""

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
        value = record.value
        if isinstance(value, str) and value.startswith("t"):
            return int(value[1:])
        return record.timestamp


EXTRACTORS: dict[str, TimestampExtractor] = {
    "fail": FailOnInvalidTimestamp(),
    "skip": LogAndSkipOnInvalidTimestamp(),
    "partition_time": UsePartitionTimeOnInvalidTimestamp(),
    "value": ValueTimestampExtractor(),
}


@dataclass(frozen=True)
class Spec:
    """One record: broker timestamp, and what goes wrong with it (value ``'boom'`` makes the processor raise)."""

    timestamp: int
    corrupt: bool = False
    boom: bool = False
    value_timestamp: int | None = None


@dataclass
class Case:
    partitions: dict[TopicPartition, list[Spec]]
    extractor: str
    continue_on_corrupt: bool
    continue_on_boom: bool
    buffer: int
    punctuate_every: int | None
    schedule_midway_at: int | None
    restored: dict[TopicPartition, int] = field(default_factory=dict)
    forward_shift: bool = False
    sibling: bool = False


class Observer(Processor):
    """Records what a processor can observe; raises on ``'boom'``; may schedule a punctuation or forward."""

    def __init__(self, case: Case, log: list[tuple[Any, ...]]) -> None:
        self.case = case
        self.log = log
        self.context: ProcessorContext | None = None
        self.count = 0

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        if self.case.punctuate_every is not None:
            context.schedule(self.case.punctuate_every, PunctuationType.STREAM_TIME, self.punctuate)

    def punctuate(self, timestamp: int) -> None:
        assert self.context is not None
        self.log.append(("punctuate", timestamp, self.context.current_stream_time_ms()))

    def process(self, record: Record[Any, Any]) -> None:
        context = self.context
        assert context is not None
        self.count += 1
        metadata = context.record_metadata()
        self.log.append(
            (
                "process",
                metadata,
                record.key,
                record.value,
                record.timestamp,
                record.headers,
                context.current_stream_time_ms(),
                context.current_system_time_ms(),
            )
        )
        if self.case.schedule_midway_at == self.count:
            context.schedule(7, PunctuationType.STREAM_TIME, self.punctuate)
        if record.value == "boom":
            raise RuntimeError("boom")
        if self.case.forward_shift:
            context.forward(record.with_timestamp(record.timestamp + 1))


class RecordingContinue(LogAndContinueProcessingExceptionHandler):
    """Continues after a processing error and records the error context the handler is given."""

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse:
        self.log.append(("handler", context, record))
        return super().handle_error(context, record, exception)


class Leaf(Processor):
    """A child that records the context a forward with a new timestamp installs."""

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log
        self.context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        self.log.append(("leaf", self.context.record_metadata(), record.timestamp))


def value_of(spec: Spec) -> bytes:
    if spec.corrupt:
        return CORRUPT
    if spec.boom:
        return b"boom"
    if spec.value_timestamp is not None:
        return f"t{spec.value_timestamp}".encode()
    return b"v"


@contextmanager
def python_loop(pure_python: bool) -> Iterator[None]:
    """The bulk replay runs its Python loop inside, even when the compiled one is built."""
    previous = os.environ.pop(PURE_PYTHON_ENV, None)
    if pure_python:
        os.environ[PURE_PYTHON_ENV] = "1"
    try:
        yield
    finally:
        os.environ.pop(PURE_PYTHON_ENV, None)
        if previous is not None:
            os.environ[PURE_PYTHON_ENV] = previous


def run(case: Case, *, bulk: bool, pure_python: bool = False) -> dict[str, Any]:
    with python_loop(pure_python):
        return _run(case, bulk=bulk)


def _run(case: Case, *, bulk: bool) -> dict[str, Any]:
    log: list[tuple[Any, ...]] = []
    topics = sorted({tp.topic for tp in case.partitions})
    source = SourceNode("source", topics, string_deserializer, string_deserializer, EXTRACTORS[case.extractor])
    proc = ProcessorNode("proc", Observer(case, log))
    leaf = ProcessorNode("leaf", Leaf(log))
    source.add_child(proc)
    proc.add_child(leaf)
    nodes = [source, proc, leaf]
    if case.sibling:  # a second child of the source: forward hands each record to both, in order
        sibling = ProcessorNode("sibling", Leaf(log))
        source.add_child(sibling)
        nodes.append(sibling)
    config = TaskConfig(
        deserialization_exception_handler=(
            LogAndContinueExceptionHandler() if case.continue_on_corrupt else LogAndFailExceptionHandler()
        ),
        processing_exception_handler=(
            RecordingContinue(log) if case.continue_on_boom else LogAndFailProcessingExceptionHandler()
        ),
    )
    task = StreamTask(
        TaskId(0, 0),
        ProcessorTopology(nodes),
        list(case.partitions),
        config=config,
        wall_clock=VirtualWallClock(NOW),
    )
    inputs = [
        PartitionInput(
            tp,
            [
                ConsumerRecord.raw(
                    tp.topic, tp.partition, offset, spec.timestamp, f"k{offset}".encode(), value_of(spec)
                )
                for offset, spec in enumerate(specs)
            ],
            case.restored.get(tp, -1),
        )
        for tp, specs in case.partitions.items()
    ]
    observed: dict[str, Any] = {"log": log}
    try:
        result = replay(task, inputs, buffered_records_per_partition=case.buffer, bulk=bulk, close=False)
        observed["result"] = result
    except StreamprocError as error:
        cause = error.__cause__
        observed["error"] = (type(error).__name__, str(error), type(cause).__name__, str(cause))
    observed["task"] = (
        task.records_processed,
        task.stream_time,
        dict(task.consumed_offsets),
        list(task.consumed_offsets),
        task.skip_steps,
        task.dropped.events,
        task.commit_needed,
        {tp: task.partition_group.partition_timestamp(tp) for tp in case.partitions},
        task.context.current_node,
        task.context.record_context,
        task.context.system_time_ms,
        # After a fatal error PartitionGroup's count is stale (bulk_replay documents the difference).
        task.partition_group.num_buffered() if "result" in observed else None,
        [task.partition_group.head_record_offset(tp) for tp in case.partitions],
    )
    return observed


TIMESTAMPS = st.integers(min_value=-2, max_value=12)

specs = st.builds(
    Spec,
    timestamp=TIMESTAMPS,
    corrupt=st.booleans().map(lambda b: b and True),
    boom=st.integers(0, 9).map(lambda n: n == 0),
    value_timestamp=st.one_of(st.none(), TIMESTAMPS),
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    topics = draw(st.sampled_from([["a"], ["a", "b"]]))
    partitions: dict[TopicPartition, list[Spec]] = {}
    for topic in topics:
        for partition in range(draw(st.integers(1, 4))):
            tp = TopicPartition(topic, partition)
            records = draw(st.lists(specs, max_size=12))
            if not draw(st.integers(0, 3)):
                records = [Spec(s.timestamp, corrupt=s.corrupt and not s.boom) for s in records]
            partitions[tp] = records
    restored = {tp: draw(st.integers(0, 10)) for tp in partitions if draw(st.integers(0, 4)) == 0}
    return Case(
        partitions=partitions,
        extractor=draw(st.sampled_from(sorted(EXTRACTORS))),
        continue_on_corrupt=draw(st.integers(0, 4)) > 0,
        continue_on_boom=draw(st.integers(0, 3)) > 0,
        buffer=draw(st.integers(1, 5)),
        punctuate_every=draw(st.one_of(st.none(), st.integers(1, 6))),
        schedule_midway_at=draw(st.one_of(st.none(), st.integers(1, 10))),
        restored=restored,
        forward_shift=draw(st.booleans()),
        sibling=draw(st.integers(0, 3)) == 0,
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_bulk_replay_matches_record_at_a_time(case: Case) -> None:
    exact = run(case, bulk=False)
    assert run(case, bulk=True) == exact
    assert run(case, bulk=True, pure_python=True) == exact


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 5), max_size=30), min_size=1, max_size=8),
    st.integers(1, 4),
)
def test_bulk_replay_matches_on_clean_input_with_many_ties(timestamps: list[list[int]], buffer: int) -> None:
    """The common configuration (record-metadata timestamps, nothing corrupt, no punctuation), ties everywhere."""
    case = Case(
        partitions={TopicPartition("a", p): [Spec(t) for t in ts] for p, ts in enumerate(timestamps)},
        extractor="fail",
        continue_on_corrupt=False,
        continue_on_boom=False,
        buffer=buffer,
        punctuate_every=None,
        schedule_midway_at=None,
    )
    bulk, exact = run(case, bulk=True), run(case, bulk=False)
    assert bulk == exact == run(case, bulk=True, pure_python=True)
    assert "result" in bulk


def test_bulk_loop_leaves_the_queues_as_the_record_at_a_time_path_does() -> None:
    task, recorder = make_task([A0])
    task.disable_idling()
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5), raw("a", 0, 1, 3)])
    assert process_buffered(task) == 2
    assert isinstance(recorder, Recorder)
    assert recorder.seen == [("a", 0, 0, 5), ("a", 0, 1, 5)]
    assert task.partition_group.num_buffered() == 0
    assert task.partition_group.partition_timestamp(A0) == 5
    assert task.committable_offsets()[A0].offset == 2
    assert task.commit_needed
    assert not task.process()


def test_bulk_loop_is_not_used_when_idling_is_enabled() -> None:
    task, _ = make_task([A0])
    assert ineligibility(task) == "idling is enabled (max.task.idle.ms is not -1)"
    task.add_records(A0, [raw("a", 0, 0, 5)])
    assert process_buffered(task) is None
    assert task.partition_group.num_buffered() == 1


def test_bulk_loop_is_not_used_when_the_wall_clock_follows_stream_time() -> None:
    task, _ = make_task([A0], wall_clock=VirtualWallClock(0, follow_stream_time=True))
    task.disable_idling()
    assert ineligibility(task) == "the wall clock is not frozen"


def test_bulk_loop_is_not_used_for_a_task_subclass_that_overrides_process() -> None:
    class Custom(StreamTask):
        def process(self, wall_clock_time: int | None = None) -> bool:
            return super().process(wall_clock_time)

    source = SourceNode("source", ["a"], string_deserializer, string_deserializer)
    task = Custom(TaskId(0, 0), ProcessorTopology([source]), [A0])
    task.disable_idling()
    reason = ineligibility(task)
    assert reason is not None and reason.endswith("Custom overrides process()")


def test_the_compiled_loop_is_built_and_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make install`` compiles ``_bulk_kernel.c``; a replay then never runs the Python loop."""
    assert bulk_replay._bulk_kernel is not None, "streamproc/engine/_bulk_kernel.c is not built: run `make install`"

    def refuse(self: object) -> int:
        raise AssertionError("the Python loop ran although the compiled loop is built")

    monkeypatch.setattr(bulk_replay._BulkLoop, "_steps_python", refuse)
    case = Case(
        partitions={A0: [Spec(1), Spec(2, corrupt=True), Spec(-1), Spec(3)]},
        extractor="skip",
        continue_on_corrupt=True,
        continue_on_boom=False,
        buffer=2,
        punctuate_every=1,
        schedule_midway_at=None,
    )
    observed = run(case, bulk=True)
    assert observed["result"].records_processed == 2
    assert observed == run(case, bulk=False)


@pytest.mark.parametrize("pure_python", [False, True], ids=["compiled", "python"])
def test_a_base_exception_in_a_processor_passes_through_both_loops(pure_python: bool) -> None:
    """KeyboardInterrupt is no processing error: no handler sees it, the loop stops and re-raises it as it is."""
    source = SourceNode("source", ["a"], string_deserializer, string_deserializer)
    seen: list[int] = []

    class Interrupting(Processor):
        def process(self, record: Record[Any, Any]) -> None:
            seen.append(record.timestamp)
            if len(seen) == 2:
                raise KeyboardInterrupt

    node = ProcessorNode("proc", Interrupting())
    source.add_child(node)
    config = TaskConfig(processing_exception_handler=RecordingContinue([]))
    task = StreamTask(TaskId(0, 0), ProcessorTopology([source, node]), [A0], config=config)
    records = [ConsumerRecord.raw("a", 0, offset, offset, b"k", b"v") for offset in range(4)]
    with python_loop(pure_python), pytest.raises(KeyboardInterrupt):
        replay(task, [PartitionInput(A0, records)], buffered_records_per_partition=2)
    assert seen == [0, 1]
    assert task.records_processed == 1
    assert dict(task.consumed_offsets) == {A0: 0}
    assert task.context.current_node is None


@pytest.mark.parametrize("bulk", [True, False])
def test_fatal_processing_error_names_the_record_in_both_paths(bulk: bool) -> None:
    case = Case(
        partitions={A0: [Spec(1), Spec(2, boom=True), Spec(3)]},
        extractor="fail",
        continue_on_corrupt=False,
        continue_on_boom=False,
        buffer=1,
        punctuate_every=None,
        schedule_midway_at=None,
    )
    observed = run(case, bulk=bulk)
    assert observed["error"][0] == "StreamsError"
    assert "taskId=0_0, processor=proc, topic=a, partition=0, offset=1" in observed["error"][1]
    assert observed["error"][2:] == ("RuntimeError", "boom")
    records_processed, stream_time, offsets = observed["task"][:3]
    assert (records_processed, stream_time, offsets) == (1, 2, {A0: 0})
