"""``streamproc.plan.internal_topics``: a first run's internal topics, with Kafka Streams 4.2's counts and configs.

The integration test compares against topics a real Kafka Streams app created; these pin the rules it cannot
reach in one run: the application's ``topic.*`` settings and a store's own log config, versioned and unlogged
stores, the store kinds read from a Python topology, and the refusals.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamproc import Stores, Topology, serde_for
from streamproc.engine.topology_analysis import TopologyAnalysis, analyze
from streamproc.engine.topology_description import parse_description
from streamproc.errors import ConfigError, PlanError
from streamproc.plan.internal_topics import (
    ChangelogKind,
    InternalTopicSettings,
    NewInternalTopic,
    StoreKind,
    changelog_configs,
    internal_topics_to_create,
    repartition_configs,
    store_kinds_of,
)
from streamproc.plan.run_plan import RunPlan

STRING = serde_for("String")
LONG = serde_for("Long")


def _noop() -> Any:
    from streamproc.engine.processor import Processor

    class Noop(Processor):
        def process(self, record: Any) -> None:
            pass

    return Noop


def topology(window_logging: dict[str, str] | None = None) -> Topology:
    """source → rekey → ``app-rekeyed-repartition`` → a processor with a key-value, a window and a session store."""
    noop = _noop()
    t = Topology()
    t.add_source("in", "orders", key_deserializer=STRING.deserializer, value_deserializer=STRING.deserializer)
    t.add_processor("rekey", noop, "in")
    t.add_internal_topic("rekeyed-repartition")
    t.add_sink("to-rekeyed", "rekeyed-repartition", "rekey", key_serializer=STRING.serializer,
               value_serializer=STRING.serializer)  # fmt: skip
    t.add_source("from-rekeyed", "rekeyed-repartition", key_deserializer=STRING.deserializer,
                 value_deserializer=STRING.deserializer)  # fmt: skip
    t.add_processor("agg", noop, "from-rekeyed")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(Stores.persistent_timestamped_key_value_store("kv"), STRING, LONG),
        "agg",
    )
    window = Stores.timestamped_window_store_builder(
        Stores.persistent_timestamped_window_store("win", 3_600_000, 60_000), STRING, LONG
    )
    if window_logging is not None:
        window.with_logging_enabled(window_logging)
    t.add_state_store(window, "agg")
    t.add_state_store(
        Stores.session_store_builder(Stores.persistent_session_store("sess", 600_000), STRING, LONG), "agg"
    )
    t.add_state_store(
        Stores.key_value_store_builder(
            Stores.persistent_key_value_store("quiet"), STRING, LONG
        ).with_logging_disabled(),
        "agg",
    )
    return t


def analysis_of(t: Topology, counts: dict[str, int]) -> TopologyAnalysis:
    return analyze(parse_description(str(t.describe())), "app", counts, require_internal_topics=False)


def test_every_missing_internal_topic_gets_kafka_streams_counts_and_configs() -> None:
    t = topology()
    settings = InternalTopicSettings(store_kinds=store_kinds_of(t), replication_factor=3)
    created = {x.name: x for x in internal_topics_to_create(analysis_of(t, {"orders": 4}), {"orders"}, settings)}
    assert sorted(created) == ["app-kv-changelog", "app-rekeyed-repartition", "app-sess-changelog", "app-win-changelog"]
    assert {x.partitions for x in created.values()} == {4}  # the repartition topic takes its writer's source count
    assert {x.replication_factor for x in created.values()} == {3}
    assert created["app-rekeyed-repartition"].configs == {
        "cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800",
        "message.timestamp.type": "CreateTime",
    }  # fmt: skip
    assert created["app-kv-changelog"].configs == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
    assert created["app-win-changelog"].configs["retention.ms"] == str(3_600_000 + 86_400_000)
    assert created["app-sess-changelog"].configs["cleanup.policy"] == "compact,delete"
    assert created["app-sess-changelog"].configs["retention.ms"] == str(600_000 + 86_400_000)
    # no changelog for the unlogged store; an existing topic is left alone
    existing = {"orders", "app-kv-changelog"}
    again = internal_topics_to_create(analysis_of(t, {"orders": 4, "app-kv-changelog": 4}), existing, settings)
    assert "app-kv-changelog" not in {x.name for x in again}


def test_topic_settings_and_store_log_config_take_precedence_as_in_kafka_streams() -> None:
    given = {"topic.retention.ms": "1000", "topic.min.insync.replicas": "2"}
    settings = InternalTopicSettings.from_streams_settings(
        {**given, "windowstore.changelog.additional.retention.ms": "5"}, {}
    )
    assert repartition_configs(settings)["retention.ms"] == "1000"  # topic.* overrides the library default
    window = StoreKind(ChangelogKind.WINDOW, 100)
    # the window retention is computed over topic.retention.ms (only the store's own log config keeps it)
    assert changelog_configs("w", window, settings)["retention.ms"] == "105"
    assert changelog_configs("w", window, settings)["min.insync.replicas"] == "2"
    own = StoreKind(ChangelogKind.WINDOW, 100, {"retention.ms": "7", "cleanup.policy": "compact"})
    assert changelog_configs("w", own, settings)["retention.ms"] == "7"
    assert changelog_configs("w", own, settings)["cleanup.policy"] == "compact"
    versioned = changelog_configs("v", StoreKind(ChangelogKind.VERSIONED, 1000), settings)
    assert versioned["cleanup.policy"] == "compact" and versioned["min.compaction.lag.ms"] == str(1000 + 86_400_000)
    huge = changelog_configs("w", StoreKind(ChangelogKind.WINDOW, 2**63 - 2), InternalTopicSettings())
    assert huge["retention.ms"] == str(2**63 - 1)  # Math.addExact overflow → Long.MAX_VALUE


def test_a_store_of_unknown_kind_is_refused_by_name() -> None:
    t = topology()
    with pytest.raises(PlanError, match=r"store\(s\) kv, quiet, sess, win needs each store's kind.*--store-kind"):
        internal_topics_to_create(analysis_of(t, {"orders": 2}), {"orders"}, InternalTopicSettings())


@pytest.mark.parametrize("text", ["window", "key_value:5", "tumbling:5", "session:-1", "versioned:x"])
def test_a_bad_store_kind_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="store 's': kind"):
        StoreKind.parse(text, "s")


def test_an_unknown_streams_setting_is_refused() -> None:
    with pytest.raises(ConfigError, match="'num.stream.threads' does not decide internal topics"):
        InternalTopicSettings.from_streams_settings({"num.stream.threads": "2"}, {})
    with pytest.raises(ConfigError, match="replication.factor must be an integer"):
        InternalTopicSettings.from_streams_settings({"replication.factor": "three"}, {})


def test_store_kinds_of_a_python_topology() -> None:
    kinds = store_kinds_of(topology({"segment.ms": "1000"}))
    assert kinds["kv"] == StoreKind(ChangelogKind.KEY_VALUE)
    assert kinds["win"] == StoreKind(ChangelogKind.WINDOW, 3_600_000, {"segment.ms": "1000"})
    assert kinds["sess"] == StoreKind(ChangelogKind.SESSION, 600_000)
    assert kinds["quiet"] == StoreKind(ChangelogKind.UNLOGGED)


def test_the_plan_keeps_the_created_topics() -> None:
    from tests.unit.plan.test_run_plan import DOC

    topic = NewInternalTopic("app-kv-changelog", "changelog", 2, -1, {"cleanup.policy": "compact"})
    plan = RunPlan.from_dict({**DOC, "create_internal_topics": {"created": True, "topics": [topic.to_dict()]}})
    assert plan.internal_topics == (topic,) and plan.internal_topics_created
    assert RunPlan.from_dict(plan.to_dict()) == plan
    assert "Internal topics created for the application's first run" in plan.report()
    assert "replication broker default; cleanup.policy=compact" in plan.report()
    assert "create_internal_topics" not in RunPlan.from_dict(DOC).to_dict()  # old plans keep their bytes
    with pytest.raises(PlanError, match=r"create_internal_topics.topics\[0\]"):
        RunPlan.from_dict({**DOC, "create_internal_topics": {"created": True, "topics": [{"name": "x"}]}})
