"""A classic group's metadata record in ``__consumer_offsets``: the only place a client can see a member's
``session.timeout.ms``.

What the broker exposes about a member of a classic group (Kafka 4.2):

- DescribeGroups (``DescribeGroupsResponse`` v0-6; confluent-kafka's ``MemberDescription``) lists the member id, group
  instance id, client id, client host, its metadata and assignment, and the group's state: no timeout, no heartbeat.
- The coordinator keeps each member's heartbeat deadline in memory only: every heartbeat reschedules a timer of
  ``sessionTimeoutMs`` (``GroupMetadataManager.rescheduleClassicGroupMemberHeartbeat``), and when it fires the member
  is removed (``expireClassicGroupMemberHeartbeat``); the last heartbeat's time is written nowhere.
- When a rebalance completes the coordinator writes the group to ``__consumer_offsets`` as a ``GroupMetadataValue``
  (``GroupCoordinatorRecordHelpers.newGroupMetadataRecord``, value version 3 in 4.2) under the key
  ``GroupMetadataKey`` (record type 2): per member its ``sessionTimeout`` and ``rebalanceTimeout`` as it joined, and
  the group's ``currentStateTimestamp``.

So a member that no longer heartbeats (an application stopped with ``KafkaStreams#close()``, which does not leave the
group, or one that crashed) is gone at most its ``session.timeout.ms`` after the moment it is seen, and this module
reads that timeout from the group's newest metadata record. The record is read back from the end of the group's
``__consumer_offsets`` partition (``Utils.abs(groupId.hashCode()) % partitions``), within a time budget; a principal
without READ on ``__consumer_offsets`` (or a record not found in time) gets :class:`GroupMetadataUnavailable`, and the
caller says what it cannot know.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from streamproc.errors import StreamprocError

#: Kafka's ``Topic.GROUP_METADATA_TOPIC_NAME``.
GROUP_METADATA_TOPIC: Final = "__consumer_offsets"
#: The record type (the key's version prefix) of ``GroupMetadataKey``/``GroupMetadataValue``.
GROUP_METADATA_RECORD_TYPE: Final = 2
#: ``GroupMetadataValue``'s first flexible version.
_FIRST_FLEXIBLE_VERSION: Final = 4
_HIGHEST_VALUE_VERSION: Final = 4
#: How long the record is looked for before the caller is told it is unknown.
READ_BUDGET_S: Final = 5.0
#: The first window read back from the partition's end; each further one is four times larger.
_FIRST_WINDOW: Final = 10_000


class GroupMetadataUnavailable(StreamprocError):
    """The group's metadata record could not be read (not authorized, not found in time, not parseable)."""


@dataclass(frozen=True, slots=True)
class GroupMetadataMember:
    """``GroupMetadataValue.MemberMetadata`` without its subscription and assignment bytes."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """``GroupMetadataValue``: the classic group as its coordinator last wrote it (``None`` fields are Kafka's null)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMetadataMember, ...]

    def session_timeouts(self) -> dict[str, int]:
        """``session.timeout.ms`` per member id."""
        return {m.member_id: m.session_timeout_ms for m in self.members}


def java_string_hash(text: str) -> int:
    """``String#hashCode``: ``31 * h + c`` over the UTF-16 code units, as a signed 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group: ``Utils.abs(groupId.hashCode()) % numPartitions``
    (``GroupCoordinatorService.partitionFor``; ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions


def group_metadata_key(group_id: str) -> bytes:
    """The record key of a group's metadata: record type 2, then ``GroupMetadataKey`` v0 (the group id)."""
    group = group_id.encode("utf-8")
    return struct.pack(">hh", GROUP_METADATA_RECORD_TYPE, len(group)) + group


class WireReader:
    """Kafka's message wire format (``Readable``): fixed-width big-endian ints, classic or compact strings/arrays."""

    def __init__(self, data: bytes, flexible: bool) -> None:
        self._data, self._pos, self._flexible = data, 0, flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise ValueError(f"record ends at byte {len(self._data)}, {n} more wanted at {self._pos}")
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError("varint longer than 5 bytes")

    def _length(self, classic: int) -> int:
        return self.uvarint() - 1 if self._flexible else classic

    def nullable_string(self) -> str | None:
        length = self._length(self.int16() if not self._flexible else 0)
        return None if length < 0 else self._take(length).decode("utf-8")

    def string(self) -> str:
        text = self.nullable_string()
        if text is None:
            raise ValueError("null where the schema has a non-null string")
        return text

    def skip_bytes(self) -> None:
        length = self._length(self.int32() if not self._flexible else 0)
        if length > 0:
            self._take(length)

    def array_length(self) -> int:
        length = self._length(self.int32() if not self._flexible else 0)
        if length < 0:
            raise ValueError("null where the schema has an array")
        return length

    def skip_tagged_fields(self) -> None:
        if self._flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self._take(self.uvarint())


def parse_group_metadata_value(value: bytes) -> GroupMetadata:
    """A ``GroupMetadataValue`` record value (its int16 version first), versions 0 to 4."""
    version = struct.unpack(">h", value[:2])[0] if len(value) >= 2 else -1
    if not 0 <= version <= _HIGHEST_VALUE_VERSION:
        raise GroupMetadataUnavailable(f"GroupMetadataValue version {version} is not one of 0-{_HIGHEST_VALUE_VERSION}")
    reader = WireReader(value[2:], flexible=version >= _FIRST_FLEXIBLE_VERSION)
    try:
        protocol_type = reader.string()
        generation = reader.int32()
        protocol = reader.nullable_string()
        leader = reader.nullable_string()
        current_state_timestamp = reader.int64() if version >= 2 else -1
        members = []
        for _ in range(reader.array_length()):
            member_id = reader.string()
            group_instance_id = reader.nullable_string() if version >= 3 else None
            client_id = reader.string()
            client_host = reader.string()
            rebalance_timeout = reader.int32() if version >= 1 else -1
            session_timeout = reader.int32()
            reader.skip_bytes()  # subscription
            reader.skip_bytes()  # assignment
            reader.skip_tagged_fields()
            members.append(
                GroupMetadataMember(
                    member_id, group_instance_id, client_id, client_host, rebalance_timeout, session_timeout
                )
            )
        reader.skip_tagged_fields()
    except ValueError as exc:
        raise GroupMetadataUnavailable(f"GroupMetadataValue v{version} cannot be read: {exc}") from exc
    return GroupMetadata(protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members))


