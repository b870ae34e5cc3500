"""Delete repartition records up to the offsets just committed (KIP-811, state.md §9): never beyond them.

A resumed application whose committed offset were below the log start would reset its position, so the offset
passed to DeleteRecords is exactly the committed one, and the purge runs only after the commit is durable.
Kafka Streams ignores purge failures (it retries at its next commit); the hand-off reports them, because a purge
that did not happen only costs disk space and the re-run repeats it.
"""

from __future__ import annotations

from typing import Any

from streamproc.errors import HandoffError
from streamproc.plan.cluster_snapshot import TopicPartition

_TIMEOUT_S = 30.0


def purge_partition(admin: Any, partition: TopicPartition, before_offset: int) -> int:
    """``DeleteRecords(before = before_offset)`` on one repartition partition; returns the new log start offset."""
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    request = [KafkaTopicPartition(partition.topic, partition.partition, before_offset)]
    [future] = admin.delete_records(request, request_timeout=_TIMEOUT_S).values()
    try:
        result = future.result(timeout=_TIMEOUT_S)
    except (KafkaException, TimeoutError) as exc:
        cause = exc.args[0] if isinstance(exc, KafkaException) else f"no answer in {_TIMEOUT_S:.0f} s"
        raise HandoffError(
            f"purging repartition partition {partition} before offset {before_offset} failed: {cause}; the "
            "offsets are committed, only disk space is lost: run the hand-off again to retry the purge"
        ) from exc
    low: int = getattr(result, "low_watermark", before_offset)
    return low
