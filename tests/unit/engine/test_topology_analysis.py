"""Topology analysis: internal topics, repartition counts, copartitioning, tasks, patterns, stages and refusals."""

from __future__ import annotations

import pytest

from streamproc.engine.internal_topics import is_internal_topic_name, store_changelog_topic
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import StoreSpec, Topology
from streamproc.engine.topology_analysis import analyze
from streamproc.engine.topology_description import TopologyDescription, parse_description
from streamproc.errors import MissingTopic, NotCopartitioned, PartitionCountChanged, TopologyError


def _noop() -> object:
    return object()


def _rekey_join(left: str = "orders", table: str = "customers") -> TopologyDescription:
    """t11's shape: a table declared first, then orders -> selectKey -> repartition -> join with the table."""
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000002", table)
    t.add_processor("KTABLE-SOURCE-0000000003", _noop, "KSTREAM-SOURCE-0000000002")
    t.add_state_store(StoreSpec("customers-STATE-STORE-0000000001"), "KTABLE-SOURCE-0000000003")
    t.add_source("KSTREAM-SOURCE-0000000000", left)
    t.add_processor("KSTREAM-KEY-SELECT-0000000004", _noop, "KSTREAM-SOURCE-0000000000")
    t.add_processor("KSTREAM-FILTER-0000000006", _noop, "KSTREAM-KEY-SELECT-0000000004")
    t.add_sink("KSTREAM-SINK-0000000005", "KSTREAM-KEY-SELECT-0000000004-repartition", "KSTREAM-FILTER-0000000006")
    t.add_source("KSTREAM-SOURCE-0000000007", "KSTREAM-KEY-SELECT-0000000004-repartition")
    t.add_processor("KSTREAM-JOIN-0000000008", _noop, "KSTREAM-SOURCE-0000000007")
    t.connect_processor_and_state_stores("KSTREAM-JOIN-0000000008", "customers-STATE-STORE-0000000001")
    t.add_sink("KSTREAM-SINK-0000000009", "enriched", "KSTREAM-JOIN-0000000008")
    return t.describe()


REPARTITION = "app-KSTREAM-KEY-SELECT-0000000004-repartition"


def test_builder_numbering_matches_t11_when_table_comes_first() -> None:
    analysis = analyze(_rekey_join(), "app", {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 3})
    assert [s.id for s in analysis.subtopologies] == [0, 1]
    assert analysis.subtopology(0).source_topics == (REPARTITION, "customers")
    assert analysis.stages == ((1,), (0,))
    assert analysis.copartition_groups == ((REPARTITION, "customers"),)
    derivation = analysis.repartition_count_derivation[REPARTITION]
    assert (derivation.from_writers_max_source_count, derivation.after_copartition_enforcement) == (6, 3)
    assert analysis.tasks[TaskId(0, 2)] == ((REPARTITION, 2), ("customers", 2))
    assert len([t for t in analysis.tasks if t.subtopology == 1]) == 6


def test_existing_repartition_topic_with_wrong_count_is_refused_with_kafka_text() -> None:
    with pytest.raises(PartitionCountChanged) as info:
        analyze(_rekey_join(), "app", {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 6})
    assert (
        f"Existing internal topic {REPARTITION} has invalid partitions: expected: 3; actual: 6. Use "
        "'org.apache.kafka.tools.StreamsResetter' tool to clean up invalid topics before processing."
    ) in str(info.value)
    assert info.value.kafka_exception == "StreamsException"


def test_existing_changelog_with_wrong_count_is_refused() -> None:
    cluster = {
        "orders": 6,
        "customers": 3,
        "enriched": 3,
        REPARTITION: 3,
        "app-customers-STATE-STORE-0000000001-changelog": 4,
    }
    with pytest.raises(PartitionCountChanged, match="expected: 3; actual: 4"):
        analyze(_rekey_join(), "app", cluster)


