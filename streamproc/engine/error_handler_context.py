"""``ErrorHandlerContext``: what a deserialization or processing exception handler is told (KIP-1033, 4.2).

Mirrors ``org.apache.kafka.streams.errors.ErrorHandlerContext`` / ``internals.DefaultErrorHandlerContext``: the
record's topic, partition, offset, headers and timestamp, the node that failed, the task, and the raw source bytes.
For a punctuation the topic is ``None`` and partition/offset are -1 (ordering.md SR-4, ST-9).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.engine.records import Headers


@dataclass(frozen=True, slots=True)
class ErrorHandlerContext:
    topic: str | None
    partition: int
    offset: int
    headers: Headers
    processor_node_id: str
    task_id: str
    timestamp: int
    source_raw_key: bytes | None
    source_raw_value: bytes | None
