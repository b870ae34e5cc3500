"""A streams group's topology record (``StreamsGroupTopologyValue`` v0) and its comparison with the user's topology.

The record's bytes are those Kafka 4.2.2's own generated ``StreamsGroupTopologyValue`` writes
(``MessageUtil.toVersionPrefixedBytes``) for a re-key → count application ``app``: sub-topology 0 reads ``words`` and
writes ``app-by-word-repartition``, sub-topology 1 reads it, logs the store ``counts`` and has a copartition group of
that one topic. ``JOIN_RECORD`` is a stream-table join's (``dsl_programs.stream_table_join``): sub-topology 0 reads
``orders`` and ``customers`` (in that order), logs the table's store and copartitions both topics (indexes 1, 0)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streamproc.dsl import Materialized, StreamsBuilder
from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import parse_description
from streamproc.kafka.group_metadata import GroupMetadataUnavailable
from streamproc.kafka.streams_group_records import parse_topology_value
from streamproc.plan.cluster_snapshot import GroupState
from streamproc.plan.internal_topics import (
    ChangelogKind,
    InternalTopicSettings,
    NewInternalTopic,
    StoreKind,
    internal_topics_to_create,
)
from streamproc.plan.preconditions import check_streams_group_internal_topics, check_streams_group_topology
from streamproc.plan.refusals import StreamsTopologyDiffers
from streamproc.plan.streams_group_topology import (
    DeclaredTopology,
    StreamsGroupSubtopology,
    StreamsGroupTopicInfo,
    StreamsGroupTopology,
    declared_topology,
    expected_subtopologies,
    internal_topics_difference,
    topology_difference,
)
from streamproc_dev.conformance.dsl_programs import stream_table_join, strings

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
                                frozenset({REPARTITION}), frozenset({frozenset({REPARTITION})})),
    ),
    (
        StreamsGroupTopicInfo(REPARTITION, 2, 1, (("cleanup.policy", "delete"),)),
        StreamsGroupTopicInfo(CHANGELOG, 0, 1, (("cleanup.policy", "compact"),)),
    ),
)  # fmt: skip
JOIN_RECORD = bytes.fromhex(
    "00000000000002023003076f72646572730a637573746f6d65727301022f6170702d637573746f6d6572732d53544154452d53544f5245"
    "2d303030303030303030302d6368616e67656c6f67000000000001020f636c65616e75702e706f6c69637908636f6d7061637400000101"
    "0203000100000101000000"
)
JOIN_CHANGELOG = "app-customers-STATE-STORE-0000000000-changelog"
JOIN = StreamsGroupTopology(0, (StreamsGroupSubtopology(
    "0", frozenset({"orders", "customers"}), frozenset(), frozenset({JOIN_CHANGELOG}), frozenset(), frozenset(),
    frozenset({frozenset({"orders", "customers"})})),),
    (StreamsGroupTopicInfo(JOIN_CHANGELOG, 0, 1, (("cleanup.policy", "compact"),)),))  # fmt: skip


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
    """A copartition group of one topic constrains nothing: the text's structure derives none, and none is compared."""
    assert expected_subtopologies(_analysis()) == tuple(
        replace(sub, copartition_groups=frozenset()) for sub in HELD.subtopologies
    )
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


def _join_analysis(describe: str | None = None) -> TopologyAnalysis:
    text = describe if describe is not None else str(stream_table_join().describe())
    return analyze(parse_description(text), "app", {"orders": 2, "customers": 2, "enriched-orders": 2})


def test_copartition_groups_are_read_by_their_indexes_and_compared() -> None:
    assert parse_topology_value(JOIN_RECORD) == JOIN
    assert topology_difference(JOIN, _join_analysis()) is None  # the text's structure derives the join's group
    module = declared_topology(stream_table_join(), "app")
    assert module == DeclaredTopology({0: frozenset({JOIN_CHANGELOG})}, (frozenset({"customers", "orders"}),))
    assert topology_difference(JOIN, _join_analysis(), module) is None
    apart = replace(JOIN, subtopologies=(replace(JOIN.subtopologies[0], copartition_groups=frozenset()),))
    assert topology_difference(apart, _join_analysis(), module) == (
        "sub-topology 0: the application has copartition groups [], the Python topology [[customers, orders]]"
    )
    # from text alone, a derived group the application lacks is no difference (Processor-API stores over-derive) ...
    assert topology_difference(apart, _join_analysis()) is None
    # ... but a group the application has and the text does not derive is
    unjoined = str(stream_table_join().describe()).replace(
        "(stores: [customers-STATE-STORE-0000000000])\n      --> KSTREAM-SINK", "(stores: [])\n      --> KSTREAM-SINK"
    )
    assert topology_difference(JOIN, _join_analysis(unjoined)) == (
        "sub-topology 0: the application has copartition groups [[customers, orders]], the Python topology []"
    )


def test_a_copartition_index_outside_the_subtopologys_topics_is_unavailable_not_guessed() -> None:
    group = bytes.fromhex("0300010000")
    assert JOIN_RECORD.count(group) == 1
    with pytest.raises(GroupMetadataUnavailable, match="copartition index 5 is outside its 2 topics"):
        parse_topology_value(JOIN_RECORD.replace(group, bytes.fromhex("0300050000")))


