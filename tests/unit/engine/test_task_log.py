"""One per-task log adapter: ``task [<id>]`` for ``StreamTask``, ``stream-task [<id>]`` for its state manager."""

from __future__ import annotations

import logging

import pytest

from streamproc.engine.task_id import TaskId
from streamproc.engine.task_log import STREAM_TASK, TaskLoggerAdapter


def test_prefixes_are_kafka_streams_log_contexts(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("streamproc.test_task_log")
    with caplog.at_level(logging.INFO, logger=logger.name):
        TaskLoggerAdapter(logger, TaskId(0, 1)).info("Initialized")
        TaskLoggerAdapter(logger, TaskId(1, 2), STREAM_TASK).info("Finished restoring %s", "x")
    assert caplog.messages == ["task [0_1] Initialized", "stream-task [1_2] Finished restoring x"]
