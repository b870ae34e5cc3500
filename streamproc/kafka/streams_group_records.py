"""A KIP-1071 streams group's members and epoch, from the records its coordinator wrote to ``__consumer_offsets``.

confluent-kafka 2.16 cannot describe a streams group: DescribeConsumerGroups calls it ``Dead`` with no members
whether it runs or not (docs/streams-groups.md §3), and librdkafka has no StreamsGroupDescribe. The coordinator
writes the group's state as records to the group's own ``__consumer_offsets`` partition (``CoordinatorRecordType``,
Kafka 4.2): a member exists while its newest ``StreamsGroupMemberMetadata`` record (type 19, key: group id and
member id) is not a tombstone (a member that leaves or times out gets one at once); the group's epoch is its
newest ``StreamsGroupMetadata`` record's (type 17), its topology the newest ``StreamsGroupTopology`` record's (type
23: what the plan compares with the user's, ``plan/streams_group_topology``). The coordinator replays exactly these
records when it loads the partition, so they are the group as the broker knows it.

The partition is read from its start (a member record may be old; compaction keeps the newest per key and a
tombstone ``delete.retention.ms``), within a time budget; a principal without READ on ``__consumer_offsets``, or a
partition too long for the budget, gets :class:`GroupMetadataUnavailable` and the caller refuses what it cannot know.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from streamproc.kafka.group_metadata import (
    GROUP_METADATA_TOPIC,
    GroupMetadataUnavailable,
    WireReader,
    group_partition,
)
from streamproc.plan.streams_group_topology import (
    StreamsGroupSubtopology,
    StreamsGroupTopicInfo,
    StreamsGroupTopology,
)

#: ``CoordinatorRecordType.STREAMS_GROUP_METADATA`` (value: ``StreamsGroupMetadataValue``, the epoch first).
STREAMS_GROUP_METADATA_RECORD_TYPE: Final = 17
#: ``CoordinatorRecordType.STREAMS_GROUP_MEMBER_METADATA`` (key: group id, member id).
STREAMS_GROUP_MEMBER_METADATA_RECORD_TYPE: Final = 19
#: ``CoordinatorRecordType.STREAMS_GROUP_TOPOLOGY`` (key: group id; value: ``StreamsGroupTopologyValue``).
STREAMS_GROUP_TOPOLOGY_RECORD_TYPE: Final = 23
#: How long the partition is read before the members are called unknown.
READ_BUDGET_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class StreamsGroupMember:
    """The leading fields of a ``StreamsGroupMemberMetadataValue`` (v0, flexible)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True)
class StreamsGroupRecords:
    """A streams group as its records say: ``epoch`` ``None`` when no metadata record was read, ``topology`` when
    no topology record was."""

    epoch: int | None
    members: tuple[StreamsGroupMember, ...]
    topology: StreamsGroupTopology | None = None


def parse_member_key(key: bytes) -> tuple[str, str] | None:
    """(group id, member id) of a ``StreamsGroupMemberMetadataKey`` record key; ``None`` for any other record type."""
    if len(key) < 2 or struct.unpack(">h", key[:2])[0] != STREAMS_GROUP_MEMBER_METADATA_RECORD_TYPE:
        return None
    reader = WireReader(key[2:], flexible=False)
    return reader.string(), reader.string()


def parse_member_value(member_id: str, value: bytes) -> StreamsGroupMember:
    """A ``StreamsGroupMemberMetadataValue`` (its int16 version first): instance id, rack id, client id, host."""
    version = struct.unpack(">h", value[:2])[0] if len(value) >= 2 else -1
    if version != 0:
        raise GroupMetadataUnavailable(f"StreamsGroupMemberMetadataValue version {version} is not 0")
    reader = WireReader(value[2:], flexible=True)
    try:
        instance_id, rack_id = reader.nullable_string(), reader.nullable_string()
        return StreamsGroupMember(member_id, instance_id, rack_id, reader.string(), reader.string())
    except ValueError as exc:
        raise GroupMetadataUnavailable(f"StreamsGroupMemberMetadataValue cannot be read: {exc}") from exc


def parse_topology_value(value: bytes) -> StreamsGroupTopology:
    """A ``StreamsGroupTopologyValue`` (its int16 version first, v0 flexible): the topology epoch, then per
    sub-topology its id, source topics and patterns, changelogs, repartition sinks and sources, and copartition
    groups; and each changelog's and repartition source's declared partition count, replication factor and
    configs."""
    version = struct.unpack(">h", value[:2])[0] if len(value) >= 2 else -1
    if version != 0:
        raise GroupMetadataUnavailable(f"StreamsGroupTopologyValue version {version} is not 0")
    reader = WireReader(value[2:], flexible=True)
    infos: dict[str, StreamsGroupTopicInfo] = {}
    try:
        epoch = reader.int32()
        subtopologies = tuple(_subtopology(reader, infos) for _ in range(reader.array_length()))
        reader.skip_tagged_fields()
    except ValueError as exc:
        raise GroupMetadataUnavailable(f"StreamsGroupTopologyValue cannot be read: {exc}") from exc
    return StreamsGroupTopology(epoch, subtopologies, tuple(infos[name] for name in sorted(infos)))


