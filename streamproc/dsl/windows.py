"""Window specifications: ``TimeWindows``, ``SlidingWindows``, ``SessionWindows``, ``JoinWindows`` (4.2).

Durations are milliseconds. Kafka's validation messages are kept; the defaults Kafka deprecates (a 24 h grace when
none is given) are not offered: use ``of_size_and_grace`` or ``of_size_with_no_grace`` as in 4.x.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from streamproc.errors import TopologyError

#: ``Windows.DEFAULT_GRACE_PERIOD_MS`` is not used; ``NO_GRACE_PERIOD`` is 0.
NO_GRACE_PERIOD_MS = 0


def _not_negative(value: int, what: str) -> int:
    if value < 0:
        raise TopologyError(f"{what} must not be negative.")
    return value


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """``TimeWindows``: tumbling (advance = size) or hopping windows with a grace period."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    @staticmethod
    def of_size_and_grace(size_ms: int, grace_ms: int) -> TimeWindows:
        """``TimeWindows.ofSizeAndGrace``."""
        if size_ms <= 0:
            raise TopologyError("Window size (sizeMs) must be larger than zero.")
        _not_negative(grace_ms, "Grace period")
        return TimeWindows(size_ms, size_ms, grace_ms)

    @staticmethod
    def of_size_with_no_grace(size_ms: int) -> TimeWindows:
        """``TimeWindows.ofSizeWithNoGrace``."""
        return TimeWindows.of_size_and_grace(size_ms, NO_GRACE_PERIOD_MS)

    def advance_by(self, advance_ms: int) -> TimeWindows:
        """``advanceBy``: a hopping window."""
        if advance_ms <= 0 or advance_ms > self.size_ms:
            raise TopologyError(
                f"Window advancement interval should be more than zero and less than window duration which is "
                f"{self.size_ms} ms, but given advancement interval is: {advance_ms} ms"
            )
        return replace(self, advance_ms=advance_ms)

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """``SlidingWindows``: windows of a maximum time difference, with a grace period."""

    time_difference_ms: int
    grace_ms: int

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> SlidingWindows:
        """``SlidingWindows.ofTimeDifferenceAndGrace``."""
        _not_negative(time_difference_ms, "Window time difference")
        _not_negative(grace_ms, "Window grace")
        return SlidingWindows(time_difference_ms, grace_ms)

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> SlidingWindows:
        return SlidingWindows.of_time_difference_and_grace(time_difference_ms, NO_GRACE_PERIOD_MS)

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """``SessionWindows``: sessions closed after an inactivity gap, with a grace period."""

    inactivity_gap_ms: int
    grace_ms: int

    @staticmethod
    def of_inactivity_gap_and_grace(gap_ms: int, grace_ms: int) -> SessionWindows:
        """``SessionWindows.ofInactivityGapAndGrace``."""
        if gap_ms <= 0:
            raise TopologyError("Gap time cannot be zero or negative.")
        _not_negative(grace_ms, "Grace period")
        return SessionWindows(gap_ms, grace_ms)

    @staticmethod
    def of_inactivity_gap_with_no_grace(gap_ms: int) -> SessionWindows:
        return SessionWindows.of_inactivity_gap_and_grace(gap_ms, NO_GRACE_PERIOD_MS)

    def grace_period_ms(self) -> int:
        return self.grace_ms


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """``JoinWindows``: records join when their timestamps differ by at most ``before``/``after``."""

    before_ms: int
    after_ms: int
    grace_ms: int

    @staticmethod
    def of_time_difference_and_grace(time_difference_ms: int, grace_ms: int) -> JoinWindows:
        """``JoinWindows.ofTimeDifferenceAndGrace``."""
        _not_negative(time_difference_ms, "timeDifference")
        _not_negative(grace_ms, "afterWindowEnd")
        return JoinWindows(time_difference_ms, time_difference_ms, grace_ms)

    @staticmethod
    def of_time_difference_with_no_grace(time_difference_ms: int) -> JoinWindows:
        return JoinWindows.of_time_difference_and_grace(time_difference_ms, NO_GRACE_PERIOD_MS)

    def before(self, before_ms: int) -> JoinWindows:
        return replace(self, before_ms=before_ms)

    def after(self, after_ms: int) -> JoinWindows:
        return replace(self, after_ms=after_ms)

    def size_ms(self) -> int:
        """``JoinWindows#size``: before + after."""
        return self.before_ms + self.after_ms

    def grace_period_ms(self) -> int:
        return self.grace_ms
