"""The runtime graph of one sub-topology: Kafka Streams' ``ProcessorTopology`` with its nodes.

Mirrors ``org.apache.kafka.streams.processor.internals.ProcessorTopology``, ``ProcessorNode``, ``SourceNode``,
``SinkNode`` and the collecting side of ``RecordCollector`` (4.2.0). A ``ProcessorNode`` wraps its processor with
the processing exception handler (ordering.md PE-1..PE-3); a ``SourceNode`` only forwards; a ``SinkNode``
serializes, partitions and collects records for the caller. The ``Topology`` builder that produces this graph
lives elsewhere (``topology.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamproc.engine.dead_letter_queue import DeadLetterQueueRecord
from streamproc.engine.dropped_records import REASON_PROCESSING_EXCEPTION, DroppedRecordsSensor
from streamproc.engine.error_handler_context import ErrorHandlerContext
from streamproc.engine.processing_handler import (
    FAIL_ON_PROCESSING_ERROR_MESSAGE,
    PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG,
    ProcessingExceptionHandler,
    ProcessingHandlerResult,
)
from streamproc.engine.processor import ClassCastError, Processor
from streamproc.engine.records import Headers, Record
from streamproc.engine.serdes import direct
from streamproc.engine.timestamp_extractor import TimestampExtractor
from streamproc.errors import StreamsError, TopologyError

if TYPE_CHECKING:
    from streamproc.engine.processor_context import ProcessorContextImpl

logger = logging.getLogger(__name__)

Deserializer = Callable[[str, bytes | None], object]
Serializer = Callable[[str, Any], bytes | None]
#: ``(topic, key_bytes, value_bytes, num_partitions) -> partition``; ``None`` leaves it to the producer.
Partitioner = Callable[[str, bytes | None, bytes | None, int], int | None]


class FailedProcessingException(Exception):
    """``errors.internals.FailedProcessingException``: a node's handler said FAIL (or failed); internal signal."""

    def __init__(self, message: str | None, failed_processor_node_name: str, cause: BaseException) -> None:
        super().__init__(message)
        self.message = message
        self.failed_processor_node_name = failed_processor_node_name
        self.cause = cause


#: ``ProcessorNode#process``'s message for a ``ClassCastException`` (4.2; ``%n`` is the platform newline).
_CLASS_CAST_MESSAGE = (
    "ClassCastException invoking processor: {node}. Do the Processor's input types match the deserialized types? "
    "Check the Serde setup and change the default Serdes in StreamConfig or provide correct Serdes via method "
    "parameters. Make sure the Processor can accept the deserialized input of type key: {key_class}, and value: "
    "{value_class}.\nNote that although incorrect Serdes are a common cause of error, the cast exception might have "
    "another cause (in user code, for example). For example, if a processor wires in a store, but casts the generics "
    "incorrectly, a class cast exception could be raised during processing, but the cause would not be wrong Serdes."
)


