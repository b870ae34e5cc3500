"""``PunctuationSchedule.next`` and ``PunctuationQueue.maybe_punctuate`` (ordering.md ST-2, ST-3, ST-5)."""

from __future__ import annotations

import pytest

from streamproc.engine.punctuation_queue import (
    LONG_MAX_VALUE,
    PunctuationQueue,
    PunctuationSchedule,
    PunctuationType,
    Punctuator,
)


@pytest.mark.parametrize(
    "due, interval, now, expected",
    [(0, 10, 3, 10), (10, 10, 58, 60), (0, 1000, 250, 1000), (5, 10, 42, 45), (0, 10, 10, 20), (7, 3, 7, 10)],
)
def test_next_is_smallest_aligned_time_strictly_after_now(due: int, interval: int, now: int, expected: int) -> None:
    assert PunctuationSchedule("p", due, interval, lambda t: None).next(now).timestamp == expected


def test_next_clamps_instead_of_overflowing() -> None:
    schedule = PunctuationSchedule("p", LONG_MAX_VALUE - 5, 10, lambda t: None)
    assert schedule.next(LONG_MAX_VALUE - 1).timestamp == LONG_MAX_VALUE


class Calls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def punctuate(self, node: str, timestamp: int, punctuation_type: PunctuationType, punctuator: Punctuator) -> None:
        self.calls.append((node, timestamp))
        punctuator(timestamp)


def test_fires_at_most_once_per_check_with_current_time_no_catch_up() -> None:
    queue = PunctuationQueue()
    calls = Calls()
    queue.schedule(PunctuationSchedule("p", 0, 10, lambda t: None))
    assert queue.maybe_punctuate(58, PunctuationType.STREAM_TIME, calls.punctuate)
    assert calls.calls == [("p", 58)]
    assert not queue.maybe_punctuate(59, PunctuationType.STREAM_TIME, calls.punctuate)
    assert queue.maybe_punctuate(60, PunctuationType.STREAM_TIME, calls.punctuate)
    assert calls.calls[-1] == ("p", 60)


def test_equal_due_times_fire_in_java_heap_order() -> None:
    queue = PunctuationQueue()
    calls = Calls()
    for name in ("s0", "s1", "s2"):
        queue.schedule(PunctuationSchedule(name, 0, 10, lambda t: None))
    for now in (0, 10, 20):
        queue.maybe_punctuate(now, PunctuationType.STREAM_TIME, calls.punctuate)
    assert [n for n, _ in calls.calls] == ["s0", "s2", "s1", "s2", "s1", "s0", "s1", "s0", "s2"]


def test_cancel_before_and_inside_punctuator() -> None:
    queue = PunctuationQueue()
    calls = Calls()
    cancelled = queue.schedule(PunctuationSchedule("gone", 0, 10, lambda t: None))
    cancelled.cancel()
    holder: list[object] = []

    def cancel_self(timestamp: int) -> None:
        holder[0].cancel()  # type: ignore[attr-defined]

    holder.append(queue.schedule(PunctuationSchedule("once", 0, 10, cancel_self)))
    assert queue.maybe_punctuate(0, PunctuationType.STREAM_TIME, calls.punctuate)
    assert calls.calls == [("once", 0)]
    assert len(queue) == 0
    assert not queue.can_punctuate(100)


def test_cancellable_follows_successors() -> None:
    queue = PunctuationQueue()
    calls = Calls()
    handle = queue.schedule(PunctuationSchedule("p", 0, 10, lambda t: None))
    queue.maybe_punctuate(0, PunctuationType.STREAM_TIME, calls.punctuate)
    handle.cancel()
    assert not queue.maybe_punctuate(10, PunctuationType.STREAM_TIME, calls.punctuate)
    assert calls.calls == [("p", 0)]


def test_schedule_registered_inside_punctuator_fires_in_same_check_if_due() -> None:
    queue = PunctuationQueue()
    calls = Calls()

    def register(timestamp: int) -> None:
        queue.schedule(PunctuationSchedule("late", 0, 5, lambda t: None))

    queue.schedule(PunctuationSchedule("first", 0, 100, register))
    queue.maybe_punctuate(3, PunctuationType.STREAM_TIME, calls.punctuate)
    assert calls.calls == [("first", 3), ("late", 3)]


def test_schedule_equality_is_by_due_time_only() -> None:
    assert PunctuationSchedule("a", 5, 1, lambda t: None) == PunctuationSchedule("b", 5, 9, lambda t: None)
    assert PunctuationSchedule("a", 5, 1, lambda t: None) != PunctuationSchedule("a", 6, 1, lambda t: None)
