"""Rules of the DSL processors' building blocks that the Kafka comparison (``test_reference_dsl_ops.py``) does not
isolate: window arithmetic, Java's refusals of bad window specifications, and the outer-join store's list semantics."""

from __future__ import annotations

import pytest

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.changed_serde import changed_serde
from streamproc.dsl.internals.outer_join_store import (
    LeftOrRightValue,
    OuterJoinStore,
    TimestampedKeyAndJoinSide,
    outer_join_value_serde,
    timestamped_key_and_join_side_serde,
)
from streamproc.dsl.internals.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows
from streamproc.engine.serdes import SerializationException, serde_for
from streamproc.errors import ConfigError
from streamproc.state.store_builders import Stores
from streamproc.state.stores import KeyValueStore, StoreContext

STRING = serde_for("String")


@pytest.mark.parametrize(("size", "advance"), [(10, 10), (10, 5), (10, 3), (7, 1), (1, 1)])
def test_time_windows_for_a_timestamp_are_exactly_the_windows_containing_it(size: int, advance: int) -> None:
    windows = TimeWindows.of_size_with_no_grace(size).advance_by(advance)
    for timestamp in range(0, 4 * size):
        found = windows.windows_for(timestamp)
        every_start = range(0, timestamp + 1, advance)
        assert list(found) == [s for s in every_start if s <= timestamp < s + size]
        assert all(w.end - w.start == size for w in found.values())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: TimeWindows.of_size_with_no_grace(0), "Window size (sizeMs) must be larger than zero."),
        (lambda: TimeWindows.of_size_with_no_grace(10).advance_by(11), "Window advancement interval should be"),
        (lambda: TimeWindows.of_size_and_grace(10, -1), "Grace period (afterWindowEnd) must not be negative."),
        (lambda: SessionWindows.of_inactivity_gap_with_no_grace(0), "Gap time cannot be zero or negative."),
        (lambda: SlidingWindows.of_time_difference_and_grace(-1, 0), "Window time difference must not be negative."),
        (lambda: JoinWindows.of_time_difference_with_no_grace(5).before(-6), "must not be negative"),
    ],
)
def test_bad_window_specifications_are_refused_with_kafkas_message(build: object, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build()  # type: ignore[operator]
    assert message in str(raised.value)


def _outer_store() -> OuterJoinStore:
    builder = Stores.key_value_store_builder(
        Stores.in_memory_key_value_store("KSTREAM-OUTERSHARED-0000000004-store"),
        timestamped_key_and_join_side_serde(STRING),
        outer_join_value_serde(STRING, STRING),
    )
    store = builder.build()
    assert isinstance(store, KeyValueStore)
    store.context = StoreContext(record_timestamp=lambda: 0)
    return OuterJoinStore(store)


def test_outer_join_store_keeps_every_non_joined_record_of_a_key_and_iterates_oldest_first() -> None:
    store = _outer_store()
    late = TimestampedKeyAndJoinSide("k", 20, True)
    early = TimestampedKeyAndJoinSide("k", 5, False)
    store.put(late, LeftOrRightValue.make_left("a"))
    store.put(late, LeftOrRightValue.make_left("b"))
    store.put(early, LeftOrRightValue.make_right("c"))
    assert list(store.all()) == [
        (early, LeftOrRightValue.make_right("c")),
        (late, LeftOrRightValue.make_left("a")),
        (late, LeftOrRightValue.make_left("b")),
    ]


def test_a_joined_partner_clears_the_waiting_records_and_a_missing_one_changes_nothing() -> None:
    store = _outer_store()
    waiting = TimestampedKeyAndJoinSide("k", 7, True)
    store.put(waiting, LeftOrRightValue.make_left("a"))
    store.put_if_absent(TimestampedKeyAndJoinSide("other", 7, True), None)
    assert [key for key, _ in store.all()] == [waiting]
    store.put_if_absent(waiting, None)
    assert list(store.all()) == []


@pytest.mark.parametrize(
    "change",
    [Change("new", None), Change(None, "old"), Change("new", "old"), Change("", "x" * 300), Change("é" * 70, "")],
)
def test_a_change_survives_the_repartition_serde(change: Change[str]) -> None:
    serde = changed_serde(STRING)
    raw = serde.serializer.serialize("t", change)
    assert raw is not None
    assert serde.deserializer.deserialize("t", raw) == change


def test_a_change_without_values_cannot_be_sent_through_a_repartition_topic() -> None:
    with pytest.raises(SerializationException, match="Both old and new values are null"):
        changed_serde(STRING).serializer.serialize("t", Change(None, None))
