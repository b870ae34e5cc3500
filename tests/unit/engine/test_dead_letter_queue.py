"""KIP-1034 dead letter queue records from the stock handlers, and pandera validation at a source (engine only)."""

from __future__ import annotations

import json
from typing import Any

import pandera.polars as pa
import pytest

from streamproc.engine.dead_letter_queue import DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, ERROR_HEADERS
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
)
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.processor_topology import RecordCollector
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import build_processor_topology
from streamproc.engine.validation import validate_value, value_failures
from streamproc.errors import RecordValidationError, StreamsError, TopologyError

STRING, JSON = serde_for("String"), serde_for("Json")
SCHEMA = pa.DataFrameSchema({"amount": pa.Column(int, pa.Check.ge(0))}, strict=True)
A0 = TopicPartition("orders", 0)


class Forward(Processor):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        if record.value.get("boom"):
            raise ValueError("boom")
        self.context.forward(Record(record.key, record.value["amount"], record.timestamp))


def _topology(schema: object | None = SCHEMA) -> Topology:
    t = Topology()
    t.add_source("orders", "orders", key_deserializer=STRING.deserializer, value_deserializer=JSON.deserializer,
                 value_schema=schema)  # fmt: skip
    t.add_processor("forward", Forward, "orders")
    t.add_sink(
        "out", "amounts", "forward", key_serializer=STRING.serializer, value_serializer=serde_for("Long").serializer
    )
    return t


def _raw(offset: int, value: bytes, headers: tuple[tuple[str, bytes | None], ...] = ()) -> Any:
    return ConsumerRecord.raw("orders", 0, offset, 100 + offset, b"k", value, headers=headers)


def _run(config: TaskConfig, records: list[Any], *, bulk: bool = True, schema: object | None = SCHEMA) -> Any:
    collector = RecordCollector({"amounts": 1})
    graph = build_processor_topology(_topology(schema), 0, application_id="app")
    task = StreamTask(TaskId(0, 0), graph, [A0], config=config, collector=collector)
    result = replay(task, [PartitionInput(A0, records, -1)], bulk=bulk)
    return result, collector.records


@pytest.mark.parametrize("bulk", [True, False])
def test_a_value_failing_the_schema_goes_to_the_dead_letter_queue_under_continue(bulk: bool) -> None:
    config = TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler(),
                        dead_letter_queue_topic="dlq")  # fmt: skip
    records = [_raw(0, b'{"amount":1}'), _raw(1, b'{"amount":-3}', (("trace", b"t1"),)), _raw(2, b'{"amount":2}')]
    result, sent = _run(config, records, bulk=bulk)
    assert result.dropped_counts == {"validation": 1}
    assert [(s.topic, s.value) for s in sent if s.topic == "amounts"] == [("amounts", b"\0" * 7 + b"\1"),
                                                                        ("amounts", b"\0" * 7 + b"\2")]  # fmt: skip
    [dead] = [s for s in sent if s.topic == "dlq"]
    assert (dead.partition, dead.key, dead.value, dead.timestamp) == (None, b"k", b'{"amount":-3}', 101)
    assert [h[0] for h in dead.headers] == ["trace", *ERROR_HEADERS]  # the source's headers first
    headers = dict(dead.headers)
    assert headers["__streams.errors.exception"] == b"streamproc.errors.RecordValidationError"
    assert headers["__streams.errors.message"] == (
        b"the value failed its schema: column 'amount' failed greater_than_or_equal_to(0) (failure case: -3)"
    )
    assert (headers["__streams.errors.topic"], headers["__streams.errors.partition"],
            headers["__streams.errors.offset"]) == (b"orders", b"0", b"1")  # fmt: skip
    assert dead.processor_node_id == "orders"


