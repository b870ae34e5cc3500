"""Conformance runner for ``ordering`` scenarios (``../shared/spec/scenarios/ordering/``, format in the README).

Builds the scenario topology (source ``source`` on every listed topic with UTF-8 String serdes, where a value
starting with byte ``0xFF`` makes the deserializer raise; processor ``proc`` that records what it sees, schedules
the scenario's punctuations and raises on ``fail_processing`` records), replays task ``0_0`` with
:func:`streamproc.engine.replay.replay`, and returns the result in the scenario's ``expected`` shape. Optional keys
(``extracted_timestamps``, ``record_contexts``, ``punctuations_fired``) are included only when the scenario has them.

Transactional inputs and leader epochs (``conformance/README.md``): control markers never reach the task, records
of aborted transactions not under ``read_committed`` (``exactly_once_v2`` or ``isolation_level``), a record's
``leader_epoch`` is kept (Kafka's messages quote it), and ``committed_offsets`` (when ``expected`` has it) is what
``StreamTask#committableOffsetsAndMetadata`` commits with empty queues: the position after the partition's last
entry, markers and aborted records included.

:func:`class_cast_routing` is the streamproc side of ordering.md §11 q7 (``ClassCastRouting.java`` is Kafka's).

An ``error`` result quotes Kafka's message projected onto the expected shape: ``kafka_message_prefix`` is the
actual message cut to the expected prefix's length, ``kafka_message_contains`` lists those expected substrings the
actual message really contains (so a wrong message shows up as a mismatch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.engine.deserialization_handler import (
    DeserializationExceptionHandler,
    LogAndContinueExceptionHandler,
    LogAndFailExceptionHandler,
)
from streamproc.engine.dropped_records import REASON_PROCESSING_EXCEPTION, REASON_PUNCTUATION_EXCEPTION
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProcessingExceptionResponse,
)
from streamproc.engine.processor import ClassCastError, Processor, ProcessorContext
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SourceNode
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import ConsumerRecord, Record, TopicPartition
from streamproc.engine.replay import PartitionInput, replay
from streamproc.engine.serdes import serde_for
from streamproc.engine.stream_task import StreamTask, TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.timestamp_extractor import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
    extractor_name,
)
from streamproc.engine.topology import Topology
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import ConfigError, PunctuationError, StreamsError
from streamproc.state.committable_offsets import PartitionCommitState, commit_offsets
from streamproc.testing import TASK_ID, TopologyTestDriver

#: The README's corrupt value bytes: the test String deserializer rejects a leading 0xFF.
CORRUPT_VALUE = b"\xff\x01"
CORRUPT_MARKER = 0xFF
#: Transactional inputs (``conformance/README.md``): a record's transaction id, a marker entry's kind.
TXN = "txn"
CONTROL = "control"
CONTROL_ABORT = "ABORT"
#: ``isolation.level`` and ``processing.guarantee`` values that make the consumer skip aborted records.
READ_COMMITTED = "read_committed"
EXACTLY_ONCE_V2 = "exactly_once_v2"
#: Optional ``expected`` key: what the task commits per partition after the replay.
COMMITTED_OFFSETS = "committed_offsets"

_DESERIALIZATION_HANDLERS: dict[str, Callable[[], DeserializationExceptionHandler]] = {
    "LogAndFailExceptionHandler": LogAndFailExceptionHandler,
    "LogAndContinueExceptionHandler": LogAndContinueExceptionHandler,
}
_PROCESSING_HANDLERS: dict[str, Callable[[], ProcessingExceptionHandler]] = {
    "LogAndFailProcessingExceptionHandler": LogAndFailProcessingExceptionHandler,
    "LogAndContinueProcessingExceptionHandler": LogAndContinueProcessingExceptionHandler,
}


class CorruptValueError(ValueError):
    """The scenario String deserializer's refusal of a value starting with 0xFF."""


def string_deserializer(topic: str, data: bytes | None) -> object:
    """UTF-8 ``StringDeserializer``; ``None`` for null; raises for the README's corrupt bytes."""
    if data is None:
        return None
    if data and data[0] == CORRUPT_MARKER:
        raise CorruptValueError(f"corrupt value bytes for topic {topic}: leading 0xFF")
    return data.decode("utf-8", errors="replace")


