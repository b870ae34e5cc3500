"""streamproc's describe() parser and topology analysis on real Kafka Streams 4.2.2 describe() output.

``conformance/golden/<name>.txt`` is ``Topology#describe()`` of topologies built with Kafka's own DSL and Processor
API (``conformance/.../GoldenTopologies.java``, ``java -jar streamproc-oracle.jar golden conformance/golden``);
``copartition-groups.json`` holds Kafka's ``InternalTopologyBuilder#copartitionGroups()`` for each. The files are
checked in, so these tests need neither Java nor a broker; ``test_golden_files_are_current`` rebuilds them with
the oracle and fails when they drifted.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import format_description, parse_description
from streamproc.errors import NotCopartitioned
from streamproc_dev.conformance.oracle import CONFORMANCE_DIR, ensure_oracle_jar

GOLDEN_DIR = CONFORMANCE_DIR / "golden"
APPLICATION_ID = "golden-app"  # GoldenTopologies.APPLICATION_ID
KAFKA_GROUPS: dict[str, list[list[str]]] = json.loads((GOLDEN_DIR / "copartition-groups.json").read_text("utf-8"))
NAMES = sorted(KAFKA_GROUPS)
REPARTITION = f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition"

# Plausible clusters: every user topic with its count; the repartition topic exists as a batch plan requires.
PARTITION_COUNTS = {
    "input": 2,
    "left": 3,
    "right": 3,
    "words": 4,
    "word-counts": 4,
    "clicks": 2,
    "click-counts": 2,
    "orders": 6,
    "order-totals": 6,
    "customers": 6,
    "enriched-orders": 6,
    "impressions": 2,
    "impression-clicks": 2,
    "events": 3,
    "punctuations": 3,
    REPARTITION: 6,
}

# What Kafka Streams 4.2 does with each topology: sub-topologies (id -> sorted source topics, full names), the
# repartition topics and changelog topics it creates (full name -> partitions), and its task count.
EXPECTED: dict[str, dict[str, object]] = {
    "passthrough-one-topic": {"sources": {0: ("input",)}, "internal": {}, "tasks": 2},
    "passthrough-two-topics": {"sources": {0: ("left", "right")}, "internal": {}, "tasks": 3},
    "count": {"sources": {0: ("words",)}, "internal": {f"{APPLICATION_ID}-counts-changelog": 4}, "tasks": 4},
    "windowed-count-tumbling": {
        "sources": {0: ("clicks",)},
        "internal": {f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog": 2},
        "tasks": 2,
    },
    "windowed-count-hopping": {
        "sources": {0: ("clicks",)},
        "internal": {f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog": 2},
        "tasks": 2,
    },
    "repartition-aggregate": {
        "sources": {0: ("orders",), 1: (REPARTITION,)},
        "internal": {REPARTITION: 6, f"{APPLICATION_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog": 6},
        "tasks": 12,
    },
    "stream-table-join": {
        "sources": {0: ("customers", "orders")},
        "internal": {f"{APPLICATION_ID}-customers-STATE-STORE-0000000000-changelog": 6},
        "tasks": 6,
    },
    "stream-stream-join": {
        "sources": {0: ("clicks", "impressions")},
        "internal": {
            f"{APPLICATION_ID}-KSTREAM-JOINOTHER-0000000005-store-changelog": 2,
            f"{APPLICATION_ID}-KSTREAM-JOINTHIS-0000000004-store-changelog": 2,
        },
        "tasks": 2,
    },
    "punctuation": {"sources": {0: ("events",)}, "internal": {f"{APPLICATION_ID}-last-seen-changelog": 3}, "tasks": 3},
}


def _text(name: str) -> str:
    return (GOLDEN_DIR / f"{name}.txt").read_text("utf-8")


def _analysis(name: str) -> TopologyAnalysis:
    return analyze(parse_description(_text(name)), APPLICATION_ID, PARTITION_COUNTS)


def test_every_golden_file_has_an_expectation() -> None:
    assert sorted(p.stem for p in GOLDEN_DIR.glob("*.txt")) == NAMES == sorted(EXPECTED)


@pytest.mark.parametrize("name", NAMES)
def test_describe_round_trips(name: str) -> None:
    parsed = parse_description(_text(name))
    again = parse_description(format_description(parsed))
    assert again.normalized() == parsed.normalized()
    # the text Kafka printed and streamproc's formatting of it carry the same nodes and edges
    assert sorted(n.name for s in parsed.subtopologies for n in s.nodes) == sorted(
        n.name for s in again.subtopologies for n in s.nodes
    )


@pytest.mark.parametrize("name", NAMES)
def test_subtopologies_internal_topics_and_tasks(name: str) -> None:
    analysis = _analysis(name)
    expected = EXPECTED[name]
    assert {s.id: s.source_topics for s in analysis.subtopologies} == expected["sources"]
    assert dict(analysis.internal_topics) == expected["internal"]
    assert len(analysis.tasks) == expected["tasks"]


def test_repartition_topic_links_two_stages() -> None:
    analysis = _analysis("repartition-aggregate")
    assert analysis.subtopology(0).repartition_sink_topics == (REPARTITION,)
    assert analysis.subtopology(1).repartition_source_topics == (REPARTITION,)
    assert analysis.stages == ((0,), (1,))


@pytest.mark.parametrize("name", [n for n in NAMES if n != "passthrough-two-topics"])
def test_copartition_groups_equal_kafkas(name: str) -> None:
    assert sorted(list(g) for g in _analysis(name).copartition_groups) == KAFKA_GROUPS[name]


def test_multi_topic_source_is_not_a_copartition_group() -> None:
    assert [list(g) for g in _analysis("passthrough-two-topics").copartition_groups] == KAFKA_GROUPS[
        "passthrough-two-topics"
    ]


def test_join_of_user_topics_with_unequal_counts_runs_as_kafka_streams_runs_it() -> None:
    """No repartition topic, so Kafka Streams checks no co-partitioning (own t04b, live): tasks, plus a warning.

    Declared as a copartition group, the same topics are refused with Kafka's message.
    """
    counts = {**PARTITION_COUNTS, "customers": PARTITION_COUNTS["orders"] + 1}
    analysis = analyze(parse_description(_text("stream-table-join")), APPLICATION_ID, counts)
    assert len(analysis.tasks) == counts["customers"]
    assert any("may never meet" in w for w in analysis.warnings)
    with pytest.raises(NotCopartitioned, match="customers"):
        analyze(
            parse_description(_text("stream-table-join")),
            APPLICATION_ID,
            counts,
            copartition_groups=[["customers", "orders"]],
        )


def test_golden_files_are_current(tmp_path: Path) -> None:
    """Regenerating with Kafka Streams 4.2.2 gives the checked-in files byte for byte."""
    # Java 17 and Maven are on every machine of this project: a missing one is a failure, never a skip.
    assert shutil.which("java") is not None, "java is not on PATH; install a JDK 17"
    jar = ensure_oracle_jar()
    proc = subprocess.run(
        ["java", "-jar", str(jar), "golden", str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in sorted(GOLDEN_DIR.iterdir()):
        assert (tmp_path / path.name).read_text("utf-8") == path.read_text("utf-8"), path.name
