"""Changelog and repartition topic names (``PSM.storeChangelogTopic``, ``decorateTopic``, ``KStreamImpl``)."""

from __future__ import annotations

from streamproc.state.internal_topics import (
    TOPIC_PREFIX_ALTERNATIVE,
    repartition_topic,
    store_changelog_topic,
    topic_name_prefix,
)


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
