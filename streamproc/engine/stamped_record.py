"""``StampedRecord`` and ``Stamped``: a deserialized record with its extracted timestamp (ordering.md SR-1, SR-2).

Mirrors ``org.apache.kafka.streams.processor.internals.StampedRecord`` (Kafka 4.2.0). The extracted timestamp is
the record's timestamp from the moment it becomes its queue's head; the raw key and value bytes travel with it for
error handlers (KAFKA-16505, 4.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamproc.engine.records import ConsumerRecord, Headers, TopicPartition
from streamproc.engine.slotted_init import fast_frozen_init


@dataclass(frozen=True, slots=True)
class StampedRecord:
    """A record handed out by ``RecordQueue.poll``; ``timestamp`` is the extracted one, not the broker's."""

    record: ConsumerRecord[object, object]
    timestamp: int
    raw_key: bytes | None
    raw_value: bytes | None

    @property
    def topic(self) -> str:
        return self.record.topic

    @property
    def partition(self) -> int:
        return self.record.partition

    @property
    def offset(self) -> int:
        return self.record.offset

    @property
    def key(self) -> object:
        return self.record.key

    @property
    def value(self) -> object:
        return self.record.value

    @property
    def headers(self) -> Headers:
        return self.record.headers

    @property
    def leader_epoch(self) -> int | None:
        return self.record.leader_epoch

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.record.topic, self.record.partition)

    def __str__(self) -> str:
        return f"{self.record}, timestamp = {self.timestamp}"


fast_frozen_init(StampedRecord)
