"""``Suppressed``: hold a KTable's updates until its window closes or a time limit passes (4.2)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from streamproc.dsl.options import validate_name


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """``Suppressed.BufferConfig``: the buffer's bounds (``None``: unbounded) and what happens when it is full."""

    max_records: int | None = None
    max_bytes: int | None = None
    shutdown_when_full: bool = False
    logging_enabled: bool = True

    @staticmethod
    def unbounded() -> BufferConfig:
        """``BufferConfig.unbounded()``."""
        return BufferConfig()

    @staticmethod
    def max_records_(count: int) -> BufferConfig:
        """``BufferConfig.maxRecords(n)``: emits early when full."""
        return BufferConfig(max_records=count)

    @staticmethod
    def max_bytes_(count: int) -> BufferConfig:
        """``BufferConfig.maxBytes(n)``."""
        return BufferConfig(max_bytes=count)

    def with_max_records(self, count: int) -> BufferConfig:
        """``withMaxRecords(n)``."""
        return replace(self, max_records=count)

    def with_max_bytes(self, count: int) -> BufferConfig:
        """``withMaxBytes(n)``: the bound on the buffer's size as Kafka counts it (``computeRecordSize``)."""
        return replace(self, max_bytes=count)

    def shut_down_when_full(self) -> BufferConfig:
        """``shutDownWhenFull``: a full buffer stops the task."""
        return replace(self, shutdown_when_full=True)

    def emit_early_when_full(self) -> BufferConfig:
        """``emitEarlyWhenFull``: a full buffer emits its oldest entries early (the default of a bounded buffer)."""
        return replace(self, shutdown_when_full=False)

    def with_logging_disabled(self) -> BufferConfig:
        """``withLoggingDisabled``: no changelog; the buffer starts empty after a restart or a hand-off."""
        return replace(self, logging_enabled=False)


@dataclass(frozen=True, slots=True)
class Suppressed:
    """``Suppressed``: ``until_window_closes`` (final results of a windowed KTable) or ``until_time_limit``."""

    until_window_closes_: bool
    time_limit_ms: int | None
    buffer: BufferConfig
    name: str | None = None

    def __post_init__(self) -> None:
        if self.name is not None:
            validate_name(self.name)

    @staticmethod
    def until_window_closes(buffer: BufferConfig) -> Suppressed:
        """``Suppressed.untilWindowCloses(bufferConfig)`` (a strict, unbounded-by-time buffer)."""
        return Suppressed(True, None, buffer)

    @staticmethod
    def until_time_limit(time_to_wait_ms: int, buffer: BufferConfig) -> Suppressed:
        """``Suppressed.untilTimeLimit(timeToWaitForMoreEvents, bufferConfig)``."""
        return Suppressed(False, time_to_wait_ms, buffer)

    def with_name(self, name: str) -> Suppressed:
        """``withName``: the processor is ``<name>``, its buffer store ``<name>-store``."""
        return replace(self, name=name)
