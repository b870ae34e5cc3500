"""``Suppressed.BufferConfig``: the bounds and logging a suppress buffer store is built with."""

from __future__ import annotations

from streamproc.dsl import BufferConfig, Consumed, StreamsBuilder, Suppressed
from streamproc.engine.serdes import SERDES
from streamproc.engine.topology import Topology
from streamproc.engine.topology_builder import changelog_topics, store_builders
from streamproc.state.store_builders import StoreBuilder
from streamproc.state.store_type import StoreType


def _program(config: BufferConfig) -> Topology:
    string = SERDES["String"]()
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(string, string)).group_by_key().count().suppress(
        Suppressed.until_time_limit(1_000, config).with_name("hold")
    ).to_stream().to("out")
    return b.build({"default.key.serde": "String", "default.value.serde": "String"})


def test_bounds_and_full_strategy() -> None:
    config = BufferConfig.max_bytes_(100).with_max_records(5).shut_down_when_full()
    assert (config.max_bytes, config.max_records, config.shutdown_when_full) == (100, 5, True)
    assert not config.emit_early_when_full().shutdown_when_full
    assert BufferConfig.unbounded().with_max_bytes(7).max_bytes == 7


def test_the_buffer_is_a_logged_time_ordered_store_unless_logging_is_disabled() -> None:
    logged = store_builders(_program(BufferConfig.max_bytes_(100)))["hold-store"]
    assert isinstance(logged, StoreBuilder) and logged.store_type is StoreType.TIME_ORDERED_KEY_VALUE_BUFFER
    assert changelog_topics(_program(BufferConfig.unbounded()), None, "app")["hold-store"] == "app-hold-store-changelog"
    unlogged = _program(BufferConfig.unbounded().with_logging_disabled())
    assert "hold-store" not in changelog_topics(unlogged, None, "app")
