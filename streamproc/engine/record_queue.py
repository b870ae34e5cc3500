"""``RecordQueue``: the buffer of one input partition of a task (ordering.md RQ-1..RQ-9).

Mirrors ``org.apache.kafka.streams.processor.internals.RecordQueue`` (4.2.0). The FIFO holds *raw* records; only
the head is deserialized and timestamped, lazily, when the previous head is polled (RQ-9), with the partition time
*before* that head (RQ-4). Undeserializable records (RESUME) and negative extracted timestamps are dropped there;
when a run of drops empties the FIFO a ``CorruptedRecord`` placeholder of the last one is left (RQ-6). Partition
time is the maximum polled timestamp and never goes backwards during processing (RQ-7).

For bounded replays a *refill* callback can be attached: it is asked for more raw records whenever the FIFO runs
empty, so the queue is never seen empty (by ``is_empty``, ``size`` or ``updateHead``'s loop) while its source still
has records. The order is then the same as if every record had been added up front (D-1).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.dropped_records import REASON_NEGATIVE_TIMESTAMP, DroppedRecordsSensor
from streamproc.engine.processor_topology import SourceNode
from streamproc.engine.record_deserializer import RecordDeserializer
from streamproc.engine.records import ConsumerRecord, TopicPartition
from streamproc.engine.stamped_record import StampedRecord
from streamproc.engine.timestamp_extractor import TimestampExtractor, extractor_name
from streamproc.errors import StreamprocError, StreamsError

#: ``RecordQueue.UNKNOWN`` = ``ConsumerRecord.NO_TIMESTAMP``: no head, no partition time.
UNKNOWN = -1

#: Reason given to ``StreamsError`` when a timestamp extractor raises something else than a streamproc error.
REASON_EXTRACTOR_ERROR = "extractor_error"

RawRecord = ConsumerRecord[bytes | None, bytes | None]
#: Returns the next raw records of the partition (at most the buffer size); empty once the partition is exhausted.
Refill = Callable[[], Iterable[RawRecord]]


class RecordQueue:
    """One partition's queue: FIFO of raw records, a timestamped head, and the partition time."""

    __slots__ = (
        "_deserializer",
        "_dropped",
        "_extractor",
        "_extractor_name",
        "_fifo",
        "_head",
        "_log",
        "_refill",
        "head_timestamp",
        "partition",
        "partition_time",
    )

    def __init__(
        self,
        partition: TopicPartition,
        deserializer: RecordDeserializer,
        extractor: TimestampExtractor,
        dropped: DroppedRecordsSensor,
        log: logging.LoggerAdapter[Any],
    ) -> None:
        self.partition = partition
        self._deserializer = deserializer
        self._extractor = extractor
        self._extractor_name = extractor_name(extractor)
        self._dropped = dropped
        self._log = log
        self._fifo: deque[RawRecord] = deque()
        self._head: StampedRecord | None = None
        #: The head's timestamp, or ``UNKNOWN``: the heap key (``headRecordTimestamp``), kept as a plain attribute.
        self.head_timestamp = UNKNOWN
        self.partition_time = UNKNOWN
        self._refill: Refill | None = None

    @property
    def source(self) -> SourceNode:
        """The source node whose deserializers (and extractor) this queue uses; records go to it."""
        return self._deserializer.source

    def set_refill(self, refill: Refill | None) -> None:
        """Attach the callback asked for more records whenever the FIFO runs empty (bounded replay)."""
        self._refill = refill

    def add_raw_records(self, records: Iterable[RawRecord]) -> int:
        """Append a batch, deserialize/extract a head if there is none (RQ-2), return ``size()``."""
        self._fifo.extend(records)
        if self._head is None:
            self._update_head()
        return self.size()

    def poll(self) -> StampedRecord:
        """Hand out the head, raise the partition time, and prepare the next head (which may drop or fail)."""
        record = self._head
        if record is None:
            raise IndexError(f"poll() on the empty record queue of {self.partition}")
        self._head = None
        self.head_timestamp = UNKNOWN
        if record.timestamp > self.partition_time:
            self.partition_time = record.timestamp
        self._update_head()
        return record

    def size(self) -> int:
        """Buffered records, head included (with a refill callback: those in memory, not the whole partition)."""
        return len(self._fifo) + (0 if self._head is None else 1)

    def is_empty(self) -> bool:
        return self._head is None and not self._fifo

    def head_record_timestamp(self) -> int:
        return self.head_timestamp

    def head_record_offset(self) -> int | None:
        return None if self._head is None else self._head.offset

    def head_record(self) -> StampedRecord | None:
        return self._head

    def set_partition_time(self, partition_time: int) -> None:
        """Assign the partition time restored from commit metadata (ST-8); only at task start."""
        self.partition_time = partition_time

    def clear(self) -> None:
        self._fifo.clear()
        self._head = None
        self.head_timestamp = UNKNOWN
        self.partition_time = UNKNOWN

    def _take_raw(self) -> RawRecord:
        fifo = self._fifo
        raw = fifo.popleft()
        if not fifo and self._refill is not None:
            fifo.extend(self._refill())
        return raw

    def _update_head(self, last_corrupted: RawRecord | None = None) -> None:
        """``updateHead``: take raw records until one deserializes with a timestamp ≥ 0, or leave a placeholder.

        ``last_corrupted`` is a record already dropped on the way by the caller (the bulk replay deserializes the
        common case itself and hands over here after a failure), so the placeholder is the one Kafka would leave.
        """
        fifo = self._fifo
        while self._head is None and fifo:
            raw = self._take_raw()
            deserialized = self._deserializer.deserialize(raw)
            if deserialized is None:
                last_corrupted = raw
                continue
            try:
                timestamp = self._extractor.extract(deserialized, self.partition_time)
            except StreamprocError:
                raise
            except Exception as fatal_user_exception:
                raise StreamsError(
                    f"Fatal user code error in TimestampExtractor callback for record {deserialized}.",
                    reason=REASON_EXTRACTOR_ERROR,
                    topic=raw.topic,
                    partition=raw.partition,
                    offset=raw.offset,
                ) from fatal_user_exception
            if timestamp < 0:
                self._log.warning(
                    "Skipping record due to negative extracted timestamp. topic=[%s] partition=[%s] offset=[%s] "
                    "extractedTimestamp=[%s] extractor=[%s]",
                    raw.topic,
                    raw.partition,
                    raw.offset,
                    timestamp,
                    self._extractor_name,
                )
                self._dropped.record(raw.topic, raw.partition, raw.offset, REASON_NEGATIVE_TIMESTAMP)
                last_corrupted = raw
                continue
            self._head = StampedRecord(deserialized, timestamp, raw.key, raw.value)
            self.head_timestamp = timestamp
        if self._head is None and last_corrupted is not None:
            self._head = CorruptedRecord.of(last_corrupted)
            self.head_timestamp = self._head.timestamp
