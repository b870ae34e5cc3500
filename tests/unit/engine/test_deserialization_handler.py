"""The stock deserialization exception handlers (ordering.md DE-2)."""

from __future__ import annotations

import logging

import pytest

from streamproc.engine.deserialization_handler import (
    DeserializationExceptionHandler,
    DeserializationHandlerResult,
    LogAndContinueExceptionHandler,
    LogAndFailExceptionHandler,
)
from streamproc.engine.error_handler_context import ErrorHandlerContext
from tests.unit.engine.builders import raw

CONTEXT = ErrorHandlerContext("a", 0, 7, (), "source", "0_1", 5, b"k", b"\xff")


@pytest.mark.parametrize(
    "handler, result, level",
    [
        (LogAndContinueExceptionHandler(), DeserializationHandlerResult.RESUME, logging.WARNING),
        (LogAndFailExceptionHandler(), DeserializationHandlerResult.FAIL, logging.ERROR),
    ],
)
def test_stock_handlers(
    handler: DeserializationExceptionHandler,
    result: DeserializationHandlerResult,
    level: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    response = handler.handle_error(CONTEXT, raw("a", 0, 7, 5, corrupt=True), ValueError("bad"))
    assert response.result is result
    [entry] = caplog.records
    assert entry.levelno == level
    assert (
        entry.getMessage() == "Exception caught during Deserialization, taskId: 0_1, topic: a, partition: 0, offset: 7"
    )
    assert isinstance(handler, DeserializationExceptionHandler)
