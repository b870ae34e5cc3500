"""The per-task log prefix Kafka Streams puts before every line a task or its state manager logs (``LogContext``).

``StreamTask`` logs as ``task [<id>] ``, an active task's ``ProcessorStateManager`` as ``stream-task [<id>] `` (a
standby's as ``standby-task [<id>] ``); one adapter serves all of them so the format is written once.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any, Final

#: ``AbstractTask``'s log prefix (``StreamTask``, ``StandbyTask``).
TASK: Final = "task"
#: ``ProcessorStateManager``'s prefix for an active task's state.
STREAM_TASK: Final = "stream-task"


class TaskLoggerAdapter(logging.LoggerAdapter[logging.Logger]):
    """Prefixes every line with ``<kind> [<task id>] ``, as Kafka Streams' ``LogContext`` does."""

    def __init__(self, logger: logging.Logger, task_id: object, kind: str = TASK) -> None:
        super().__init__(logger, {"task_id": str(task_id), "kind": kind})

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        extra = self.extra or {}
        return f"{extra.get('kind', TASK)} [{extra.get('task_id', '?')}] {msg}", kwargs
