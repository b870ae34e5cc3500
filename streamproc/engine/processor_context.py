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
from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, Record, RecordMetadata
from streamproc.engine.stamped_record import StampedRecord
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
        #: The installed record context, or ``None`` while it is lazy: then it is built on first read from
        #: ``_lazy_stamped`` (set by :meth:`set_record`) or, when that is ``None``, from the raw record
        #: ``_lazy_record`` and ``_lazy_timestamp`` (set by :meth:`set_raw_record`).
        self._record_context: ProcessorRecordContext | None = ProcessorRecordContext(
            NO_OFFSET, NO_OFFSET, NO_PARTITION, None
        )
        self._lazy_stamped: StampedRecord | None = None
        self._lazy_record: ConsumerRecord[bytes | None, bytes | None] | None = None
        self._lazy_timestamp = NO_OFFSET
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

    @property
    def record_context(self) -> ProcessorRecordContext:
        """``recordContext()``: for an input record built on first read (most records never need it)."""
        record_context = self._record_context
        if record_context is None:
            stamped = self._lazy_stamped
            if stamped is not None:
                record = stamped.record
                record_context = ProcessorRecordContext(
                    stamped.timestamp,
                    record.offset,
                    record.partition,
                    record.topic,
                    record.headers,
                    stamped.raw_key,
                    stamped.raw_value,
                )
            else:
                raw = self._lazy_record
                assert raw is not None
                record_context = ProcessorRecordContext(
                    self._lazy_timestamp, raw.offset, raw.partition, raw.topic, raw.headers, raw.key, raw.value
                )
            self._record_context = record_context
        return record_context

    @record_context.setter
    def record_context(self, record_context: ProcessorRecordContext) -> None:
        self._record_context = record_context

    def record_timestamp(self) -> int:
        """``recordContext().timestamp()`` without building a lazy context (every store write logs it)."""
        record_context = self._record_context
        if record_context is not None:
            return record_context.timestamp
        stamped = self._lazy_stamped
        return self._lazy_timestamp if stamped is None else stamped.timestamp

    def set(self, node: ProcessorNode | None, record_context: ProcessorRecordContext, system_time_ms: int) -> None:
        """``updateProcessorContext``: what the task installs before a record, a punctuation or ``init``."""
        self.current_node = node
        self._record_context = record_context
        self.system_time_ms = system_time_ms

    def set_record(self, node: ProcessorNode, record: StampedRecord, system_time_ms: int) -> None:
        """:meth:`set` for an input record, without building its ``ProcessorRecordContext`` up front.

        The context is ``ProcessorRecordContext(timestamp, offset, partition, topic, headers, raw key, raw value)``
        of ``record``, built only when read (``record_metadata()``, an error handler, a ``forward`` that changes
        timestamp or headers): per record this saves an allocation the pass-through path never looks at.
        """
        self.current_node = node
        self._record_context = None
        self._lazy_stamped = record
        self.system_time_ms = system_time_ms

    def set_raw_record(
        self,
        node: ProcessorNode,
        raw: ConsumerRecord[bytes | None, bytes | None],
        timestamp: int,
        system_time_ms: int,
    ) -> None:
        """:meth:`set_record` for a raw record and its extracted timestamp (the bulk replay inlines this)."""
        self.current_node = node
        self._record_context = None
        self._lazy_stamped = None
        self._lazy_record = raw
        self._lazy_timestamp = timestamp
        self.system_time_ms = system_time_ms

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        previous_node = self.current_node
        if previous_node is None:
            raise ProcessingError(
                "Current node is unknown. This can happen if 'forward()' is called in an illegal scope; make sure "
                "every task gets its own Processor instances",
                task_id=str(self._task.id),
            )
        # The installed context, possibly still lazy (None): compared without building it, restored as it was.
        installed = self._record_context
        if installed is None:
            stamped = self._lazy_stamped
            if stamped is None:
                lazy_record = self._lazy_record
                assert lazy_record is not None
                current_timestamp = self._lazy_timestamp
                current_headers = lazy_record.headers
            else:
                current_timestamp = stamped.timestamp
                current_headers = stamped.record.headers
        else:
            current_timestamp = installed.timestamp
            current_headers = installed.headers
        try:
            if record.timestamp != current_timestamp or record.headers is not current_headers:
                previous_context = self.record_context
                self._record_context = ProcessorRecordContext(
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
                    try:  # child.process(record) without its frame: ProcessorNode.run and .failed
                        child.run(record)
                    except Exception as exception:
                        child.failed(record, _from_child(exception))
            else:
                named = previous_node.child(child_name)
                if named is None:
                    raise ProcessingError(
                        f"Unknown downstream node: {child_name} either does not exist or is not connected to "
                        f"processor {previous_node.name}.",
                        task_id=str(self._task.id),
                    )
                self.current_node = named
                try:
                    named.run(record)
                except Exception as exception:
                    named.failed(record, _from_child(exception))
        finally:
            self._record_context = installed
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

    def record_dropped(self, reason: str) -> None:
        """``droppedRecordsSensor.record()`` of a DSL processor (a late record, a null key): counted with the
        position of the record being processed, under ``reason``."""
        context = self.record_context
        self._task.dropped.record(context.topic, context.partition, context.offset, reason)

    def commit(self) -> None:
        """``ProcessorContext#commit``: ask for a commit as soon as possible (``StreamTask.requestCommit``)."""
        self._task.commit_requested = True

    def current_stream_time_ms(self) -> int:
        return self._task.stream_time

    def current_system_time_ms(self) -> int:
        return self.system_time_ms


def _from_child(exception: Exception) -> Exception:
    """``exception`` with this module's ``forward`` frame cut from its traceback, which then starts at the child
    that raised: what a handler records (the DLQ's stack trace header) is the same whether the record came through
    ``forward`` or from the compiled loop, which hands a source's records to its children with no frame of its own
    (``_bulk_kernel.c``'s ``forward_to_children``). Which of the two a record takes depends on how the task's input
    was chunked, which a key shard that reads only its own records (``spark/owned_input.py``) does not share."""
    traceback = exception.__traceback__
    if traceback is not None and traceback.tb_frame.f_code is ProcessorContextImpl.forward.__code__:
        exception.__traceback__ = traceback.tb_next
    return exception
