"""``ProcessorContextImpl``'s lazy record context: built on first read, equal to the eager one, restored by forward."""

from __future__ import annotations

from typing import Any

from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_context import ProcessorContextImpl
from streamproc.engine.processor_topology import ProcessorNode
from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, Record, RecordMetadata
from streamproc.engine.stamped_record import StampedRecord
from tests.unit.engine.builders import A0, make_task

HEADERS = (("h", b"1"),)


def context_of_task() -> tuple[ProcessorContextImpl, ProcessorNode]:
    task, _ = make_task([A0])
    task.initialize_topology()
    return task.context, task.topology.nodes[0]


def test_set_record_builds_the_context_of_the_stamped_record_on_first_read() -> None:
    context, source = context_of_task()
    deserialized = ConsumerRecord.raw("a", 0, 9, 5, b"k", b"v", headers=HEADERS)
    context.set_record(source, StampedRecord(deserialized, 42, b"rk", b"rv"), 77)
    assert context._record_context is None
    expected = ProcessorRecordContext(42, 9, 0, "a", HEADERS, b"rk", b"rv")
    assert context.record_context == expected
    assert context.record_context is context.record_context
    assert context.record_metadata() == RecordMetadata("a", 0, 9)
    assert (context.current_node, context.system_time_ms) == (source, 77)


def test_set_raw_record_takes_raw_bytes_from_the_raw_record() -> None:
    context, source = context_of_task()
    raw = ConsumerRecord.raw("a", 0, 3, 1, b"k", None, headers=HEADERS)
    context.set_raw_record(source, raw, 8, 5)
    assert context.record_context == ProcessorRecordContext(8, 3, 0, "a", HEADERS, b"k", None)


def test_record_timestamp_is_the_record_contexts_without_building_a_lazy_one() -> None:
    context, source = context_of_task()
    context.set_raw_record(source, ConsumerRecord.raw("a", 0, 3, 1, b"k", None), 8, 5)
    assert context.record_timestamp() == 8 and context._record_context is None
    assert context.record_timestamp() == context.record_context.timestamp
    deserialized = ConsumerRecord.raw("a", 0, 9, 5, b"k", b"v")
    context.set_record(source, StampedRecord(deserialized, 42, b"rk", b"rv"), 77)
    assert context.record_timestamp() == 42 and context._record_context is None
    assert context.record_timestamp() == context.record_context.timestamp
    context.record_context = ProcessorRecordContext(-1, -1, -1, None)  # a punctuation's
    assert context.record_timestamp() == -1


class Capture(Processor):
    def __init__(self) -> None:
        self.contexts: list[ProcessorRecordContext] = []
        self.context: ProcessorContextImpl | None = None

    def init(self, context: ProcessorContext) -> None:
        assert isinstance(context, ProcessorContextImpl)
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        self.contexts.append(self.context.record_context)


def test_forward_with_a_new_timestamp_installs_a_new_context_and_restores_the_lazy_one() -> None:
    capture = Capture()
    task, _ = make_task([A0], capture)
    task.initialize_topology()
    context = task.context
    source = task.topology.nodes[0]
    raw = ConsumerRecord.raw("a", 0, 3, 1, b"k", b"v", headers=HEADERS)
    context.set_raw_record(source, raw, 8, 5)
    context.forward(Record("k", "v", 8, HEADERS))
    context.forward(Record("k", "v", 9, HEADERS))
    assert capture.contexts == [
        ProcessorRecordContext(8, 3, 0, "a", HEADERS, b"k", b"v"),
        ProcessorRecordContext(9, 3, 0, "a", HEADERS, b"k", b"v"),
    ]
    assert context._record_context is None
    assert context.current_node is source
    assert context.record_context == ProcessorRecordContext(8, 3, 0, "a", HEADERS, b"k", b"v")
