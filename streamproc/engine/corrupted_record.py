"""``CorruptedRecord``: the placeholder left for skipped records at the end of a buffer (ordering.md SR-5, RQ-6).

Mirrors ``org.apache.kafka.streams.processor.internals.CorruptedRecord`` (Kafka 4.2.0): it wraps the *raw* record
of the last skipped record with timestamp ``NO_TIMESTAMP`` (-1), so that its queue sorts first and the task marks
the offset consumed without processing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.engine.records import NO_TIMESTAMP, ConsumerRecord
from streamproc.engine.slotted_init import fast_frozen_init
from streamproc.engine.stamped_record import StampedRecord


@dataclass(frozen=True, slots=True)
class CorruptedRecord(StampedRecord):
    """A ``StampedRecord`` that is never processed; ``record`` is the raw consumer record."""

    @classmethod
    def of(cls, raw: ConsumerRecord[bytes | None, bytes | None]) -> CorruptedRecord:
        return cls(raw, NO_TIMESTAMP, raw.key, raw.value)

    def __str__(self) -> str:
        return f"CorruptedRecord({self.record})"


fast_frozen_init(CorruptedRecord)