def _subtopology(reader: WireReader, infos: dict[str, StreamsGroupTopicInfo]) -> StreamsGroupSubtopology:
    """One ``Subtopology``; its changelogs' and repartition sources' ``TopicInfo`` go to ``infos`` by name."""
    sub_id = reader.string()
    sources = _strings(reader)
    regex = _strings(reader)
    changelogs = _topic_infos(reader)
    sinks = _strings(reader)
    repartition_sources = _topic_infos(reader)
    names = tuple(info.name for info in repartition_sources)
    groups = frozenset(_copartition_group(reader, sub_id, sources, regex, names)
                       for _ in range(reader.array_length()))  # fmt: skip
    reader.skip_tagged_fields()
    infos.update((info.name, info) for info in (*changelogs, *repartition_sources))
    return StreamsGroupSubtopology(sub_id, frozenset(sources), frozenset(regex),
                                   frozenset(info.name for info in changelogs), frozenset(sinks), frozenset(names),
                                   groups)  # fmt: skip


def _copartition_group(reader: WireReader, sub_id: str, *arrays: tuple[str, ...]) -> frozenset[str]:
    """A ``CopartitionGroup``: int16 indexes into the sub-topology's source topics, patterns and repartition source
    topics, in the record's order, resolved to their names."""
    names: set[str] = set()
    for array in arrays:
        for _ in range(reader.array_length()):
            index = reader.int16()
            if not 0 <= index < len(array):
                raise ValueError(f"sub-topology {sub_id}: copartition index {index} is outside its {len(array)} topics")
            names.add(array[index])
    reader.skip_tagged_fields()
    return frozenset(names)


def _strings(reader: WireReader) -> tuple[str, ...]:
    return tuple(reader.string() for _ in range(reader.array_length()))


def _topic_infos(reader: WireReader) -> tuple[StreamsGroupTopicInfo, ...]:
    """A ``[]TopicInfo``: name, partitions (int32), replication factor (int16), configs (key, value)."""
    infos = []
    for _ in range(reader.array_length()):
        name = reader.string()
        partitions = reader.int32()
        replication = reader.int16()
        configs = []
        for _ in range(reader.array_length()):
            configs.append((reader.string(), reader.string()))
            reader.skip_tagged_fields()
        reader.skip_tagged_fields()
        infos.append(StreamsGroupTopicInfo(name, partitions, replication, tuple(sorted(configs))))
    return tuple(infos)


def group_key(record_type: int, group_id: str) -> bytes:
    """A group-level record key: the record type, then the group id (``StreamsGroupMetadataKey`` v0)."""
    group = group_id.encode("utf-8")
    return struct.pack(">hh", record_type, len(group)) + group


def read_streams_group(
    client_config: Mapping[str, object], group_id: str, *, budget_s: float = READ_BUDGET_S
) -> StreamsGroupRecords:
    """The group's live members and epoch, from its ``__consumer_offsets`` partition read from the start for at most
    ``budget_s``. Raises :class:`GroupMetadataUnavailable` naming why when they cannot be read."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + budget_s
    try:
        with group_partition(client_config, group_id, budget_s) as (consumer, partition, low, high):
            return _scan(consumer, group_id, partition, low, high, deadline)
    except KafkaException as exc:
        raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}: {exc}") from exc


def _scan(consumer: Any, group_id: str, partition: int, low: int, high: int, deadline: float) -> StreamsGroupRecords:
    from confluent_kafka import KafkaError
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    metadata_key = group_key(STREAMS_GROUP_METADATA_RECORD_TYPE, group_id)
    topology_key = group_key(STREAMS_GROUP_TOPOLOGY_RECORD_TYPE, group_id)
    members: dict[str, bytes] = {}
    epoch: int | None = None
    topology: bytes | None = None
    if high <= low:
        return StreamsGroupRecords(None, ())
    consumer.assign([KafkaTopicPartition(GROUP_METADATA_TOPIC, partition, low)])
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise GroupMetadataUnavailable(
                f"{GROUP_METADATA_TOPIC}-{partition} was not read to its end ({high}) in time"
            )
        for message in consumer.consume(num_messages=10_000, timeout=min(left, 1.0)):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return _records(epoch, members, topology)
                raise GroupMetadataUnavailable(f"cannot read {GROUP_METADATA_TOPIC}-{partition}: {error}")
            key, value = message.key() or b"", message.value()
            if key == metadata_key and value is not None and len(value) >= 6:
                epoch = struct.unpack(">i", value[2:6])[0]
            elif key == topology_key:
                topology = value  # a tombstone (the group deleted) drops it
            else:
                member = parse_member_key(key)
                if member is not None and member[0] == group_id:
                    if value is None:
                        members.pop(member[1], None)
                    else:
                        members[member[1]] = value
            if message.offset() >= high - 1:
                return _records(epoch, members, topology)


def _records(epoch: int | None, members: dict[str, bytes], topology: bytes | None) -> StreamsGroupRecords:
    parsed = None if topology is None else parse_topology_value(topology)
    return StreamsGroupRecords(epoch, tuple(parse_member_value(m, v) for m, v in sorted(members.items())), parsed)
