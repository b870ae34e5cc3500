"""The model of a described topology, its ``toString()`` text, and a strict-but-tolerant parser for that text.

Mirrors ``org.apache.kafka.streams.TopologyDescription`` and its implementation in
``InternalTopologyBuilder.TopologyDescription`` / ``SubtopologyDescription`` / ``GlobalStore`` / ``Source`` /
``Processor`` / ``Sink`` (Kafka Streams 4.2.0). A planner must be able to take a user's ``describe()`` output as
the authority on sub-topologies and tasks, so the parser accepts the real-world variants of topology.md §7.1
(re-indentation, CRLF, trailing spaces, extra blank lines) but rejects any line it does not understand, naming
the line: silently skipping a ``Source:`` line would silently drop tasks.

Node order inside a block is not reproducible in Kafka Streams (it depends on Java hash order), so equality of
descriptions is structural: compare :meth:`TopologyDescription.normalized` forms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from streamproc.engine.describe_order import DescribedOrder, hash_set_copy_order
from streamproc.errors import TopologyError

#: ``Topic#validate``: the legal characters and maximum length of a topic name.
_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_SUBTOPOLOGY_HEADER = re.compile(r"^Sub-topology: ([0-9]+)(?P<global> for global store \(will not generate tasks\))?$")
_NAMED_HEADER = re.compile(r"^Topology: (?P<name>.+):$")
_NONE = "none"
_SOURCE = "Source: "
_PROCESSOR = "Processor: "
_SINK = "Sink: "
_SUCC = "-->"
_PRED = "<--"


@dataclass(frozen=True, slots=True)
class Source:
    """``TopologyDescription.Source``: ``topics`` (a topic set) or ``pattern`` (a regex), never both."""

    name: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    successors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.pattern is None) == (not self.topics):
            raise TopologyError(f"source {self.name}: either topics or a pattern must be given, not both")


@dataclass(frozen=True, slots=True)
class Processor:
    """``TopologyDescription.Processor``: its state stores and neighbours."""

    name: str
    stores: tuple[str, ...] = ()
    successors: tuple[str, ...] = ()
    predecessors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Sink:
    """``TopologyDescription.Sink``: a static ``topic`` or a dynamic ``extractor`` (``TopicNameExtractor``)."""

    name: str
    topic: str | None = None
    extractor: str | None = None
    predecessors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.topic is None) == (self.extractor is None):
            raise TopologyError(f"sink {self.name}: exactly one of topic and extractor must be given")


Node = Source | Processor | Sink


def _successors(node: Node) -> tuple[str, ...]:
    return () if isinstance(node, Sink) else node.successors


def _predecessors(node: Node) -> tuple[str, ...]:
    return () if isinstance(node, Source) else node.predecessors


def _normalized_node(node: Node) -> Node:
    if isinstance(node, Source):
        return Source(node.name, tuple(sorted(node.topics)), node.pattern, tuple(sorted(node.successors)))
    if isinstance(node, Processor):
        return Processor(
            node.name, tuple(sorted(node.stores)), tuple(sorted(node.successors)), tuple(sorted(node.predecessors))
        )
    return Sink(node.name, node.topic, node.extractor, tuple(sorted(node.predecessors)))


@dataclass(frozen=True, slots=True)
class Subtopology:
    """``TopologyDescription.Subtopology``: a node group that produces tasks."""

    id: int
    nodes: tuple[Node, ...]

    @property
    def sources(self) -> tuple[Source, ...]:
        return tuple(n for n in self.nodes if isinstance(n, Source))

    @property
    def processors(self) -> tuple[Processor, ...]:
        return tuple(n for n in self.nodes if isinstance(n, Processor))

    @property
    def sinks(self) -> tuple[Sink, ...]:
        return tuple(n for n in self.nodes if isinstance(n, Sink))

    def node(self, name: str) -> Node:
        for candidate in self.nodes:
            if candidate.name == name:
                return candidate
        raise KeyError(name)


@dataclass(frozen=True, slots=True)
class GlobalStore:
    """``TopologyDescription.GlobalStore``: one source, one state-update processor with exactly one store."""

    id: int
    source: Source
    processor: Processor

    @property
    def topic(self) -> str:
        return self.source.topics[0]

    @property
    def store(self) -> str:
        return self.processor.stores[0]


@dataclass(frozen=True, slots=True)
class TopologyDescription:
    """``TopologyDescription``: sub-topologies and global stores (ids shared), optional named-topology name."""

    subtopologies: tuple[Subtopology, ...]
    global_stores: tuple[GlobalStore, ...] = ()
    topology_name: str | None = None

    def __post_init__(self) -> None:
        ids = [s.id for s in self.subtopologies] + [g.id for g in self.global_stores]
        if len(ids) != len(set(ids)):
            raise TopologyError(f"sub-topology ids must be unique, got {sorted(ids)}")

    def normalized(self) -> TopologyDescription:
        """Blocks by id, nodes and every name list sorted: the form to compare, hash and store (topology.md §7.6)."""
        subs = tuple(
            Subtopology(s.id, tuple(sorted((_normalized_node(n) for n in s.nodes), key=lambda n: n.name)))
            for s in sorted(self.subtopologies, key=lambda s: s.id)
        )
        globals_ = tuple(
            GlobalStore(
                g.id,
                Source(g.source.name, g.source.topics, None, g.source.successors),
                Processor(g.processor.name, g.processor.stores, (), g.processor.predecessors),
            )
            for g in sorted(self.global_stores, key=lambda g: g.id)
        )
        return TopologyDescription(subs, globals_, self.topology_name)

    def __str__(self) -> str:
        return format_description(self)


# --------------------------------------------------------------------------------------------------- formatting


def _set_string(items: Iterable[str]) -> str:
    """A Java ``HashSet<String>``'s ``toString()``."""
    return "[" + ", ".join(hash_set_copy_order(items)) + "]"


