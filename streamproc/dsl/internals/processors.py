"""The DSL's stateless processors (``kstream.internals``, 4.2): ``KStreamFilter``, ``KStreamMap``,
``KStreamMapValues``, ``KStreamFlatMap``, ``KStreamFlatMapValues``, ``KStreamPeek``, ``KStreamBranch``.

Each mirrors its Java class's ``process``: one record in, the same forwards in the same order, records Kafka skips
skipped. User functions get Java's arguments (``apply(key, value)``; a value-only mapper gets the value).
The stateful operators' processors live in their own modules (one per Kafka class); an operator that has none yet
(sliding windows, suppress) gets :class:`NotYetReplayable` from :func:`operator_supplier`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import Processor, ProcessorContext
from streamproc.engine.records import Record
from streamproc.errors import TopologyError


class _Forwarding(Processor):
    """A processor that keeps its context.

    Every one of these is stateless: what it forwards is decided by the record alone (the DSL's user functions are
    taken to be functions of their arguments, as Kafka Streams' restores and rebalances assume), so it never stops
    a task from being split by key (``engine/key_locality.py``); one that changes the key says so.
    """

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def key_locality(self) -> KeyLocality:
        return KeyLocality.per_record()


class KStreamFilter(_Forwarding):
    """``KStreamFilter``: forward when ``predicate(key, value)`` is true (``filter_not``: false)."""

    def __init__(self, predicate: Callable[[Any, Any], bool], filter_not: bool) -> None:
        self.predicate = predicate
        self.filter_not = filter_not

    def process(self, record: Record[Any, Any]) -> None:
        if self.predicate(record.key, record.value):
            if not self.filter_not:
                self.context.forward(record)
        elif self.filter_not:
            self.context.forward(record)


#: ``KStreamMap``'s error for a mapper that returned null (Java's ``NullPointerException`` text).
NULL_KEY_VALUE_MAPPER_MESSAGE = "The provided KeyValueMapper returned null which is not allowed."


class KStreamMap(_Forwarding):
    """``KStreamMap``: ``mapper(key, value)`` returns the new ``(key, value)`` pair (``KeyValue``)."""

    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.mapper = mapper
        #: ``selectKey``'s and ``groupBy``'s selector when the mapper is ``(selector(k, v), v)`` (Java's
        #: ``KStreamImpl#internalSelectKey`` wraps it so), which the columnar chain calls directly.
        self.key_selector: Callable[[Any, Any], Any] | None = None

    @classmethod
    def selecting_key(cls, selector: Callable[[Any, Any], Any]) -> KStreamMap:
        """The map ``selectKey(selector)`` builds: the new key ``selector(key, value)``, the value unchanged."""
        node = cls(lambda k, v: (selector(k, v), v))
        node.key_selector = selector
        return node

    def key_locality(self) -> KeyLocality:
        return KeyLocality.per_record(changes_key=True)

    def process(self, record: Record[Any, Any]) -> None:
        pair = self.mapper(record.key, record.value)
        if pair is None:
            raise TopologyError(NULL_KEY_VALUE_MAPPER_MESSAGE)
        key, value = pair
        self.context.forward(Record(key, value, record.timestamp, record.headers))


class KStreamMapValues(_Forwarding):
    """``KStreamMapValues``: the key stays; ``mapper(key, value)`` is the new value (``with_key=False``: a
    ``ValueMapper``, called as ``mapper(value)`` without a wrapping lambda)."""

    def __init__(self, mapper: Callable[..., Any], with_key: bool = True) -> None:
        self.mapper = mapper
        self.with_key = with_key

    def process(self, record: Record[Any, Any]) -> None:
        # Record(...) rather than record.with_value(...): one frame less per record on the DSL's commonest hop
        value = self.mapper(record.key, record.value) if self.with_key else self.mapper(record.value)
        self.context.forward(Record(record.key, value, record.timestamp, record.headers))


class KTableToStream(_Forwarding):
    """``KTableImpl#toStream``'s ``KStreamMapValues(change -> change.newValue)``: each update's new value.

    Kafka's node is a ``KStreamMapValues`` with that mapper; this is the same processor without the mapper call
    (it runs once per update of every table sent on, e.g. every count)."""

    def key_locality(self) -> KeyLocality:
        """No user code: every update goes on with its key and timestamp."""
        return KeyLocality.one_to_one()

    def process(self, record: Record[Any, Any]) -> None:
        self.context.forward(Record(record.key, record.value.new_value, record.timestamp, record.headers))


class KStreamFlatMap(_Forwarding):
    """``KStreamFlatMap``: each ``(key, value)`` pair of ``mapper(key, value)``, in order."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.mapper = mapper

    def key_locality(self) -> KeyLocality:
        return KeyLocality.per_record(changes_key=True)

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


class NotYetReplayable(Processor):
    """Stands in for an operator whose processor streamproc does not have yet: the topology builds and describes
    as Java's does, but processing a record through it fails with a clear error."""

    def __init__(self, operator: str, node: str) -> None:
        self.operator = operator
        self.node = node

    def key_locality(self) -> KeyLocality:
        return KeyLocality.not_key_local(f"the DSL operator {self.operator} has no streamproc processor yet")

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
