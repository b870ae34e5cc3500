"""The DSL's stateless processors and its key-value aggregations (``kstream.internals``, 4.2): ``KStreamFilter``,
``KStreamMap``, ``KStreamMapValues``, ``KStreamFlatMap``, ``KStreamFlatMapValues``, ``KStreamPeek``,
``KStreamBranch``, ``PassThrough``, ``KStreamAggregate``, ``KStreamReduce``, ``KTableSource``.

Each mirrors its Java class's ``process``: one record in, the same forwards in the same order, records Kafka skips
skipped. User functions get Java's arguments (``apply(key, value)``; a value-only mapper gets the value).
The stateful operators whose processors live in their own modules (windows, joins, KTable operators, suppress)
are looked up by :func:`operator_supplier`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.records import Record
from streamproc.errors import TopologyError

logger = logging.getLogger(__name__)


class _Forwarding(Processor):
    """A processor that keeps its context."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context


class KStreamFilter(_Forwarding):
    """``KStreamFilter``: forward when ``predicate(key, value)`` is true (``filter_not``: false)."""

    def __init__(self, predicate: Callable[[Any, Any], bool], filter_not: bool) -> None:
        self.predicate = predicate
        self.filter_not = filter_not

    def process(self, record: Record[Any, Any]) -> None:
        if bool(self.predicate(record.key, record.value)) != self.filter_not:
            self.context.forward(record)


class KStreamMap(_Forwarding):
    """``KStreamMap``: ``mapper(key, value)`` returns the new ``(key, value)`` pair (``KeyValue``)."""

    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        pair = self.mapper(record.key, record.value)
        if pair is None:
            raise TopologyError("The provided KeyValueMapper returned null which is not allowed.")
        key, value = pair
        self.context.forward(Record(key, value, record.timestamp, record.headers))


class KStreamMapValues(_Forwarding):
    """``KStreamMapValues``: the key stays; ``mapper(key, value)`` is the new value."""

    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record.with_value(self.mapper(record.key, record.value)))


class KStreamFlatMap(_Forwarding):
    """``KStreamFlatMap``: each ``(key, value)`` pair of ``mapper(key, value)``, in order."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        for key, value in self.mapper(record.key, record.value):
            self.context.forward(Record(key, value, record.timestamp, record.headers))


class KStreamFlatMapValues(_Forwarding):
    """``KStreamFlatMapValues``: each value of ``mapper(key, value)`` with the record's key."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self.mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        for value in self.mapper(record.key, record.value):
            self.context.forward(record.with_value(value))


class KStreamPeek(_Forwarding):
    """``KStreamPeek``: call ``action(key, value)``; ``peek`` forwards the record, ``foreach`` does not."""

    def __init__(self, action: Callable[[Any, Any], None], forward: bool) -> None:
        self.action = action
        self.forward = forward

    def process(self, record: Record[Any, Any]) -> None:
        self.action(record.key, record.value)
        if self.forward:
            self.context.forward(record)


class PassThrough(_Forwarding):
    """``PassThrough`` / ``KStreamPassThrough``: forward every record (merge, branch children)."""

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(record)


class KStreamBranch(_Forwarding):
    """``KStreamBranch``: the record goes to the child of the first predicate it matches, else to the default
    branch (the child after the predicates' children) if there is one."""

    def __init__(self, predicates: Sequence[Callable[[Any, Any], bool]], child_names: Sequence[str]) -> None:
        self.predicates = predicates
        self.child_names = child_names

    def process(self, record: Record[Any, Any]) -> None:
        for index, predicate in enumerate(self.predicates):
            if predicate(record.key, record.value):
                self.context.forward(record, self.child_names[index])
                return
        if len(self.child_names) > len(self.predicates):
            self.context.forward(record, self.child_names[len(self.predicates)])


def _skip(context: ProcessorContext, what: str, record: Record[Any, Any]) -> None:
    """Kafka's ``Skipping record due to null key or value.`` warning (a dropped record, not an error)."""
    metadata = context.record_metadata()
    where = f" topic=[{metadata.topic}] partition=[{metadata.partition}] offset=[{metadata.offset}]" if metadata else ""
    logger.warning("Skipping record due to null %s.%s", what, where)


class KTableSourceState:
    """What the DSL decides about a ``KTableSource`` while the program is built: its store name, whether it is
    materialised (``queryableName``) and whether it sends old values; read when processors are created."""

    def __init__(self, store_name: str, queryable: bool) -> None:
        self.store_name = store_name
        self.queryable_name: str | None = store_name if queryable else None
        self.send_old_values = False

    def materialize(self) -> None:
        """``KTableSource#materialize``: a downstream join or aggregation needs the table's values."""
        self.queryable_name = self.store_name


