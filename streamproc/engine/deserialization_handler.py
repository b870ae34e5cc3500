"""Deserialization exception handlers (ordering.md DE-1, DE-2).

Mirrors ``org.apache.kafka.streams.errors.DeserializationExceptionHandler`` with its two stock answers,
``LogAndContinueExceptionHandler`` and ``LogAndFailExceptionHandler`` (the default), checked against 4.2.0. A user
handler implements the same protocol. The dead-letter-queue records of KIP-1034 are not produced by streamproc yet.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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
    """``DeserializationExceptionHandler.Response`` (without dead-letter-queue records)."""

    result: DeserializationHandlerResult

    @classmethod
    def resume(cls) -> DeserializationExceptionResponse:
        return cls(DeserializationHandlerResult.RESUME)

    @classmethod
    def fail(cls) -> DeserializationExceptionResponse:
        return cls(DeserializationHandlerResult.FAIL)


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

    def handle_error(
        self,
        context: ErrorHandlerContext,
        record: ConsumerRecord[bytes | None, bytes | None],
        exception: Exception,
    ) -> DeserializationExceptionResponse:
        logger.warning(_MESSAGE, context.task_id, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationExceptionResponse.resume()


class LogAndFailExceptionHandler:
    """The default: logs ERROR and fails the task (FAIL)."""

    def handle_error(
        self,
        context: ErrorHandlerContext,
        record: ConsumerRecord[bytes | None, bytes | None],
        exception: Exception,
    ) -> DeserializationExceptionResponse:
        logger.error(_MESSAGE, context.task_id, context.topic, context.partition, context.offset, exc_info=exception)
        return DeserializationExceptionResponse.fail()