def test_missing_internal_topic_is_refused_unless_allowed() -> None:
    cluster = {"orders": 6, "customers": 3, "enriched": 3}
    with pytest.raises(MissingTopic, match=REPARTITION):
        analyze(_rekey_join(), "app", cluster)
    analysis = analyze(_rekey_join(), "app", cluster, require_internal_topics=False)
    assert analysis.internal_topics[REPARTITION] == 3


def test_missing_source_topic_quotes_missing_source_topic_exception() -> None:
    with pytest.raises(MissingTopic) as info:
        analyze(_rekey_join(), "app", {"customers": 3, REPARTITION: 3})
    assert "Missing source topics [orders] for subtopology 1 of topology null" in str(info.value)
    assert info.value.kafka_exception == "MissingSourceTopicException"


def test_external_topics_not_copartitioned() -> None:
    with pytest.raises(NotCopartitioned) as info:
        analyze(
            _rekey_join(),
            "app",
            {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 3},
            copartition_groups=[{REPARTITION, "customers", "orders"}],
        )
    assert "Topics not co-partitioned: [{customers=3, orders=6}]" in str(info.value)


def test_explicit_repartition_count_that_disagrees_with_the_external_topic() -> None:
    with pytest.raises(NotCopartitioned) as info:
        analyze(
            _rekey_join(),
            "app",
            {"orders": 6, "customers": 3, "enriched": 3, REPARTITION: 4},
            explicit_repartition_counts={REPARTITION: 4},
        )
    assert (
        f"Number of partitions [4] of repartition topic [{REPARTITION}] doesn't match number of partitions [3] of "
        "the source topic."
    ) in str(info.value)


def _two_repartitions_joined() -> Topology:
    """Two rekeyed streams joined (stream-stream): a group made only of repartition topics."""
    t = Topology()
    for side, topic in (("a", "left"), ("b", "right")):
        t.add_source(f"KSTREAM-SOURCE-{side}", topic)
        t.add_processor(f"KSTREAM-KEY-SELECT-{side}", _noop, f"KSTREAM-SOURCE-{side}")
        t.add_sink(f"KSTREAM-SINK-{side}", f"{side}-repartition", f"KSTREAM-KEY-SELECT-{side}")
        t.add_source(f"KSTREAM-SOURCE-{side}2", f"{side}-repartition")
        t.add_processor(f"KSTREAM-WINDOWED-{side}", _noop, f"KSTREAM-SOURCE-{side}2")
        t.add_state_store(StoreSpec(f"store-{side}"), f"KSTREAM-WINDOWED-{side}")
    t.connect_processor_and_state_stores("KSTREAM-WINDOWED-a", "store-b")
    return t


def test_group_of_only_repartition_topics_uses_the_maximum() -> None:
    cluster = {"left": 2, "right": 5, "app-a-repartition": 5, "app-b-repartition": 5}
    analysis = analyze(_two_repartitions_joined().describe(), "app", cluster)
    assert analysis.copartition_groups == (("app-a-repartition", "app-b-repartition"),)
    assert analysis.internal_topics["app-a-repartition"] == 5
    assert analysis.repartition_count_derivation["app-a-repartition"].from_writers_max_source_count == 2


def test_explicit_counts_that_differ_inside_a_repartition_only_group() -> None:
    cluster = {"left": 2, "right": 5, "app-a-repartition": 2, "app-b-repartition": 4}
    with pytest.raises(NotCopartitioned, match=r"Following topics do not have the same number of partitions: \["):
        analyze(
            _two_repartitions_joined().describe(),
            "app",
            cluster,
            explicit_repartition_counts={"app-a-repartition": 2, "app-b-repartition": 4},
        )


