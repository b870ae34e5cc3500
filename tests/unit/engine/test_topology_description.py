"""describe() text: Kafka's exact layout, structural round trips, tolerated variants and line-naming errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamproc.engine.topology import Topology
from streamproc.engine.topology_description import (
    GlobalStore,
    Processor,
    Sink,
    Source,
    Subtopology,
    TopologyDescription,
    format_description,
    parse_description,
)
from streamproc.errors import TopologyError
from tests.conftest import SCENARIOS_DIR

SCENARIO_FILES = sorted((SCENARIOS_DIR / "topology").glob("*.json"))


def _describe_text(path: Path) -> str:
    text: str = json.loads(path.read_text(encoding="utf-8"))["input"]["describe"]
    return text


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_format_parse_round_trip_on_scenarios(path: Path) -> None:
    parsed = parse_description(_describe_text(path))
    assert parse_description(format_description(parsed)).normalized() == parsed.normalized()


@pytest.mark.parametrize(
    "stem",
    ["t01-filter-to", "t03-selectkey-groupbykey-aggregate", "t05-rekey-stream-table-join", "t08-global-table-join"],
)
def test_format_is_byte_identical_where_kafka_order_is_deterministic(stem: str) -> None:
    text = _describe_text(SCENARIOS_DIR / "topology" / f"{stem}.json")
    assert format_description(parse_description(text)) == text


def _noop() -> object:
    return object()


def _builder_topology() -> Topology:
    topology = Topology()
    topology.add_source("my source, with comma", "in-a", "in-b")
    topology.add_source("pattern (src)", pattern="events-.*")
    topology.add_processor("proc (1)", _noop, "my source, with comma", "pattern (src)")
    topology.add_state_store(type("B", (), {"name": "store-x"})(), "proc (1)")
    topology.add_sink("out", "output", "proc (1)")
    topology.add_sink("dyn", lambda k, v, ctx: "x", "proc (1)")
    return topology


def test_round_trip_on_builder_output_with_awkward_names() -> None:
    described = _builder_topology().describe()
    text = format_description(described)
    assert "Source: pattern (src) (topics: events-.*)" in text
    assert "Source: my source, with comma (topics: [in-a, in-b])" in text
    reparsed = parse_description(text)
    assert reparsed.normalized() == described.normalized()
    proc = reparsed.subtopologies[0].node("proc (1)")
    assert isinstance(proc, Processor)
    assert sorted(proc.predecessors) == ["my source, with comma", "pattern (src)"]
    dyn = reparsed.subtopologies[0].node("dyn")
    assert isinstance(dyn, Sink) and dyn.topic is None and dyn.extractor is not None


def test_exact_layout_of_a_global_store_then_subtopology() -> None:
    description = TopologyDescription(
        (Subtopology(1, (Source("s", ("in",), None, ("sink",)), Sink("sink", "out", None, ("s",)))),),
        (GlobalStore(0, Source("g", ("glob",), None, ("gp",)), Processor("gp", ("gs",), (), ("g",))),),
    )
    assert format_description(description) == (
        "Topologies:\n"
        "   Sub-topology: 0 for global store (will not generate tasks)\n"
        "    Source: g (topics: [glob])\n      --> gp\n"
        "    Processor: gp (stores: [gs])\n      --> none\n      <-- g\n"
        "  Sub-topology: 1\n"
        "    Source: s (topics: [in])\n      --> sink\n"
        "    Sink: sink (topic: out)\n      <-- s\n\n"
    )


def test_named_topology_header() -> None:
    text = "Topology: my-topology:\n   Sub-topology: 0\n    Source: s (topics: [a])\n      --> none\n\n"
    parsed = parse_description(text)
    assert parsed.topology_name == "my-topology"
    assert format_description(parsed) == text


def test_tolerant_variants_parse_to_the_same_structure() -> None:
    canonical = (
        "Topologies:\n   Sub-topology: 0\n    Source: s (topics: [a])\n      --> p\n"
        "    Processor: p (stores: [])\n      --> none\n      <-- s\n\n"
    )
    variant = (
        "\r\n\r\nTopologies:\r\nSub-topology: 0\r\n\r\n\tSource: s (topics: [a])   \r\n--> p\r\n"
        "Processor: p (stores: [])\r\n  <-- s\r\n  --> none\r\n"
    )
    assert parse_description(variant).normalized() == parse_description(canonical).normalized()


def test_regex_that_is_not_a_topic_list_is_a_pattern() -> None:
    text = "Topologies:\n   Sub-topology: 0\n    Source: s (topics: [a-z]+\\.in)\n      --> none\n\n"
    source = parse_description(text).subtopologies[0].node("s")
    assert isinstance(source, Source) and source.pattern == "[a-z]+\\.in" and source.topics == ()


BAD = [
    ("", "empty"),
    ("Sub-topology: 0\n", "line 1"),
    ("Topologies:\n  Source: s (topics: [a])\n    --> none\n", "line 2: node before any"),
    ("Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n  Wat: x\n", "line 5: unrecognised line"),
    ("Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> p\n", "line 4: unknown node name"),
    ("Topologies:\n Sub-topology: 0\n  Source: s topics [a]\n   --> none\n", "line 3: malformed Source line"),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n Sub-topology: 1\n"
        "  Source: s (topics: [b])\n   --> none\n",
        "line 6: duplicate node name",
    ),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n Sub-topology: 0\n"
        "  Source: t (topics: [b])\n   --> none\n",
        "line 5: duplicate sub-topology id",
    ),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> p\n  Processor: p (stores: [])\n"
        "   --> none\n   <-- none\n",
        "no mirror",
    ),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n   <-- none\n",
        "cannot have predecessors",
    ),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> k\n  Sink: k (topic: o)\n   --> none\n"
        "   <-- s\n",
        "cannot have successors",
    ),
    (
        "Topologies:\n Sub-topology: 0 for global store (will not generate tasks)\n  Source: g (topics: [a])\n"
        "   --> p\n  Processor: p (stores: [])\n   --> none\n   <-- g\n",
        "exactly one store",
    ),
    (
        "Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n Sub-topology: 1\n"
        "  Source: t (topics: [b])\n   --> s\n",
        "points outside its block",
    ),
    ("Topologies:\n Sub-topology: 0\n  Source: s (topics: [a])\n   --> none\n   --> none\n", "second '-->'"),
]


@pytest.mark.parametrize(("text", "problem"), BAD, ids=[p for _, p in BAD])
def test_malformed_text_is_a_specific_error(text: str, problem: str) -> None:
    with pytest.raises(TopologyError, match="describe|ids") as info:
        parse_description(text)
    assert problem in str(info.value)


def test_model_rejects_inconsistent_nodes() -> None:
    with pytest.raises(TopologyError):
        Source("s", ("a",), "a.*")
    with pytest.raises(TopologyError):
        Sink("k", None, None)
