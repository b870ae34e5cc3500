"""``KStreamSlidingWindowAggregate``: a grouped stream aggregated over sliding windows (``SlidingWindows``).

A window ``[start, start + d]`` (both ends in) exists for each distinct set of records that can share one: every
record ``t`` gets a left window ``[t - d, t]`` and, when a later record of its key is within ``d``, a right window
``[t + 1, t + 1 + d]``; each record updates every existing window it falls in. A record whose left window already
closed (``t + d < stream time - grace``) is dropped as late; windows are updated only while open. Records earlier than
``d`` (no negative starts) all go into ``[0, d]`` (``processEarly``). Updates are forwarded at once, as the time-window
aggregate does. This mirrors Kafka's reverse-iteration path (RocksDB and in-memory stores both iterate backwards).
"""

from __future__ import annotations

from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    Aggregator,
    ContextualProcessor,
    Initializer,
    forward_change,
    record_dropped,
    value_or_none,
)
from streamproc.dsl.internals.windows import SlidingWindows
from streamproc.engine.dropped_records import REASON_EXPIRED_WINDOW, REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import KeyLocality
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.errors import ProcessingError
from streamproc.state.stores import TimestampedWindowStore, TimeWindow, ValueAndTimestamp, Windowed

NO_TIMESTAMP = -1
Agg = ValueAndTimestamp[Any]


