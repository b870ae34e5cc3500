"""``RecordDeserializer``: raw record → deserialized record, or the deserialization handler's verdict (DE-1).

Mirrors ``org.apache.kafka.streams.processor.internals.RecordDeserializer`` (4.2.0): key first, then value, through
the source node's deserializers; any exception goes to the handler. RESUME logs, counts one ``dropped-records`` and
skips; FAIL raises Kafka's ``StreamsException`` text; a handler that raises (or answers ``None``) is fatal. One
exception never reaches the handler: a Schema Registry that does not answer (``SchemaRegistryUnavailable``) fails
the task, where Kafka Streams with Confluent's serde would let a ``LogAndContinue`` handler skip every record.
"""

from __future__ import annotations

import logging
from typing import Any

from streamproc.engine.deserialization_handler import (
    DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
    DeserializationExceptionHandler,
    DeserializationHandlerResult,
)
from streamproc.engine.dropped_records import REASON_DESERIALIZATION, DroppedRecordsSensor
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processor_topology import RecordCollector, SourceNode
from streamproc.engine.records import ConsumerRecord, TimestampType
from streamproc.errors import SchemaRegistryUnavailable, StreamsError

#: Reason given to ``StreamsError`` when the deserialization handler itself fails.
REASON_DESERIALIZATION_HANDLER = "deserialization_handler"


def deserialized_record(
    raw: ConsumerRecord[bytes | None, bytes | None], key: object, value: object
) -> ConsumerRecord[object, object]:
    """The record ``RecordDeserializer.deserialize`` returns for ``raw`` with its deserialized key and value."""
    return ConsumerRecord(
        raw.topic,
        raw.partition,
        raw.offset,
        raw.timestamp,
        TimestampType.CREATE_TIME,
        key,
        value,
        raw.headers,
        raw.leader_epoch,
        raw.serialized_key_size,
        raw.serialized_value_size,
    )


class RecordDeserializer:
    """Deserializes the records of one source node for one task."""

    __slots__ = ("_collector", "_dropped", "_handler", "_log", "_source", "_task_id")

    def __init__(
        self,
        source: SourceNode,
        handler: DeserializationExceptionHandler,
        task_id: str,
        dropped: DroppedRecordsSensor,
        log: logging.LoggerAdapter[Any],
        collector: RecordCollector | None = None,
    ) -> None:
        self._source = source
        #: Where the handler's dead letter queue records go (the task's collector).
        self._collector = collector
        self._handler = handler
        self._task_id = task_id
        self._dropped = dropped
        self._log = log

    @property
    def source(self) -> SourceNode:
        return self._source

    def deserialize(self, raw: ConsumerRecord[bytes | None, bytes | None]) -> ConsumerRecord[object, object] | None:
        """The deserialized record (timestamp type always ``CREATE_TIME``, SR-2), or ``None`` to skip it."""
        source = self._source
        try:
            key = source.key_deserializer(raw.topic, raw.key)
            value = source.value_deserializer(raw.topic, raw.value)
        except Exception as deserialization_exception:
            self._handle_failure(raw, deserialization_exception)
            return None
        return deserialized_record(raw, key, value)

    def _handle_failure(self, raw: ConsumerRecord[bytes | None, bytes | None], exception: Exception) -> None:
        if isinstance(exception, SchemaRegistryUnavailable):
            raise exception  # the registry's outage, not the record's fault: the task fails, nothing is skipped
        context = ErrorHandlerContext(
            topic=raw.topic,
            partition=raw.partition,
            offset=raw.offset,
            headers=raw.headers,
            processor_node_id=self._source.name,
            task_id=self._task_id,
            timestamp=raw.timestamp,
            source_raw_key=raw.key,
            source_raw_value=raw.value,
        )
        try:
            response = self._handler.handle_error(context, raw, exception)
            if response is None:
                raise TypeError("Invalid DeserializationExceptionResponse response.")
        except Exception as fatal_user_exception:
            self._log.error(
                "Deserialization error callback failed after deserialization error for record %s",
                raw,
                exc_info=exception,
            )
            raise StreamsError(
                "Fatal user code error in deserialization error callback",
                reason=REASON_DESERIALIZATION_HANDLER,
                topic=raw.topic,
                partition=raw.partition,
                offset=raw.offset,
                task_id=self._task_id,
            ) from fatal_user_exception
        records = response.dead_letter_queue_records
        if records and self._collector is None:
            raise StreamsError(
                "the deserialization exception handler returned dead letter queue records, but the task has no "
                "record collector to send them to",
                reason=REASON_DESERIALIZATION_HANDLER,
                topic=raw.topic,
                partition=raw.partition,
                offset=raw.offset,
                task_id=self._task_id,
            )
        for dead_letter in records:  # sent before a FAIL ends the task, as in 4.2
            assert self._collector is not None
            self._collector.send_dead_letter_queue_record(dead_letter, self._source.name)
        if response.result is DeserializationHandlerResult.FAIL:
            raise StreamsError(
                "Deserialization exception handler is set to fail upon a deserialization error. If you would rather "
                "have the streaming pipeline continue after a deserialization error, please set the "
                f"{DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG} appropriately.",
                reason=REASON_DESERIALIZATION,
                topic=raw.topic,
                partition=raw.partition,
                offset=raw.offset,
                task_id=self._task_id,
            ) from exception
        self._log.warning(
            "Skipping record due to deserialization error. topic=[%s] partition=[%s] offset=[%s]",
            raw.topic,
            raw.partition,
            raw.offset,
            exc_info=exception,
        )
        self._dropped.record(raw.topic, raw.partition, raw.offset, REASON_DESERIALIZATION)
