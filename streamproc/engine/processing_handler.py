"""Processing exception handlers, KIP-1033 (ordering.md PE-1..PE-5, ST-9).

Mirrors ``org.apache.kafka.streams.errors.ProcessingExceptionHandler``, ``LogAndContinueProcessingExceptionHandler``
and ``LogAndFailProcessingExceptionHandler`` (the default), checked against 4.2.0. The handler is asked at the
processor node that raised; for a punctuator the record is ``None``. With ``errors.dead.letter.queue.topic.name``
configured, both stock handlers answer with a KIP-1034 dead letter queue record (``dead_letter_queue``).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from streamproc.engine.dead_letter_queue import (
    DeadLetterQueueRecord,
    configured_topic,
    maybe_build_dead_letter_queue_records,
)
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.records import Record

logger = logging.getLogger(__name__)

#: ``StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG``.
PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG = "processing.exception.handler"


class ProcessingHandlerResult(enum.Enum):
    """``ProcessingExceptionHandler.Result``."""

    RESUME = "RESUME"
    FAIL = "FAIL"


@dataclass(frozen=True, slots=True)
class ProcessingExceptionResponse:
    """``ProcessingExceptionHandler.Response``: the verdict and the dead letter queue records to send first."""

    result: ProcessingHandlerResult
    dead_letter_queue_records: tuple[DeadLetterQueueRecord, ...] = ()

    @classmethod
    def resume(cls, records: Iterable[DeadLetterQueueRecord] = ()) -> ProcessingExceptionResponse:
        return cls(ProcessingHandlerResult.RESUME, tuple(records))

    @classmethod
    def fail(cls, records: Iterable[DeadLetterQueueRecord] = ()) -> ProcessingExceptionResponse:
        return cls(ProcessingHandlerResult.FAIL, tuple(records))


@runtime_checkable
class ProcessingExceptionHandler(Protocol):
    """Decides whether a processor's (or punctuator's) exception drops the record or fails the task."""

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse: ...


#: What a processing exception handler logs (Kafka's ``LogAndContinue``/``LogAndFail``), %-style arguments: node,
#: task, source topic, partition, offset.
PROCESSING_ERROR_MESSAGE = (
    "Exception caught during message processing, processor node: %s, taskId: %s, source topic: %s, "
    "source partition: %s, source offset: %s"
)

#: What the node (or task, for a punctuator) logs when the handler said FAIL; the argument is the config's name.
FAIL_ON_PROCESSING_ERROR_MESSAGE = (
    "Processing exception handler is set to fail upon a processing error. If you would rather have the "
    "streaming pipeline continue after a processing error, please set the %s appropriately."
)


class LogAndContinueProcessingExceptionHandler:
    """Logs WARN and goes on (RESUME): the failing node returns, siblings still get the record."""

    def __init__(self, dead_letter_queue_topic: str | None = None) -> None:
        self.dead_letter_queue_topic = dead_letter_queue_topic

    def configure(self, configs: Mapping[str, object]) -> None:
        """Reads ``errors.dead.letter.queue.topic.name`` (as the Java handler's ``configure``)."""
        self.dead_letter_queue_topic = configured_topic(configs, self.dead_letter_queue_topic)

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse:
        logger.warning(
            PROCESSING_ERROR_MESSAGE,
            context.processor_node_id,
            context.task_id,
            context.topic,
            context.partition,
            context.offset,
            exc_info=exception,
        )
        return ProcessingExceptionResponse.resume(
            maybe_build_dead_letter_queue_records(
                self.dead_letter_queue_topic, context.source_raw_key, context.source_raw_value, context, exception
            )
        )


class LogAndFailProcessingExceptionHandler:
    """The default: logs ERROR and fails the task (FAIL)."""

    def __init__(self, dead_letter_queue_topic: str | None = None) -> None:
        self.dead_letter_queue_topic = dead_letter_queue_topic

    def configure(self, configs: Mapping[str, object]) -> None:
        """Reads ``errors.dead.letter.queue.topic.name`` (as the Java handler's ``configure``)."""
        self.dead_letter_queue_topic = configured_topic(configs, self.dead_letter_queue_topic)

    def handle_error(
        self, context: ErrorHandlerContext, record: Record[Any, Any] | None, exception: Exception
    ) -> ProcessingExceptionResponse:
        logger.error(
            PROCESSING_ERROR_MESSAGE,
            context.processor_node_id,
            context.task_id,
            context.topic,
            context.partition,
            context.offset,
            exc_info=exception,
        )
        return ProcessingExceptionResponse.fail(
            maybe_build_dead_letter_queue_records(
                self.dead_letter_queue_topic, context.source_raw_key, context.source_raw_value, context, exception
            )
        )


def fails_at_every_error(handler: ProcessingExceptionHandler) -> bool:
    """Whether ``handler`` fails the task at every processing exception (the default's class itself, not a subclass
    that may override it): then a record is either processed without an exception or ends the task, which is what
    lets a key shard skip user code whose only effect on the other shards would be to raise
    (``spark/stream_time_prefix.py``)."""
    return type(handler) is LogAndFailProcessingExceptionHandler
