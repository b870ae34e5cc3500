"""Global stores: ``GlobalStateUpdateTask`` and the bootstrap of ``GlobalStateManagerImpl`` (Kafka Streams 4.2).

A global store is read in full by every instance; its topic is its changelog (it is never logged). Kafka Streams'
global thread does two things with it, and this task both:

- **Bootstrap** (:meth:`GlobalStateUpdateTask.restore`), before any stream task processes: each partition of the
  topic from the global checkpoint (else the log start) to the high watermark. A store registered with
  ``reprocessOnRestore`` (4.2's ``Topology#addGlobalStore`` passes ``true``: the user's processor sees every
  record, at bootstrap too) replays every record through a *fresh* instance of its processor
  (``GlobalStateManagerImpl#reprocessState``); one without (``StreamsBuilder#globalTable``: ``false``) loads the
  raw records into the store (``#restoreState``: the restore callback with the store's converter, so a timestamped
  store keeps each record's timestamp). Records with a null key are skipped in both.
- **Update** (:meth:`GlobalStateUpdateTask.update`), while the application runs: a record of a global topic is
  deserialized by its source and goes through the state-update processor, with the record's own timestamp (the
  source's timestamp extractor is not applied: ``GlobalStateUpdateTask#update`` builds the record context from the
  consumer record). ``TopologyTestDriver`` pipes records to global topics this way, synchronously.

A record whose key or value the source cannot deserialize goes to the configured
``deserialization.exception.handler``, in both paths (``GlobalStateUpdateTask`` builds a ``RecordDeserializer`` per
source; ``reprocessState`` calls ``RecordDeserializer.handleDeserializationFailure``): CONTINUE logs, counts a
dropped record under task ``-1_-1`` and skips it; FAIL stops with Kafka's message. A handler that answers with dead
letter queue records fails here: the global context has no record collector (in 4.2 the cast to
``RecordCollector.Supplier`` throws).

The global processor context has no stream time and cannot schedule (Kafka throws
``UnsupportedOperationException``); ``commit`` does nothing; drops count under task ``-1_-1`` (Kafka's
``GlobalProcessorContextImpl`` task id).

A stream task reads a global store but never writes it: Kafka's ``ProcessorContextImpl#getStateStore`` hands a
stream processor a read-only decorator of a global store (``AbstractReadOnlyDecorator``: put, delete, flush, init
and close throw "Global store is read only"). :func:`read_only_view` is that decorator; stream tasks get global
stores only through it, so one task's processor cannot change what another task (sharing the stores) reads.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from streamproc.engine.deserialization_handler import DeserializationExceptionHandler, LogAndFailExceptionHandler
from streamproc.engine.dropped_records import DroppedRecordsSensor
from streamproc.engine.processor import Processor
from streamproc.engine.processor_context import ProcessorContextImpl
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, RecordCollector, SourceNode
from streamproc.engine.punctuation_queue import Cancellable, PunctuationType, Punctuator
from streamproc.engine.record_deserializer import RecordDeserializer
from streamproc.engine.records import ProcessorRecordContext, RawRecord, Record
from streamproc.engine.serdes import Serde
from streamproc.engine.stream_task import StreamTask
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import ProcessorNodeSpec, Topology
from streamproc.engine.topology_builder import build_global_state_topology
from streamproc.errors import StateError

logger = logging.getLogger(__name__)

#: ``GlobalProcessorContextImpl``'s task id: what the global task's drops and logs are counted under.
GLOBAL_TASK_ID = TaskId(-1, -1)

#: ``AbstractReadOnlyDecorator.ERROR_MESSAGE``: a stream task wrote to (or flushed, closed) a global store.
READ_ONLY_MESSAGE = "Global store is read only"
#: What the read-only decorator refuses: every method of a store that writes it or ends it.
_WRITES = (
    "put",
    "put_if_absent",
    "put_all",
    "delete",
    "remove",
    "write_all",
    "restore_batch",
    "flush",
    "close",
    "destroy",
)
_read_only_classes: dict[type, type] = {}

_S = TypeVar("_S")


def _refuse(method: str) -> Callable[..., Any]:
    def refused(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise StateError(f"{READ_ONLY_MESSAGE}: a stream task called {method}() on global store {self.name}")

    return refused


def read_only_view(store: _S) -> _S:
    """``store`` as a stream task sees a global store: the same data (a shallow copy sharing its storage, of a
    subclass of its class, so ``isinstance`` checks of processors still hold) whose write methods raise."""
    cls = type(store)
    view_class = _read_only_classes.get(cls)
    if view_class is None:
        refused = {name: _refuse(name) for name in _WRITES if hasattr(cls, name)}
        # no new slots or __dict__: the copy can take the subclass (same layout)
        view_class = _read_only_classes[cls] = type(f"ReadOnly{cls.__name__}", (cls,), {"__slots__": (), **refused})
    view = copy.copy(store)
    view.__class__ = view_class
    return view


class _GlobalTaskHandle:
    """What :class:`ProcessorContextImpl` reads of its task, for the global task (it has no partition group)."""

    def __init__(self, dropped: DroppedRecordsSensor) -> None:
        self.id = GLOBAL_TASK_ID
        self.log = logging.LoggerAdapter(logger, {})
        self.dropped = dropped
        self.commit_requested = False
        self.stream_time = -1


class GlobalProcessorContext(ProcessorContextImpl):
    """``GlobalProcessorContextImpl``: forwards to the global processor's children; no schedule, no stream time."""

    def schedule(
        self,
        interval_ms: int,
        punctuation_type: PunctuationType,
        callback: Punctuator,
        *,
        start_ms: int | None = None,
    ) -> Cancellable:
        raise StateError("processor of a global store called schedule(): global processors cannot schedule punctuators")

    def commit(self) -> None:
        """A no-op: the global task commits on its own interval."""

    def current_stream_time_ms(self) -> int:
        raise StateError("There is no concept of stream-time for a global processor.")


