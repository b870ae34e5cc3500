"""Read the ``ClusterSnapshot`` the planner needs from a live broker, once, with the Admin API.

The plan rules (``streamproc.plan``) are pure; this adapter is their only window on Kafka. One
:class:`ClusterReader` reads the cluster's metadata once (every topic's partition count, for the topology
analysis), then, per topic the plan needs (sources, changelogs, global-store topics): partitions,
``cleanup.policy``, topic id, the log start (ListOffsets EARLIEST), the high watermark (LATEST, read_uncommitted)
and the last stable offset (LATEST, read_committed); for the group: its state, members and committed offsets with
their metadata (OffsetFetch with ``require_stable``, the source partitions named, a pending commit waited for up to
:data:`PENDING_COMMIT_WAIT_S`); then, for the instants the request needs
(``positions.timestamps_needed``), ListOffsets by timestamp under the run's isolation level.

The leader's log end offset is not exposed by the Admin API; on the single-replica logs this is built for, it
equals the high watermark once produce requests are acknowledged, so ``log_end`` is the high watermark.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamproc.errors import PlanError
from streamproc.kafka import clients as kafka_clients
from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    ClusterSnapshot,
    CommittedOffset,
    GroupMember,
    GroupState,
    IsolationLevel,
    PartitionState,
    PlanRequest,
    TopicPartition,
    TopicState,
)
from streamproc.plan.positions import timestamps_needed
from streamproc.plan.preconditions import STREAMS_GROUP_WITH_MEMBERS, UNKNOWN_GROUP_STATE

log = logging.getLogger(__name__)

_TIMEOUT_S = 30.0
_OFFSET_INVALID = -1001  # librdkafka: no committed offset for the partition

# confluent-kafka's ConsumerGroupState names → the state names Kafka prints (``ClassicGroupState``/``GroupState``).
_GROUP_STATES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
    "ASSIGNING": "Assigning",
    "RECONCILING": "Reconciling",
}


def _admin(client_config: Mapping[str, object]) -> Any:
    return kafka_clients.admin(client_config)


def _result(future: Any, what: str) -> Any:
    try:
        return future.result(timeout=_TIMEOUT_S)
    except TimeoutError:
        raise PlanError(kafka_clients.no_answer(f"could not read {what}", _TIMEOUT_S)) from None
    except Exception as exc:
        raise PlanError(f"could not read {what} from the cluster: {kafka_clients.error_text(exc)}") from exc


#: How long ListOffsets is retried on retriable errors (a partition whose leader the client's metadata does not know
#: yet: NOT_LEADER_OR_FOLLOWER right after a topic's creation or a leader change).
_RETRY_S = 15.0


def _retriable(error: Any) -> bool:
    """librdkafka marks few admin-result errors retriable; these mean "the client's metadata is behind", not a fault."""
    from confluent_kafka import KafkaError

    codes = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_LEADER_EPOCH,
             KafkaError.FENCED_LEADER_EPOCH}  # fmt: skip
    return error is not None and (error.code() in codes or bool(error.retriable()))


def _list_offsets(admin: Any, specs: Mapping[Any, Any], isolation: IsolationLevel, what: str) -> dict[Any, int]:
    """ListOffsets for every partition in ``specs``; partitions failing with a retriable error are asked again
    (with backoff, up to ``_RETRY_S``) before the plan gives up naming the partition and the error."""
    import time

    from confluent_kafka import IsolationLevel as KafkaIsolation
    from confluent_kafka import KafkaException

    if not specs:
        return {}
    level = (
        KafkaIsolation.READ_COMMITTED if isolation is IsolationLevel.READ_COMMITTED else KafkaIsolation.READ_UNCOMMITTED
    )
    found: dict[Any, int] = {}
    pending = dict(specs)
    deadline = time.monotonic() + _RETRY_S
    delay = 0.1
    while True:
        futures = admin.list_offsets(pending, isolation_level=level, request_timeout=_TIMEOUT_S)
        retry: dict[Any, Any] = {}
        for tp, future in futures.items():
            try:
                found[tp] = future.result(timeout=_TIMEOUT_S).offset
            except TimeoutError:
                raise PlanError(
                    kafka_clients.no_answer(f"could not read {what} of {tp.topic}-{tp.partition}", _TIMEOUT_S)
                ) from None
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if _retriable(error) and time.monotonic() < deadline:
                    retry[tp] = pending[tp]
                    continue
                cause = kafka_clients.error_text(exc)
                raise PlanError(
                    f"could not read {what} of {tp.topic}-{tp.partition} from the cluster: {cause}"
                ) from exc
            except Exception as exc:
                raise PlanError(f"could not read {what} of {tp.topic}-{tp.partition} from the cluster: {exc}") from exc
        if not retry:
            return found
        log.debug("ListOffsets of %d partition(s) retried: %s", len(retry), sorted(map(str, retry)))
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
        pending = retry


def read_end_offsets(
    client_config: Mapping[str, object], partitions: Sequence[TopicPartition], isolation: IsolationLevel
) -> dict[TopicPartition, int]:
    """The end offset of each partition as a consumer at ``isolation`` sees it (the last stable offset under
    read_committed, else the high watermark): what the group's lag is measured against."""
    return end_offsets(_admin(client_config), partitions, isolation)