def test_a_module_knows_its_logged_stores_so_a_changelog_the_group_lacks_differs() -> None:
    """describe() text cannot tell a store with logging disabled; a module can, so with it both directions count."""
    unlogged = replace(JOIN, subtopologies=(replace(JOIN.subtopologies[0], changelog_topics=frozenset()),))
    assert topology_difference(unlogged, _join_analysis()) is None
    assert topology_difference(unlogged, _join_analysis(), declared_topology(stream_table_join(), "app")) == (
        f"sub-topology 0: the application has changelog topics [], the Python topology [{JOIN_CHANGELOG}] (the "
        f"application logs no store to [{JOIN_CHANGELOG}])"
    )
    not_logged = DeclaredTopology({0: frozenset()}, (frozenset({"customers", "orders"}),))
    # a module says so: a store with logging disabled has no changelog
    b = StreamsBuilder()
    b.stream("words", strings()).group_by_key().count(materialized=Materialized.as_("counts").with_logging_disabled())
    assert declared_topology(b.build(), "app") == DeclaredTopology({0: frozenset()}, ())
    assert topology_difference(unlogged, _join_analysis(), not_logged) is None
    assert topology_difference(JOIN, _join_analysis(), not_logged) == (
        f"sub-topology 0: the application has changelog topics [{JOIN_CHANGELOG}], the Python topology [] (no store "
        f"logs to [{JOIN_CHANGELOG}])"
    )


def test_source_patterns_are_compared_and_a_pattern_source_named() -> None:
    """Kafka Streams 4.2 refuses a pattern source with group.protocol=streams; a record with one is compared as is."""
    pattern = DESCRIBE.replace("(topics: [words])", "(topics: wor.*)")
    assert topology_difference(HELD, _analysis(pattern)) == (
        "sub-topology 0: the application has source topic patterns [], the Python topology [wor.*] (Kafka Streams "
        "4.2 cannot subscribe to a pattern with group.protocol=streams)"
    )
    by_pattern = replace(HELD, subtopologies=(
        replace(HELD.subtopologies[0], source_topics=frozenset(), source_topic_regex=frozenset({"wor.*"})),
        HELD.subtopologies[1]))  # fmt: skip
    assert topology_difference(by_pattern, _analysis(pattern)) is None
    assert topology_difference(by_pattern, _analysis()) == (
        "sub-topology 0: the application has source topic patterns [wor.*], the Python topology []"
    )


def test_a_partition_count_the_application_fixed_must_be_the_plans() -> None:
    """The record's repartition topic has 2 partitions fixed (``Repartitioned#withNumberOfPartitions``): the broker
    creates and checks it with 2, so a plan whose analysis gives it 3 (its writer reads 3 partitions) is refused."""
    assert internal_topics_difference(HELD, _analysis().internal_topics) is None
    three = analyze(parse_description(DESCRIBE), "app", {"words": 3, REPARTITION: 3})
    assert internal_topics_difference(HELD, three.internal_topics) == (
        f"internal topic {REPARTITION}: the application declares 2 partition(s) (Repartitioned#withNumberOfPartitions:"
        " the broker creates and checks the topic with 2), the plan 3"
    )
    group = GroupState("streams", "Empty", (), epoch=3, topology=HELD)
    check_streams_group_internal_topics(group, _analysis(), "app")
    with pytest.raises(StreamsTopologyDiffers) as refused:
        check_streams_group_internal_topics(group, three, "app")
    assert str(refused.value).startswith(
        "streams group 'app' (topology epoch 0) declares its internal topics otherwise than the plan: internal topic "
        f"{REPARTITION}: the application declares 2 partition(s)"
    )
    check_streams_group_internal_topics(GroupState("classic", "Empty", ()), three, "app")  # no record: no comparison


def test_a_topic_the_plan_creates_must_be_created_as_the_group_declares_it() -> None:
    """A first run's ``--create-internal-topics`` of a topic the group declares (the broker would create it at the
    application's next heartbeat): replication factor and configs must be the declared ones, compared exactly."""
    analysis = analyze(parse_description(DESCRIBE), "app", {"words": 2, REPARTITION: 2}, require_internal_topics=False)
    real = replace(HELD, internal_topics=(HELD.internal_topics[0], StreamsGroupTopicInfo(
        CHANGELOG, 0, 1, (("cleanup.policy", "compact"), ("message.timestamp.type", "CreateTime")))))  # fmt: skip

    def created(kind: StoreKind, replication: int = 1) -> tuple[NewInternalTopic, ...]:
        settings = InternalTopicSettings({"counts": kind}, replication_factor=replication)
        return internal_topics_to_create(analysis, {"words", REPARTITION}, settings)

    key_value = StoreKind(ChangelogKind.KEY_VALUE)
    assert internal_topics_difference(real, analysis.internal_topics, created(key_value)) is None
    assert internal_topics_difference(real, analysis.internal_topics, created(key_value, -1)) == (
        f"internal topic {CHANGELOG}: the plan would create it with replication factor the broker's default, the "
        "application declares 1 (give replication.factor=1)"
    )
    window = StoreKind(ChangelogKind.WINDOW, 60_000)
    assert internal_topics_difference(real, analysis.internal_topics, created(window)) == (
        f"internal topic {CHANGELOG}: the plan would create it with cleanup.policy=compact,delete, the application "
        "declares cleanup.policy=compact"
    )
    assert internal_topics_difference(HELD, analysis.internal_topics, created(key_value)) == (
        f"internal topic {CHANGELOG}: the plan would create it with message.timestamp.type=CreateTime, the "
        "application declares no message.timestamp.type"
    )
