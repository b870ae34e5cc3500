"""The changelog records a task's stores produced, kept for the hand-off (``PI/RecordCollectorImpl``, 4.2.0).

Kafka Streams sends each store write to ``<application.id>-<store>-changelog`` partition = the task's partition
(``ProcessorContextImpl.logChange``: key and value as bytes, the record timestamp, headers; no partitioner). A batch
run cannot publish while it processes, so the records are collected per task in send order; the hand-off publishes
them and learns the offsets that become the task's ``.checkpoint`` (state.md §7, §10).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from streamproc.engine.records import Headers, TopicPartition
from streamproc.engine.task_id import TaskId
from streamproc.errors import StateError
from streamproc.state.changelog import ChangelogRecord


@dataclass(frozen=True, slots=True)
class CollectedChangelogRecord:
    """One changelog record as the producer would send it."""

    store_name: str
    topic: str
    partition: int
    key: bytes
    value: bytes | None
    timestamp: int
    headers: Headers = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class ChangelogCollector:
    """Collects the changelog records of one task's stores, in the order the writes happened.

    Every record must go to the task's partition (``ProcessorStateManager.getStorePartition``); anything else is a
    wiring bug and is refused.
    """

    def __init__(self, task_id: TaskId) -> None:
        self.task_id = task_id
        self.records: list[CollectedChangelogRecord] = []

    def send(self, store_name: str, partition: TopicPartition, record: ChangelogRecord) -> None:
        if partition.partition != self.task_id.partition:
            raise StateError(
                f"task [{self.task_id}] store {store_name} logged to {partition}, but a task's changelog partition "
                f"is always its own partition {self.task_id.partition}; check the store registration"
            )
        self.records.append(
            CollectedChangelogRecord(
                store_name,
                partition.topic,
                partition.partition,
                record.key,
                record.value,
                record.timestamp,
                record.headers,
            )
        )

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[CollectedChangelogRecord]:
        return iter(self.records)

    def for_partition(self, partition: TopicPartition) -> list[CollectedChangelogRecord]:
        return [r for r in self.records if r.topic == partition.topic and r.partition == partition.partition]

    def partitions(self) -> list[TopicPartition]:
        """Changelog partitions with records, in first-write order."""
        return list(dict.fromkeys(r.topic_partition for r in self.records))

    def counts(self) -> dict[TopicPartition, int]:
        result: dict[TopicPartition, int] = {}
        for record in self.records:
            tp = record.topic_partition
            result[tp] = result.get(tp, 0) + 1
        return result

    def clear(self) -> None:
        self.records.clear()
