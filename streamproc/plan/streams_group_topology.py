"""The topology a KIP-1071 streams group holds, and its one comparison with the user's topology.

A streams group's coordinator keeps the topology its members declared (``StreamsGroupTopology`` record, Kafka 4.2):
per sub-topology, the topics it reads, the repartition topics it writes and reads, and its stores' changelogs. A plan
from such a group hands its offsets and state to that application, so a topology whose sub-topologies read, write or
log other topics is not the application's: its tasks would not be the group's, its stores not the changelogs' the
application restores. Kafka Streams builds the record from ``InternalTopologyBuilder``'s topics per sub-topology
(``StreamThread``: the sources without the repartition topics, the sinks that are some sub-topology's repartition
source, the changelogs of logged stores, a table source's own topic when the store reuses it), which is what
:func:`expected_subtopologies` derives from the analysis.

A store whose changelog the user's topology has and the group's does not is no difference: ``describe()`` does not
say whether a store is logged, and a store with logging disabled has no changelog in the group. Source patterns are
not compared: Kafka Streams 4.2's ``StreamThread`` declares a sub-topology's sources as topics only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from streamproc.engine.topology_analysis import TopologyAnalysis


@dataclass(frozen=True, slots=True)
class StreamsGroupSubtopology:
    """One sub-topology as the group's record has it (``id``: Kafka Streams' sub-topology number, as text)."""

    id: str
    source_topics: frozenset[str]
    source_topic_regex: frozenset[str]
    changelog_topics: frozenset[str]
    repartition_sink_topics: frozenset[str]
    repartition_source_topics: frozenset[str]


@dataclass(frozen=True, slots=True)
class StreamsGroupTopology:
    """The group's topology: its epoch (``TOPOLOGY-EPOCH`` of ``kafka-streams-groups.sh``) and sub-topologies."""

    epoch: int
    subtopologies: tuple[StreamsGroupSubtopology, ...]


def expected_subtopologies(analysis: TopologyAnalysis) -> tuple[StreamsGroupSubtopology, ...]:
    """The sub-topologies an application with ``analysis``'s topology declares to its streams group."""
    repartition_sources = {t for sub in analysis.subtopologies for t in sub.repartition_source_topics}
    return tuple(
        StreamsGroupSubtopology(
            id=str(sub.id),
            source_topics=frozenset(t for t in sub.source_topics if t not in sub.repartition_source_topics),
            source_topic_regex=frozenset(),
            changelog_topics=frozenset(s.changelog_topic for s in sub.stores),
            repartition_sink_topics=frozenset(t for t in sub.repartition_sink_topics if t in repartition_sources),
            repartition_source_topics=frozenset(sub.repartition_source_topics),
        )
        for sub in sorted(analysis.subtopologies, key=lambda s: s.id)
    )


def topology_difference(group: StreamsGroupTopology, analysis: TopologyAnalysis) -> str | None:
    """``None`` when the user's topology declares what the group holds, else the first difference, named as the
    describe() differences are (the application has …, the Python topology …)."""
    held = {sub.id: sub for sub in group.subtopologies}
    mine = {sub.id: sub for sub in expected_subtopologies(analysis)}
    if held.keys() != mine.keys():
        return (
            f"the application has sub-topologies {_names(held, numeric=True)}, the Python topology "
            f"{_names(mine, numeric=True)}"
        )
    for sub_id in sorted(held, key=_order):
        app, python = held[sub_id], mine[sub_id]
        for what, left, right in (
            ("source topics", app.source_topics, python.source_topics),
            ("repartition sink topics", app.repartition_sink_topics, python.repartition_sink_topics),
            ("repartition source topics", app.repartition_source_topics, python.repartition_source_topics),
        ):
            if left != right:
                return (
                    f"sub-topology {sub_id}: the application has {what} {_names(left)}, the Python topology "
                    f"{_names(right)}"
                )
        unknown = app.changelog_topics - python.changelog_topics
        if unknown:
            return (
                f"sub-topology {sub_id}: the application has changelog topics {_names(app.changelog_topics)}, the "
                f"Python topology {_names(python.changelog_topics)} (no store logs to {_names(unknown)})"
            )
    return None


def _order(sub_id: str) -> tuple[int, str]:
    return (int(sub_id), "") if sub_id.isdigit() else (1 << 30, sub_id)


def _names(items: Iterable[str], *, numeric: bool = False) -> str:
    names = sorted(items, key=_order) if numeric else sorted(items)
    return "[" + ", ".join(names) + "]"
