"""The built-in timestamp extractors: values, messages and logs (ordering.md TE-1..TE-6)."""

from __future__ import annotations

import logging

import pytest

from streamproc.engine.records import ConsumerRecord, TimestampType
from streamproc.engine.timestamp_extractor import (
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    TimestampExtractor,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
    extractor_name,
)
from streamproc.errors import StreamsError


def record(timestamp: int, offset: int = 1) -> ConsumerRecord[object, object]:
    return ConsumerRecord("a", 0, offset, timestamp, TimestampType.CREATE_TIME, "k", "v1", (), None, 1, 2)


@pytest.mark.parametrize(
    "extractor",
    [FailOnInvalidTimestamp(), LogAndSkipOnInvalidTimestamp(), UsePartitionTimeOnInvalidTimestamp()],
)
def test_valid_timestamps_including_zero_pass_through(extractor: TimestampExtractor) -> None:
    assert extractor.extract(record(0), 99) == 0
    assert extractor.extract(record(17), -1) == 17


def test_fail_on_invalid_raises_kafka_message(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(StreamsError) as info:
        FailOnInvalidTimestamp().extract(record(-1), 5)
    assert info.value.kafka_message == (
        "Input record ConsumerRecord(topic = a, partition = 0, leaderEpoch = null, offset = 1, CreateTime = -1, "
        "deliveryCount = null, serialized key size = 1, serialized value size = 2, headers = RecordHeaders(headers = "
        "[], isReadOnly = false), key = k, value = v1) has invalid (negative) timestamp. Possibly because a pre-0.10 "
        "producer client was used to write this record to Kafka without embedding a timestamp, or because the input "
        "topic was created before upgrading the Kafka cluster to 0.10+. Use a different TimestampExtractor to process "
        "this data."
    )
    assert info.value.reason == "negative_timestamp"
    assert (info.value.topic, info.value.partition, info.value.offset) == ("a", 0, 1)
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_log_and_skip_returns_the_negative_value_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert LogAndSkipOnInvalidTimestamp().extract(record(-7), 5) == -7
    assert "will be dropped because it has an invalid (negative) timestamp." in caplog.text


def test_use_partition_time_substitutes_or_fails_when_unknown() -> None:
    assert UsePartitionTimeOnInvalidTimestamp().extract(record(-1), 42) == 42
    assert UsePartitionTimeOnInvalidTimestamp().extract(record(-1), 0) == 0
    with pytest.raises(StreamsError, match="because partition time is unknown.") as info:
        UsePartitionTimeOnInvalidTimestamp().extract(record(-1), -1)
    assert info.value.kafka_message.startswith("Could not infer new timestamp for input record ConsumerRecord(")
    assert info.value.reason == "partition_time_unknown"


def test_wallclock_reads_the_given_clock_and_ignores_the_record() -> None:
    assert WallclockTimestampExtractor(lambda: 1234).extract(record(-1), -1) == 1234


def test_extractor_names() -> None:
    assert extractor_name(FailOnInvalidTimestamp()) == "org.apache.kafka.streams.processor.FailOnInvalidTimestamp"

    class Mine:
        def extract(self, record: ConsumerRecord[object, object], partition_time: int) -> int:
            return 1

    assert extractor_name(Mine()).endswith("Mine")
    assert isinstance(Mine(), TimestampExtractor)