def test_chained_repartition_counts_take_several_rounds() -> None:
    t = Topology()
    t.add_source("KSTREAM-SOURCE-3", "KSTREAM-MAP-2-repartition")
    t.add_processor("KSTREAM-MAP-4", _noop, "KSTREAM-SOURCE-3")
    t.add_sink("KSTREAM-SINK-5", "KSTREAM-MAP-4-repartition", "KSTREAM-MAP-4")
    t.add_source("KSTREAM-SOURCE-6", "KSTREAM-MAP-4-repartition")
    t.add_processor("KSTREAM-PEEK-7", _noop, "KSTREAM-SOURCE-6")
    t.add_source("KSTREAM-SOURCE-0", "in")
    t.add_processor("KSTREAM-MAP-2", _noop, "KSTREAM-SOURCE-0")
    t.add_sink("KSTREAM-SINK-1", "KSTREAM-MAP-2-repartition", "KSTREAM-MAP-2")
    cluster = {"in": 7, "app-KSTREAM-MAP-2-repartition": 7, "app-KSTREAM-MAP-4-repartition": 7}
    analysis = analyze(t.describe(), "app", cluster)
    assert analysis.internal_topics == {"app-KSTREAM-MAP-2-repartition": 7, "app-KSTREAM-MAP-4-repartition": 7}
    assert analysis.stages == ((2,), (0,), (1,))


def test_pattern_source_with_unequal_partition_counts() -> None:
    t = Topology()
    t.add_source("src", pattern="events-.*")
    t.add_processor("p", _noop, "src")
    cluster = {"events-eu": 3, "events-us": 2, "events": 9, "other": 1, "__consumer_offsets": 50}
    analysis = analyze(t.describe(), "app", cluster)
    sub = analysis.subtopology(0)
    assert sub.source_patterns == ("events-.*",)
    assert sub.source_topics == ("events-eu", "events-us")
    assert analysis.tasks == {
        TaskId(0, 0): (("events-eu", 0), ("events-us", 0)),
        TaskId(0, 1): (("events-eu", 1), ("events-us", 1)),
        TaskId(0, 2): (("events-eu", 2),),
    }


def test_pattern_refusals() -> None:
    t = Topology()
    t.add_source("src", pattern="nothing-.*")
    t.add_processor("p", _noop, "src")
    with pytest.raises(MissingTopic, match="Pattern subscriptions match at least one topic"):
        analyze(t.describe(), "app", {"x": 1})
    java_only = "Topologies:\n   Sub-topology: 0\n    Source: src (topics: \\p{Alpha}+)\n      --> none\n\n"
    with pytest.raises(TopologyError, match="Java-only regex"):
        analyze(parse_description(java_only), "app", {"abc": 1})
    t3 = Topology()
    t3.add_source("src", pattern="app-.*")
    t3.add_processor("p", _noop, "src")
    with pytest.raises(TopologyError, match="internal topic app-s-changelog"):
        analyze(t3.describe(), "app", {"app-in": 1, "app-s-changelog": 1})


def test_topic_matched_by_two_patterns_quotes_kafka() -> None:
    t = Topology()
    t.add_source("s1", pattern="a.*")
    t.add_source("s2", pattern=".*b")
    t.add_processor("p", _noop, "s1", "s2")
    with pytest.raises(TopologyError, match="Topic ab is already matched for another regex pattern a.* and hence"):
        analyze(t.describe(), "app", {"ab": 1})


def test_processor_api_shared_store_is_only_a_warning() -> None:
    t = Topology()
    t.add_source("in-a", "a")
    t.add_source("in-b", "b")
    t.add_processor("pa", _noop, "in-a")
    t.add_processor("pb", _noop, "in-b")
    t.add_state_store(StoreSpec("shared"), "pa", "pb")
    analysis = analyze(t.describe(), "app", {"a": 2, "b": 4})
    assert analysis.copartition_groups == (("a", "b"),)
    assert any("enforces nothing" in w for w in analysis.warnings)
    assert len(analysis.tasks) == 4
    with pytest.raises(NotCopartitioned):
        analyze(t.describe(), "app", {"a": 2, "b": 4}, copartition_groups=[["a", "b"]])


