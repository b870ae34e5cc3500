"""The node shapes the columnar paths recognise (``count.py``, ``window.py``): a plain source
with Bytes serdes, a line of stateless DSL nodes, an aggregate's ``toStream``, a plain sink. Each check returns the
node(s) or the one-line reason the task runs per record instead."""

from __future__ import annotations

from streamproc.dsl.internals.processors import KTableToStream
from streamproc.engine.processor_topology import ProcessorNode, ProcessorTopology, SinkNode, SourceNode
from streamproc.engine.serdes import ByteArrayDeserializer
from streamproc.engine.topology_builder import _default_partitioner
from streamproc.spark.columnar.chain import StatelessStep, stateless_step


def serde_is(function: object, cls: type) -> bool:
    """``function`` is the ``serialize``/``deserialize`` of an instance of exactly ``cls`` (not a subclass)."""
    return type(getattr(function, "__self__", None)) is cls


def bytes_source(graph: ProcessorTopology, topic: str) -> SourceNode | str:
    """The sub-topology's first node when it is a plain source of ``topic`` with one child and Bytes/ByteArray
    deserializers (the records' raw bytes are what the user's functions see)."""
    nodes = graph.nodes
    source = nodes[0] if nodes else None
    if type(source) is not SourceNode or source.topics != (topic,) or len(source.children) != 1:
        return "the first node is not a plain source of the input topic with one child"
    if not serde_is(source.key_deserializer, ByteArrayDeserializer) or not serde_is(
        source.value_deserializer, ByteArrayDeserializer
    ):
        return "the source's serdes are not Bytes/ByteArray"
    return source


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
