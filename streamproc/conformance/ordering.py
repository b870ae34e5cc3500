"""Conformance runner for ``ordering`` scenarios (``../shared/spec/scenarios/ordering/``, format in the README).

Builds the scenario topology (source ``source`` on every listed topic with UTF-8 String serdes, where a value
starting with byte ``0xFF`` makes the deserializer raise; processor ``proc`` that records what it sees, schedules
the scenario's punctuations and raises on ``fail_processing`` records), replays task ``0_0`` with
:func:`streamproc.engine.replay.replay`, and returns the result in the scenario's ``expected`` shape. Optional keys
(``extracted_timestamps``, ``record_contexts``, ``punctuations_fired``) are included only when the scenario has them.

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
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
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
    WallclockTimestampExtractor,
    extractor_name,
)
from streamproc.engine.wall_clock import VirtualWallClock
from streamproc.errors import ConfigError, PunctuationError, StreamsError

#: The README's corrupt value bytes: the test String deserializer rejects a leading 0xFF.
CORRUPT_VALUE = b"\xff\x01"
CORRUPT_MARKER = 0xFF

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


def _raw_records(partition: dict[str, Any]) -> list[ConsumerRecord[bytes | None, bytes | None]]:
    records: list[ConsumerRecord[bytes | None, bytes | None]] = []
    for spec in partition["records"]:
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
        for r in p["records"]
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
            _raw_records(p),
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
    return result