def test_merge_into_one_stateful_processor_is_not_copartitioned() -> None:
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0", "a")
    t.add_source("KSTREAM-SOURCE-1", "b")
    t.add_processor("KSTREAM-MERGE-2", _noop, "KSTREAM-SOURCE-0", "KSTREAM-SOURCE-1")
    t.add_processor("KSTREAM-AGGREGATE-3", _noop, "KSTREAM-MERGE-2")
    t.add_state_store(StoreSpec("KSTREAM-AGGREGATE-STATE-STORE-4"), "KSTREAM-AGGREGATE-3")
    analysis = analyze(t.describe(), "app", {"a": 2, "b": 3})
    assert analysis.copartition_groups == ()
    assert analysis.subtopology(0).stores[0].changelog_partitions == 3


def test_cycle_through_intermediate_topics_is_refused_unless_frozen() -> None:
    t = Topology()
    t.add_source("s-a", "a")
    t.add_sink("k-b", "b", "s-a")
    t.add_source("s-b", "b")
    t.add_sink("k-a", "a", "s-b")
    description = t.describe()
    with pytest.raises(TopologyError, match=r"sub-topologies \[0, 1\] form a cycle through the topics \['a', 'b'\]"):
        analyze(description, "app", {"a": 1, "b": 1})
    analysis = analyze(description, "app", {"a": 1, "b": 1}, frozen_inputs={"a"})
    assert analysis.stages == ((0,), (1,))
    assert analysis.intermediate_user_topics == ("a", "b")
    tolerated = analyze(description, "app", {"a": 1, "b": 1}, allow_cycles=True)
    assert tolerated.stages == ((0, 1),)
    assert tolerated.cycles == ((0, 1),)


def test_dynamic_sink_needs_configured_topics() -> None:
    t = Topology()
    t.add_source("s", "in")
    t.add_sink("dyn", lambda k, v, ctx: "x", "s")
    t.add_source("s2", "x")
    t.add_processor("p", _noop, "s2")
    with pytest.raises(TopologyError, match="dynamic_sink_topics"):
        analyze(t.describe(), "app", {"in": 1, "x": 1})
    analysis = analyze(t.describe(), "app", {"in": 1, "x": 1}, dynamic_sink_topics={"dyn": ["x"]})
    assert analysis.subtopology(0).dynamic_sinks == ("dyn",)
    assert analysis.stages == ((0,), (1,))


def test_named_topology_prefixes_internal_topics_and_names_tasks() -> None:
    text = (
        "Topology: orders-v2:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0 (topics: [in])\n"
        "      --> KSTREAM-AGGREGATE-1\n    Processor: KSTREAM-AGGREGATE-1 (stores: [counts])\n      --> none\n"
        "      <-- KSTREAM-SOURCE-0\n\n"
    )
    analysis = analyze(parse_description(text), "app", {"in": 2})
    assert analysis.internal_topics == {"app-orders-v2-counts-changelog": 2}
    assert set(analysis.tasks) == {TaskId(0, 0, "orders-v2"), TaskId(0, 1, "orders-v2")}
    assert store_changelog_topic("app", "counts", "orders-v2") == "app-orders-v2-counts-changelog"


def test_reused_source_topic_changelog_is_not_an_internal_topic_when_optimized() -> None:
    t = Topology()
    t.add_source("KSTREAM-SOURCE-1", "users")
    t.add_processor("KTABLE-SOURCE-2", _noop, "KSTREAM-SOURCE-1")
    t.add_state_store(StoreSpec("users-STATE-STORE-0"), "KTABLE-SOURCE-2")
    plain = analyze(t.describe(), "app", {"users": 2})
    assert plain.internal_topics == {"app-users-STATE-STORE-0-changelog": 2}
    assert plain.subtopology(0).stores[0].source_topic_changelog == "users"
    optimized = analyze(t.describe(), "app", {"users": 2}, {"topology.optimization": "all"})
    assert optimized.internal_topics == {}