class GlobalStateUpdateTask:
    """The global stores of a topology and their source/processor graph (see the module docstring).

    ``stores`` are the opened global stores (name → store), shared with every stream task, which reads them through
    ``context.get_state_store``.
    """

    def __init__(
        self,
        topology: Topology,
        stores: Mapping[str, object],
        *,
        application_id: str,
        default_key_serde: Serde[Any] | None = None,
        default_value_serde: Serde[Any] | None = None,
        deserialization_exception_handler: DeserializationExceptionHandler | None = None,
    ) -> None:
        self.topology = topology
        self.stores = stores
        self._default_key_serde = default_key_serde
        self._default_value_serde = default_value_serde
        self.records_processed = 0
        self.dropped = DroppedRecordsSensor(lambda: self.records_processed)
        self._handle = _GlobalTaskHandle(self.dropped)
        self.context = GlobalProcessorContext(cast(StreamTask, self._handle), application_id, stores, RecordCollector())
        for store in stores.values():  # writes stamp the global record's timestamp (``ProcessorStateManager.attach``)
            store_context = getattr(store, "context", None)  # ``state.StoreContext`` (the engine imports no state)
            if store_context is not None and hasattr(store_context, "record_timestamp"):
                store_context.record_timestamp = self.context.record_timestamp
                store_context.record_dropped = self.context.record_dropped
        self.graph = self._build()
        self._source_of: dict[str, SourceNode] = {t: s for s in self.graph.sources for t in s.topics}
        handler = deserialization_exception_handler or LogAndFailExceptionHandler()
        self._deserializer_of: dict[str, RecordDeserializer] = {
            topic: RecordDeserializer(source, handler, str(GLOBAL_TASK_ID), self.dropped, self._handle.log)
            for topic, source in self._source_of.items()
        }
        self._store_of_topic: dict[str, str] = {}
        for source in self.graph.sources:
            for child in source.children:
                for store in topology.stores_of(child.name):
                    self._store_of_topic.update(dict.fromkeys(source.topics, store))

    def _build(self) -> ProcessorTopology:
        return build_global_state_topology(
            self.topology, default_key_serde=self._default_key_serde, default_value_serde=self._default_value_serde
        )

    @property
    def topics(self) -> tuple[str, ...]:
        """The global topics, one per global store."""
        return tuple(self._source_of)

    def store_topic(self, store_name: str) -> str:
        for topic, store in self._store_of_topic.items():
            if store == store_name:
                return topic
        raise StateError(f"{store_name} is not a global store of this topology (global: {sorted(self.stores)})")

    def initialize(self) -> None:
        """``initTopology``: ``init`` every node of the global graph with the global context."""
        for node in self.graph.nodes:
            self.context.set(node, ProcessorRecordContext(-1, -1, -1, None), -1)
            node.init(self.context, None, self.dropped)
        self.context.set(None, ProcessorRecordContext(-1, -1, -1, None), -1)

    def update(self, record: RawRecord) -> None:
        """``GlobalStateUpdateTask#update``: deserialize with the topic's source, then run the store's processor."""
        deserializer = self._deserializer(record.topic)
        deserialized = deserializer.deserialize(record)
        if deserialized is None:  # the handler answered CONTINUE: counted as dropped, the offset still consumed
            return
        source = deserializer.source
        self.context.set(
            source,
            ProcessorRecordContext(record.timestamp, record.offset, record.partition, record.topic, record.headers),
            -1,
        )
        source.process(Record(deserialized.key, deserialized.value, record.timestamp, record.headers))
        self.records_processed += 1

    def restore(self, store_name: str, records: Iterable[RawRecord]) -> int:
        """Bootstrap ``store_name`` from its topic's records (the planned range, in offset order); returns how many
        records reached the store. Null keys are skipped; see the module docstring for raw load vs reprocessing."""
        topic = self.store_topic(store_name)
        if self.topology.reprocess_on_restore(store_name):
            return self._reprocess(store_name, topic, records)
        store = self.stores[store_name]
        restore_batch = getattr(store, "restore_batch", None)
        if not callable(restore_batch):
            raise StateError(f"global store {store_name} ({type(store).__name__}) cannot restore raw records")
        batch: list[RawRecord] = []
        applied = 0
        for record in records:
            if record.topic != topic:
                raise StateError(
                    f"global store {store_name}: record {record.topic}-{record.partition}@{record.offset} is not "
                    f"from its topic {topic}"
                )
            if record.key is None:
                continue
            batch.append(record)
            if len(batch) >= 10_000:
                restore_batch(batch)
                applied += len(batch)
                batch = []
        if batch:
            restore_batch(batch)
            applied += len(batch)
        logger.info("Restored global store %s from %s: %d records", store_name, topic, applied)
        return applied

    def _reprocess(self, store_name: str, topic: str, records: Iterable[RawRecord]) -> int:
        """``reprocessState``: a fresh instance of the store's processor, ``init`` with the global context, fed every
        record with a non-null key (deserialized by the source's deserializers)."""
        deserializer = self._deserializer(topic)
        source = deserializer.source
        name = next(child.name for child in source.children if store_name in self.topology.stores_of(child.name))
        spec = self.topology.node(name)
        assert isinstance(spec, ProcessorNodeSpec)
        node = ProcessorNode(name, cast(Processor, spec.supplier()))  # no children: Kafka's restore feeds it alone
        self.context.set(node, ProcessorRecordContext(-1, -1, -1, None), -1)
        node.init(self.context, None, self.dropped)
        applied = 0
        for record in records:
            if record.key is None:
                continue
            self.context.set(
                node,
                ProcessorRecordContext(record.timestamp, record.offset, record.partition, record.topic, record.headers),
                -1,
            )
            deserialized = deserializer.deserialize(record)
            if deserialized is None:
                continue
            node.process(Record(deserialized.key, deserialized.value, record.timestamp, record.headers))
            applied += 1
        self.context.set(None, ProcessorRecordContext(-1, -1, -1, None), -1)
        logger.info("Reprocessed global store %s from %s: %d records", store_name, topic, applied)
        return applied

    def _deserializer(self, topic: str) -> RecordDeserializer:
        deserializer = self._deserializer_of.get(topic)
        if deserializer is None:
            raise StateError(f"{topic} is not a global topic of this topology (global topics: {list(self._source_of)})")
        return deserializer

    def close(self) -> None:
        for node in self.graph.nodes:
            node.close()