def _format_node(node: Node, order: DescribedOrder) -> str:
    if isinstance(node, Source):
        topics = node.pattern if node.pattern is not None else _set_string(node.topics)
        return f"Source: {node.name} (topics: {topics})\n      --> {_listed(order.successors(node.name))}"
    if isinstance(node, Processor):
        return (
            f"Processor: {node.name} (stores: {_set_string(node.stores)})\n"
            f"      --> {_listed(order.successors(node.name))}\n      <-- {_listed(order.predecessors(node.name))}"
        )
    target = f"topic: {node.topic}" if node.topic is not None else f"extractor class: {node.extractor}"
    return f"Sink: {node.name} ({target})\n      <-- {_listed(order.predecessors(node.name))}"


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names) if names else _NONE


def _format_subtopology(sub: Subtopology) -> str:
    """Nodes, neighbours, stores and topics in the order Kafka Streams prints them (``describe_order.py``); the
    nodes' order in ``sub.nodes`` is taken as the order they were added to the topology."""
    by_name = {n.name: n for n in sub.nodes}
    order = DescribedOrder([n.name for n in sub.nodes], lambda name: _predecessors(by_name[name]))
    return f"Sub-topology: {sub.id}\n" + "".join(f"    {_format_node(by_name[n], order)}\n" for n in order.nodes) + "\n"


def _format_global_store(store: GlobalStore) -> str:
    order = DescribedOrder(
        [store.source.name, store.processor.name], lambda n: (store.source.name,) if n == store.processor.name else ()
    )
    return (
        f"Sub-topology: {store.id} for global store (will not generate tasks)\n"
        f"    {_format_node(store.source, order)}\n    {_format_node(store.processor, order)}\n"
    )


def format_description(description: TopologyDescription) -> str:
    """``TopologyDescription#toString`` of Kafka Streams 4.2, including its interleaving of blocks by id.

    The printer walks the sorted sub-topologies and global stores together, printing the sub-topology when its id
    equals the next expected id and otherwise the next global store; leftovers follow. Node order inside a block
    is (downstream size descending, name): Kafka's own order can differ (hash order), which never matters to a
    parser.
    """
    out = ["Topologies:\n " if description.topology_name is None else f"Topology: {description.topology_name}:\n "]
    subs = sorted(description.subtopologies, key=lambda s: s.id)
    globals_ = sorted(description.global_stores, key=lambda g: g.id)
    si = gi = 0
    expected_id = 0
    while si < len(subs) and gi < len(globals_):
        if subs[si].id == expected_id:
            out.append("  " + _format_subtopology(subs[si]))
            si += 1
        else:
            out.append("  " + _format_global_store(globals_[gi]))
            gi += 1
        expected_id += 1
    out.extend("  " + _format_subtopology(s) for s in subs[si:])
    out.extend("  " + _format_global_store(g) for g in globals_[gi:])
    return "".join(out)


# ------------------------------------------------------------------------------------------------------ parsing


@dataclass(slots=True)
class _RawNode:
    kind: str
    name: str
    detail: str
    line: int
    succ: str | None = None
    pred: str | None = None
    succ_line: int = 0
    pred_line: int = 0


@dataclass(slots=True)
class _RawBlock:
    id: int
    is_global: bool
    line: int
    nodes: list[_RawNode] = field(default_factory=list)