class ProcessorNode:
    """A node running a user ``Processor`` behind the processing exception handler."""

    def __init__(self, name: str, processor: Processor | None = None) -> None:
        self.name = name
        self.processor = processor
        self.children: list[ProcessorNode] = []
        self._context: ProcessorContextImpl | None = None
        self._handler: ProcessingExceptionHandler | None = None
        self._dropped: DroppedRecordsSensor | None = None
        #: Whether this node's ``process`` is the handler-guarded one below (not a source's or sink's own).
        self.guarded = type(self).process is ProcessorNode.process
        #: What ``ProcessorContext.forward`` calls with a child's record, inside its own ``try`` whose ``except``
        #: calls :meth:`failed`: the processor's ``process`` itself for a guarded node (after ``init``), which is
        #: :meth:`process` without its frame (one hop less per record and node), else :meth:`process`.
        self.run: Callable[[Record[Any, Any]], None] = self.process

    def add_child(self, child: ProcessorNode) -> None:
        self.children.append(child)

    def child(self, name: str) -> ProcessorNode | None:
        for child in self.children:
            if child.name == name:
                return child
        return None

    @property
    def is_terminal(self) -> bool:
        return not self.children

    def init(
        self,
        context: ProcessorContextImpl,
        handler: ProcessingExceptionHandler | None,
        dropped: DroppedRecordsSensor | None,
    ) -> None:
        """Bind the node to its task and run the processor's ``init`` (which may ``schedule``)."""
        self._context = context
        self._handler = handler
        self._dropped = dropped
        if self.processor is not None:
            self.processor.init(context)
        self.run = self.processor.process if self.guarded and self.processor is not None else self.process

    def close(self) -> None:
        if self.processor is not None:
            self.processor.close()

    def process(self, record: Record[Any, Any]) -> None:
        """Run the processor; an exception goes to the handler *at this node* (PE-1)."""
        if self.processor is None:
            raise TopologyError(f"processor node {self.name!r} has no processor")
        try:
            self.processor.process(record)
        except Exception as exception:
            self.failed(record, exception)

    def failed(self, record: Record[Any, Any], exception: Exception) -> None:
        """What an exception out of :meth:`process` (or of :attr:`run`) becomes; called in its ``except`` clause.

        A source or sink lets it through; a processor node wraps a ``ClassCastError`` with Kafka's serde hint and
        lets the parent handle it, passes a ``FailedProcessingException`` on, and gives anything else to the
        handler *at this node* (PE-1).
        """
        if not self.guarded:
            raise exception
        if isinstance(exception, ClassCastError):
            # Java's ClassCastException: wrapped with Kafka's serde hint and *not* handled here; the parent
            # node's handler gets the wrapper like any other exception, a source lets it reach the task (PE-1).
            if self._context is None:
                raise exception
            raise self._class_cast_error(self._context, record) from exception
        if isinstance(exception, FailedProcessingException):
            raise exception
        if self._handler is None or self._context is None:
            raise exception
        self._handle(record, exception)

    def _class_cast_error(self, context: ProcessorContextImpl, record: Record[Any, Any]) -> StreamsError:
        """``ProcessorNode#process``'s ``StreamsException`` for a ``ClassCastException``, with Kafka's message.

        Kafka names the Java classes (``java.lang.String``); here the Python type names (``str``).
        """
        key_class = "unknown because key is null" if record.key is None else type(record.key).__qualname__
        value_class = "unknown because value is null" if record.value is None else type(record.value).__qualname__
        record_context = context.record_context
        return StreamsError(
            _CLASS_CAST_MESSAGE.format(node=self.name, key_class=key_class, value_class=value_class),
            reason=REASON_PROCESSING_EXCEPTION,
            topic=record_context.topic or "",
            partition=record_context.partition,
            offset=record_context.offset,
        )

    def _handle(
        self, record: Record[Any, Any], processing_exception: Exception, reason: str = REASON_PROCESSING_EXCEPTION
    ) -> None:
        """Ask the handler; send its dead letter queue records; then FAIL raises, RESUME drops with ``reason``."""
        assert self._context is not None and self._handler is not None
        record_context = self._context.record_context
        error_context = ErrorHandlerContext(
            topic=record_context.topic,
            partition=record_context.partition,
            offset=record_context.offset,
            headers=record_context.headers,
            processor_node_id=self.name,
            task_id=str(self._context.task_id),
            timestamp=record_context.timestamp,
            source_raw_key=record_context.source_raw_key,
            source_raw_value=record_context.source_raw_value,
        )
        try:
            response = self._handler.handle_error(error_context, record, processing_exception)
            if response is None:
                raise TypeError("Invalid ProcessingExceptionHandler response.")
        except Exception as fatal_user_exception:
            logger.error(
                "Processing error callback failed after processing error for record: %s",
                error_context,
                exc_info=processing_exception,
            )
            raise FailedProcessingException(
                "Fatal user code error in processing error callback", self.name, fatal_user_exception
            ) from fatal_user_exception
        for dead_letter in response.dead_letter_queue_records:  # sent before a FAIL ends the task, as in 4.2
            self._context.collector.send_dead_letter_queue_record(dead_letter, self.name)
        if response.result is ProcessingHandlerResult.FAIL:
            logger.error(FAIL_ON_PROCESSING_ERROR_MESSAGE, PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG)
            raise FailedProcessingException(None, self.name, processing_exception) from processing_exception
        self._context.log.warning(
            "Skipping record due to processing error. topic=[%s] partition=[%s] offset=[%s] processor=[%s]",
            record_context.topic,
            record_context.partition,
            record_context.offset,
            self.name,
        )
        if self._dropped is not None:
            self._dropped.record(record_context.topic, record_context.partition, record_context.offset, reason)


