"""Timestamp extractors: the built-ins of Kafka Streams 4.2 and the protocol for user ones (ordering.md TE-1..TE-6).

Mirrors ``org.apache.kafka.streams.processor.TimestampExtractor``, ``ExtractRecordMetadataTimestamp``,
``FailOnInvalidTimestamp``, ``LogAndSkipOnInvalidTimestamp``, ``UsePartitionTimeOnInvalidTimestamp`` and
``WallclockTimestampExtractor`` (checked against 4.2.0). An extractor runs when a record becomes its queue's head,
with the deserialized record and the queue's partition time; a negative result means "drop"; raising ends the task.
A built-in that fails raises :class:`~streamproc.errors.StreamsError` with Kafka's exact message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from streamproc.engine.records import ConsumerRecord
from streamproc.errors import StreamsError

logger = logging.getLogger(__name__)

#: ``RecordQueue.UNKNOWN``: no partition time yet.
UNKNOWN = -1

REASON_NEGATIVE_TIMESTAMP = "negative_timestamp"
REASON_PARTITION_TIME_UNKNOWN = "partition_time_unknown"


@runtime_checkable
class TimestampExtractor(Protocol):
    """``TimestampExtractor.extract(record, partitionTime)``: must be stateless; negative means drop."""

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int: ...


def extractor_name(extractor: object) -> str:
    """The name logged for an extractor: Kafka's canonical class name for built-ins, else module.qualname."""
    name = getattr(extractor, "canonical_name", None)
    if isinstance(name, str):
        return name
    cls = type(extractor)
    return f"{cls.__module__}.{cls.__qualname__}"


class ExtractRecordMetadataTimestamp:
    """Base of the metadata extractors: ``record.timestamp`` if ≥ 0, else :meth:`on_invalid_timestamp`."""

    canonical_name = "org.apache.kafka.streams.processor.ExtractRecordMetadataTimestamp"

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
        timestamp = record.timestamp
        if timestamp < 0:
            return self.on_invalid_timestamp(record, timestamp, partition_time)
        return timestamp

    def on_invalid_timestamp(
        self, record: ConsumerRecord[object, object], record_timestamp: int, partition_time: int
    ) -> int:
        """Called for a negative broker timestamp; subclasses decide (return a value, or raise)."""
        raise NotImplementedError


class FailOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """The default extractor (TE-2): a negative timestamp logs ERROR and fails the task."""

    canonical_name = "org.apache.kafka.streams.processor.FailOnInvalidTimestamp"

    def on_invalid_timestamp(
        self, record: ConsumerRecord[object, object], record_timestamp: int, partition_time: int
    ) -> int:
        message = (
            f"Input record {record} has invalid (negative) timestamp. Possibly because a pre-0.10 producer client was "
            "used to write this record to Kafka without embedding a timestamp, or because the input topic was created "
            "before upgrading the Kafka cluster to 0.10+. Use a different TimestampExtractor to process this data."
        )
        logger.error("%s", message)
        raise StreamsError(
            message,
            reason=REASON_NEGATIVE_TIMESTAMP,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
        )


class LogAndSkipOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """TE-3: a negative timestamp logs WARN and is returned unchanged, so ``RecordQueue`` drops the record."""

    canonical_name = "org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp"

    def on_invalid_timestamp(
        self, record: ConsumerRecord[object, object], record_timestamp: int, partition_time: int
    ) -> int:
        logger.warning("Input record %s will be dropped because it has an invalid (negative) timestamp.", record)
        return record_timestamp


class UsePartitionTimeOnInvalidTimestamp(ExtractRecordMetadataTimestamp):
    """TE-4: a negative timestamp becomes the queue's partition time; unknown partition time fails the task."""

    canonical_name = "org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp"

    def on_invalid_timestamp(
        self, record: ConsumerRecord[object, object], record_timestamp: int, partition_time: int
    ) -> int:
        if partition_time < 0:
            raise StreamsError(
                f"Could not infer new timestamp for input record {record} because partition time is unknown.",
                reason=REASON_PARTITION_TIME_UNKNOWN,
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
            )
        return partition_time


class WallclockTimestampExtractor:
    """TE-5: processing time. Reads the task's (virtual, D-4) wall clock instead of ``System.currentTimeMillis``."""

    canonical_name = "org.apache.kafka.streams.processor.WallclockTimestampExtractor"

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock

    def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
        return self._clock()