def test_global_store_topic_must_exist_and_empty_topics_are_fatal() -> None:
    t = Topology()
    t.add_global_store(StoreSpec("g", logged=False), "gs", "glob", "gp", _noop)
    t.add_source("s", "in")
    t.add_processor("p", _noop, "s")
    with pytest.raises(MissingTopic, match="glob"):
        analyze(t.describe(), "app", {"in": 1})
    analysis = analyze(t.describe(), "app", {"in": 1, "glob": 3})
    assert [(g.id, g.topic, g.topic_partitions, g.changelog_topic) for g in analysis.global_stores] == [
        (0, "glob", 3, None)
    ]
    assert set(analysis.tasks) == {TaskId(1, 0)}
    with pytest.raises(TopologyError, match="Empty partitions for topic in"):
        analyze(t.describe(), "app", {"in": 0, "glob": 3})


def test_internal_topic_name_shapes() -> None:
    assert is_internal_topic_name("x-repartition")
    assert is_internal_topic_name("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic")
    assert is_internal_topic_name("j-subscription-response-topic")
    assert not is_internal_topic_name("clean")


def test_repartition_named_user_topic_that_exists_unprefixed_is_intermediate() -> None:
    t = Topology()
    t.add_source("s", "in")
    t.add_sink("k", "my-repartition", "s")
    t.add_source("s2", "my-repartition")
    t.add_processor("p", _noop, "s2")
    analysis = analyze(t.describe(), "app", {"in": 1, "my-repartition": 2})
    assert analysis.intermediate_user_topics == ("my-repartition",)
    assert analysis.warnings


def test_ambiguous_bracket_regex_asks_for_an_override() -> None:
    text = "Topologies:\n   Sub-topology: 0\n    Source: src (topics: [a-z])\n      --> none\n\n"
    description = parse_description(text)
    with pytest.raises(TopologyError, match="set source_patterns for src"):
        analyze(description, "app", {"q": 2})
    analysis = analyze(description, "app", {"q": 2}, source_patterns={"src": "[a-z]"})
    assert analysis.subtopology(0).source_topics == ("q",)
    assert analysis.subtopology(0).source_patterns == ("[a-z]",)
    with pytest.raises(MissingTopic):
        analyze(description, "app", {"other-topic": 2})


REG = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
RESP = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000015-topic"


def _fk_join() -> TopologyDescription:
    """left.join(right, fkExtractor, joiner): the shape of KTableImpl#doJoinOnForeignKey (names abbreviated)."""
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000001", "left")
    t.add_processor("KTABLE-SOURCE-0000000002", _noop, "KSTREAM-SOURCE-0000000001")
    t.add_state_store(StoreSpec("left-STATE-STORE-0000000000"), "KTABLE-SOURCE-0000000002")
    t.add_source("KSTREAM-SOURCE-0000000004", "right")
    t.add_processor("KTABLE-SOURCE-0000000005", _noop, "KSTREAM-SOURCE-0000000004")
    t.add_state_store(StoreSpec("right-STATE-STORE-0000000003"), "KTABLE-SOURCE-0000000005")
    t.add_processor("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007", _noop, "KTABLE-SOURCE-0000000002")
    t.add_sink("KTABLE-SINK-0000000008", REG, "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007")
    t.add_source("KSTREAM-SOURCE-0000000009", REG)
    t.add_processor("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011", _noop, "KSTREAM-SOURCE-0000000009")
    t.add_state_store(StoreSpec("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010"))
    t.connect_processor_and_state_stores(
        "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011",
        "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010",
        "right-STATE-STORE-0000000003",
    )
    t.add_processor("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012", _noop, "KTABLE-SOURCE-0000000005")
    t.connect_processor_and_state_stores(
        "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012", "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010"
    )
    t.add_sink(
        "KTABLE-SINK-0000000014",
        RESP,
        "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011",
        "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012",
    )
    t.add_source("KTABLE-SOURCE-0000000016", RESP)
    t.add_processor(
        "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017", _noop, "KTABLE-SOURCE-0000000016"
    )
    t.connect_processor_and_state_stores(
        "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017", "left-STATE-STORE-0000000000"
    )
    t.add_sink("KSTREAM-SINK-0000000019", "out", "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017")
    return t.describe()


