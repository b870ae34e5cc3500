"""Changelog and repartition topic names (``PSM.storeChangelogTopic``, ``decorateTopic``, ``KStreamImpl``).

The naming rule is defined once (``engine/internal_topics``); the last test proves that the topology analysis,
the runtime graph builder and the state manager's store registration all name the same topics by it.
"""

from __future__ import annotations

from streamproc.engine.internal_topics import (
    TOPIC_PREFIX_ALTERNATIVE,
    decorate_topic,
    is_internal_topic_name,
    repartition_topic,
    store_changelog_topic,
    topic_name_prefix,
)
from streamproc.engine.records import TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology_builder import analyze_topology, changelog_topics
from streamproc.state.store_registration import StoreSpec as RegisteredStoreSpec
from streamproc.state.store_registration import register_stores
from tests.unit.engine.test_topology_runtime import REPARTITION, two_subtopologies


def test_changelog_names() -> None:
    assert store_changelog_topic("wordcount", "counts") == "wordcount-counts-changelog"
    assert store_changelog_topic("app", "KSTREAM-AGGREGATE-STATE-STORE-0000000003") == (
        "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
    )
    assert store_changelog_topic("app", "counts", "topo") == "app-topo-counts-changelog"


def test_repartition_names() -> None:
    assert repartition_topic("app", "by-customer") == "app-by-customer-repartition"
    assert repartition_topic("app", "by-customer-repartition") == "app-by-customer-repartition"
    assert repartition_topic("app", "x-repartition", ktable_group_by=True) == "app-x-repartition-repartition"
    assert repartition_topic("app", "by-customer", "topo") == "app-topo-by-customer-repartition"


def test_prefix_override() -> None:
    assert topic_name_prefix("app") == "app"
    assert topic_name_prefix("app", {TOPIC_PREFIX_ALTERNATIVE: "team.app"}) == "team.app"


def test_decorate_and_internal_shapes() -> None:
    assert decorate_topic("app", "x-repartition") == "app-x-repartition"
    assert decorate_topic("app", "x-repartition", "topo") == "app-topo-x-repartition"
    assert is_internal_topic_name("by-customer-repartition")
    assert is_internal_topic_name("KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic")
    assert not is_internal_topic_name("orders")


def test_analysis_builder_and_registration_name_changelogs_and_repartition_topics_alike() -> None:
    topology, _ = two_subtopologies()
    changelog = store_changelog_topic("app", "store")
    repartition = decorate_topic("app", REPARTITION)
    analysis = analyze_topology(topology, "app", {"orders": 3, repartition: 3, "out": 1})
    assert analysis.internal_topics == {repartition: 3, changelog: 3}
    assert analysis.subtopology(1).repartition_source_topics == (repartition,)
    assert changelog_topics(topology, 1, "app") == {"store": changelog}
    registered = register_stores("app", TaskId(1, 2), [RegisteredStoreSpec("store")])
    assert registered.changelog_partitions == {"store": TopicPartition(changelog, 2)}