class KTableSource(_Forwarding):
    """``KTableSource``: materialised, the update is written to the store and forwarded as ``Change(new, old)``;
    otherwise forwarded as ``Change(new, None)``. Records with a null key are skipped."""

    def __init__(self, state: KTableSourceState) -> None:
        self.state = state
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.state.queryable_name is not None:
            self.store = context.get_state_store(self.state.queryable_name)

    def process(self, record: Record[Any, Any]) -> None:
        from streamproc.state.stores import ValueAndTimestamp

        if record.key is None:
            _skip(self.context, "key", record)
            return
        if self.store is None:
            self.context.forward(record.with_value(Change(record.value, None)))
            return
        old = self.store.get(record.key)
        old_value = None if old is None else old.value
        if old is not None and record.timestamp < old.timestamp:
            logger.warning(
                "Detected out-of-order KTable update for %s, old timestamp=[%d] new timestamp=[%d].",
                self.store_name_for_log(),
                old.timestamp,
                record.timestamp,
            )
        self.store.put(record.key, ValueAndTimestamp.make(record.value, record.timestamp))
        sent_old = old_value if self.state.send_old_values else None
        self.context.forward(record.with_value(Change(record.value, sent_old)))

    def store_name_for_log(self) -> str:
        return self.state.store_name


class AggregateState:
    """A key-value aggregation's store name and whether it sends old values (``enableSendingOldValues``)."""

    def __init__(self, store_name: str) -> None:
        self.store_name = store_name
        self.send_old_values = False


class KStreamAggregate(_Forwarding):
    """``KStreamAggregate`` (``count`` and ``aggregate``): ``aggregator(key, value, agg)`` starting from
    ``initializer()``; the result's timestamp is the largest of its inputs'."""

    def __init__(
        self, state: AggregateState, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any]
    ) -> None:
        self.state = state
        self.initializer = initializer
        self.aggregator = aggregator
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.state.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        from streamproc.state.stores import ValueAndTimestamp

        if record.key is None or record.value is None:
            _skip(self.context, "key or value", record)
            return
        old = self.store.get(record.key)
        if old is None or old.value is None:
            old_agg = self.initializer()
            timestamp = record.timestamp
        else:
            old_agg = old.value
            timestamp = max(record.timestamp, old.timestamp)
        new_agg = self.aggregator(record.key, record.value, old_agg)
        self.store.put(record.key, ValueAndTimestamp.make(new_agg, timestamp))
        sent_old = old_agg if self.state.send_old_values else None
        self.context.forward(Record(record.key, Change(new_agg, sent_old), timestamp, record.headers))


class KStreamReduce(_Forwarding):
    """``KStreamReduce``: the first value is the aggregate; later ones are ``reducer(agg, value)``."""

    def __init__(self, state: AggregateState, reducer: Callable[[Any, Any], Any]) -> None:
        self.state = state
        self.reducer = reducer
        self.store: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_state_store(self.state.store_name)

    def process(self, record: Record[Any, Any]) -> None:
        from streamproc.state.stores import ValueAndTimestamp

        if record.key is None or record.value is None:
            _skip(self.context, "key or value", record)
            return
        old = self.store.get(record.key)
        old_agg = None if old is None else old.value
        if old_agg is None:
            new_agg = record.value
            timestamp = record.timestamp
        else:
            new_agg = self.reducer(old_agg, record.value)
            timestamp = max(record.timestamp, old.timestamp)
        self.store.put(record.key, ValueAndTimestamp.make(new_agg, timestamp))
        sent_old = old_agg if self.state.send_old_values else None
        self.context.forward(Record(record.key, Change(new_agg, sent_old), timestamp, record.headers))


class NotYetReplayable(Processor):
    """Stands in for an operator whose processor streamproc does not have yet: the topology builds and describes
    as Java's does, but processing a record through it fails with a clear error."""

    def __init__(self, operator: str, node: str) -> None:
        self.operator = operator
        self.node = node

    def init(self, context: ProcessorContext) -> None:
        from streamproc.errors import ProcessingError

        raise ProcessingError(
            f"processor {self.node}: the DSL operator {self.operator} has no streamproc processor yet "
            "(its topology and names are Kafka's; running it is not supported): replay this application with the "
            "Processor API, or wait for the operator's processor"
        )

    def process(self, record: Record[Any, Any]) -> None:  # pragma: no cover - init already refused
        raise NotImplementedError


def operator_supplier(module: str, cls: str, node: str, *args: Any, **kwargs: Any) -> Callable[[], Processor]:
    """A supplier of ``streamproc.dsl.internals.<module>.<cls>(*args, **kwargs)``, or of :class:`NotYetReplayable`
    when that processor is not there (the stateful operators are written separately)."""
    try:
        found = getattr(importlib.import_module(f"streamproc.dsl.internals.{module}"), cls)
    except (ImportError, AttributeError):
        return lambda: NotYetReplayable(cls, node)
    return lambda: found(*args, **kwargs)