def test_under_fail_the_dead_letter_record_is_sent_and_the_task_fails_naming_the_record() -> None:
    config = TaskConfig(dead_letter_queue_topic="dlq")  # LogAndFail by default
    collector = RecordCollector({"amounts": 1})
    graph = build_processor_topology(_topology(), 0, application_id="app")
    task = StreamTask(TaskId(0, 0), graph, [A0], config=config, collector=collector)
    with pytest.raises(StreamsError, match=r"processor=orders, topic=orders, partition=0, offset=1") as failure:
        replay(task, [PartitionInput(A0, [_raw(0, b'{"amount":1}'), _raw(1, b'{"amount":"x"}')], -1)])
    assert isinstance(failure.value.__cause__, RecordValidationError)
    assert [s.topic for s in collector.records] == ["amounts", "dlq"]  # as in 4.2: sent before the task fails


def test_a_processor_exception_and_a_deserialization_error_also_reach_the_dead_letter_queue() -> None:
    config = TaskConfig(
        processing_exception_handler=LogAndContinueProcessingExceptionHandler(),
        deserialization_exception_handler=LogAndContinueExceptionHandler(),
        dead_letter_queue_topic="dlq",
    )
    result, sent = _run(config, [_raw(0, b'{"amount":1,"boom":true}'), _raw(1, b"{not json")], schema=None)
    assert result.dropped_counts == {"processing_exception": 1, "deserialization": 1}
    dead = [dict(s.headers) for s in sent if s.topic == "dlq"]
    # Record 1 is deserialized when record 0 is polled, before record 0 is processed (RQ-9): its DLQ record first.
    assert [d["__streams.errors.exception"] for d in dead] == [
        b"streamproc.engine.serdes.SerializationException",
        b"ValueError",
    ]
    assert [d["__streams.errors.offset"] for d in dead] == [b"1", b"0"]
    assert dead[1]["__streams.errors.message"] == b"boom"


@pytest.mark.parametrize("bulk", [True, False])
def test_the_stack_trace_header_starts_at_the_failing_processor_however_the_record_was_handed_to_it(
    bulk: bool,
) -> None:
    """The queue's first record reaches the processor through ``ProcessorContextImpl.forward``, later ones from the
    compiled loop (no frame of its own): the header is the same for both, so a key shard that reads only its own
    records (its own first record is another in the unsplit task) writes the unsplit task's bytes (issue #29)."""
    config = TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler(),
                        dead_letter_queue_topic="dlq")  # fmt: skip
    boom = b'{"amount":1,"boom":true}'
    _, sent = _run(config, [_raw(0, boom), _raw(1, b'{"amount":1}'), _raw(2, boom)], bulk=bulk, schema=None)
    traces = [dict(s.headers)["__streams.errors.stacktrace"].decode() for s in sent if s.topic == "dlq"]
    assert len(traces) == 2
    assert traces[0] == traces[1]
    first_frame = traces[0].splitlines()[1]
    assert __file__ in first_frame and "in process" in first_frame


def test_without_a_topic_the_handlers_build_no_dead_letter_record_and_configure_keeps_a_given_topic() -> None:
    result, sent = _run(TaskConfig(processing_exception_handler=LogAndContinueProcessingExceptionHandler()),
                        [_raw(0, b'{"amount":-1}')])  # fmt: skip
    assert result.dropped_counts == {"validation": 1} and sent == []
    handler = LogAndFailProcessingExceptionHandler("given")
    handler.configure({})
    assert handler.dead_letter_queue_topic == "given"
    handler.configure({DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG: "set"})
    assert handler.dead_letter_queue_topic == "set"


def test_values_checked_in_a_batch_get_the_verdict_each_gets_alone() -> None:
    values: list[object] = [{"amount": 1}, {"amount": -1}, {"amount": "x"}, {"amount": 2.5}, {"other": 1}, 7, None,
                            {"amount": 3}, json.loads('{"amount": -9}')]  # fmt: skip
    alone = []
    for value in values:
        try:
            validate_value(SCHEMA, value)
            alone.append(None)
        except RecordValidationError as exc:
            alone.append(str(exc))
    assert value_failures(SCHEMA, values) == alone
    assert alone[0] is None and alone[7] is None and all(a is not None for i, a in enumerate(alone) if i not in (0, 7))


def test_a_value_schema_that_is_not_a_pandera_polars_schema_is_refused() -> None:
    with pytest.raises(TopologyError, match="source s: value_schema .* is not a pandera.polars"):
        Topology().add_source("s", "t", value_schema={"amount": int})
