"""The per-task ``dropped-records`` sensor, with the reason and position of every drop (ordering.md DR-1, DR-3).

Kafka Streams' ``TaskMetrics.droppedRecordsSensor`` only counts; streamproc also keeps each drop's topic, partition,
offset, reason and how many records the task had fully processed when it happened, for the run report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

REASON_DESERIALIZATION = "deserialization"
REASON_NEGATIVE_TIMESTAMP = "negative_timestamp"
REASON_PROCESSING_EXCEPTION = "processing_exception"
REASON_PUNCTUATION_EXCEPTION = "punctuation_exception"
#: A DSL processor skipped the record: a null key (or value) it cannot group or join by (``Skipping record due to
#: null key``).
REASON_NULL_KEY_OR_VALUE = "null_key_or_value"
#: A windowed DSL processor skipped a record whose windows had all closed (``Skipping record for expired window``).
REASON_EXPIRED_WINDOW = "expired_window"
#: A window or session store refused a put into an expired segment (``AbstractRocksDBSegmentedBytesStore#put``,
#: ``InMemoryWindowStore#put``: "Skipping record for expired segment"): a stream-stream join's late record.
REASON_EXPIRED_SEGMENT = "expired_segment"
#: A decoded value failed its source's pandera schema and the processing handler said continue (streamproc's own).
REASON_VALIDATION = "validation"
#: Every reason a drop is recorded under (the run report's schema accepts exactly these).
REASONS = (
    REASON_DESERIALIZATION,
    REASON_NEGATIVE_TIMESTAMP,
    REASON_PROCESSING_EXCEPTION,
    REASON_PUNCTUATION_EXCEPTION,
    REASON_VALIDATION,
    REASON_NULL_KEY_OR_VALUE,
    REASON_EXPIRED_WINDOW,
    REASON_EXPIRED_SEGMENT,
)


@dataclass(frozen=True, slots=True)
class DroppedRecord:
    """One drop. ``topic`` is ``None`` (partition/offset -1) for a punctuator's exception."""

    topic: str | None
    partition: int
    offset: int
    reason: str
    records_processed: int


class DroppedRecordsSensor:
    """Counts drops per reason and, unless ``keep_events`` is false, remembers each one in order."""

    __slots__ = ("_counts", "_events", "_keep_events", "_records_processed", "observer")

    def __init__(self, records_processed: Callable[[], int], *, keep_events: bool = True) -> None:
        self._records_processed = records_processed
        self._keep_events = keep_events
        self._counts: Counter[str] = Counter()
        self._events: list[DroppedRecord] = []
        #: Sees every drop before it counts and answers whether it counts here at all: a key shard of a split task
        #: (``engine/key_shards.py``) keeps only the drops that are its own and remembers where each happened.
        self.observer: Callable[[DroppedRecord], bool] | None = None

    def record(self, topic: str | None, partition: int, offset: int, reason: str) -> None:
        observer = self.observer
        if observer is not None:
            event = DroppedRecord(topic, partition, offset, reason, self._records_processed())
            if not observer(event):
                return
            self._counts[reason] += 1
            if self._keep_events:
                self._events.append(event)
            return
        self._counts[reason] += 1
        if self._keep_events:
            self._events.append(DroppedRecord(topic, partition, offset, reason, self._records_processed()))

    @property
    def total(self) -> int:
        return sum(self._counts.values())

    @property
    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    @property
    def events(self) -> tuple[DroppedRecord, ...]:
        return tuple(self._events)