def end_offsets(
    admin: Any, partitions: Iterable[TopicPartition], isolation: IsolationLevel
) -> dict[TopicPartition, int]:
    """``read_end_offsets`` through an Admin client the caller holds (ListOffsets LATEST, retries included)."""
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import OffsetSpec

    specs = {KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.latest() for tp in partitions}
    found = _list_offsets(admin, specs, isolation, "the end offset")
    return {TopicPartition(tp.topic, tp.partition): offset for tp, offset in found.items()}


#: How long a group call waits for the group's coordinator to finish loading (a broker just started or recovering).
COORDINATOR_WAIT_S = 60.0
#: What the coordinator answers while it is not ready to serve the group: its ``__consumer_offsets`` partition is
#: being created or loaded, or has just moved.
_COORDINATOR_NOT_READY = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"})


class CoordinatorNotReady(PlanError):
    """The group's coordinator kept answering "loading" (or "not the coordinator") for the whole wait."""


def _error_name(exc: BaseException) -> str:
    return str(getattr(exc.args[0], "name", lambda: "")()) if exc.args else ""


def _describe_group(admin: Any, group_id: str, wait_s: float) -> Any:
    """DescribeConsumerGroups, asked again while the coordinator is not ready (up to ``wait_s``).

    This is also the probe that must answer before the group's offsets are listed: librdkafka 2.16 crashes the
    process (SIGSEGV) on OffsetFetch while the coordinator is still loading (seen on a fresh 4.2.2 broker), where
    DescribeConsumerGroups reports ``NOT_COORDINATOR``/``COORDINATOR_LOAD_IN_PROGRESS`` as errors.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + wait_s
    delay = 0.1
    while True:
        [future] = admin.describe_consumer_groups([group_id], request_timeout=_TIMEOUT_S).values()
        try:
            return future.result(timeout=_TIMEOUT_S)
        except TimeoutError:
            raise PlanError(kafka_clients.no_answer(f"could not describe group '{group_id}'", _TIMEOUT_S)) from None
        except KafkaException as exc:
            name = _error_name(exc)
            if name not in _COORDINATOR_NOT_READY:
                raise
            if time.monotonic() >= deadline:
                raise CoordinatorNotReady(
                    f"group '{group_id}': the group coordinator still answers {name} after {wait_s:.0f} s (its "
                    "__consumer_offsets partition is being loaded: the broker was just started, restarted or is "
                    'recovering); wait until the broker has finished loading (its log says "Finished loading '
                    'offsets and group metadata") and run again'
                ) from exc
            log.info("group '%s': coordinator not ready (%s); asking again", group_id, name)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def read_group(
    admin: Any,
    group_id: str,
    *,
    wait_s: float | None = None,
    client_config: Mapping[str, object] | None = None,
    session_timeouts: dict[str, int | None] | None = None,
) -> GroupState | None:
    """The group's state and members; ``None`` when the group does not exist (nothing committed, inactive).

    A group that ListGroups lists but DescribeConsumerGroups does not know (or calls ``Dead``) is a KIP-1071 streams
    group: confluent-kafka 2.16's describe and list calls do not show one (seen on 4.2.2 with a running streams app,
    docs/streams-groups.md), so it comes back as ``protocol="streams"``, never as "no group"; with ``client_config``
    its members and epoch are read from its records in ``__consumer_offsets`` (state ``Unknown`` when they cannot be).

    With ``client_config``, a classic group's members get their ``session.timeout.ms`` from the group's metadata
    record (:mod:`streamproc.kafka.group_metadata`; read only when the group has members, which DescribeGroups does
    not tell); ``session_timeouts`` (member id → ms, ``None`` when the record did not give it) is a cache kept across
    reads, so the record is read again only for members not seen before.
    """
    from confluent_kafka import KafkaException

    try:
        description = _describe_group(admin, group_id, COORDINATOR_WAIT_S if wait_s is None else wait_s)
    except KafkaException as exc:
        if _error_name(exc) == "GROUP_ID_NOT_FOUND":
            return _streams_group(admin, group_id, client_config)
        raise PlanError(f"could not describe group '{group_id}': {kafka_clients.error_text(exc)}") from exc
    described_at_ms = int(time.time() * 1000)
    state = _GROUP_STATES.get(description.state.name, description.state.name.title())
    group_type = getattr(getattr(description, "type", None), "name", "CLASSIC").lower()
    if state == "Dead" and not description.members:
        return _streams_group(admin, group_id, client_config)
    ids = [str(m.member_id) for m in description.members]
    timeouts: dict[str, int | None] = {} if session_timeouts is None else session_timeouts
    if client_config is not None and group_type == "classic" and any(i not in timeouts for i in ids):
        found = _session_timeouts(client_config, group_id)
        timeouts.update({i: found.get(i) for i in ids if i not in timeouts})
    members = tuple(
        GroupMember(client_id=m.client_id, host=m.host, member_id=i, session_timeout_ms=timeouts.get(i))
        for m, i in zip(description.members, ids, strict=True)
    )
    return GroupState(protocol=group_type, state=state, members=members, described_at_ms=described_at_ms)


def _session_timeouts(client_config: Mapping[str, object], group_id: str) -> dict[str, int]:
    """Member id → ``session.timeout.ms`` from the group's newest metadata record; empty when it cannot be read
    (the refusal then says Kafka Streams' default, and that the broker did not give the members' own)."""
    from streamproc.kafka.group_metadata import GroupMetadataUnavailable, read_group_metadata

    try:
        metadata = read_group_metadata(client_config, group_id)
    except GroupMetadataUnavailable as exc:
        log.info("group '%s': the members' session.timeout.ms is unknown: %s", group_id, exc)
        return {}
    return {} if metadata is None else metadata.session_timeouts()


def _streams_group(admin: Any, group_id: str, client_config: Mapping[str, object] | None = None) -> GroupState | None:
    """A group only the legacy ListGroups shows (a streams group), or ``None`` when no group has the id.

    Its members, epoch and topology come from its records in ``__consumer_offsets``
    (``kafka/streams_group_records``) when ``client_config`` is given; without it, or when they cannot be read, its
    state is ``Unknown`` (the plan and the hand-off refuse it, saying why).
    """
    import warnings

    from streamproc.kafka.group_metadata import GroupMetadataUnavailable
    from streamproc.kafka.streams_group_records import read_streams_group

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the only client call that lists every group type
        groups = admin.list_groups(timeout=_TIMEOUT_S)
    if not any(group.id == group_id for group in groups):
        return None
    if client_config is None:
        return GroupState(protocol="streams", state=UNKNOWN_GROUP_STATE, members_unknown="not read")
    described_at_ms = int(time.time() * 1000)
    try:
        records = read_streams_group(client_config, group_id)
    except GroupMetadataUnavailable as exc:
        return GroupState(protocol="streams", state=UNKNOWN_GROUP_STATE, members_unknown=str(exc))
    members = tuple(
        GroupMember(client_id=m.client_id, host=m.client_host.lstrip("/"), member_id=m.member_id)
        for m in records.members
    )
    state = STREAMS_GROUP_WITH_MEMBERS if members else "Empty"
    return GroupState(protocol="streams", state=state, members=members, described_at_ms=described_at_ms,
                      epoch=records.epoch, topology=records.topology)  # fmt: skip


#: How long a pending transactional offset commit on the partitions read is waited for before the plan or the
#: hand-off is refused: a transaction ends within its producer's ``transaction.timeout.ms`` (60 s by default; Kafka
#: Streams under exactly_once_v2: 10 s), which the broker enforces on its next abort check (every 10 s).
PENDING_COMMIT_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class GroupCommits:
    """A group's committed offsets with their metadata, and what is still pending.

    ``pending``: the partitions read by name whose transactional offset commit is not complete
    (``UNSTABLE_OFFSET_COMMIT``); ``unstable``: a commit is pending, on one of them or on a partition the group had
    committed before (then ``committed`` is empty: the coordinator answers for the whole group);
    ``waited_s``: how long the read waited for them to end.
    """

    committed: dict[TopicPartition, CommittedOffset]
    pending: tuple[TopicPartition, ...] = ()
    unstable: bool = False
    waited_s: float = 0.0


def read_group_commits(
    admin: Any,
    group_id: str,
    partitions: Collection[TopicPartition] = (),
    *,
    wait_s: float | None = None,
    pending_wait_s: float | None = None,
) -> GroupCommits:
    """Committed offsets with metadata (``require_stable``), every committed partition's and ``partitions``' by
    name, waiting up to ``pending_wait_s`` (default :data:`PENDING_COMMIT_WAIT_S`) while a commit is pending.

    Naming the partitions is what makes a pending commit on a partition the group never committed visible: the
    coordinator's list of all partitions holds committed ones only, and would show "nothing committed" there.
    The group's coordinator is asked first (:func:`read_group`, waiting up to ``wait_s`` while it loads): listing
    offsets from a coordinator that is still loading crashes librdkafka 2.16.
    """
    read_group(admin, group_id, wait_s=wait_s)
    bound = PENDING_COMMIT_WAIT_S if pending_wait_s is None else pending_wait_s
    started = time.monotonic()
    named = sorted(set(partitions))
    while True:
        commits = _read_commits(admin, group_id, named)
        waited = time.monotonic() - started
        if not commits.unstable or waited >= bound:
            return GroupCommits(commits.committed, commits.pending, commits.unstable, round(min(waited, bound), 1))
        time.sleep(min(0.25, bound - waited))


def read_committed_offsets(
    admin: Any, group_id: str, *, wait_s: float | None = None
) -> tuple[dict[TopicPartition, CommittedOffset], bool]:
    """Every committed partition's offset with its metadata (``require_stable``, not waiting for a pending commit);
    the flag says a transactional commit is pending (see :func:`read_group_commits`, which also names partitions).

    The offsets are listed through librdkafka's own API on ``admin``'s handle (``streamproc.kafka.librdkafka``), which
    reads each metadata string with its exact size: confluent-kafka 2.16's ``list_consumer_group_offsets`` reads
    librdkafka's copy, which is not NUL-terminated, as a C string and returns bytes past its end.
    """
    commits = read_group_commits(admin, group_id, wait_s=wait_s, pending_wait_s=0.0)
    return commits.committed, commits.unstable


def _read_commits(admin: Any, group_id: str, named: Sequence[TopicPartition]) -> GroupCommits:
    """One read: all committed partitions, then the ``named`` ones (each with its own pending commit)."""
    committed, unstable, _ = _list_commits(admin, group_id, None)
    if not named:
        return GroupCommits(committed, (), unstable)
    by_name, named_unstable, pending = _list_commits(admin, group_id, named)
    if not unstable:
        committed.update(by_name)
    return GroupCommits(committed, tuple(pending), unstable or named_unstable or bool(pending))


def _list_commits(
    admin: Any, group_id: str, named: Sequence[TopicPartition] | None
) -> tuple[dict[TopicPartition, CommittedOffset], bool, list[TopicPartition]]:
    """(committed offsets, a pending commit answered for the whole group, the partitions with one pending)."""
    from confluent_kafka import KafkaException

    from streamproc.kafka.librdkafka import LibrdkafkaUnavailable, list_committed_offsets

    try:
        listed = list_committed_offsets(
            admin,
            group_id,
            require_stable=True,
            timeout_s=_TIMEOUT_S,
            partitions=None if named is None else [(tp.topic, tp.partition) for tp in named],
        )
    except KafkaException as exc:
        name = _error_name(exc)
        if name == "UNSTABLE_OFFSET_COMMIT":
            return {}, True, []
        if name == "GROUP_ID_NOT_FOUND":
            return {}, False, []
        raise PlanError(
            f"could not read the committed offsets of group '{group_id}': {kafka_clients.error_text(exc)}"
        ) from exc
    except LibrdkafkaUnavailable as exc:
        raise PlanError(f"could not read the committed offsets of group '{group_id}': {exc}") from exc
    committed: dict[TopicPartition, CommittedOffset] = {}
    pending: list[TopicPartition] = []
    for tp in listed:
        if tp.error:
            if tp.error_name == "UNSTABLE_OFFSET_COMMIT":
                pending.append(TopicPartition(tp.topic, tp.partition))
                continue
            raise PlanError(
                f"committed offset of {tp.topic}-{tp.partition} for group '{group_id}': {tp.error_name} "
                "(the group coordinator's answer for this partition); run again, and check the broker's log if it "
                "persists"
            )
        if tp.offset == _OFFSET_INVALID or tp.offset < 0:
            continue
        committed[TopicPartition(tp.topic, tp.partition)] = CommittedOffset(tp.offset, tp.metadata)
    if pending and named is None:  # the list of all partitions: report as before, for the whole group
        return {}, True, []
    return committed, False, sorted(pending)


def _cleanup_policies(admin: Any, topics: list[str]) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    if not topics:
        return {}
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    policies = {}
    for resource, future in admin.describe_configs(resources, request_timeout=_TIMEOUT_S).items():
        configs = _result(future, f"the configuration of topic '{resource.name}'")
        entry = configs.get("cleanup.policy")
        policies[resource.name] = entry.value if entry is not None and entry.value else "delete"
    return policies


class ClusterReader:
    """One Admin client and one metadata answer, from which the plan's one :class:`ClusterSnapshot` is read.

    The topology analysis needs every topic's partition count before it knows which topics are sources; the
    counts come from this reader's metadata, and :meth:`snapshot` reads the offsets, the group and the commits of
    exactly the topics the analysis named, with the same metadata, so the plan sees one consistent cluster.
    """

    def __init__(self, client_config: Mapping[str, object]) -> None:
        self._client_config = client_config
        self._admin = _admin(client_config)
        self._metadata = self._admin.list_topics(timeout=_TIMEOUT_S)

    @property
    def partition_counts(self) -> dict[str, int]:
        """Every topic of the cluster and its partition count, as the topology analysis needs them."""
        return {name: len(t.partitions) for name, t in self._metadata.topics.items() if t.error is None}

    def snapshot(
        self,
        app: ApplicationSpec,
        request: PlanRequest,
        *,
        now_ms: int | None = None,
        also_topics: Collection[str] = (),
    ) -> ClusterSnapshot:
        """Everything the plan reads: the source topics and ``also_topics`` (changelogs, global-store topics).

        Per topic partitions, ``cleanup.policy``, log start, high watermark and last stable offset, its topic id;
        the group's state and committed offsets; then ListOffsets by timestamp (for the source topics) at the
        instants the request needs. Topics that do not exist are absent.
        """
        from confluent_kafka import TopicPartition as KafkaTopicPartition
        from confluent_kafka.admin import OffsetSpec

        admin, metadata = self._admin, self._metadata
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        wanted = sorted(set(app.source_topics) | set(also_topics))
        present = [t for t in wanted if t in metadata.topics and metadata.topics[t].error is None]
        kafka_tps = [KafkaTopicPartition(t, p) for t in present for p in sorted(metadata.topics[t].partitions)]
        earliest = _list_offsets(
            admin, {tp: OffsetSpec.earliest() for tp in kafka_tps}, IsolationLevel.READ_UNCOMMITTED, "log start"
        )
        high = _list_offsets(
            admin, {tp: OffsetSpec.latest() for tp in kafka_tps}, IsolationLevel.READ_UNCOMMITTED, "high watermark"
        )
        stable = _list_offsets(
            admin, {tp: OffsetSpec.latest() for tp in kafka_tps}, IsolationLevel.READ_COMMITTED, "last stable offset"
        )
        policies = _cleanup_policies(admin, present)
        ids = _topic_ids(admin, present)
        group = read_group(admin, app.application_id, client_config=self._client_config)
        # the source partitions by name: a pending transactional commit on one the group never committed is seen
        sources = [TopicPartition(tp.topic, tp.partition) for tp in kafka_tps if tp.topic in app.source_topics]
        commits = read_group_commits(admin, app.application_id, sources, pending_wait_s=0.0)
        if commits.unstable:
            from streamproc.kafka.transactions import fence_for_pending_commits

            pending = commits.pending or sources  # the coordinator answered for the whole group: any of them
            fence_for_pending_commits(self._client_config, app.application_id, app.subtopology_of,
                                      [(tp.topic, tp.partition) for tp in pending])  # fmt: skip
            commits = read_group_commits(admin, app.application_id, sources)
        by_key = {(tp.topic, tp.partition): tp for tp in kafka_tps}

        def partition_state(topic: str, partition: int, times: Mapping[int, int]) -> PartitionState:
            tp = by_key[(topic, partition)]
            return PartitionState(
                log_start=earliest[tp],
                high_watermark=high[tp],
                last_stable_offset=stable[tp],
                log_end=high[tp],
                offsets_for_times=times,
            )

        def build(times: Mapping[tuple[str, int], Mapping[int, int]]) -> ClusterSnapshot:
            topics = {
                t: TopicState(
                    partitions={
                        tp.partition: partition_state(t, tp.partition, times.get((t, tp.partition), {}))
                        for tp in kafka_tps
                        if tp.topic == t
                    },
                    cleanup_policy=policies.get(t, "delete"),
                    internal=t in app.internal_source_topics or t in app.changelog_topics,
                )
                for t in present
            }
            return ClusterSnapshot(
                topics=topics,
                committed=commits.committed,
                group=group,
                now_ms=now_ms,
                unstable_offsets=commits.unstable,
                pending_commits=commits.pending,
                pending_waited_s=commits.waited_s,
                partition_counts=self.partition_counts,
                topic_ids=ids,
            )

        snapshot = build({})
        instants = sorted(timestamps_needed(snapshot, app, request))
        if not instants:
            return snapshot
        source_tps = [tp for tp in kafka_tps if tp.topic in app.source_topics]
        times: dict[tuple[str, int], dict[int, int]] = {}
        for instant in instants:
            found = _list_offsets(
                admin,
                {tp: OffsetSpec.for_timestamp(instant) for tp in source_tps},
                app.isolation_level,
                f"offset for {instant}",
            )
            for tp, offset in found.items():
                times.setdefault((tp.topic, tp.partition), {})[instant] = offset
        log.info("Read offsets for %d instant(s) on %d partitions", len(instants), len(source_tps))
        return build(times)


def read_snapshot(
    client_config: Mapping[str, object],
    app: ApplicationSpec,
    request: PlanRequest,
    *,
    now_ms: int | None = None,
    also_topics: Collection[str] = (),
) -> ClusterSnapshot:
    """:meth:`ClusterReader.snapshot` with a reader of its own."""
    return ClusterReader(client_config).snapshot(app, request, now_ms=now_ms, also_topics=also_topics)


def _topic_ids(admin: Any, topics: list[str]) -> dict[str, str]:
    from confluent_kafka import TopicCollection

    if not topics:
        return {}
    ids: dict[str, str] = {}
    for name, future in admin.describe_topics(TopicCollection(list(topics)), request_timeout=_TIMEOUT_S).items():
        try:
            ids[name] = str(future.result(timeout=_TIMEOUT_S).topic_id)
        except Exception as exc:  # a missing topic: the caller's refusal rules name it
            log.debug("no topic id for %s: %s", name, exc)
    return ids


def topic_ids(client_config: Mapping[str, object], topics: list[str]) -> dict[str, str]:
    """Kafka's topic id (``Uuid`` text) per existing topic: it changes when a topic is deleted and re-created."""
    return _topic_ids(_admin(client_config), topics)