class SourceNode(ProcessorNode):
    """Reads ``topics`` with its deserializers (``(topic, bytes) -> object``) and an optional own extractor."""

    def __init__(
        self,
        name: str,
        topics: Sequence[str],
        key_deserializer: Deserializer,
        value_deserializer: Deserializer,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> None:
        super().__init__(name)
        self.topics = tuple(topics)
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.timestamp_extractor = timestamp_extractor

    def deserialize_key(self, topic: str, data: bytes | None) -> object:
        return self.key_deserializer(topic, data)

    def deserialize_value(self, topic: str, data: bytes | None) -> object:
        return self.value_deserializer(topic, data)

    def process(self, record: Record[Any, Any]) -> None:
        """``SourceNode.process`` only forwards: it has no handler wrapper."""
        assert self._context is not None
        self._context.forward(record)


@dataclass(frozen=True, slots=True)
class CollectedRecord:
    """A record a sink node produced: what ``RecordCollector.send`` would hand to the producer."""

    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers
    processor_node_id: str


class RecordCollector:
    """Collects sink output in send order, for the caller to write out; partition counts feed the partitioner."""

    def __init__(self, partition_counts: Mapping[str, int] | None = None) -> None:
        self.partition_counts: dict[str, int] = dict(partition_counts or {})
        self.records: list[CollectedRecord] = []

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        processor_node_id: str,
        partitioner: Partitioner | None,
    ) -> None:
        partition: int | None = None
        count = self.partition_counts.get(topic)
        if partitioner is not None and count is not None:
            partition = partitioner(topic, key, value, count)
        self.records.append(CollectedRecord(topic, partition, key, value, timestamp, headers, processor_node_id))

    def send_dead_letter_queue_record(self, record: DeadLetterQueueRecord, processor_node_id: str) -> None:
        """A handler's KIP-1034 record: sent as built, without partition (the producer chooses, as in 4.2)."""
        self.records.append(
            CollectedRecord(
                record.topic, None, record.key, record.value, record.timestamp, record.headers, processor_node_id
            )
        )


class SinkNode(ProcessorNode):
    """Serializes records to ``topic`` and sends them to the task's ``RecordCollector``."""

    def __init__(
        self,
        name: str,
        topic: str,
        key_serializer: Serializer,
        value_serializer: Serializer,
        partitioner: Partitioner | None = None,
    ) -> None:
        super().__init__(name)
        self.topic = topic
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.partitioner = partitioner
        self._serialize_key = direct(key_serializer)
        self._serialize_value = direct(value_serializer)

    def init(
        self,
        context: ProcessorContextImpl,
        handler: ProcessingExceptionHandler | None,
        dropped: DroppedRecordsSensor | None,
    ) -> None:
        super().init(context, handler, dropped)
        # Bound again here in case the serializers were replaced after construction.
        self._serialize_key = direct(self.key_serializer)
        self._serialize_value = direct(self.value_serializer)

    def add_child(self, child: ProcessorNode) -> None:
        raise TopologyError(f"sink node {self.name!r} cannot have children")

    def process(self, record: Record[Any, Any]) -> None:
        assert self._context is not None
        key = self._serialize_key(self.topic, record.key)
        value = self._serialize_value(self.topic, record.value)
        self._context.collector.send(
            self.topic, key, value, record.timestamp, record.headers, self.name, self.partitioner
        )


class ProcessorTopology:
    """One sub-topology at run time: its nodes in topology order (``init`` order) and the source per topic."""

    def __init__(self, nodes: Iterable[ProcessorNode]) -> None:
        self.nodes: tuple[ProcessorNode, ...] = tuple(nodes)
        names = [node.name for node in self.nodes]
        if len(set(names)) != len(names):
            raise TopologyError(f"duplicate processor node names in {names}")
        self._source_by_topic: dict[str, SourceNode] = {}
        for node in self.nodes:
            if isinstance(node, SourceNode):
                for topic in node.topics:
                    if topic in self._source_by_topic:
                        raise TopologyError(
                            f"topic {topic!r} is read by both {self._source_by_topic[topic].name!r} and {node.name!r}"
                        )
                    self._source_by_topic[topic] = node

    @property
    def sources(self) -> tuple[SourceNode, ...]:
        return tuple(node for node in self.nodes if isinstance(node, SourceNode))

    @property
    def source_topics(self) -> tuple[str, ...]:
        return tuple(self._source_by_topic)

    def source(self, topic: str) -> SourceNode:
        try:
            return self._source_by_topic[topic]
        except KeyError:
            raise TopologyError(
                f"no source node reads topic {topic!r}; the task's partitions must belong to this sub-topology "
                f"(source topics: {sorted(self._source_by_topic)})"
            ) from None
