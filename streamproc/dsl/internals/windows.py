"""The window specifications the DSL's windowed processors take (``kstream.TimeWindows``, ``SessionWindows``,
``SlidingWindows``, ``JoinWindows``), with Kafka Streams' arithmetic: which windows a timestamp falls in, and how long
a window stays open for late records (its grace period).

They are values (frozen), built with the factories of the Java class they mirror; the DSL API re-exports them
rather than defining its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.errors import ConfigError
from streamproc.state.stores import TimeWindow

#: ``Windows.DEPRECATION_DEFAULT_GRACE_PERIOD`` is gone in 4.x; "no grace" is 0.
NO_GRACE_PERIOD_MS = 0


def _not_negative(value: int, what: str) -> int:
    if value < 0:
        raise ConfigError(f"{what} must not be negative.")
    return value


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """``kstream.TimeWindows``: windows of ``size_ms`` starting every ``advance_ms`` (tumbling when equal)."""

    size_ms: int
    advance_ms: int
    grace_ms: int = NO_GRACE_PERIOD_MS

    @staticmethod
    def of_size_with_no_grace(size_ms: int) -> TimeWindows:
        """``TimeWindows.ofSizeWithNoGrace``."""
        return TimeWindows.of_size_and_grace(size_ms, NO_GRACE_PERIOD_MS)

    @staticmethod
    def of_size_and_grace(size_ms: int, grace_ms: int) -> TimeWindows:
        """``TimeWindows.ofSizeAndGrace``."""
        if size_ms <= 0:
            raise ConfigError("Window size (sizeMs) must be larger than zero.")
        return TimeWindows(size_ms, size_ms, _not_negative(grace_ms, "Grace period (afterWindowEnd)"))

    def advance_by(self, advance_ms: int) -> TimeWindows:
        """``advanceBy``: hopping windows."""
        if advance_ms <= 0 or advance_ms > self.size_ms:
            raise ConfigError(
                f"Window advancement interval should be more than zero and less than window duration which is "
                f"{self.size_ms} ms, but given advancement interval is: {advance_ms} ms"
            )
        return TimeWindows(self.size_ms, advance_ms, self.grace_ms)

    def windows_for(self, timestamp: int) -> dict[int, TimeWindow]:
        """``windowsFor``: every window containing ``timestamp``, by start, oldest first."""
        advance = self.advance_ms
        start = (max(0, timestamp - self.size_ms + advance) // advance) * advance
        windows: dict[int, TimeWindow] = {}
        while start <= timestamp:
            windows[start] = TimeWindow(start, start + self.size_ms)
            start += advance
        return windows

    def size(self) -> int:
        return self.size_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """``kstream.SessionWindows``: a session closes after ``inactivity_gap_ms`` without a record of its key."""

    inactivity_gap_ms: int
    grace_ms: int = NO_GRACE_PERIOD_MS

    @staticmethod
    def of_inactivity_gap_with_no_grace(gap_ms: int) -> SessionWindows:
        """``SessionWindows.ofInactivityGapWithNoGrace``."""
        return SessionWindows.of_inactivity_gap_and_grace(gap_ms, NO_GRACE_PERIOD_MS)

    @staticmethod
    def of_inactivity_gap_and_grace(gap_ms: int, grace_ms: int) -> SessionWindows:
        """``SessionWindows.ofInactivityGapAndGrace``."""
        if gap_ms <= 0:
            raise ConfigError("Gap time cannot be zero or negative.")
        return SessionWindows(gap_ms, _not_negative(grace_ms, "Grace period (afterWindowEnd)"))

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """``kstream.SlidingWindows``: a window of ``time_difference_ms`` (both ends in) ends at each record."""

    time_difference_ms: int
    grace_ms: int = NO_GRACE_PERIOD_MS

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> SlidingWindows:
        return SlidingWindows.of_time_difference_and_grace(time_difference_ms, NO_GRACE_PERIOD_MS)

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> SlidingWindows:
        _not_negative(time_difference_ms, "Window time difference")
        return SlidingWindows(time_difference_ms, _not_negative(grace_ms, "Window grace"))

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """``kstream.JoinWindows``: a record joins the other side's records from ``before_ms`` earlier to ``after_ms``
    later; with a grace period, left/outer joins hold non-joined records until the window closes (the 3.1+ fix)."""

    before_ms: int
    after_ms: int
    grace_ms: int = NO_GRACE_PERIOD_MS
    #: ``enableSpuriousResultFix``: True for the ``of*Grace`` factories, which all 4.x programs use.
    spurious_result_fix: bool = True

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> JoinWindows:
        return JoinWindows.of_time_difference_and_grace(time_difference_ms, NO_GRACE_PERIOD_MS)

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> JoinWindows:
        _not_negative(time_difference_ms, "Window time difference")
        return JoinWindows(time_difference_ms, time_difference_ms, _not_negative(grace_ms, "Grace period"))

    def before(self, before_ms: int) -> JoinWindows:
        """``before``: how far back the other side's records join."""
        if before_ms + self.after_ms < 0:
            raise ConfigError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        return JoinWindows(before_ms, self.after_ms, self.grace_ms, self.spurious_result_fix)

    def after(self, after_ms: int) -> JoinWindows:
        """``after``: how far ahead the other side's records join."""
        if self.before_ms + after_ms < 0:
            raise ConfigError("Window interval (ie, beforeMs+afterMs) must not be negative.")
        return JoinWindows(self.before_ms, after_ms, self.grace_ms, self.spurious_result_fix)

    def size(self) -> int:
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms
