"""``KStreamSessionWindowAggregate``: a grouped stream aggregated per key and session.

A record at ``t`` merges every session of its key that ends at or after ``t - gap`` and starts at or before
``t + gap`` into one session (``merger`` folds their aggregates, starting from the initializer's value), then adds
itself with ``aggregator``. Sessions that were merged away are removed from the store and a tombstone
(``Change(None, old)``) is forwarded for each, then the merged session's new aggregate; every forwarded record's
timestamp is its session's end. A record whose merged session would end before ``stream time - grace - gap`` is
skipped as late.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    Aggregator,
    ContextualProcessor,
    Initializer,
    Merger,
    forward_change,
    record_dropped,
)
from streamproc.dsl.internals.windows import SessionWindows
from streamproc.engine.dropped_records import REASON_EXPIRED_WINDOW, REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import OBSERVED_STREAM_TIME, KeyLocality, StreamTimeNeed, TaskWideKind
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import SessionStore, TimeWindow, Windowed

NO_TIMESTAMP = -1


class KStreamSessionWindowAggregateProcessor(ContextualProcessor):
    def __init__(self, supplier: KStreamSessionWindowAggregate) -> None:
        self.windows = supplier.windows
        self.store_name = supplier.store_name
        self.initializer = supplier.initializer
        self.aggregator = supplier.aggregator
        self.merger = supplier.merger
        self.send_old_values = supplier.send_old_values
        self.observed_stream_time = NO_TIMESTAMP
        #: In a key shard of a split task (issue #29, ``engine/task_wide_times.py``): this processor's stream time
        #: in the unsplit task with the record being processed (given its timestamp), and before it (what the store's
        #: is then: see :meth:`key_locality`); the shard sees only its keys' records.
        self.task_stream_time: Callable[[int], int] | None = None
        self.task_stream_time_before: Callable[[], int] | None = None
        self.store: SessionStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        assert isinstance(store, SessionStore), f"{self.store_name} is not a session store"
        self.store = store

    def key_locality(self) -> KeyLocality:
        """Key-local: a merge reads and removes other sessions of the *same* key only (``find_sessions(key, ...)``).
        Two task-wide times decide what it does: this processor's ``observedStreamTime`` (late records), and the
        session store's, which bounds ``find_sessions`` at ``its stream time - retention + 1`` (a session of this
        key that ended just before that bound is not merged). Before a record, the store's equals ``max(restored,
        this processor's before the record)``: the record that advances stream time is never late, so it puts a
        session ending at its timestamp, and no put ends later. A handled exception in the initializer, merger or
        aggregator of that record would break this: a split task whose shard handled one here runs unsplit
        (``TaskStreamTimes.watch_handled``)."""
        return KeyLocality.stateful(
            OBSERVED_STREAM_TIME,
            StreamTimeNeed(
                TaskWideKind.STORE_STREAM_TIME,
                "max(the store's restored stream time, the processor stream time at the record)",
                self.store_name,
            ),
        )

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key.")
            return
        timestamp = record.timestamp
        gap = self.windows.inactivity_gap_ms
        task_time = self.task_stream_time
        if task_time is None:
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
        else:  # a key shard: the unsplit task's times; its store's before this record is max(restored, processor's)
            self.observed_stream_time = task_time(timestamp)
            assert self.task_stream_time_before is not None
            before = self.task_stream_time_before()
            segments = self.store.segments
            if before > segments.observed_stream_time:
                segments.observed_stream_time = before
        close_time = self.observed_stream_time - self.windows.grace_period_ms() - gap
        new_window = TimeWindow(timestamp, timestamp)
        merged_window = new_window
        aggregate = self.initializer()
        merged = list(self.store.find_sessions(record.key, timestamp - gap, timestamp + gap))
        for session, value in merged:
            aggregate = self.merger(record.key, aggregate, value)
            merged_window = TimeWindow(
                min(merged_window.start, session.window.start), max(merged_window.end, session.window.end)
            )
        if merged_window.end < close_time:
            record_dropped(
                self,
                REASON_EXPIRED_WINDOW,
                f"Skipping record for expired window. timestamp=[{timestamp}] "
                f"window=[{merged_window.start},{merged_window.end}] expiration=[{close_time}] "
                f"streamTime=[{self.observed_stream_time}]",
            )
            return
        if merged_window != new_window:
            for session, value in merged:
                self.store.remove(session)
                self._forward(session, None, value)
        aggregate = self.aggregator(record.key, record.value, aggregate)
        session_key = Windowed(record.key, merged_window)
        self.store.put(session_key, aggregate)
        self._forward(session_key, aggregate, None)

    def _forward(self, session: Windowed[Any], new: Any, old: Any) -> None:
        """A new record (no headers), stamped with the session's end (``SessionCacheFlushListener``)."""
        forward_change(self.context(), Record(session, Change(new, old), session.window.end), self.send_old_values)


class KStreamSessionWindowAggregate:
    """``KStreamSessionWindowAggregate(windows, storeName, emitStrategy=onWindowUpdate, initializer, aggregator,
    sessionMerger)``."""

    def __init__(
        self,
        windows: SessionWindows,
        store_name: str,
        initializer: Initializer,
        aggregator: Aggregator,
        merger: Merger,
    ) -> None:
        self.windows = windows
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.merger = merger
        self.send_old_values = False

    def __call__(self) -> KStreamSessionWindowAggregateProcessor:
        return KStreamSessionWindowAggregateProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool = True) -> bool:
        """An aggregation is always materialized: it can always send old values."""
        self.send_old_values = True
        return True
