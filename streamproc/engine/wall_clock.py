"""The virtual wall clock of a replay (ordering.md D-4).

Kafka Streams reads ``Time.milliseconds()`` for ``WallclockTimestampExtractor``, ``currentSystemTimeMs()``,
WALL_CLOCK_TIME schedules and idling deadlines. A replay cannot reproduce real time, so a task reads this clock
instead. By default it is **frozen** at one value per run (the plan's ``now_ms``), so WALL_CLOCK_TIME punctuators are
registered but never fire. With ``follow_stream_time=True`` it reads ``max(now_ms, stream time)`` instead, so that
wall-clock punctuators fire as if the data had arrived in real time (a streamproc option, not Kafka behaviour).
"""

from __future__ import annotations

from collections.abc import Callable

#: ``ConsumerRecord.NO_TIMESTAMP``/``RecordQueue.UNKNOWN``.
UNKNOWN = -1


def _unknown() -> int:
    return UNKNOWN


class VirtualWallClock:
    """The clock a task reads; ``attach`` gives it the task's stream time (only read when following it)."""

    __slots__ = ("_stream_time", "follow_stream_time", "now_ms")

    def __init__(self, now_ms: int, *, follow_stream_time: bool = False) -> None:
        self.now_ms = now_ms
        self.follow_stream_time = follow_stream_time
        self._stream_time: Callable[[], int] = _unknown

    def attach(self, stream_time: Callable[[], int]) -> None:
        self._stream_time = stream_time

    def milliseconds(self) -> int:
        if self.follow_stream_time:
            return max(self.now_ms, self._stream_time())
        return self.now_ms
