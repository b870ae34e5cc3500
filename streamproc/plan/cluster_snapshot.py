"""The inputs of the plan step as plain values: what the cluster looked like, what the application is, what is asked.

The planner (``streamproc.plan.positions``) is a pure function of these three values, so the same code runs on
the conformance scenarios' snapshots and on a snapshot read from a live broker by the Kafka adapter. Nothing here
talks to Kafka. Names follow Kafka's: ``log_start`` is ListOffsets ``EARLIEST``, ``high_watermark`` ListOffsets
``LATEST`` under ``READ_UNCOMMITTED``, ``last_stable_offset`` ListOffsets ``LATEST`` under ``READ_COMMITTED``,
``log_end`` the leader's LEO (planning.md §1).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamproc.engine.record_queue import UNKNOWN
from streamproc.engine.records import TopicPartition as TopicPartition
from streamproc.plan.streams_group_topology import StreamsGroupTopology

# ``org.apache.kafka.common.requests.ListOffsetsResponse.UNKNOWN_OFFSET``: "no offset for that timestamp".
UNKNOWN_OFFSET = -1
#: ``RecordQueue.UNKNOWN``: partition time not known (the engine's constant, one definition).
UNKNOWN_PARTITION_TIME = UNKNOWN


class IsolationLevel(enum.Enum):
    """The consumer ``isolation.level`` of the run (``exactly_once_v2`` forces ``read_committed``)."""

    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"


class RecordKind(enum.Enum):
    """What occupies one offset of the log: a data record (and its transaction's fate) or a control record."""

    DATA = "data"
    DATA_TXN_COMMITTED = "data_txn_committed"
    DATA_TXN_ABORTED = "data_txn_aborted"
    DATA_TXN_OPEN = "data_txn_open"
    MARKER_COMMIT = "marker_commit"
    MARKER_ABORT = "marker_abort"

    @property
    def is_control(self) -> bool:
        """Transaction markers live in control batches, which no consumer ever returns."""
        return self in (RecordKind.MARKER_COMMIT, RecordKind.MARKER_ABORT)

    def visible_to(self, isolation: IsolationLevel) -> bool:
        """Whether a consumer with that isolation level returns this record (``read_committed`` drops aborted)."""
        if self.is_control:
            return False
        if isolation is IsolationLevel.READ_COMMITTED:
            return self in (RecordKind.DATA, RecordKind.DATA_TXN_COMMITTED)
        return True


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One offset still present in the log: its record timestamp and kind (compacted offsets are absent)."""

    offset: int
    timestamp: int
    kind: RecordKind


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's offsets at plan time (``LS ≤ LSO ≤ HW ≤ LEO``).

    ``records`` is the complete log content of ``[log_start, log_end)`` when known (scenarios, tests); a live
    snapshot leaves it ``None`` and fills ``offsets_for_times`` instead: timestamp → ListOffsets answer under the
    run's isolation level, for the timestamps ``positions.timestamps_needed`` names.
    """

    log_start: int
    high_watermark: int
    last_stable_offset: int
    log_end: int
    records: tuple[LogRecord, ...] | None = None
    offsets_for_times: Mapping[int, int] = field(default_factory=dict)

    def latest(self, isolation: IsolationLevel) -> int:
        """ListOffsets ``LATEST``: the high watermark, or the last stable offset under ``read_committed``."""
        if isolation is IsolationLevel.READ_COMMITTED:
            return self.last_stable_offset
        return self.high_watermark


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic as described by the cluster: cleanup policy, internal flag, partitions by number."""

    partitions: Mapping[int, PartitionState]
    cleanup_policy: str = "delete"
    internal: bool = False

    @property
    def compacted(self) -> bool:
        """``cleanup.policy`` contains ``compact`` (offsets may be missing inside the log)."""
        return "compact" in {p.strip() for p in self.cleanup_policy.split(",")}


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """OffsetFetch answer for one partition: the next offset to process and Kafka Streams' commit metadata."""

    offset: int
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of the application's group as DescribeConsumerGroups/describeStreamsGroups lists it.

    ``session_timeout_ms`` is the ``session.timeout.ms`` it joined with, from the group's metadata record in
    ``__consumer_offsets`` (``kafka/group_metadata``); ``None`` when it could not be read (DescribeGroups does not
    carry it).
    """

    client_id: str
    host: str = ""
    member_id: str = ""
    session_timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class GroupState:
    """The application's group; ``state`` as Kafka reports it (``Empty``, ``Dead``, ``Stable``, ...).

    ``described_at_ms`` is the wall clock (epoch ms) when the broker described it: a member that no longer heartbeats
    is gone at most its session timeout later.

    A KIP-1071 streams group (``protocol="streams"``) is read from its records in ``__consumer_offsets``
    (``kafka/streams_group_records``): ``epoch`` is its group epoch, ``topology`` the topology its members declared
    (``None``: no record); when they could not be read its state is ``Unknown`` and ``members_unknown`` says why.
    """

    protocol: str = "classic"
    state: str = "Empty"
    members: tuple[GroupMember, ...] = ()
    described_at_ms: int | None = None
    epoch: int | None = None
    members_unknown: str = ""
    topology: StreamsGroupTopology | None = None


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything the planner reads from the cluster, read once at plan time.

    ``topics`` holds the application's source topics and, for a live plan, the changelog and global-store topics
    whose offsets the restores need; topics that do not exist are absent. ``partition_counts`` is every topic of the
    cluster (what the topology analysis resolves patterns and internal topics against) and ``topic_ids`` Kafka's
    topic id per topic read, both from the same metadata. ``group`` is ``None`` when the group does not exist
    (``GroupIdNotFoundException``: inactive, nothing committed). ``now_ms`` is the plan's clock, read once per plan
    (planning.md §3 (d)). ``unstable_offsets`` is set by the adapter when OffsetFetch with ``require_stable`` kept
    answering ``UNSTABLE_OFFSET_COMMIT`` for ``pending_waited_s``; ``pending_commits`` names the source partitions
    it answered so for (the adapter names them: a first commit pending is invisible otherwise).
    """

    topics: Mapping[str, TopicState]
    committed: Mapping[TopicPartition, CommittedOffset] = field(default_factory=dict)
    group: GroupState | None = None
    now_ms: int | None = None
    unstable_offsets: bool = False
    pending_commits: tuple[TopicPartition, ...] = ()
    pending_waited_s: float = 0.0
    partition_counts: Mapping[str, int] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ApplicationSpec:
    """What the planner needs from the topology and the application's configuration.

    ``source_topics`` are the input topics after pattern resolution, internal ones included; the repartition/FK
    topics among them are also in ``internal_source_topics``. ``reset_policies`` are the per-source policies
    (``Consumed.withOffsetResetPolicy``) and ``auto_offset_reset`` the main consumer's setting, whose Kafka Streams
    default is ``earliest`` (``StreamsConfig``). ``changelog_topics`` and ``copartition_groups`` feed the
    partition-count checks; ``previous_partition_counts`` is the evidence from a previous plan, if any.
    """

    application_id: str
    source_topics: tuple[str, ...]
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    internal_source_topics: frozenset[str] = frozenset()
    subtopology_of: Mapping[str, int] = field(default_factory=dict)
    changelog_topics: Mapping[str, int] = field(default_factory=dict)
    copartition_groups: tuple[tuple[str, ...], ...] = ()
    previous_partition_counts: Mapping[str, int] = field(default_factory=dict)
    #: the run's stages (sub-topology ids), as the topology analysis orders them; empty: derived from the sources
    stages: tuple[tuple[int, ...], ...] = ()
    reset_policies: Mapping[str, str] = field(default_factory=dict)
    auto_offset_reset: str = "earliest"


class StartPolicy(enum.Enum):
    """What to do with a start outside ``[log start, latest]`` (planning.md §5.2).

    ``clamp`` is also what ``--on-data-loss=clamp`` means; ``default`` and ``strict`` both fail on data loss.
    """

    DEFAULT = "default"
    CLAMP = "clamp"
    STRICT = "strict"

    @classmethod
    def from_on_data_loss(cls, value: str) -> StartPolicy:
        """``--on-data-loss=fail`` is ``default``, ``--on-data-loss=clamp`` is ``clamp``."""
        if value == "fail":
            return cls.DEFAULT
        if value == "clamp":
            return cls.CLAMP
        raise ValueError(f"--on-data-loss must be 'fail' or 'clamp', not '{value}'")


@dataclass(frozen=True, slots=True)
class CommittedStart:
    """Mode (a): the group's own committed offsets (``StreamTask#findOffset``); the default."""


@dataclass(frozen=True, slots=True)
class EarliestStart:
    """Mode (f) ``--to-earliest``: the log start offset."""


@dataclass(frozen=True, slots=True)
class LatestStart:
    """Mode (f) ``--to-latest``: the high watermark, or the LSO under ``read_committed``."""


@dataclass(frozen=True, slots=True)
class ToOffsetStart:
    """Mode (b) ``--to-offset``: one offset for every external partition, or a map naming partitions.

    Partitions a map does not name keep the ``committed`` mode.
    """

    offset: int | None = None
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToDatetimeStart:
    """Mode (c) ``--to-datetime``: Kafka's ``Utils#getDateTime`` text, or epoch milliseconds."""

    datetime: str | int


@dataclass(frozen=True, slots=True)
class ByDurationStart:
    """Mode (d) ``--by-duration``: a Java ``Duration.parse`` text, counted back from the plan's ``now``."""

    duration: str


@dataclass(frozen=True, slots=True)
class ShiftByStart:
    """Mode (e) ``--shift-by``: committed offset plus ``shift`` (negative moves back)."""

    shift: int


@dataclass(frozen=True, slots=True)
class FromFileStart:
    """Mode (g) ``--from-file``: the CSV text ``TOPIC,PARTITION,OFFSET`` (or ``GROUP,TOPIC,PARTITION,OFFSET``)."""

    csv: str
    file_name: str = "reset plan"


@dataclass(frozen=True, slots=True)
class ToCurrentStart:
    """``kafka-streams-groups.sh --reset-offsets --to-current``: the committed offset, and the latest offset where
    none is committed (``OffsetsUtils#resetToCurrent``); the commit's metadata (partition time) is not kept, as the
    tool writes the offset alone. Unlike the ``committed`` mode, no reset policy applies to uncommitted partitions."""


StartSpec = (
    CommittedStart
    | ToCurrentStart
    | EarliestStart
    | LatestStart
    | ToOffsetStart
    | ToDatetimeStart
    | ByDurationStart
    | ShiftByStart
    | FromFileStart
)


@dataclass(frozen=True, slots=True)
class LatestEnd:
    """End at the latest offset read once at plan time (HW, or LSO under ``read_committed``)."""


@dataclass(frozen=True, slots=True)
class ToOffsetEnd:
    """Explicit end offsets; partitions not named end at latest. Never clamped (planning.md §4)."""

    offset: int | None = None
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToDatetimeEnd:
    """End before the first record whose timestamp is ≥ the instant (an *offset* cut)."""

    datetime: str | int


@dataclass(frozen=True, slots=True)
class ByDurationEnd:
    """End at ``now − duration``, then as ``ToDatetimeEnd``."""

    duration: str


@dataclass(frozen=True, slots=True)
class FromFileEnd:
    """End offsets from a CSV in the ``--from-file`` format; every external input partition must be listed."""

    csv: str
    file_name: str = "end plan"


EndSpec = LatestEnd | ToOffsetEnd | ToDatetimeEnd | ByDurationEnd | FromFileEnd


@dataclass(frozen=True, slots=True)
class PartitionSelection:
    """Whole topics and single partitions, as ``kafka-streams-groups.sh --input-topic`` names them (``TOPIC`` or
    ``TOPIC:P,P``); whole topics are expanded against the cluster's partitions by the planner. ``committed``: its
    ``--all-input-topics``, every external input partition that has a committed offset (the planner selects them)."""

    topics: frozenset[str] = frozenset()
    partitions: frozenset[TopicPartition] = frozenset()
    committed: bool = False

    def expand(self, partition_counts: Mapping[str, int]) -> frozenset[TopicPartition]:
        """The selected partitions; a whole topic the cluster does not know selects nothing (the caller names it)."""
        whole = {TopicPartition(t, p) for t in self.topics for p in range(partition_counts.get(t, 0))}
        return frozenset(whole) | self.partitions


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """One start mode, one end mode and the start policy for the whole run."""

    start: StartSpec = field(default_factory=CommittedStart)
    end: EndSpec = field(default_factory=LatestEnd)
    start_policy: StartPolicy = StartPolicy.DEFAULT
    #: where the start mode applies (``kafka-streams-groups.sh --input-topic TOPIC[:P,…]``); the other partitions
    #: start from their committed offsets. ``None``: every external input partition.
    start_partitions: PartitionSelection | None = None


START_MODE_NAMES: Mapping[type, str] = {
    CommittedStart: "committed",
    ToCurrentStart: "to_current",
    EarliestStart: "earliest",
    LatestStart: "latest",
    ToOffsetStart: "to_offset",
    ToDatetimeStart: "to_datetime",
    ByDurationStart: "by_duration",
    ShiftByStart: "shift_by",
    FromFileStart: "from_file",
}

END_MODE_NAMES: Mapping[type, str] = {
    LatestEnd: "latest",
    ToOffsetEnd: "to_offset",
    ToDatetimeEnd: "to_datetime",
    ByDurationEnd: "by_duration",
    FromFileEnd: "from_file",
}
