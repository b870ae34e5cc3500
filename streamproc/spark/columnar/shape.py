"""The node shapes the columnar paths recognise (``count.py``, ``window.py``): a plain source
with ByteArray or String serdes, a line of stateless DSL nodes, an aggregate's ``toStream``, a plain sink. Each check
returns the node(s) or the one-line reason the task runs per record instead.

A source's key and value are read over their columns as :class:`PlainSerde` says: ``ByteArray`` as the bytes are,
``String`` as the bytes its serializer writes for what its deserializer reads (:meth:`PlainSerde.column`). Neither
deserializer fails (``String`` replaces what is not UTF-8, as Java's ``new String(bytes, UTF_8)`` does), so no record
is dropped or fails at the poll; and a ``String`` key column so normalised holds the bytes a ``String`` store and
sink write for the record's key, which the columnar paths group, store, partition and send as they are. Where a
user's function sees a key or value, it sees the deserializer's object (:meth:`PlainSerde.objects`), and what it
returns goes through the sink's own serializer (:func:`serialized`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from streamproc.dsl.internals.processors import KTableToStream
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from streamproc.engine.serdes import ByteArrayDeserializer, ByteArraySerializer, StringDeserializer, StringSerializer
from streamproc.engine.topology_builder import _default_partitioner
from streamproc.spark.columnar.chain import StatelessStep, stateless_step


@dataclass(frozen=True, slots=True)
class PlainSerde:
    """A source's key or value serde the columnar paths read over the column: ``ByteArray`` or ``String``."""

    string: bool

    @property
    def name(self) -> str:
        return "String" if self.string else "Bytes/ByteArray"

    def column(self, column: Any) -> Any:
        """``column`` (a binary array or chunked array) as the serializer of this kind writes what the deserializer
        reads from it: the same bytes, but for ``String`` values that are not UTF-8, which become Java's replacement
        characters, encoded (``StringDeserializer`` then ``StringSerializer``, value by value)."""
        if not self.string:
            return column
        try:
            column.cast(pa.string())
        except pa.ArrowInvalid:
            pass
        else:
            return column  # valid UTF-8: decoding and encoding give the same bytes
        decode, encode = StringDeserializer().deserialize, StringSerializer().serialize
        return pa.array([encode("", decode("", raw)) for raw in column.to_pylist()], pa.binary())

    def objects(self, column: Any) -> list[Any]:
        """A :meth:`column` (normalised) as the deserializer's objects: ``bytes``, or ``str`` decoded by Arrow."""
        if not self.string:
            return list(column.to_pylist())
        return list(column.cast(pa.string()).to_pylist())

    def of_bytes(self, raw: bytes) -> Any:
        """One normalised value (:meth:`column`) as the deserializer's object (a store read takes the key object)."""
        return raw.decode("utf-8") if self.string else raw

    def to_bytes(self, value: Any) -> bytes:
        """:meth:`of_bytes` undone: an object read from a normalised column as the serializer writes it."""
        return value.encode("utf-8") if self.string else value  # type: ignore[no-any-return]

    def writes(self, serializer: object) -> bool:
        """``serializer`` (a ``serialize`` method) writes this kind's objects back to the bytes read."""
        return serde_is(serializer, StringSerializer if self.string else ByteArraySerializer)


BYTES = PlainSerde(string=False)
STRING = PlainSerde(string=True)


def plain_serde(deserializer: object) -> PlainSerde | None:
    """The :class:`PlainSerde` of a source's ``deserialize`` method, ``None`` for another deserializer."""
    if serde_is(deserializer, ByteArrayDeserializer):
        return BYTES
    if serde_is(deserializer, StringDeserializer):
        return STRING
    return None


def sink_serde(serializer: object) -> PlainSerde | None:
    """The :class:`PlainSerde` a sink's ``serialize`` method writes, ``None`` for another serializer."""
    if serde_is(serializer, ByteArraySerializer):
        return BYTES
    if serde_is(serializer, StringSerializer):
        return STRING
    return None


def serialized(serde: PlainSerde, topic: str, items: Sequence[Any]) -> tuple[pa.Array, int | None, Exception | None]:
    """``items`` as a sink's ``ByteArray`` or ``String`` serializer writes them, as a binary column, or the index of
    the first item it rejects and its error (the column then holds the items before it)."""
    kind = str if serde.string else bytes
    if all(type(item) is kind or item is None for item in items):
        if not serde.string:
            return pa.array(items, pa.binary()), None, None
        try:
            return pa.array(items, pa.string()).cast(pa.binary()), None, None
        except (pa.ArrowException, UnicodeEncodeError):
            pass  # an unpaired surrogate: the serializer writes it as ``?``
    serialize = (StringSerializer() if serde.string else ByteArraySerializer()).serialize
    out: list[bytes | None] = []
    for index, item in enumerate(items):
        try:
            out.append(serialize(topic, item))
        except Exception as exc:  # noqa: BLE001 - the sink's serializer rejects it: the record's failure
            return pa.array(out, pa.binary()), index, exc
    return pa.array(out, pa.binary()), None, None


def serde_is(function: object, cls: type) -> bool:
    """``function`` is the ``serialize``/``deserialize`` of an instance of exactly ``cls`` (not a subclass)."""
    return type(getattr(function, "__self__", None)) is cls


@dataclass(frozen=True, slots=True)
class PlainSource:
    """A plain source and how its keys and values are read over the columns."""

    node: SourceNode
    key: PlainSerde
    value: PlainSerde


def plain_source(graph: ProcessorTopology, topic: str) -> PlainSource | str:
    """The sub-topology's first node when it is a plain source of ``topic`` with one child and ByteArray or String
    deserializers, with their :class:`PlainSerde` s."""
    nodes = graph.nodes
    source = nodes[0] if nodes else None
    if type(source) is not SourceNode or source.topics != (topic,) or len(source.children) != 1:
        return "the first node is not a plain source of the input topic with one child"
    key, value = plain_serde(source.key_deserializer), plain_serde(source.value_deserializer)
    if key is None or value is None:
        return "the source's serdes are not Bytes/ByteArray or String"
    return PlainSource(source, key, value)


def stateless_chain(node: ProcessorNode) -> tuple[list[StatelessStep], ProcessorNode] | str:
    """The stateless DSL nodes from ``node`` on (each feeding exactly the next) and the first node that is not one."""
    steps: list[StatelessStep] = []
    while (step := stateless_step(node)) is not None:
        if len(node.children) != 1:
            return f"{node.name} does not feed exactly one node"
        steps.append(step)
        node = node.children[0]
    return steps, node


def after_to_stream(aggregate: ProcessorNode) -> ProcessorNode | str:
    """The one node an aggregate's ``KTABLE-TOSTREAM`` feeds, when the aggregate feeds only that ``toStream``."""
    if len(aggregate.children) != 1:
        return f"{aggregate.name} does not feed only toStream"
    to_stream = aggregate.children[0]
    if type(to_stream) is not ProcessorNode or type(to_stream.processor) is not KTableToStream:
        return f"{to_stream.name} is not KTABLE-TOSTREAM"
    if len(to_stream.children) != 1:
        return f"{to_stream.name} does not feed only one node"
    return to_stream.children[0]


def plain_sink(node: ProcessorNode) -> SinkNode | str:
    """``node`` when it is a sink to a fixed topic with the default partitioner (partitions from the key bytes)."""
    if type(node) is not SinkNode or node.partitioner is not _default_partitioner:
        return f"{node.name} is not a sink to a fixed topic with the default partitioner"
    return node
