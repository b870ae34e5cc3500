"""Punctuation: ``PunctuationType``, ``Cancellable``, ``PunctuationSchedule`` and ``PunctuationQueue``.

Mirrors ``org.apache.kafka.streams.processor.PunctuationType``/``Cancellable`` and
``...processor.internals.PunctuationSchedule``/``PunctuationQueue`` (4.2.0; ordering.md ST-2, ST-3, ST-5). The queue
is a ``java.util.PriorityQueue`` keyed by due time only, so equal due times fire in heap order (PG-4), not in
registration order. Each schedule fires at most once per check, with the *current* time, and its successor is the
next time aligned to its anchor strictly after that time.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from streamproc.engine.java_priority_queue import JavaPriorityQueue

#: ``Long.MAX_VALUE``: the due time is clamped here instead of overflowing (Kafka #23219, after 4.2.0).
LONG_MAX_VALUE = (1 << 63) - 1

Punctuator = Callable[[int], None]


class PunctuationType(enum.Enum):
    """``PunctuationType``: stream time (data driven) or wall-clock time."""

    STREAM_TIME = "STREAM_TIME"
    WALL_CLOCK_TIME = "WALL_CLOCK_TIME"


class Cancellable:
    """The handle ``schedule`` returns; repointed to each successor so ``cancel`` always hits the live schedule."""

    __slots__ = ("_schedule",)

    def __init__(self) -> None:
        self._schedule: PunctuationSchedule | None = None

    def _set_schedule(self, schedule: PunctuationSchedule) -> None:
        self._schedule = schedule

    def cancel(self) -> None:
        if self._schedule is not None:
            self._schedule.mark_cancelled()


class PunctuationSchedule:
    """One registration: node name, due time, interval and punctuator. Equality is by due time only (SR-1)."""

    __slots__ = ("cancellable", "interval", "is_cancelled", "node", "punctuator", "timestamp")

    def __init__(
        self,
        node: str,
        timestamp: int,
        interval: int,
        punctuator: Punctuator,
        cancellable: Cancellable | None = None,
    ) -> None:
        self.node = node
        self.timestamp = timestamp
        self.interval = interval
        self.punctuator = punctuator
        self.is_cancelled = False
        self.cancellable = cancellable if cancellable is not None else Cancellable()
        self.cancellable._set_schedule(self)

    def mark_cancelled(self) -> None:
        self.is_cancelled = True

    def next(self, current_timestamp: int) -> PunctuationSchedule:
        """The successor: the smallest ``timestamp + k * interval`` (k ≥ 1) strictly after ``current_timestamp``."""
        next_time = self.timestamp + self.interval
        if current_timestamp >= next_time:
            missed = (current_timestamp - self.timestamp) // self.interval
            next_time = self.timestamp + (missed + 1) * self.interval
        return PunctuationSchedule(
            self.node, min(next_time, LONG_MAX_VALUE), self.interval, self.punctuator, self.cancellable
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PunctuationSchedule) and other.timestamp == self.timestamp

    def __hash__(self) -> int:
        return hash(self.timestamp)

    def __repr__(self) -> str:
        return f"PunctuationSchedule(node={self.node!r}, timestamp={self.timestamp}, interval={self.interval})"


def _due_time(schedule: PunctuationSchedule) -> int:
    return schedule.timestamp


#: ``ProcessorNodePunctuator.punctuate(node, timestamp, type, punctuator)``: the task runs one punctuation.
NodePunctuator = Callable[[str, int, PunctuationType, Punctuator], None]


class PunctuationQueue:
    """The schedules of one punctuation type of one task."""

    __slots__ = ("_pq",)

    def __init__(self) -> None:
        self._pq: JavaPriorityQueue[PunctuationSchedule] = JavaPriorityQueue(_due_time)

    def __len__(self) -> int:
        return len(self._pq)

    def schedule(self, schedule: PunctuationSchedule) -> Cancellable:
        self._pq.offer(schedule)
        return schedule.cancellable

    def close(self) -> None:
        self._pq.clear()

    def nodes(self) -> tuple[str, ...]:
        """The nodes that have a schedule here that is not cancelled, in name order (for messages)."""
        return tuple(sorted({s.node for s in self._pq if not s.is_cancelled}))

    def maybe_punctuate(self, timestamp: int, punctuation_type: PunctuationType, punctuate: NodePunctuator) -> bool:
        """Fire every schedule due at ``timestamp`` once, in heap order; returns whether anything fired."""
        pq = self._pq
        punctuated = False
        top = pq.peek()
        while top is not None and top.timestamp <= timestamp:
            pq.poll()
            if not top.is_cancelled:
                punctuate(top.node, timestamp, punctuation_type, top.punctuator)
                if not top.is_cancelled:
                    successor = top.next(timestamp)
                    if successor.timestamp > timestamp:
                        pq.offer(successor)
                punctuated = True
            top = pq.peek()
        return punctuated

    def next_due(self) -> int | None:
        """The root's due time (cancelled or not), or ``None``: nothing can fire before that time."""
        top = self._pq.peek()
        return None if top is None else top.timestamp

    def can_punctuate(self, timestamp: int) -> bool:
        """Whether a non-cancelled schedule is due; drops cancelled ones at the root on the way."""
        pq = self._pq
        top = pq.peek()
        while top is not None and top.timestamp <= timestamp:
            if not top.is_cancelled:
                return True
            pq.poll()
            top = pq.peek()
        return False
