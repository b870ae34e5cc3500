"""Records as Kafka Streams sees them: the consumer record, the Processor API ``Record`` and the record context.

Mirrors ``org.apache.kafka.clients.consumer.ConsumerRecord``, ``org.apache.kafka.common.TopicPartition``,
``org.apache.kafka.streams.processor.api.Record``, ``...processor.api.RecordMetadata`` and
``...processor.internals.ProcessorRecordContext`` (checked against Kafka 4.2.0). A raw record is a
``ConsumerRecord[bytes | None, bytes | None]``; ``RecordDeserializer`` rebuilds it as a
``ConsumerRecord[object, object]`` whose timestamp type is always ``CREATE_TIME`` (ordering.md SR-2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from streamproc.engine.slotted_init import fast_frozen_init

#: ``ConsumerRecord.NO_TIMESTAMP``: the broker timestamp of a record written without one.
NO_TIMESTAMP = -1
#: ``ConsumerRecord.NULL_SIZE``: the serialized size reported for a null key or value.
NULL_SIZE = -1

K = TypeVar("K", covariant=True)
V = TypeVar("V", covariant=True)
NewK = TypeVar("NewK")
NewV = TypeVar("NewV")

#: One header: key and value bytes (``None`` for a null value), in insertion order.
Header = tuple[str, bytes | None]
Headers = tuple[Header, ...]


class TimestampType(enum.Enum):
    """``org.apache.kafka.common.record.TimestampType``: id and the name ``ConsumerRecord.toString`` prints."""

    NO_TIMESTAMP_TYPE = (-1, "NoTimestampType")
    CREATE_TIME = (0, "CreateTime")
    LOG_APPEND_TIME = (1, "LogAppendTime")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display_name(self) -> str:
        return self.value[1]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """``TopicPartition``; orders by topic (code points) then partition, which is D-1's insertion order."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """Parse ``<topic>-<p>``, splitting at the last ``-`` (topic names may contain ``-``)."""
        topic, sep, partition = text.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"'{text}' is not a partition written as <topic>-<partition>")
        return cls(topic, int(partition))


def _java_bytes(data: bytes) -> str:
    """``Arrays.toString(byte[])``: signed decimal bytes, as ``RecordHeader.toString`` prints a value."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in data) + "]"


def _java_str(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bytes | bytearray):
        return f"[B@{id(value):x}"
    return str(value)


def headers_to_string(headers: Headers) -> str:
    """``RecordHeaders.toString`` as it appears inside ``ConsumerRecord.toString``."""
    inner = ", ".join(
        f"RecordHeader(key = {key}, value = {'null' if value is None else _java_bytes(value)})"
        for key, value in headers
    )
    return f"RecordHeaders(headers = [{inner}], isReadOnly = false)"


@dataclass(frozen=True, slots=True)
class ConsumerRecord(Generic[K, V]):
    """A record of one input partition, raw (bytes) or deserialized; ``str()`` is Kafka's ``toString``.

    ``serialized_key_size``/``serialized_value_size`` default to the length of the raw bytes (``NULL_SIZE`` for
    ``None``); the deserialized copy keeps the raw sizes, as ``RecordDeserializer`` does.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: K
    value: V
    headers: Headers = ()
    leader_epoch: int | None = None
    serialized_key_size: int = field(default=NULL_SIZE)
    serialized_value_size: int = field(default=NULL_SIZE)

    @classmethod
    def raw(
        cls,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        *,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        headers: Headers = (),
        leader_epoch: int | None = None,
    ) -> ConsumerRecord[bytes | None, bytes | None]:
        """Build a raw record as the consumer hands it out, with the serialized sizes of its bytes."""
        return ConsumerRecord(
            topic,
            partition,
            offset,
            timestamp,
            timestamp_type,
            key,
            value,
            headers,
            leader_epoch,
            NULL_SIZE if key is None else len(key),
            NULL_SIZE if value is None else len(value),
        )

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __str__(self) -> str:
        epoch = "null" if self.leader_epoch is None else str(self.leader_epoch)
        return (
            f"ConsumerRecord(topic = {self.topic}, partition = {self.partition}, leaderEpoch = {epoch}, "
            f"offset = {self.offset}, {self.timestamp_type.display_name} = {self.timestamp}, deliveryCount = null, "
            f"serialized key size = {self.serialized_key_size}, serialized value size = {self.serialized_value_size}, "
            f"headers = {headers_to_string(self.headers)}, "
            f"key = {_java_str(self.key)}, value = {_java_str(self.value)})"
        )


fast_frozen_init(ConsumerRecord)

RawRecord = ConsumerRecord[bytes | None, bytes | None]
DeserializedRecord = ConsumerRecord[object, object]


@dataclass(frozen=True, slots=True)
class Record(Generic[K, V]):
    """The Processor API ``Record``: immutable; the ``with_*`` methods return copies, like Kafka's ``withKey``."""

    key: K
    value: V
    timestamp: int
    headers: Headers = ()

    def with_key(self, key: NewK) -> Record[NewK, V]:
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: NewV) -> Record[K, NewV]:
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record[K, V]:
        return Record(self.key, self.value, timestamp, self.headers)  # not dataclasses.replace: 5 % of a DSL count

    def with_headers(self, headers: Headers) -> Record[K, V]:
        return Record(self.key, self.value, self.timestamp, headers)


fast_frozen_init(Record)


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """``processor.api.RecordMetadata``: where the record being processed came from."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class ProcessorRecordContext:
    """``ProcessorRecordContext``: what the task installs before a record, a punctuation or ``init`` (SR-3, SR-4).

    For punctuation and init the topic is ``None`` and partition/offset are -1, as in Kafka Streams.
    """

    timestamp: int
    offset: int
    partition: int
    topic: str | None
    headers: Headers = ()
    source_raw_key: bytes | None = None
    source_raw_value: bytes | None = None

    def record_metadata(self) -> RecordMetadata | None:
        """``ProcessorContext.recordMetadata()``: ``None`` (Java's ``Optional.empty()``) outside a record."""
        if self.topic is None:
            return None
        return RecordMetadata(self.topic, self.partition, self.offset)


fast_frozen_init(ProcessorRecordContext)
