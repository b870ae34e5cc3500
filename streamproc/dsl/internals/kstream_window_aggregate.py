"""``KStreamWindowAggregate``: a grouped stream aggregated per key and time window (tumbling or hopping).

Each record updates every window it falls in that is still open, i.e. whose end is after ``stream time - grace``
(stream time as this processor has observed it); a record none of whose windows is open is skipped and counted as
dropped ("Skipping record for expired window"). Each update is forwarded at once with key ``Windowed(key, window)``
and the aggregate's timestamp (the largest record timestamp in it). Windowed ``reduce`` is this processor with
:func:`reduce_initializer`/:func:`reduce_aggregator`, ``count`` with the counting aggregator.

``EmitStrategy.onWindowClose`` (emit each window once, when it closes; throttled by wall-clock time) is not built
here: ``suppress(untilWindowCloses)`` covers the same need (:mod:`ktable_suppress_processor`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamproc.dsl.internals.change import Change
from streamproc.dsl.internals.processor_support import (
    Aggregator,
    ContextualProcessor,
    Initializer,
    Reducer,
    forward_change,
    forwards_through_cache,
    record_dropped,
    value_or_none,
)
from streamproc.dsl.internals.windows import TimeWindows
from streamproc.engine.dropped_records import REASON_EXPIRED_WINDOW, REASON_NULL_KEY_OR_VALUE
from streamproc.engine.key_locality import OBSERVED_STREAM_TIME, KeyLocality, StreamTimeNeed, TaskWideKind
from streamproc.engine.processor import ProcessorContext
from streamproc.engine.records import Record
from streamproc.state.stores import TimestampedWindowStore, ValueAndTimestamp, Windowed

#: ``ConsumerRecord.NO_TIMESTAMP``.
NO_TIMESTAMP = -1


def reduce_initializer() -> None:
    """``aggregateBuilder.reduceInitializer``: a window starts empty."""
    return None


def reduce_aggregator(reducer: Reducer) -> Aggregator:
    """``aggregatorForReducer``: the first value of a window is its aggregate, later ones are reduced into it."""

    def aggregate(key: Any, value: Any, aggregate: Any) -> Any:
        return value if aggregate is None else reducer(aggregate, value)

    return aggregate


class KStreamWindowAggregateProcessor(ContextualProcessor):
    def __init__(self, supplier: KStreamWindowAggregate) -> None:
        self.windows = supplier.windows
        self.store_name = supplier.store_name
        self.initializer = supplier.initializer
        self.aggregator = supplier.aggregator
        self.send_old_values = supplier.send_old_values
        self.observed_stream_time = NO_TIMESTAMP
        #: In a key shard of a split task (issue #29): this processor's stream time in the unsplit task, with the
        #: record being processed, given its timestamp (``engine/task_wide_times.py``); the shard sees only its keys'
        #: records.
        self.task_stream_time: Callable[[int], int] | None = None
        self.store: TimestampedWindowStore[Any, Any]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        assert isinstance(store, TimestampedWindowStore), f"{self.store_name} is not a timestamped window store"
        self.store = store
        # a cached store forwards at its flush (state/record_cache.py): the processor sends nothing itself
        self.cached = forwards_through_cache(store, context, self.send_old_values)

    def key_locality(self) -> KeyLocality:
        """Key-local (``fetch_at``/``put`` at the record's key), but which windows are still open depends on this
        processor's ``observedStreamTime``, the running maximum over every key's records that reached it
        (``AbstractKStreamTimeWindowAggregateProcessor#updateObservedStreamTime``; a null key returns before it,
        ``KStreamWindowAggregate#process``). The store's own stream time (the largest window start put) never
        hides an open window: an open window starts after ``stream time - grace - size``, and the store's bound
        is ``its stream time - retention + 1`` with retention ≥ size + grace; only the merged store's expired
        segments depend on it."""
        return KeyLocality.stateful(
            OBSERVED_STREAM_TIME,
            StreamTimeNeed(
                TaskWideKind.STORE_STREAM_TIME,
                "the largest window start put (after the restored value): the merged store deletes the segments "
                "the unsplit task would have deleted",
                self.store_name,
                per_record=False,
            ),
        )

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self, REASON_NULL_KEY_OR_VALUE, "Skipping record due to null key.")
            return
        timestamp = record.timestamp
        task_time = self.task_stream_time
        if task_time is None:
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
        else:
            self.observed_stream_time = task_time(timestamp)
        close_time = self.observed_stream_time - self.windows.grace_period_ms()
        for start, window in self.windows.windows_for(timestamp).items():
            if window.end <= close_time:
                record_dropped(
                    self,
                    REASON_EXPIRED_WINDOW,
                    f"Skipping record for expired window. timestamp=[{timestamp}] window=[{start},{window.end}) "
                    f"expiration=[{close_time}] streamTime=[{self.observed_stream_time}]",
                )
                continue
            old_and_ts: ValueAndTimestamp[Any] | None = self.store.fetch_at(record.key, start)
            old = value_or_none(old_and_ts)
            if old is None or old_and_ts is None:
                old = self.initializer()
                new_timestamp = timestamp
            else:
                new_timestamp = max(timestamp, old_and_ts.timestamp)
            new = self.aggregator(record.key, record.value, old)
            self.store.put(record.key, ValueAndTimestamp.make(new, new_timestamp), start)
            if self.cached:
                continue
            update = Record(Windowed(record.key, window), Change(new, old), new_timestamp, record.headers)
            forward_change(self.context(), update, self.send_old_values)


class KStreamWindowAggregate:
    """``KStreamWindowAggregate(windows, storeName, emitStrategy=onWindowUpdate, initializer, aggregator)``."""

    #: Its store's record cache forwards the updates (``state/record_cache.check_cached_stores``).
    forwards_through_cache = True

    def __init__(self, windows: TimeWindows, store_name: str, initializer: Initializer, aggregator: Aggregator) -> None:
        self.windows = windows
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.send_old_values = False

    def __call__(self) -> KStreamWindowAggregateProcessor:
        return KStreamWindowAggregateProcessor(self)

    def enable_sending_old_values(self, force_materialization: bool = True) -> bool:
        """An aggregation is always materialized: it can always send old values."""
        self.send_old_values = True
        return True

    def store_names(self) -> tuple[str, ...]:
        return (self.store_name,)
