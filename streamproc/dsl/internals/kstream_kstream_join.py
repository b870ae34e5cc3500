"""``KStreamJoinWindow``, ``KStreamKStreamJoin`` (left and right side) and the ``TimeTracker`` both sides share:
the windowed stream-stream join (inner, left, outer).

Each side's records go first through a ``KStreamJoinWindow`` (forward, then remember the record in this side's
window store, duplicates kept), then to this side's join processor, which joins the record with every record of the
other side's store within ``[t - before, t + after]`` (from the left side's view; the right side mirrors it); a join
result is stamped ``max(t, other t)``. For left/outer joins, a record that found no partner is not emitted at once
(the 3.1+ behaviour, ``enableSpuriousResultFix``): it waits in the shared outer-join store
(``KSTREAM-OUTERSHARED-…-store``) until stream time passes its window end plus grace, and is emitted with a null
partner then, by the next record of either side that advances stream time. A record whose window has already
closed when it arrives is emitted with a null partner at once. A joined partner removes the waiting record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamproc.dsl.internals.outer_join_store import LeftOrRightValue, OuterJoinStore, TimestampedKeyAndJoinSide
from streamproc.dsl.internals.processor_support import ContextualProcessor, ValueJoinerWithKey, record_dropped
from streamproc.dsl.internals.windows import JoinWindows
from streamproc.engine.dropped_records import REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import Forwarding, KeyLocality, StreamTimeNeed, TaskWideKind
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.engine.task_id import TaskId
from streamproc.state.stores import KeyValueStore, WindowStore

_LONG_MAX = (1 << 63) - 1
#: ``InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX`` default.
DEFAULT_EMIT_INTERVAL_MS = 1000


class KStreamJoinWindowProcessor(ContextualProcessor):
    def __init__(self, window_name: str) -> None:
        self.window_name = window_name
        self.window: WindowStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        window = context.get_state_store(self.window_name)
        assert isinstance(window, WindowStore), f"{self.window_name} is not a window store"
        self.window = window

    def key_locality(self) -> KeyLocality:
        """Forwards every record, then puts it at its key. The store's stream time (the largest timestamp put, any
        key) bounds what the other side's join fetches (``its stream time - retention + 1``) and which puts are
        dropped as expired, and its seqnums (counted over every key's puts) are in its store and changelog keys, so
        a shard needs every put the task makes before each of its records (a shard counts the others' puts at its
        gate, ``WindowStore.observe_put``)."""
        return KeyLocality(
            True,
            Forwarding.ONE_TO_ONE,
            needs=(
                StreamTimeNeed(
                    TaskWideKind.STORE_PUTS,
                    "every put of a record with a non-null key that reaches it: the stream time advanced by those "
                    "with a value (by every one in an in-memory store), the changelog seqnum by every one, the "
                    "store seqnum by those with a value",
                    self.window_name,
                ),
            ),
        )

    def process(self, record: Record[Any, Any]) -> None:
        self.context().forward(record)
        if record.key is not None:
            # every record starts its own window; the store is there for its retention
            self.window.put(record.key, record.value, record.timestamp)


class KStreamJoinWindow:
    """``KStreamJoinWindow(windowName)``."""

    def __init__(self, window_name: str) -> None:
        self.window_name = window_name

    def __call__(self) -> KStreamJoinWindowProcessor:
        return KStreamJoinWindowProcessor(self.window_name)


@dataclass
class TimeTracker:
    """``KStreamKStreamJoin.TimeTracker``: the stream time both sides of one task's join see, the oldest waiting
    non-joined record's time, and when the outer-join store may next be scanned (wall clock)."""

    emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS
    stream_time: int = -1
    min_time: int = _LONG_MAX
    next_time_to_emit: int = 0

    def advance_stream_time(self, timestamp: int) -> None:
        self.stream_time = max(self.stream_time, timestamp)

    def update_min_time(self, timestamp: int) -> None:
        self.min_time = min(self.min_time, timestamp)

    def advance_next_time_to_emit(self) -> None:
        self.next_time_to_emit += self.emit_interval_ms


@dataclass
class TimeTrackerSupplier:
    """``TimeTrackerSupplier``: one :class:`TimeTracker` per task, shared by the two join processors."""

    trackers: dict[TaskId, TimeTracker] = field(default_factory=dict)

    def get(self, task_id: TaskId) -> TimeTracker:
        return self.trackers.setdefault(task_id, TimeTracker())

    def remove(self, task_id: TaskId) -> None:
        self.trackers.pop(task_id, None)


class KStreamKStreamJoinProcessor(ContextualProcessor):
    def __init__(self, supplier: KStreamKStreamJoin) -> None:
        self.s = supplier
        self.other_window: WindowStore[Any, Any]
        self.outer_store: OuterJoinStore | None = None
        self.tracker: TimeTracker

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        other = context.get_state_store(self.s.other_window_name)
        assert isinstance(other, WindowStore), f"{self.s.other_window_name} is not a window store"
        self.other_window = other
        self.tracker = self.s.time_trackers.get(context.task_id)
        if self.s.windows.spurious_result_fix and self.s.outer_join_store_name is not None:
            store = context.get_state_store(self.s.outer_join_store_name)
            assert isinstance(store, KeyValueStore), f"{self.s.outer_join_store_name} is not a key-value store"
            self.outer_store = OuterJoinStore(store)
            self.tracker.emit_interval_ms = self.s.emit_interval_ms

    def key_locality(self) -> KeyLocality:
        """An inner join (or a left/outer one without the spurious-result fix) fetches the other side's window
        store at the record's key only (the other store's stream time is declared by the processor that puts into
        it). A left/outer join with the fix is not key-local: its waiting records are emitted when a record of
        *any* key advances the shared stream time past their window (``emitNonJoinedOuterRecords`` iterates the
        whole shared store, throttled by the wall clock), like suppress."""
        s = self.s
        if s.windows.spurious_result_fix and s.outer_join_store_name is not None:
            return KeyLocality.not_key_local(
                f"left/outer stream-stream join: records without a partner wait in {s.outer_join_store_name} and "
                "are emitted when a record of any key advances the join's shared stream time past their window "
                "(emitNonJoinedOuterRecords scans the whole store)"
            )
        return KeyLocality.stateful()

    def process(self, record: Record[Any, Any]) -> None:
        s = self.s
        timestamp = record.timestamp
        tracker = self.tracker
        tracker.advance_stream_time(timestamp)
        if s.outer and record.key is None and record.value is not None:
            self.context().forward(record.with_value(self._join(record.key, record.value, None)))
            return
        if record.key is None or record.value is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key or value.")
            return
        if timestamp == tracker.stream_time and self.outer_store is not None:
            self._emit_non_joined(record)
        time_from = max(0, timestamp - s.join_before_ms)
        time_to = max(0, timestamp + s.join_after_ms)
        others = list(self.other_window.fetch(record.key, time_from, time_to))
        for other_timestamp, other_value in others:
            if self.outer_store is not None:
                self.outer_store.put_if_absent(
                    TimestampedKeyAndJoinSide(record.key, other_timestamp, not s.left_side), None
                )
            self.context().forward(
                record.with_value(self._join(record.key, record.value, other_value)).with_timestamp(
                    max(timestamp, other_timestamp)
                )
            )
        if s.outer and not others:
            if self.outer_store is None or time_to < tracker.stream_time:
                self.context().forward(record.with_value(self._join(record.key, record.value, None)))
            else:
                tracker.update_min_time(timestamp)
                make = LeftOrRightValue.make_left if s.left_side else LeftOrRightValue.make_right
                side_value = make(record.value)
                self.outer_store.put(TimestampedKeyAndJoinSide(record.key, timestamp, s.left_side), side_value)

    def _join(self, key: Any, this_value: Any, other_value: Any) -> Any:
        """The joiner with the left stream's value first, whichever side this processor is."""
        if self.s.left_side:
            return self.s.joiner(key, this_value, other_value)
        return self.s.joiner(key, other_value, this_value)

    def _window_open(self, key: TimestampedKeyAndJoinSide[Any]) -> bool:
        look_back = self.s.windows.after_ms if key.left_side else self.s.windows.before_ms
        return self.tracker.min_time + look_back + self.s.windows.grace_ms >= self.tracker.stream_time

    def _emit_non_joined(self, record: Record[Any, Any]) -> None:
        """``emitNonJoinedOuterRecords``: emit, oldest first, the waiting records whose window has closed."""
        tracker = self.tracker
        store = self.outer_store
        assert store is not None
        if tracker.min_time + self.s.join_after_ms + self.s.windows.grace_ms >= tracker.stream_time:
            return
        now = self.context().current_system_time_ms()
        if now < tracker.next_time_to_emit:
            return
        tracker.next_time_to_emit = now
        tracker.advance_next_time_to_emit()
        tracker.min_time = _LONG_MAX
        previous: TimestampedKeyAndJoinSide[Any] | None = None
        left_open = right_open = False
        for key, value in list(store.all()):
            tracker.min_time = key.timestamp
            if left_open and right_open:
                break
            if self._window_open(key):
                if key.left_side:
                    left_open = True
                else:
                    right_open = True
                continue
            joined = self.s.joiner(key.key, value.left_value, value.right_value)
            self.context().forward(record.with_key(key.key).with_value(joined).with_timestamp(key.timestamp))
            if previous is not None and previous != key:
                store.put(previous, None)
            previous = key
        if previous is not None:
            store.put(previous, None)

    def close(self) -> None:
        if self._context is not None:
            self.s.time_trackers.remove(self._context.task_id)


class KStreamKStreamJoin:
    """``KStreamKStreamJoinLeftSide``/``RightSide``: one side's join processor.

    ``join_before_ms``/``join_after_ms`` are this side's view (the right side swaps the windows' before and after);
    ``outer`` says whether this side's unmatched records are emitted with a null partner; ``joiner`` always takes
    the left stream's value first. Both sides share ``time_trackers`` and, for left/outer joins,
    ``outer_join_store_name``.
    """

    def __init__(
        self,
        other_window_name: str,
        windows: JoinWindows,
        joiner: ValueJoinerWithKey,
        *,
        left_side: bool,
        outer: bool,
        outer_join_store_name: str | None,
        time_trackers: TimeTrackerSupplier,
        emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS,
    ) -> None:
        self.other_window_name = other_window_name
        self.windows = windows
        self.joiner = joiner
        self.left_side = left_side
        self.outer = outer
        self.outer_join_store_name = outer_join_store_name
        self.time_trackers = time_trackers
        self.emit_interval_ms = emit_interval_ms
        self.join_before_ms = windows.before_ms if left_side else windows.after_ms
        self.join_after_ms = windows.after_ms if left_side else windows.before_ms

    def __call__(self) -> KStreamKStreamJoinProcessor:
        return KStreamKStreamJoinProcessor(self)