def read_group_metadata(
    client_config: Mapping[str, object], group_id: str, *, budget_s: float = READ_BUDGET_S
) -> GroupMetadata | None:
    """The group's newest ``GroupMetadataValue`` (``None``: a tombstone, the group was deleted), read back from the
    end of its ``__consumer_offsets`` partition in growing windows for at most ``budget_s``.

    Raises :class:`GroupMetadataUnavailable` naming why when the partition cannot be read or holds no such record
    within the budget.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + budget_s
    key = group_metadata_key(group_id)
    try:
        with group_partition(client_config, group_id, budget_s) as (consumer, partition, low, high):
            end, window = high, _FIRST_WINDOW
            while end > low:
                start = max(low, end - window)
                found, value = _newest_in(consumer, partition, start, end, key, deadline)
                if found:
                    return None if value is None else parse_group_metadata_value(value)
                end, window = start, window * 4
            raise GroupMetadataUnavailable(
                f"{GROUP_METADATA_TOPIC}-{partition} holds no metadata record of group '{group_id}'"
            )
    except KafkaException as exc:
        raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}: {exc}") from exc


@contextmanager
def group_partition(
    client_config: Mapping[str, object], group_id: str, timeout_s: float
) -> Iterator[tuple[Any, int, int, int]]:
    """A consumer (never joined, no commits) and the group's ``__consumer_offsets`` partition with its low and high
    watermarks; :class:`GroupMetadataUnavailable` when the topic cannot be read (no READ on it, for one)."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    from streamproc.kafka import clients as kafka_clients

    settings = {"enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest"}
    config = {"group.id": "streamproc-group-metadata-reader", **client_config}  # required; never joined, no commits
    try:
        consumer = kafka_clients.consumer(config, topic=GROUP_METADATA_TOPIC, **settings)
    except Exception as exc:
        raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}: {exc}") from exc
    try:
        topic = consumer.list_topics(GROUP_METADATA_TOPIC, timeout=timeout_s).topics.get(GROUP_METADATA_TOPIC)
        if topic is None or topic.error is not None or not topic.partitions:
            cause = "it does not exist" if topic is None or topic.error is None else str(topic.error)
            raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}: {cause}")
        partition = partition_for(group_id, len(topic.partitions))
        low, high = consumer.get_watermark_offsets(
            KafkaTopicPartition(GROUP_METADATA_TOPIC, partition), timeout=timeout_s
        )
        yield consumer, partition, low, high
    finally:
        consumer.close()


def _newest_in(
    consumer: Any, partition: int, start: int, end: int, key: bytes, deadline: float
) -> tuple[bool, bytes | None]:
    """Whether ``[start, end)`` holds a record with ``key``, and the last one's value (``None``: a tombstone)."""
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer.assign([KafkaTopicPartition(GROUP_METADATA_TOPIC, partition, start)])
    found: tuple[bool, bytes | None] = (False, None)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise GroupMetadataUnavailable(
                f"no metadata record of the group found in time in {GROUP_METADATA_TOPIC}-{partition} (read back to "
                f"offset {start})"
            )
        for message in consumer.consume(num_messages=10_000, timeout=min(left, 1.0)):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return found
                raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}-{partition}: {error}")
            if message.offset() >= end:
                return found
            if message.key() == key:
                found = (True, message.value())
            if message.offset() == end - 1:
                return found
