"""The stock processing exception handlers (ordering.md PE-4)."""

from __future__ import annotations

import logging

import pytest

from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processing_handler import (
    LogAndContinueProcessingExceptionHandler,
    LogAndFailProcessingExceptionHandler,
    ProcessingExceptionHandler,
    ProcessingHandlerResult,
)
from streamproc.engine.records import Record

CONTEXT = ErrorHandlerContext("a", 0, 7, (), "proc", "0_1", 5, b"k", b"v")


@pytest.mark.parametrize(
    "handler, result, level",
    [
        (LogAndContinueProcessingExceptionHandler(), ProcessingHandlerResult.RESUME, logging.WARNING),
        (LogAndFailProcessingExceptionHandler(), ProcessingHandlerResult.FAIL, logging.ERROR),
    ],
)
def test_stock_handlers(
    handler: ProcessingExceptionHandler, result: ProcessingHandlerResult, level: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    assert handler.handle_error(CONTEXT, Record("k", "v", 5), RuntimeError("x")).result is result
    [entry] = caplog.records
    assert entry.levelno == level
    assert entry.getMessage() == (
        "Exception caught during message processing, processor node: proc, taskId: 0_1, source topic: a, "
        "source partition: 0, source offset: 7"
    )