class KStreamSlidingWindowAggregateProcessor(ContextualProcessor):
    def __init__(self, supplier: KStreamSlidingWindowAggregate) -> None:
        self.s = supplier
        self.d = supplier.windows.time_difference_ms
        self.observed_stream_time = NO_TIMESTAMP
        self.store: TimestampedWindowStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.s.store_name)
        assert isinstance(store, TimestampedWindowStore), f"{self.s.store_name} is not a timestamped window store"
        self.store = store

    def key_locality(self) -> KeyLocality:
        """Not splittable yet, although it reads its own key only: a record at ``t`` fetches ``[t - 2d, t + 1]``
        from a store that returns nothing before ``its stream time - retention + 1`` (``getActualFrom``), and that
        stream time is the largest window start put by any key, a right window ``t' + 1`` included, which exists
        only when the key had a later record within ``d`` of ``t'``: per-key state, so no value computed before the
        split reproduces it. With the default retention (2d + grace) a fetch of a record that is not late can reach
        below the bound; a retention of at least 3d + grace + 2 would keep every fetch above it (not recognised
        yet)."""
        return KeyLocality.not_key_local(
            f"sliding-window aggregate: its fetches are bounded by the window store {self.s.store_name}'s stream "
            "time, the largest window start any key put (right windows included, which depend on each key's "
            "records), so it cannot be computed before a split by key"
        )

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None or record.value is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key or value.")
            return
        timestamp = record.timestamp
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        close_time = self.observed_stream_time - self.s.windows.grace_period_ms()
        if timestamp + self.d < close_time:
            self._late(timestamp, timestamp, timestamp + self.d, close_time)
            return
        if timestamp < self.d:
            self._process_early(record, close_time)
        else:
            self._process_reverse(record, close_time)

    def _late(self, timestamp: int, start: int, end: int, close_time: int) -> None:
        record_dropped(
            self,
            REASON_EXPIRED_WINDOW,
            f"Skipping record for expired window. timestamp=[{timestamp}] window=[{start},{end}] "
            f"expiration=[{close_time}] streamTime=[{self.observed_stream_time}]",
        )

    def _windows(self, key: Any, time_from: int, time_to: int, *, backward: bool) -> list[tuple[int, Agg]]:
        found = list(self.store.fetch(key, time_from, time_to))
        return found[::-1] if backward else found

    def _process_reverse(self, record: Record[Any, Any], close_time: int) -> None:
        t, d = record.timestamp, self.d
        starts: set[int] = set()
        left_agg: Agg | None = None
        right_agg: Agg | None = None
        left_created = right_created = False
        previous: int | None = None
        for start, agg in self._windows(record.key, max(0, t - 2 * d), t + 1, backward=True):
            starts.add(start)
            end = start + d
            if start == t + 1:
                right_created = True
            elif end > t:
                if right_agg is None:
                    right_agg = agg
                self._update(TimeWindow(start, end), agg, record, close_time)
            elif end == t:
                left_created = True
                self._update(TimeWindow(start, end), agg, record, close_time)
                if agg.timestamp < t:
                    previous = agg.timestamp
                else:
                    return
            elif end < t:
                left_agg = agg
                previous = agg.timestamp
                break
            else:
                raise ProcessingError("Unexpected window found when processing sliding windows")
        self._create_windows(record, close_time, starts, right_agg, left_agg, left_created, right_created, previous)

    def _process_early(self, record: Record[Any, Any], close_time: int) -> None:
        t, d = record.timestamp, self.d
        combined: tuple[int, Agg] | None = None
        right_agg: Agg | None = None
        right_created = False
        starts: set[int] = set()
        previous: int | None = None
        for start, agg in self._windows(record.key, 0, t + 1, backward=False):
            starts.add(start)
            if start == 0:
                combined = (start, agg)
                if agg.timestamp < t:
                    previous = agg.timestamp
            elif start <= t:
                right_agg = agg
                self._update(TimeWindow(start, start + d), agg, record, close_time)
            elif start == t + 1:
                right_created = True
            else:
                raise ProcessingError("Unexpected window found when processing sliding windows")
        if right_agg is None and combined is not None and combined[1].timestamp > t:
            right_agg = combined[1]
        if not right_created and self._right_not_empty(right_agg, t):
            assert right_agg is not None
            self._create_current_right(t, right_agg, record)
        if previous is not None and previous + 1 not in starts:
            self._create_previous_right(previous + 1, record, close_time)
        if combined is None:
            self._update(TimeWindow(0, d), ValueAndTimestamp(self.s.initializer(), t), record, close_time)
        else:
            self._update(TimeWindow(0, d), combined[1], record, close_time)

    def _create_windows(
        self,
        record: Record[Any, Any],
        close_time: int,
        starts: set[int],
        right_agg: Agg | None,
        left_agg: Agg | None,
        left_created: bool,
        right_created: bool,
        previous: int | None,
    ) -> None:
        t, d = record.timestamp, self.d
        if previous is not None:
            previous_right_start = previous + 1
            if previous_right_start not in starts and previous_right_start + d >= t:
                self._create_previous_right(previous_right_start, record, close_time)
        if not left_created:
            if previous is not None and t - d <= previous and left_agg is not None:
                value = ValueAndTimestamp.make(left_agg.value, t)
            else:
                value = ValueAndTimestamp.make(self.s.initializer(), t)
            self._update(TimeWindow(t - d, t), value, record, close_time)
        if not right_created and self._right_not_empty(right_agg, t):
            assert right_agg is not None
            self._create_current_right(t, right_agg, record)

    @staticmethod
    def _right_not_empty(right_agg: Agg | None, t: int) -> bool:
        return right_agg is not None and right_agg.timestamp > t

    def _create_current_right(self, t: int, right_agg: Agg, record: Record[Any, Any]) -> None:
        window = TimeWindow(t + 1, t + 1 + self.d)
        self.store.put(record.key, right_agg, window.start)
        self._forward(record, window, None, right_agg.value, right_agg.timestamp)

    def _create_previous_right(self, start: int, record: Record[Any, Any], close_time: int) -> None:
        value = ValueAndTimestamp.make(self.s.initializer(), record.timestamp)
        self._update(TimeWindow(start, start + self.d), value, record, close_time)

    def _update(self, window: TimeWindow, value: Agg | None, record: Record[Any, Any], close_time: int) -> None:
        if window.end < close_time:
            self._late(record.timestamp, window.start, window.end, close_time)
            return
        old = value_or_none(value)
        new = self.s.aggregator(record.key, record.value, old)
        timestamp = record.timestamp if old is None or value is None else max(record.timestamp, value.timestamp)
        self.store.put(record.key, ValueAndTimestamp.make(new, timestamp), window.start)
        self._forward(record, window, old, new, timestamp)

    def _forward(self, record: Record[Any, Any], window: TimeWindow, old: Any, new: Any, timestamp: int) -> None:
        update = Record(Windowed(record.key, window), Change(new, old), timestamp, record.headers)
        forward_change(self.context(), update, self.s.send_old_values)


class KStreamSlidingWindowAggregate:
    """``KStreamSlidingWindowAggregate(windows, storeName, emitStrategy=onWindowUpdate, initializer, aggregator)``.

    The store is a timestamped window store of window size ``d`` and retention ``2 d + grace``."""

    def __init__(
        self, windows: SlidingWindows, store_name: str, initializer: Initializer, aggregator: Aggregator
    ) -> None:
        self.windows = windows
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False

    def __call__(self) -> KStreamSlidingWindowAggregateProcessor:
        return KStreamSlidingWindowAggregateProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool = True) -> bool:
        self.send_old_values = True
        return True
