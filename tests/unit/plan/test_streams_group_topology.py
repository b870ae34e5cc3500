"""A streams group's topology record (``StreamsGroupTopologyValue`` v0) and its comparison with the user's topology.

The record's bytes are those Kafka 4.2.2's own generated ``StreamsGroupTopologyValue`` writes
(``MessageUtil.toVersionPrefixedBytes``) for a re-key → count application ``app``: sub-topology 0 reads ``words`` and
writes ``app-by-word-repartition``, sub-topology 1 reads it and logs the store ``counts``."""

from __future__ import annotations

import pytest

from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import parse_description
from streamproc.kafka.group_metadata import GroupMetadataUnavailable
from streamproc.kafka.streams_group_records import parse_topology_value
from streamproc.plan.cluster_snapshot import GroupState
from streamproc.plan.preconditions import check_streams_group_topology
from streamproc.plan.refusals import StreamsTopologyDiffers
from streamproc.plan.streams_group_topology import (
    StreamsGroupSubtopology,
    StreamsGroupTopology,
    expected_subtopologies,
    topology_difference,
)

RECORD = bytes.fromhex(
    "0000000000000302300206776f726473010102186170702d62792d776f72642d7265706172746974696f6e0101000231010102156170"
    "702d636f756e74732d6368616e67656c6f67000000000001020f636c65616e75702e706f6c69637908636f6d70616374000001021861"
    "70702d62792d776f72642d7265706172746974696f6e000000020001020f636c65616e75702e706f6c6963790764656c657465000002"
    "0101020000000000"
)
REPARTITION, CHANGELOG = "app-by-word-repartition", "app-counts-changelog"
DESCRIBE = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [words])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> by-word-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: by-word-repartition-filter (stores: [])
      --> by-word-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: by-word-repartition-sink (topic: by-word-repartition)
      <-- by-word-repartition-filter

  Sub-topology: 1
    Source: by-word-repartition-source (topics: [by-word-repartition])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])
      --> none
      <-- by-word-repartition-source

"""
HELD = StreamsGroupTopology(
    0,
    (
        StreamsGroupSubtopology("0", frozenset({"words"}), frozenset(), frozenset(), frozenset({REPARTITION}),
                                frozenset()),
        StreamsGroupSubtopology("1", frozenset(), frozenset(), frozenset({CHANGELOG}), frozenset(),
                                frozenset({REPARTITION})),
    ),
)  # fmt: skip


def _analysis(describe: str = DESCRIBE) -> TopologyAnalysis:
    return analyze(parse_description(describe), "app", {"words": 2, "lines": 2, REPARTITION: 2})


def test_the_record_kafka_writes_is_read_as_its_subtopologies() -> None:
    assert parse_topology_value(RECORD) == HELD


def test_a_topology_record_version_it_does_not_know_is_unavailable_not_guessed() -> None:
    with pytest.raises(GroupMetadataUnavailable, match="StreamsGroupTopologyValue version 1 is not 0"):
        parse_topology_value(b"\x00\x01" + RECORD[2:])
    with pytest.raises(GroupMetadataUnavailable, match="StreamsGroupTopologyValue cannot be read"):
        parse_topology_value(RECORD[:-9])


def test_the_users_topology_declares_what_the_group_holds() -> None:
    assert expected_subtopologies(_analysis()) == HELD.subtopologies
    assert topology_difference(HELD, _analysis()) is None
    check_streams_group_topology(GroupState("streams", "Empty", (), epoch=3, topology=HELD), _analysis(), "app")


def test_a_difference_is_named_like_a_describe_difference() -> None:
    renamed = _analysis(DESCRIBE.replace("stores: [counts]", "stores: [totals]"))
    assert topology_difference(HELD, renamed) == (
        f"sub-topology 1: the application has changelog topics [{CHANGELOG}], the Python topology "
        f"[app-totals-changelog] (no store logs to [{CHANGELOG}])"
    )
    other_input = _analysis(DESCRIBE.replace("topics: [words]", "topics: [lines]"))
    assert topology_difference(HELD, other_input) == (
        "sub-topology 0: the application has source topics [words], the Python topology [lines]"
    )
    one = StreamsGroupTopology(0, HELD.subtopologies[:1])
    assert topology_difference(one, _analysis()) == (
        "the application has sub-topologies [0], the Python topology [0, 1]"
    )
    with pytest.raises(StreamsTopologyDiffers) as refused:
        check_streams_group_topology(GroupState("streams", "Empty", (), epoch=3, topology=one), _analysis(), "app")
    assert str(refused.value).startswith(
        "the topology of streams group 'app' (topology epoch 0) is not the Python topology's: the application has "
        "sub-topologies [0], the Python topology [0, 1]; plan with the application's topology"
    )


def test_a_store_the_group_does_not_log_is_no_difference() -> None:
    """describe() does not say whether a store is logged: one with logging disabled has no changelog in the group."""
    unlogged = StreamsGroupTopology(0, (HELD.subtopologies[0], StreamsGroupSubtopology(
        "1", frozenset(), frozenset(), frozenset(), frozenset(), frozenset({REPARTITION}))))  # fmt: skip
    assert topology_difference(unlogged, _analysis()) is None


def test_a_classic_group_or_one_without_a_topology_record_is_not_compared() -> None:
    check_streams_group_topology(None, _analysis(), "app")
    check_streams_group_topology(GroupState("classic", "Empty", ()), _analysis(), "app")
    check_streams_group_topology(GroupState("streams", "Empty", (), epoch=1), _analysis(), "app")