def _error(line: int, text: str, problem: str) -> TopologyError:
    return TopologyError(f"describe() text, line {line}: {problem}: {text.strip()!r}")


def _split_node_line(kind: str, body: str, line_no: int, line: str) -> tuple[str, str]:
    """Name = text up to the LAST detail opener; detail = up to the last ``)`` (topology.md §7.3 rule 1)."""
    openers = {
        "Source": (" (topics: ",),
        "Processor": (" (stores: [",),
        "Sink": (" (topic: ", " (extractor class: "),
    }[kind]
    best = -1
    chosen = ""
    for opener in openers:
        pos = body.rfind(opener)
        if pos > best:
            best, chosen = pos, opener
    if best <= 0 or not body.endswith(")"):
        raise _error(line_no, line, f"malformed {kind} line (expected '{kind}: <name>{openers[0]}...)')")
    name = body[:best]
    detail = body[best + len(chosen) : -1]
    if chosen == " (stores: [":
        if not detail.endswith("]"):
            raise _error(line_no, line, "malformed store list (expected '(stores: [...])')")
        detail = "[" + detail
    elif chosen == " (extractor class: ":
        detail = "\x00extractor:" + detail
    return name, detail


def _parse_topic_spec(spec: str) -> tuple[tuple[str, ...], str | None]:
    """A topic set iff ``[...]`` of legal topic names, else a regex (topology.md §7.3 rule 2)."""
    if spec.startswith("[") and spec.endswith("]"):
        items = spec[1:-1].split(", ")
        if all(_LEGAL_TOPIC.match(item) for item in items):
            return tuple(items), None
    return (), spec


def _parse_store_list(spec: str) -> tuple[str, ...]:
    inner = spec[1:-1]
    return tuple(inner.split(", ")) if inner else ()


def _resolve_names(text: str, known: set[str], line_no: int) -> tuple[str, ...]:
    """Split on ``", "`` and re-join pieces until each names a declared node (topology.md §7.3 rule 3)."""
    if text == _NONE and _NONE not in known:
        return ()
    pieces = text.split(", ")
    names: list[str] = []
    i = 0
    while i < len(pieces):
        candidate = pieces[i]
        j = i + 1
        while candidate not in known and j < len(pieces):
            candidate = candidate + ", " + pieces[j]
            j += 1
        if candidate not in known:
            raise _error(line_no, text, f"unknown node name {pieces[i]!r}")
        names.append(candidate)
        i = j
    return tuple(names)


def _read_blocks(text: str) -> tuple[str | None, list[_RawBlock]]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    topology_name: str | None = None
    header_seen = False
    blocks: list[_RawBlock] = []
    current_node: _RawNode | None = None
    for index, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if not header_seen:
            if line == "Topologies:":
                header_seen = True
                continue
            named = _NAMED_HEADER.match(line)
            if named is None:
                raise _error(index, raw, "expected 'Topologies:' or 'Topology: <name>:' as the first line")
            topology_name = named.group("name")
            header_seen = True
            continue
        header = _SUBTOPOLOGY_HEADER.match(line)
        if header is not None:
            blocks.append(_RawBlock(int(header.group(1)), header.group("global") is not None, index))
            current_node = None
            continue
        if line.startswith((_SUCC, _PRED)):
            if current_node is None:
                raise _error(index, raw, "neighbour line outside a node")
            rest = line[3:].strip()
            if not rest:
                raise _error(index, raw, "empty neighbour list (Kafka prints 'none')")
            if line.startswith(_SUCC):
                if current_node.succ is not None:
                    raise _error(index, raw, f"second '-->' line for node {current_node.name}")
                current_node.succ, current_node.succ_line = rest, index
            else:
                if current_node.pred is not None:
                    raise _error(index, raw, f"second '<--' line for node {current_node.name}")
                current_node.pred, current_node.pred_line = rest, index
            continue
        for prefix in (_SOURCE, _PROCESSOR, _SINK):
            if line.startswith(prefix):
                if not blocks:
                    raise _error(index, raw, "node before any 'Sub-topology:' header")
                kind = prefix[:-2]
                name, detail = _split_node_line(kind, line[len(prefix) :], index, raw)
                current_node = _RawNode(kind, name, detail, index)
                blocks[-1].nodes.append(current_node)
                break
        else:
            raise _error(index, raw, "unrecognised line")
    if not header_seen:
        raise TopologyError("describe() text is empty: expected 'Topologies:' followed by sub-topology blocks")
    return topology_name, blocks


