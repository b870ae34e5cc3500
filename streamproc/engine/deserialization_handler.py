"""Deserialization exception handlers (ordering.md DE-1, DE-2).

Mirrors ``org.apache.kafka.streams.errors.DeserializationExceptionHandler`` with its two stock answers,
``LogAndContinueExceptionHandler`` and ``LogAndFailExceptionHandler`` (the default), checked against 4.2.0. A user
handler implements the same protocol. With ``errors.dead.letter.queue.topic.name`` configured, both stock handlers
answer with a KIP-1034 dead letter queue record (``dead_letter_queue``), which ``RecordDeserializer`` sends.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from streamproc.engine.dead_letter_queue import (
    DeadLetterQueueRecord,
    configured_topic,
    maybe_build_dead_letter_queue_records,
)
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.records import ConsumerRecord

logger = logging.getLogger(__name__)

#: ``StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG`` (4.0+, KIP-1056).
DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG = "deserialization.exception.handler"


class DeserializationHandlerResult(enum.Enum):
    """``DeserializationExceptionHandler.Result``."""

    RESUME = "RESUME"
    FAIL = "FAIL"


@dataclass(frozen=True, slots=True)
class DeserializationExceptionResponse:
    """``DeserializationExceptionHandler.Response``: the verdict and the dead letter queue records to send first."""

    result: DeserializationHandlerResult
    dead_letter_queue_records: tuple[DeadLetterQueueRecord, ...] = ()

    @classmethod
    def resume(cls, records: Iterable[DeadLetterQueueRecord] = ()) -> DeserializationExceptionResponse:
        return cls(DeserializationHandlerResult.RESUME, tuple(records))

    @classmethod
    def fail(cls, records: Iterable[DeadLetterQueueRecord] = ()) -> DeserializationExceptionResponse:
        return cls(DeserializationHandlerResult.FAIL, tuple(records))


@runtime_checkable
class DeserializationExceptionHandler(Protocol):
    """Decides, for a record whose key or value deserializer raised, whether the task skips it or fails."""

    def handle_error(
        self,
        context: ErrorHandlerContext,
        record: ConsumerRecord[bytes | None, bytes | None],
        exception: Exception,
    ) -> DeserializationExceptionResponse: ...


_MESSAGE = "Exception caught during Deserialization, taskId: %s, topic: %s, partition: %s, offset: %s"


class LogAndContinueExceptionHandler:
    """Logs WARN and skips the record (RESUME)."""

    def __init__(self, dead_letter_queue_topic: str | None = None) -> None:
        self.dead_letter_queue_topic = dead_letter_queue_topic

    def configure(self, configs: Mapping[str, object]) -> None:
        """Reads ``errors.dead.letter.queue.topic.name`` (as the Java handler's ``configure``)."""
        self.dead_letter_queue_topic = configured_topic(configs, self.dead_letter_queue_topic)

    def handle_error(
        self,
        context: ErrorHandlerContext,
        record: ConsumerRecord[bytes | None, bytes | None],
        exception: Exception,
    ) -> DeserializationExceptionResponse:
        logger.warning(_MESSAGE, context.task_id, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationExceptionResponse.resume(
            maybe_build_dead_letter_queue_records(
                self.dead_letter_queue_topic, context.source_raw_key, context.source_raw_value, context, exception
            )
        )


class LogAndFailExceptionHandler:
    """The default: logs ERROR and fails the task (FAIL)."""

    def __init__(self, dead_letter_queue_topic: str | None = None) -> None:
        self.dead_letter_queue_topic = dead_letter_queue_topic

    def configure(self, configs: Mapping[str, object]) -> None:
        """Reads ``errors.dead.letter.queue.topic.name`` (as the Java handler's ``configure``)."""
        self.dead_letter_queue_topic = configured_topic(configs, self.dead_letter_queue_topic)

    def handle_error(
        self,
        context: ErrorHandlerContext,
        record: ConsumerRecord[bytes | None, bytes | None],
        exception: Exception,
    ) -> DeserializationExceptionResponse:
        logger.error(_MESSAGE, context.task_id, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationExceptionResponse.fail(
            maybe_build_dead_letter_queue_records(
                self.dead_letter_queue_topic, context.source_raw_key, context.source_raw_value, context, exception
            )
        )
