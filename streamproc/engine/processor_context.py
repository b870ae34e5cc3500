"""``ProcessorContextImpl``: the task's side of the Processor API context (ordering.md SR-3, SR-4, ST-6).

Mirrors ``org.apache.kafka.streams.processor.internals.ProcessorContextImpl`` (4.2.0): it holds the current node and
record context that the task installs before a record, a punctuation or ``init``; ``forward`` runs each child
depth-first with the forwarded record's timestamp and headers, then restores node and context; ``schedule`` checks
the interval and start like Kafka Streams and delegates to the task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from streamproc.engine.processor_topology import ProcessorNode, RecordCollector
from streamproc.engine.punctuation_queue import Cancellable, PunctuationType, Punctuator
from streamproc.engine.records import ProcessorRecordContext, Record, RecordMetadata
from streamproc.engine.task_id import TaskId
from streamproc.errors import ProcessingError, StateError

if TYPE_CHECKING:
    from streamproc.engine.stream_task import StreamTask

#: ``ProcessorRecordContext`` values outside a record: ``NO_OFFSET``/``NO_PARTITION``.
NO_OFFSET = -1
NO_PARTITION = -1


class ProcessorContextImpl:
    """The one context of a task, shared by its nodes; implements ``processor.ProcessorContext``."""

    def __init__(
        self,
        task: StreamTask,
        application_id: str,
        stores: Mapping[str, object],
        collector: RecordCollector,
    ) -> None:
        self._task = task
        self._application_id = application_id
        self._stores = stores
        self.collector = collector
        self.current_node: ProcessorNode | None = None
        self.record_context = ProcessorRecordContext(NO_OFFSET, NO_OFFSET, NO_PARTITION, None)
        self.system_time_ms = NO_OFFSET

    @property
    def application_id(self) -> str:
        return self._application_id

    @property
    def task_id(self) -> TaskId:
        return self._task.id

    @property
    def log(self) -> logging.LoggerAdapter[logging.Logger]:
        """The task's ``task [<id>] ``-prefixed logger."""
        return self._task.log

    def set(self, node: ProcessorNode | None, record_context: ProcessorRecordContext, system_time_ms: int) -> None:
        """``updateProcessorContext``: what the task installs before a record, a punctuation or ``init``."""
        self.current_node = node
        self.record_context = record_context
        self.system_time_ms = system_time_ms

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        previous_node = self.current_node
        if previous_node is None:
            raise ProcessingError(
                "Current node is unknown. This can happen if 'forward()' is called in an illegal scope; make sure "
                "every task gets its own Processor instances",
                task_id=str(self._task.id),
            )
        previous_context = self.record_context
        try:
            if record.timestamp != previous_context.timestamp or record.headers is not previous_context.headers:
                self.record_context = ProcessorRecordContext(
                    record.timestamp,
                    previous_context.offset,
                    previous_context.partition,
                    previous_context.topic,
                    record.headers,
                    previous_context.source_raw_key,
                    previous_context.source_raw_value,
                )
            if child_name is None:
                for child in previous_node.children:
                    self.current_node = child
                    child.process(record)
            else:
                named = previous_node.child(child_name)
                if named is None:
                    raise ProcessingError(
                        f"Unknown downstream node: {child_name} either does not exist or is not connected to "
                        f"processor {previous_node.name}.",
                        task_id=str(self._task.id),
                    )
                self.current_node = named
                named.process(record)
        finally:
            self.record_context = previous_context
            self.current_node = previous_node

    def schedule(
        self,
        interval_ms: int,
        punctuation_type: PunctuationType,
        callback: Punctuator,
        *,
        start_ms: int | None = None,
    ) -> Cancellable:
        if interval_ms < 1:
            raise ValueError("The minimum supported scheduling interval is 1 millisecond.")
        if start_ms is not None and start_ms < 0:
            raise ValueError("The minimum supported start time is Instant.EPOCH.")
        return self._task.schedule(interval_ms, punctuation_type, callback, start_ms=start_ms)

    def get_state_store(self, name: str) -> object:
        try:
            return self._stores[name]
        except KeyError:
            raise StateError(
                f"task [{self._task.id}] processor {self.current_node.name if self.current_node else None!r} asked "
                f"for state store {name!r}, which this task does not have (stores: {sorted(self._stores)}); connect "
                "the store to the processor in the topology"
            ) from None

    def record_metadata(self) -> RecordMetadata | None:
        return self.record_context.record_metadata()

    def current_stream_time_ms(self) -> int:
        return self._task.stream_time

    def current_system_time_ms(self) -> int:
        return self.system_time_ms