def test_foreign_key_join_topics_groups_and_the_cycle_it_forms() -> None:
    cluster = {"left": 4, "right": 2, "out": 4, f"app-{REG}": 2, f"app-{RESP}": 4}
    with pytest.raises(TopologyError, match="form a cycle"):
        analyze(_fk_join(), "app", cluster)
    analysis = analyze(_fk_join(), "app", cluster, allow_cycles=True)
    assert set(analysis.copartition_groups) == {(f"app-{RESP}", "left"), (f"app-{REG}", "right")}
    assert analysis.internal_topics[f"app-{REG}"] == 2
    assert analysis.internal_topics[f"app-{RESP}"] == 4
    assert analysis.repartition_count_derivation[f"app-{REG}"].from_writers_max_source_count == 4
    assert analysis.cycles == ((0, 1),)
    assert analysis.stages == ((0, 1),)
    assert analysis.internal_topics["app-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog"] == 2


def _user_topic_join(with_repartition_elsewhere: bool) -> TopologyDescription:
    """orders joined with the table customers (no repartition); optionally an unrelated re-keyed count beside it."""
    t = Topology()
    t.add_source("KSTREAM-SOURCE-0000000001", "customers")
    t.add_processor("KTABLE-SOURCE-0000000002", _noop, "KSTREAM-SOURCE-0000000001")
    t.add_state_store(StoreSpec("customers-STATE-STORE-0000000000"), "KTABLE-SOURCE-0000000002")
    t.add_source("KSTREAM-SOURCE-0000000003", "orders")
    t.add_processor("KSTREAM-JOIN-0000000004", _noop, "KSTREAM-SOURCE-0000000003")
    t.connect_processor_and_state_stores("KSTREAM-JOIN-0000000004", "customers-STATE-STORE-0000000000")
    t.add_sink("KSTREAM-SINK-0000000005", "enriched", "KSTREAM-JOIN-0000000004")
    if with_repartition_elsewhere:
        t.add_source("KSTREAM-SOURCE-0000000006", "clicks")
        t.add_processor("KSTREAM-KEY-SELECT-0000000007", _noop, "KSTREAM-SOURCE-0000000006")
        t.add_sink(
            "KSTREAM-SINK-0000000008", "KSTREAM-KEY-SELECT-0000000007-repartition", "KSTREAM-KEY-SELECT-0000000007"
        )
        t.add_source("KSTREAM-SOURCE-0000000009", "KSTREAM-KEY-SELECT-0000000007-repartition")
        t.add_processor("KSTREAM-AGGREGATE-0000000010", _noop, "KSTREAM-SOURCE-0000000009")
        t.add_state_store(StoreSpec("counts"), "KSTREAM-AGGREGATE-0000000010")
    return t.describe()


def test_user_topics_not_copartitioned_run_when_the_topology_has_no_repartition_topic() -> None:
    """RepartitionTopics#setup checks co-partitioning only when there is a repartition topic (live: own t04b)."""
    analysis = analyze(_user_topic_join(False), "app", {"orders": 3, "customers": 2, "enriched": 3})
    assert analysis.copartition_groups == (("customers", "orders"),)
    assert analysis.tasks[TaskId(0, 2)] == (("orders", 2),)
    assert any("may never meet" in w and "{customers=2, orders=3}" in w for w in analysis.warnings)
    with pytest.raises(NotCopartitioned, match=r"Topics not co-partitioned: \[\{customers=2, orders=3\}\]"):
        analyze(
            _user_topic_join(False), "app", {"orders": 3, "customers": 2}, copartition_groups=[["orders", "customers"]]
        )


def test_user_topics_not_copartitioned_are_refused_when_a_repartition_topic_exists_anywhere() -> None:
    repartition = "app-KSTREAM-KEY-SELECT-0000000007-repartition"
    cluster = {"orders": 3, "customers": 2, "enriched": 3, "clicks": 4, repartition: 4}
    with pytest.raises(NotCopartitioned, match=r"Topics not co-partitioned: \[\{customers=2, orders=3\}\]"):
        analyze(_user_topic_join(True), "app", cluster)
    assert analyze(_user_topic_join(True), "app", {**cluster, "customers": 3}).tasks