def _build_node(raw: _RawNode, known: set[str]) -> Node:
    if raw.kind == "Source":
        if raw.pred is not None:
            raise _error(raw.pred_line, raw.pred, f"source {raw.name} cannot have predecessors")
        if raw.succ is None:
            raise _error(raw.line, raw.name, f"source {raw.name} has no '-->' line")
        topics, pattern = _parse_topic_spec(raw.detail)
        return Source(raw.name, topics, pattern, _resolve_names(raw.succ, known, raw.succ_line))
    if raw.kind == "Processor":
        if raw.succ is None or raw.pred is None:
            raise _error(raw.line, raw.name, f"processor {raw.name} needs both a '-->' and a '<--' line")
        return Processor(
            raw.name,
            _parse_store_list(raw.detail),
            _resolve_names(raw.succ, known, raw.succ_line),
            _resolve_names(raw.pred, known, raw.pred_line),
        )
    if raw.succ is not None:
        raise _error(raw.succ_line, raw.succ, f"sink {raw.name} cannot have successors")
    if raw.pred is None:
        raise _error(raw.line, raw.name, f"sink {raw.name} has no '<--' line")
    preds = _resolve_names(raw.pred, known, raw.pred_line)
    if raw.detail.startswith("\x00extractor:"):
        return Sink(raw.name, None, raw.detail[len("\x00extractor:") :], preds)
    if not raw.detail:
        raise _error(raw.line, raw.name, f"sink {raw.name} has an empty topic")
    return Sink(raw.name, raw.detail, None, preds)


def _check_block_edges(block: _RawBlock, nodes: Sequence[Node]) -> None:
    by_name = {n.name: n for n in nodes}
    for node in nodes:
        for succ in _successors(node):
            if succ not in by_name:
                raise TopologyError(
                    f"describe() text, sub-topology {block.id}: {node.name} --> {succ} points outside its block"
                )
            if node.name not in _predecessors(by_name[succ]):
                raise TopologyError(
                    f"describe() text, sub-topology {block.id}: {node.name} --> {succ} has no mirror "
                    f"'<-- {node.name}' on {succ}"
                )
        for pred in _predecessors(node):
            if pred not in by_name:
                raise TopologyError(
                    f"describe() text, sub-topology {block.id}: {node.name} <-- {pred} points outside its block"
                )
            if node.name not in _successors(by_name[pred]):
                raise TopologyError(
                    f"describe() text, sub-topology {block.id}: {node.name} <-- {pred} has no mirror "
                    f"'--> {node.name}' on {pred}"
                )


def parse_description(text: str) -> TopologyDescription:
    """Parse ``Topology#describe().toString()`` (topology.md §7.2/§7.3) into a :class:`TopologyDescription`.

    Raises ``TopologyError`` naming the line for anything malformed: unknown line shapes, a node outside a block,
    unknown or cross-block neighbour names, unmirrored edges, duplicate node names or ids, a global block that is
    not exactly one source plus one processor with one store.
    """
    topology_name, blocks = _read_blocks(text)
    seen: dict[str, int] = {}
    for block in blocks:
        if not block.nodes:
            raise _error(block.line, f"Sub-topology: {block.id}", "sub-topology block without nodes")
        for raw in block.nodes:
            if raw.name in seen:
                raise _error(raw.line, raw.name, f"duplicate node name (first declared on line {seen[raw.name]})")
            seen[raw.name] = raw.line
    ids: dict[int, int] = {}
    for block in blocks:
        if block.id in ids:
            raise _error(block.line, f"Sub-topology: {block.id}", f"duplicate sub-topology id (line {ids[block.id]})")
        ids[block.id] = block.line
    known = set(seen)
    subtopologies: list[Subtopology] = []
    global_stores: list[GlobalStore] = []
    for block in blocks:
        nodes = [_build_node(raw, known) for raw in block.nodes]
        _check_block_edges(block, nodes)
        if block.is_global:
            sources = [n for n in nodes if isinstance(n, Source)]
            processors = [n for n in nodes if isinstance(n, Processor)]
            if len(nodes) != 2 or len(sources) != 1 or len(processors) != 1:
                raise _error(
                    block.line, f"Sub-topology: {block.id}", "a global block needs one source and one processor"
                )
            if len(processors[0].stores) != 1 or len(sources[0].topics) != 1:
                raise _error(
                    block.line, f"Sub-topology: {block.id}", "a global block needs one topic and exactly one store"
                )
            global_stores.append(GlobalStore(block.id, sources[0], processors[0]))
        else:
            subtopologies.append(Subtopology(block.id, tuple(nodes)))
    return TopologyDescription(tuple(subtopologies), tuple(global_stores), topology_name)
