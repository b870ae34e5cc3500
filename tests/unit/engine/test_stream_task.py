"""``StreamTask``: steps, context, forwarding, punctuation, error boundary, commit bookkeeping (ordering.md §4, §7)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.processing_handler import LogAndContinueProcessingExceptionHandler
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, SinkNode
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record
from streamproc.engine.stream_task import CommittableOffset, TaskConfig
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import ProcessingError, PunctuationError, StateError, StreamsError
from tests.unit.engine.builders import A0, B0, Recorder, make_task, raw

CONTINUE = TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler())


def run(task: Any) -> int:
    steps = 0
    task.disable_idling()
    while task.process():
        steps += 1
        task.maybe_punctuate_stream_time()
    return steps


def test_process_returns_false_when_nothing_buffered_and_processes_in_order() -> None:
    task, proc = make_task([A0, B0])
    task.initialize_topology()
    task.disable_idling()
    assert not task.process()
    task.add_records(A0, [raw("a", 0, 0, 10), raw("a", 0, 1, 30)])
    task.add_records(B0, [raw("b", 0, 0, 20)])
    assert run(task) == 3
    assert isinstance(proc, Recorder)
    assert proc.seen == [("a", 0, 0, 10), ("b", 0, 0, 20), ("a", 0, 1, 30)]
    assert task.records_processed == 3


def test_record_and_context_carry_extracted_timestamp_headers_and_null_key_value() -> None:
    task, proc = make_task([A0])
    assert isinstance(proc, Recorder)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5, None, key=None, headers=(("h", b"1"), ("n", None)))])
    run(task)
    [record] = proc.records
    assert record == Record(None, None, 5, (("h", b"1"), ("n", None)))


def test_forward_is_depth_first_in_child_order_and_sets_child_context() -> None:
    events: list[str] = []

    class Child(Processor):
        def __init__(self, name: str) -> None:
            self.name = name

        def init(self, context: ProcessorContext) -> None:
            self.context = context

        def process(self, record: Record[Any, Any]) -> None:
            events.append(f"{self.name}:{record.value}:{record.timestamp}")
            if self.name == "left":
                self.context.forward(record.with_value(record.value + "!"))

    left = ProcessorNode("left", Child("left"))
    leaf = ProcessorNode("leaf", Child("leaf"))
    right = ProcessorNode("right", Child("right"))
    left.add_child(leaf)

    def fan_out(context: ProcessorContext, record: Record[Any, Any]) -> None:
        context.forward(record.with_timestamp(99))

    task, _ = make_task([A0], Recorder(on_process=fan_out), extra_nodes=[left, leaf, right])
    proc_node = task.topology.nodes[1]
    proc_node.add_child(left)
    proc_node.add_child(right)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5, "x")])
    run(task)
    assert events == ["left:x:99", "leaf:x!:99", "right:x:99"]


def test_forward_to_named_child_and_unknown_child() -> None:
    def to_named(context: ProcessorContext, record: Record[Any, Any]) -> None:
        context.forward(record, "sink")
        with pytest.raises(ProcessingError, match="Unknown downstream node: nope"):
            context.forward(record, "nope")

    sink = SinkNode("sink", "out", lambda t, k: k.encode(), lambda t, v: v.encode(), lambda t, k, v, n: 1)
    task, _ = make_task([A0], Recorder(on_process=to_named), extra_nodes=[sink])
    task.topology.nodes[1].add_child(sink)
    task.collector.partition_counts["out"] = 4
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5, "x", headers=(("h", b"1"),))])
    run(task)
    [out] = task.collector.records
    assert (out.topic, out.partition, out.key, out.value, out.timestamp, out.headers) == (
        "out",
        1,
        b"k",
        b"x",
        5,
        (("h", b"1"),),
    )


def test_processing_exception_fail_names_task_processor_topic_partition_offset() -> None:
    def boom(context: ProcessorContext, record: Record[Any, Any]) -> None:
        raise ZeroDivisionError("user bug")

    task, _ = make_task([A0], Recorder(on_process=boom))
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 7, 5)])
    task.disable_idling()
    with pytest.raises(StreamsError) as info:
        task.process()
    error = info.value
    assert (
        error.kafka_message == "Exception caught in process. taskId=0_1, processor=proc, topic=a, partition=0, offset=7"
    )
    assert (error.task_id, error.topic, error.partition, error.offset) == ("0_1", "a", 0, 7)
    assert str(error).startswith("task [0_1] Exception caught in process.")
    assert "topic=[a] partition=[0] offset=[7]" in str(error)
    assert isinstance(error.__cause__, ZeroDivisionError)
    assert task.records_processed == 0


def test_processing_exception_continue_drops_and_siblings_still_get_the_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    class Failing(Processor):
        def process(self, record: Record[Any, Any]) -> None:
            raise RuntimeError("no")

    class Sibling(Processor):
        def process(self, record: Record[Any, Any]) -> None:
            seen.append(record.value)

    failing = ProcessorNode("failing", Failing())
    sibling = ProcessorNode("sibling", Sibling())
    config = TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler())
    task, _ = make_task([A0], Recorder(forward=True), config=config, extra_nodes=[failing, sibling])
    task.topology.nodes[1].add_child(failing)
    task.topology.nodes[1].add_child(sibling)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5, "x"), raw("a", 0, 1, 6, "y")])
    caplog.set_level(logging.WARNING)
    run(task)
    assert seen == ["x", "y"]
    assert (
        "task [0_1] Skipping record due to processing error. topic=[a] partition=[0] offset=[1] processor=[failing]"
        in caplog.text
    )
    assert [(e.offset, e.reason, e.records_processed) for e in task.dropped.events] == [
        (0, "processing_exception", 0),
        (1, "processing_exception", 1),
    ]
    assert task.committable_offsets() == {A0: CommittableOffset(2, 6)}


def test_processing_handler_that_crashes_is_fatal() -> None:
    class Crashing:
        def handle_error(self, *args: Any) -> Any:
            raise RuntimeError("handler bug")

    def boom(context: ProcessorContext, record: Record[Any, Any]) -> None:
        raise ValueError("x")

    task, _ = make_task([A0], Recorder(on_process=boom), config=TaskConfig(processing_exception_handler=Crashing()))
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5)])
    task.disable_idling()
    with pytest.raises(StreamsError, match="Fatal user code error in processing error callback") as info:
        task.process()
    assert isinstance(info.value.__cause__, RuntimeError)


def test_extractor_failure_on_first_record_raises_from_add_records_with_task_id() -> None:
    task, _ = make_task([A0])
    task.initialize_topology()
    with pytest.raises(StreamsError) as info:
        task.add_records(A0, [raw("a", 0, 3, -1)])
    assert info.value.task_id == "0_1"
    assert info.value.offset == 3
    assert str(info.value).startswith("task [0_1] Input record ConsumerRecord(topic = a, partition = 0, ")


def test_fatal_error_on_next_record_leaves_polled_record_unprocessed() -> None:
    task, proc = make_task([A0])
    assert isinstance(proc, Recorder)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5), raw("a", 0, 1, -1)])
    task.disable_idling()
    with pytest.raises(StreamsError, match="has invalid \\(negative\\) timestamp"):
        task.process()
    assert proc.seen == []
    assert task.consumed_offsets == {}


def test_placeholder_is_a_skip_step_that_consumes_its_offset() -> None:
    task, proc = make_task([A0], config=CONTINUE)
    assert isinstance(proc, Recorder)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5), raw("a", 0, 1, 6, corrupt=True), raw("a", 0, 2, 7, corrupt=True)])
    assert run(task) == 2
    assert [s.offset for s in task.skip_steps] == [2]
    assert task.skip_steps[0].records_processed == 1
    assert task.committable_offsets() == {A0: CommittableOffset(3, 5)}
    assert task.dropped.counts == {"deserialization": 2}


def test_stream_time_punctuation_and_schedule_validation() -> None:
    fired: list[int] = []

    def schedule(context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, fired.append)

    task, _ = make_task([A0], Recorder(on_init=schedule))
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, i, ts) for i, ts in enumerate([3, 9, 10, 35, 20, 40])])
    run(task)
    assert fired == [3, 10, 35, 40]


@pytest.mark.parametrize("interval", [0, -5])
def test_schedule_interval_below_one_ms_fails_init(interval: int) -> None:
    def schedule(context: ProcessorContext) -> None:
        context.schedule(interval, PunctuationType.STREAM_TIME, lambda t: None)

    task, _ = make_task([A0], Recorder(on_init=schedule))
    with pytest.raises(ProcessingError, match="The minimum supported scheduling interval is 1 millisecond.") as info:
        task.initialize_topology()
    assert info.value.task_id == "0_1"
    assert isinstance(info.value.__cause__, ValueError)


def test_anchored_start_before_epoch_is_rejected() -> None:
    def schedule(context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, lambda t: None, start_ms=-1)

    task, _ = make_task([A0], Recorder(on_init=schedule))
    with pytest.raises(ProcessingError, match="The minimum supported start time is Instant.EPOCH."):
        task.initialize_topology()


def test_schedule_outside_a_node_is_an_error() -> None:
    task, _ = make_task([A0])
    with pytest.raises(ProcessingError, match="Current node is null"):
        task.schedule(10, PunctuationType.STREAM_TIME, lambda t: None)


def test_anchored_schedule_moves_past_restored_stream_time() -> None:
    fired: list[int] = []

    def schedule(context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, fired.append, start_ms=5)

    task, _ = make_task([A0], Recorder(on_init=schedule))
    task.initialize_task_time({A0: 42})
    task.initialize_topology()
    assert not task.maybe_punctuate_stream_time()
    task.add_records(A0, [raw("a", 0, 0, 44), raw("a", 0, 1, 45)])
    run(task)
    assert fired == [45]


def test_wall_clock_frozen_never_fires_but_following_stream_time_does(caplog: pytest.LogCaptureFixture) -> None:
    for follow, expected in ((False, []), (True, [1010, 1030])):
        fired: list[int] = []

        def schedule(context: ProcessorContext, sink: list[int] = fired) -> None:
            context.schedule(10, PunctuationType.WALL_CLOCK_TIME, sink.append)

        clock = VirtualWallClock(1000, follow_stream_time=follow)
        task, _ = make_task([A0], Recorder(on_init=schedule), wall_clock=clock)
        caplog.set_level(logging.WARNING)
        task.initialize_topology()
        task.add_records(A0, [raw("a", 0, i, ts) for i, ts in enumerate([5, 1010, 1015, 1030])])
        task.disable_idling()
        while task.process():
            task.maybe_punctuate_stream_time()
            task.maybe_punctuate_system_time()
        assert fired == expected
        assert bool(task.frozen_wall_clock_schedules) is not follow
    assert "task [0_1] Processor proc scheduled a WALL_CLOCK_TIME punctuation every 10 ms" in caplog.text


def test_punctuator_exception_fail_and_continue() -> None:
    def failing(timestamp: int) -> None:
        raise RuntimeError("punct bug")

    def schedule(context: ProcessorContext) -> None:
        context.schedule(10, PunctuationType.STREAM_TIME, failing)

    task, _ = make_task([A0], Recorder(on_init=schedule))
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5)])
    task.disable_idling()
    task.process()
    with pytest.raises(PunctuationError, match="Exception caught while punctuating processor 'proc'") as info:
        task.maybe_punctuate_stream_time()
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.task_id == "0_1"

    config = TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler())
    task, _ = make_task([A0], Recorder(on_init=schedule), config=config)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5)])
    run(task)
    assert task.dropped.counts == {"punctuation_exception": 1}
    assert task.context.current_node is None


def test_context_during_punctuation_and_system_time() -> None:
    contexts: list[tuple[object, int, int]] = []
    holder: list[ProcessorContext] = []

    def schedule(context: ProcessorContext) -> None:
        holder.append(context)
        context.schedule(
            10,
            PunctuationType.STREAM_TIME,
            lambda t: contexts.append((context.record_metadata(), t, context.current_system_time_ms())),
        )

    task, _ = make_task([A0], Recorder(on_init=schedule), wall_clock=VirtualWallClock(777))
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 0, 5)])
    run(task)
    assert contexts == [(None, 5, 777)]
    assert holder[0].application_id == "streamproc"
    assert str(holder[0].task_id) == "0_1"


def test_state_stores_through_the_context() -> None:
    found: list[object] = []

    def lookup(context: ProcessorContext) -> None:
        found.append(context.get_state_store("counts"))
        with pytest.raises(StateError, match="asked for state store 'missing'"):
            context.get_state_store("missing")

    store = object()
    task, _ = make_task([A0], Recorder(on_init=lookup), stores={"counts": store})
    task.initialize_topology()
    assert found == [store]


def test_logs_are_task_prefixed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    task, _ = make_task([A0], config=CONTINUE)
    task.initialize_topology()
    task.add_records(A0, [raw("a", 0, 4, 1, corrupt=True)])
    assert "task [0_1] Skipping record due to deserialization error. topic=[a] partition=[0] offset=[4]" in caplog.text


def test_close_closes_processors() -> None:
    task, proc = make_task([A0])
    assert isinstance(proc, Recorder)
    task.initialize_topology()
    task.close()
    assert proc.closed


def test_corrupt_key_bytes_fail_with_position() -> None:
    task, _ = make_task([A0])
    task.initialize_topology()
    bad_key = raw("a", 0, 9, 5)
    from streamproc.engine.records import ConsumerRecord

    corrupt_key = ConsumerRecord.raw("a", 0, 9, 5, b"\xff\x00", b"v")
    assert bad_key.offset == corrupt_key.offset
    with pytest.raises(StreamsError) as info:
        task.add_records(A0, [corrupt_key])
    assert info.value.reason == "deserialization"
    assert "topic=[a] partition=[0] offset=[9]" in str(info.value)
    assert str(info.value).startswith("task [0_1] Deserialization exception handler is set to fail")


def test_source_extractor_wins_over_default_and_raising_extractor_is_wrapped_with_task() -> None:
    class Raising:
        def extract(self, record: Any, partition_time: int) -> int:
            raise LookupError("no field")

    task, _ = make_task([A0], source_extractor=Raising())
    task.initialize_topology()
    with pytest.raises(StreamsError) as info:
        task.add_records(A0, [raw("a", 0, 2, 5)])
    assert info.value.task_id == "0_1"
    assert info.value.kafka_message.startswith("Fatal user code error in TimestampExtractor callback for record ")
    assert isinstance(info.value.__cause__, StreamsError)
    assert isinstance(info.value.__cause__.__cause__, LookupError)
