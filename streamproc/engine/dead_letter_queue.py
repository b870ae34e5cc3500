"""KIP-1034 dead letter queue records: what the stock exception handlers of Kafka Streams 4.1+ build.

Mirrors ``org.apache.kafka.streams.errors.internals.ExceptionHandlerUtils`` (read in the 4.2.2 jar): when
``errors.dead.letter.queue.topic.name`` is set, ``LogAndContinueExceptionHandler``, ``LogAndFailExceptionHandler``,
``LogAndContinueProcessingExceptionHandler``, ``LogAndFailProcessingExceptionHandler`` and
``DefaultProductionExceptionHandler`` answer with one record for that topic — whether they say continue *or* fail.
The record carries the failed source record's raw key and value, the handler context's timestamp, no partition (the
producer chooses), the source record's headers and then six ``__streams.errors.*`` headers (UTF-8 strings): the
exception's class name, its message, its stack trace, and the source topic, partition and offset.

Python names the class as ``module.QualifiedName`` where Java has ``Class#getName``, and the stack trace is
Python's. A message that is empty (Java: ``getMessage()`` is ``null``) gives a header with a null value.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass

from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.records import Headers
from streamproc.errors import ConfigError

#: ``StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG``.
DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG = "errors.dead.letter.queue.topic.name"

HEADER_ERRORS_EXCEPTION_NAME = "__streams.errors.exception"
HEADER_ERRORS_EXCEPTION_MESSAGE_NAME = "__streams.errors.message"
HEADER_ERRORS_STACKTRACE_NAME = "__streams.errors.stacktrace"
HEADER_ERRORS_TOPIC_NAME = "__streams.errors.topic"
HEADER_ERRORS_PARTITION_NAME = "__streams.errors.partition"
HEADER_ERRORS_OFFSET_NAME = "__streams.errors.offset"

#: The error headers in the order ``buildDeadLetterQueueRecord`` adds them (after the source record's headers).
ERROR_HEADERS = (
    HEADER_ERRORS_EXCEPTION_NAME,
    HEADER_ERRORS_EXCEPTION_MESSAGE_NAME,
    HEADER_ERRORS_STACKTRACE_NAME,
    HEADER_ERRORS_TOPIC_NAME,
    HEADER_ERRORS_PARTITION_NAME,
    HEADER_ERRORS_OFFSET_NAME,
)


@dataclass(frozen=True, slots=True)
class DeadLetterQueueRecord:
    """The ``ProducerRecord<byte[], byte[]>`` a handler returns for the dead letter queue (partition: none)."""

    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers


def exception_name(exception: BaseException) -> str:
    """``exception.getClass().getName()`` in Python terms: ``module.QualifiedName``."""
    cls = type(exception)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def build_dead_letter_queue_record(
    topic: str | None,
    raw_key: bytes | None,
    raw_value: bytes | None,
    context: ErrorHandlerContext,
    exception: BaseException,
) -> DeadLetterQueueRecord:
    """``ExceptionHandlerUtils.buildDeadLetterQueueRecord``: the source record's bytes with the error headers."""
    if topic is None:
        raise ConfigError(
            f"{DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG} cannot be null while building dead letter queue record"
        )
    message = str(exception)
    error_headers = (
        (HEADER_ERRORS_EXCEPTION_NAME, _utf8(exception_name(exception))),
        (HEADER_ERRORS_EXCEPTION_MESSAGE_NAME, _utf8(message if message else None)),
        (HEADER_ERRORS_STACKTRACE_NAME, _utf8("".join(traceback.format_exception(exception)))),
        (HEADER_ERRORS_TOPIC_NAME, _utf8(context.topic)),
        (HEADER_ERRORS_PARTITION_NAME, _utf8(str(context.partition))),
        (HEADER_ERRORS_OFFSET_NAME, _utf8(str(context.offset))),
    )
    return DeadLetterQueueRecord(topic, raw_key, raw_value, context.timestamp, (*context.headers, *error_headers))


def maybe_build_dead_letter_queue_records(
    topic: str | None,
    raw_key: bytes | None,
    raw_value: bytes | None,
    context: ErrorHandlerContext,
    exception: BaseException,
) -> tuple[DeadLetterQueueRecord, ...]:
    """``maybeBuildDeadLetterQueueRecords``: one record when a dead letter queue topic is configured, else none."""
    if topic is None:
        return ()
    return (build_dead_letter_queue_record(topic, raw_key, raw_value, context, exception),)


def configured_topic(configs: Mapping[str, object], current: str | None) -> str | None:
    """The handlers' ``configure``: ``String.valueOf`` of the setting when present, else ``current`` unchanged."""
    value = configs.get(DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG)
    return current if value is None else str(value)