class _RecordingExtractor:
    """Delegates to the configured extractor and records every call (``extracted_timestamps``)."""

    def __init__(self, inner: TimestampExtractor, calls: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._calls = calls
        self.canonical_name = extractor_name(inner)

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
        timestamp = self._inner.extract(record, partition_time)
        self._calls.append(
            {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "partition_time_arg": partition_time,
                "timestamp": timestamp,
            }
        )
        return timestamp


class _ScenarioProcessor(Processor):
    """``proc``: records each record with its context, schedules the punctuations, fails where marked."""

    def __init__(self, punctuations: list[dict[str, Any]], failing: set[tuple[str, int, int]]) -> None:
        self._punctuations = punctuations
        self._failing = failing
        self.order: list[list[Any]] = []
        self.stream_times: list[int] = []
        self.contexts: list[dict[str, Any]] = []
        self.fired: list[dict[str, Any]] = []
        self._context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._context = context
        for index, spec in enumerate(self._punctuations):
            punctuation_type = PunctuationType[spec["type"]]
            context.schedule(
                int(spec["interval_ms"]),
                punctuation_type,
                self._punctuator(index, punctuation_type),
                start_ms=spec.get("start_ms"),
            )

    def _punctuator(self, index: int, punctuation_type: PunctuationType) -> Callable[[int], None]:
        def punctuate(timestamp: int) -> None:
            self.fired.append(
                {
                    "type": punctuation_type.value,
                    "timestamp": timestamp,
                    "after_record_index": len(self.order) - 1,
                    "schedule_index": index,
                }
            )

        return punctuate

    def process(self, record: Record[Any, Any]) -> None:
        context = self._context
        assert context is not None
        metadata = context.record_metadata()
        assert metadata is not None
        self.order.append([metadata.topic, metadata.partition, metadata.offset])
        self.stream_times.append(context.current_stream_time_ms())
        self.contexts.append(
            {
                "topic": metadata.topic,
                "partition": metadata.partition,
                "offset": metadata.offset,
                "timestamp": record.timestamp,
                "headers": {k: None if v is None else v.decode("utf-8") for k, v in record.headers},
                "key": record.key,
                "value": record.value,
            }
        )
        if (metadata.topic, metadata.partition, metadata.offset) in self._failing:
            raise RuntimeError(f"scenario processor fails on {metadata.topic}-{metadata.partition}@{metadata.offset}")


def _transaction_outcomes(scenario: dict[str, Any]) -> dict[str, bool]:
    """Transaction id -> aborted, from the ``control`` entries (every marker of one transaction must agree)."""
    aborted: dict[str, bool] = {}
    for partition in scenario["partitions"]:
        for spec in partition["records"]:
            if spec.get(CONTROL) is None:
                continue
            txn = str(spec[TXN])
            abort = spec[CONTROL] == CONTROL_ABORT
            if aborted.setdefault(txn, abort) != abort:
                raise ConfigError(f"transaction {txn!r} has both commit and abort markers in scenario {scenario['id']}")
    return aborted


def read_committed(config: dict[str, Any]) -> bool:
    """``isolation.level=read_committed``: forced by ``exactly_once_v2``, else ``config.isolation_level``."""
    return config.get("processing_guarantee") == EXACTLY_ONCE_V2 or config.get("isolation_level") == READ_COMMITTED


def delivered_records(scenario: dict[str, Any], partition: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries a consumer hands to Kafka Streams (``CompletedFetch#nextFetchedRecord``, kafka-clients 4.2).

    Control markers never; records of an aborted transaction not under ``read_committed``. Nothing else changes:
    the remaining records keep their offsets, so the gaps stay visible in the record contexts.
    """
    committed_only = read_committed(scenario.get("config", {}))
    aborted = _transaction_outcomes(scenario) if committed_only else {}
    out: list[dict[str, Any]] = []
    for spec in partition["records"]:
        if spec.get(CONTROL) is not None:
            continue
        txn = spec.get(TXN)
        if committed_only and txn is not None:
            if str(txn) not in aborted:
                raise ConfigError(f"transaction {txn!r} has no commit or abort marker in scenario {scenario['id']}")
            if aborted[str(txn)]:
                continue
        out.append(spec)
    return out


def end_position(partition: dict[str, Any]) -> int:
    """The consumer's position once the whole partition is fetched: past the last entry, marker or not."""
    return max((int(spec["offset"]) + 1 for spec in partition["records"]), default=0)


def _committed_offsets(
    scenario: dict[str, Any], task: StreamTask, inputs: list[PartitionInput]
) -> list[dict[str, Any]]:
    """``StreamTask#committableOffsetsAndMetadata`` after the replay: every partition the task consumed from.

    The queues are empty at the end, so each offset is the consumer's next fetch position that the last poll
    reported (``ConsumerRecords#nextOffsets`` -> ``StreamTask#updateNextOffsets``): past trailing markers and
    aborted records, not the last record + 1.
    """
    ends = {TopicPartition(p["topic"], int(p["partition"])): end_position(p) for p in scenario["partitions"]}
    consumed = task.committable_offsets()
    states = {
        item.partition: PartitionCommitState(
            processed_any=item.partition in consumed,
            head_buffered_offset=None,
            next_offset_to_consume=ends[item.partition],
            partition_time=task.partition_group.partition_timestamp(item.partition),
        )
        for item in inputs
    }
    offsets = commit_offsets(states)
    return [
        {"topic": p["topic"], "partition": int(p["partition"]), "offset": offsets[tp].offset}
        for p in scenario["partitions"]
        if (tp := TopicPartition(p["topic"], int(p["partition"]))) in offsets
    ]


def _raw_records(
    scenario: dict[str, Any], partition: dict[str, Any]
) -> list[ConsumerRecord[bytes | None, bytes | None]]:
    records: list[ConsumerRecord[bytes | None, bytes | None]] = []
    for spec in delivered_records(scenario, partition):
        key = spec.get("key")
        value = spec.get("value")
        value_bytes = CORRUPT_VALUE if spec.get("corrupt") else (None if value is None else str(value).encode("utf-8"))
        headers = tuple(
            (k, None if v is None else str(v).encode("utf-8")) for k, v in (spec.get("headers") or {}).items()
        )
        records.append(
            ConsumerRecord.raw(
                partition["topic"],
                int(partition["partition"]),
                int(spec["offset"]),
                int(spec["timestamp"]),
                None if key is None else str(key).encode("utf-8"),
                value_bytes,
                headers=headers,
                leader_epoch=None if spec.get("leader_epoch") is None else int(spec["leader_epoch"]),
            )
        )
    return records


def _extractor(name: str, clock: VirtualWallClock) -> TimestampExtractor:
    if name == "FailOnInvalidTimestamp":
        return FailOnInvalidTimestamp()
    if name == "LogAndSkipOnInvalidTimestamp":
        return LogAndSkipOnInvalidTimestamp()
    if name == "UsePartitionTimeOnInvalidTimestamp":
        return UsePartitionTimeOnInvalidTimestamp()
    if name == "WallclockTimestampExtractor":
        return WallclockTimestampExtractor(clock.milliseconds)
    raise ConfigError(f"unknown timestamp_extractor {name!r} in ordering scenario")


def _error(exc: StreamsError | PunctuationError, processed: int, expected: dict[str, Any] | None) -> dict[str, Any]:
    message = exc.kafka_message
    error: dict[str, Any] = {
        "reason": exc.reason if isinstance(exc, StreamsError) else REASON_PUNCTUATION_EXCEPTION,
        "topic": exc.topic if isinstance(exc, StreamsError) else None,
        "partition": exc.partition if isinstance(exc, StreamsError) else -1,
        "offset": exc.offset if isinstance(exc, StreamsError) else -1,
        "before_record_index": processed,
        "kafka_exception": exc.kafka_exception,
        "kafka_message_prefix": message,
    }
    if expected is not None:
        prefix = expected.get("kafka_message_prefix")
        if isinstance(prefix, str):
            error["kafka_message_prefix"] = message[: len(prefix)]
        contains = expected.get("kafka_message_contains")
        if isinstance(contains, list):
            error["kafka_message_contains"] = [text for text in contains if text in message]
    return error


def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """Replay one ordering scenario (decisions D-1..D-5) and return the result in its ``expected`` shape."""
    config = scenario.get("config", {})
    expected = scenario.get("expected", {})
    punctuations = scenario.get("punctuations")
    clock = VirtualWallClock(int(config.get("virtual_wall_clock_ms", 0)))
    calls: list[dict[str, Any]] = []
    extractor = _RecordingExtractor(
        _extractor(config.get("timestamp_extractor", "FailOnInvalidTimestamp"), clock), calls
    )
    try:
        deserialization_handler = _DESERIALIZATION_HANDLERS[
            config.get("deserialization_exception_handler", "LogAndFailExceptionHandler")
        ]()
        processing_handler = _PROCESSING_HANDLERS[
            config.get("processing_exception_handler", "LogAndFailProcessingExceptionHandler")
        ]()
    except KeyError as exc:
        raise ConfigError(f"unknown exception handler {exc} in ordering scenario {scenario.get('id')}") from exc

    partitions = scenario["partitions"]
    topics = list(dict.fromkeys(p["topic"] for p in partitions))
    failing = {
        (p["topic"], int(p["partition"]), int(r["offset"]))
        for p in partitions
        for r in delivered_records(scenario, p)
        if r.get("fail_processing")
    }
    source = SourceNode("source", topics, string_deserializer, string_deserializer)
    proc = _ScenarioProcessor(list(punctuations or []), failing)
    proc_node = ProcessorNode("proc", proc)
    source.add_child(proc_node)
    topology = ProcessorTopology([source, proc_node])
    task_config = TaskConfig(
        default_timestamp_extractor=extractor,
        deserialization_exception_handler=deserialization_handler,
        processing_exception_handler=processing_handler,
        max_task_idle_ms=int(config.get("max_task_idle_ms", 0)),
    )
    inputs = [
        PartitionInput(
            TopicPartition(p["topic"], int(p["partition"])),
            _raw_records(scenario, p),
            int(p["committed_partition_time"]) if p.get("committed_partition_time") is not None else -1,
        )
        for p in partitions
    ]
    task = StreamTask(TaskId(0, 0), topology, [item.partition for item in inputs], config=task_config, wall_clock=clock)
    error: dict[str, Any] | None = None
    try:
        replay(task, inputs)
    except (StreamsError, PunctuationError) as exc:
        error = _error(exc, task.records_processed, expected.get("error"))

    dropped: list[dict[str, Any]] = []
    for event in task.dropped.events:
        entry: dict[str, Any] = {
            "topic": event.topic,
            "partition": event.partition,
            "offset": event.offset,
            "reason": event.reason,
        }
        if event.reason in (REASON_PROCESSING_EXCEPTION, REASON_PUNCTUATION_EXCEPTION):
            entry["record_index"] = event.records_processed
        else:
            entry["before_record_index"] = event.records_processed
        dropped.append(entry)
    result: dict[str, Any] = {
        "order": proc.order,
        "stream_time_after_each": proc.stream_times,
        "dropped": dropped,
        "skip_steps": [
            {"topic": s.topic, "partition": s.partition, "offset": s.offset, "before_record_index": s.records_processed}
            for s in task.skip_steps
        ],
    }
    if punctuations is not None:
        result["punctuations_fired"] = proc.fired
    if error is not None:
        result["error"] = error
    if "extracted_timestamps" in expected:
        result["extracted_timestamps"] = calls
    if "record_contexts" in expected:
        result["record_contexts"] = proc.contexts
    if COMMITTED_OFFSETS in expected:
        result[COMMITTED_OFFSETS] = [] if error is not None else _committed_offsets(scenario, task, inputs)
    return result


# ------------------------------------------------------------------------------ ordering.md §11 q7 (PE-1) experiment

#: The experiment's input topic and the values piped into it, one record each (offsets 0, 1).
CLASS_CAST_TOPIC = "input"
CLASS_CAST_VALUES = ("a", "b")


class _Events:
    """What the experiment's processors and handler saw, in order (``ClassCastRouting.java`` records the same)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.handler_calls: list[dict[str, Any]] = []


class _Parent(Processor):
    def __init__(self, seen: _Events) -> None:
        self._seen = seen
        self._context: ProcessorContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._context = context

    def process(self, record: Record[Any, Any]) -> None:
        assert self._context is not None
        self._seen.events.append(f"parent:{record.value}")
        self._context.forward(record)
        self._seen.events.append(f"parent-after-forward:{record.value}")


class _Cast(Processor):
    """Wants an int value and gets a String: Java's ``(Integer) value`` fails with a ``ClassCastException``, this
    processor checks the type and raises :class:`~streamproc.engine.processor.ClassCastError`."""

    def __init__(self, seen: _Events) -> None:
        self._seen = seen

    def process(self, record: Record[Any, Any]) -> None:
        self._seen.events.append(f"cast:{record.value}")
        if not isinstance(record.value, int):
            raise ClassCastError(f"class {type(record.value).__qualname__} cannot be cast to class int")
        number = record.value + 1
        self._seen.events.append(f"cast-done:{number}")


class _Sibling(Processor):
    def __init__(self, seen: _Events) -> None:
        self._seen = seen

    def process(self, record: Record[Any, Any]) -> None:
        self._seen.events.append(f"sibling:{record.value}")


class _RecordingProcessingHandler:
    """Notes what the handler is given, then answers as the real built-in handler does."""

    def __init__(self, inner: ProcessingExceptionHandler, seen: _Events) -> None:
        self._inner = inner
        self._seen = seen

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse:
        response = self._inner.handle_error(context, record, exception)
        cause = exception.__cause__
        self._seen.handler_calls.append(
            {
                "processor_node_id": context.processor_node_id,
                "topic": context.topic,
                "offset": context.offset,
                "exception": type(exception).__name__,
                "message": getattr(exception, "kafka_message", str(exception)),
                "cause": None if cause is None else type(cause).__name__,
                "record_value": None if record is None else str(record.value),
                "response": response.result.value,
            }
        )
        return response


def class_cast_routing(*, with_parent: bool, resume: bool) -> dict[str, Any]:
    """ordering.md §11 q7 on streamproc's ``TopologyTestDriver``, in ``ClassCastRouting.java``'s result shape.

    ``source -> parent -> [cast, sibling]`` (or ``source -> [cast, sibling]`` without ``with_parent``); ``cast``
    raises ``ClassCastError`` for every String value; the processing handler wraps ``LogAndContinue…`` (``resume``) or
    ``LogAndFail…``. Each value of :data:`CLASS_CAST_VALUES` is piped; a task failure is noted and the next value
    piped anyway, as Kafka's driver allows.
    """
    seen = _Events()
    inner: ProcessingExceptionHandler = (
        LogAndContinueProcessingExceptionHandler() if resume else LogAndFailProcessingExceptionHandler()
    )
    topology = Topology()
    string = serde_for("String")
    topology.add_source(
        "source", CLASS_CAST_TOPIC, key_deserializer=string.deserializer, value_deserializer=string.deserializer
    )
    parent_of_cast = "source"
    if with_parent:
        topology.add_processor("parent", lambda: _Parent(seen), "source")
        parent_of_cast = "parent"
    topology.add_processor("cast", lambda: _Cast(seen), parent_of_cast)
    topology.add_processor("sibling", lambda: _Sibling(seen), parent_of_cast)
    config = TaskConfig(processing_exception_handler=_RecordingProcessingHandler(inner, seen))
    errors: list[dict[str, Any]] = []
    with TopologyTestDriver(topology, config) as driver:
        topic = driver.create_input_topic(CLASS_CAST_TOPIC, string.serializer, string.serializer)
        for value in CLASS_CAST_VALUES:
            try:
                topic.pipe_input("k", value, 1)
            except StreamsError as exc:
                cause = exc.__cause__
                errors.append(
                    {
                        "value": value,
                        "exception": type(exc).__name__,
                        "message": exc.kafka_message,
                        "cause": None if cause is None else type(cause).__name__,
                        "cause_cause": None
                        if cause is None or cause.__cause__ is None
                        else type(cause.__cause__).__name__,
                    }
                )
        dropped = driver._tasks[TASK_ID].dropped.total
    return {
        "dropped_records_total": dropped,
        "events": seen.events,
        "handler_calls": seen.handler_calls,
        "errors": errors,
    }
