"""The Processor API, shaped like Kafka Streams' ``org.apache.kafka.streams.processor.api`` (4.2).

``Processor`` mirrors ``api.Processor`` (``init``/``process``/``close``); ``ProcessorContext`` mirrors
``api.ProcessorContext``: ``forward`` (depth-first, synchronous: ordering.md SR-3), ``schedule`` (plain and the 4.2
anchored form, ST-6), ``get_state_store``, ``record_metadata``, ``current_stream_time_ms`` and
``current_system_time_ms``. The task's implementation is ``processor_context.ProcessorContextImpl``.
"""

from __future__ import annotations

from typing import Any, Protocol

from streamproc.engine.punctuation_queue import Cancellable, PunctuationType, Punctuator
from streamproc.engine.records import Record, RecordMetadata
from streamproc.engine.task_id import TaskId


class ClassCastError(TypeError):
    """Java's ``ClassCastException`` for a Python processor: "my input is not of the type I was written for".

    Kafka Streams' ``ProcessorNode#process`` treats a ``ClassCastException`` unlike any other exception (PE-1): it
    wraps it in a ``StreamsException`` that names the serdes, does not hand it to its own processing exception
    handler, and lets it reach the *parent* node's handler (or the task, under a source). Python has no cast that
    fails at the processor boundary, so a processor (or a typed serde helper) raises this to ask for that routing;
    any other exception, a plain ``TypeError`` included, is handled at the node that raised it, as Java handles a
    ``NullPointerException``.
    """


class ProcessorContext(Protocol):
    """What a processor may ask of its task while it runs (``init``, ``process`` or a punctuator)."""

    @property
    def application_id(self) -> str: ...

    @property
    def task_id(self) -> TaskId: ...

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        """Pass ``record`` to every child (or the named one), each finishing before the next starts."""
        ...

    def schedule(
        self,
        interval_ms: int,
        punctuation_type: PunctuationType,
        callback: Punctuator,
        *,
        start_ms: int | None = None,
    ) -> Cancellable:
        """``schedule(Duration, type, cb)``; with ``start_ms`` the 4.2 anchored ``schedule(Instant, ...)``."""
        ...

    def get_state_store(self, name: str) -> object: ...

    def record_metadata(self) -> RecordMetadata | None: ...

    def commit(self) -> None:
        """Request a commit (honoured at the next commit point of the worker, ``maybe_commit_per_user_requested``)."""
        ...

    def current_stream_time_ms(self) -> int: ...

    def current_system_time_ms(self) -> int: ...


class Processor:
    """Base class of user processors; ``init`` and ``close`` default to doing nothing, as in Kafka Streams."""

    def init(self, context: ProcessorContext) -> None:
        """Called once before the first record; ``schedule`` punctuations here."""

    def process(self, record: Record[Any, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Called once when the task closes."""
