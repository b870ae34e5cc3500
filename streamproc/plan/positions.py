"""Start and end offsets per input partition, resolved exactly as the reset tools and Kafka Streams would.

This is the pure core of the plan step (planning.md §2–§7, §9). It mirrors:

- ``kafka-streams-application-reset`` (``org.apache.kafka.tools.StreamsResetter``, 4.2) and
  ``kafka-consumer-groups --reset-offsets`` (``ConsumerGroupCommand``/``OffsetsUtils``) for the start modes and
  their clamping (``checkOffsetsRange``: strict comparisons); their text formats are
  :mod:`streamproc.plan.reset_formats`;
- the broker's ListOffsets by timestamp (``UnifiedLog#fetchOffsetByTimestamp``, ``Partition#fetchOffsetForTimestamp``):
  the first offset whose timestamp is ≥ t, ``UNKNOWN_OFFSET`` at or beyond the last fetchable offset;
- Kafka Streams' own reset for partitions without a committed offset (``StreamThread#resetOffsets``); the partition
  time a task resumes with is read from the commit metadata by the one decoder checked against Kafka Streams,
  :meth:`streamproc.state.commit_metadata.TopicPartitionMetadata.decode`.

Where Kafka would silently lose or skip data, streamproc refuses with a
:class:`~streamproc.plan.refusals.PlanRefusal` that names the partitions and offsets and says what to do; the
preconditions are :mod:`streamproc.plan.preconditions`, the result values :mod:`streamproc.plan.resolved_ranges`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from streamproc.errors import PlanError
from streamproc.plan.cluster_snapshot import (
    END_MODE_NAMES,
    START_MODE_NAMES,
    UNKNOWN_OFFSET,
    UNKNOWN_PARTITION_TIME,
    ApplicationSpec,
    ByDurationEnd,
    ByDurationStart,
    ClusterSnapshot,
    CommittedOffset,
    CommittedStart,
    EarliestStart,
    FromFileEnd,
    FromFileStart,
    IsolationLevel,
    LatestStart,
    PartitionState,
    PlanRequest,
    ShiftByStart,
    StartPolicy,
    ToCurrentStart,
    ToDatetimeEnd,
    ToDatetimeStart,
    ToOffsetEnd,
    ToOffsetStart,
    TopicPartition,
)
from streamproc.plan.preconditions import check_group, check_partition_counts, check_topics
from streamproc.plan.refusals import (
    BadRequest,
    CommittedBeyondEnd,
    EndBeforeStart,
    EndBeyondHighWatermark,
    EndBeyondLastStableOffset,
    NoCommittedOffsetToShift,
    NoResetPolicy,
    OffsetOutOfRange,
    OutOfRangeRequest,
    PlanRefusal,
    ResetFileMismatch,
    UnstableOffsets,
    pending_commit_message,
)
from streamproc.plan.reset_formats import (
    LONG_MIN,
    NANOS_PER_MILLI,
    instant_minus,
    parse_datetime,
    parse_duration,
    parse_reset_file,
)
from streamproc.plan.resolved_ranges import Note, PartitionRange, ResolvedRanges
from streamproc.state.commit_metadata import TopicPartitionMetadata

logger = logging.getLogger(__name__)

_KAFKA_NO_RESET_POLICY: Final = (
    "No valid committed offset found for input [{topics}] and no valid reset policy configured. You need to set "
    'configuration parameter "auto.offset.reset" or specify a topic specific reset policy via '
    "StreamsBuilder#stream(..., Consumed.with(Topology.AutoOffsetReset)) or "
    "StreamsBuilder#table(..., Consumed.with(Topology.AutoOffsetReset))"
)


# --------------------------------------------------------------------------------------------------------------
# ListOffsets by timestamp


def offset_for_timestamp(tp: TopicPartition, state: PartitionState, timestamp: int, isolation: IsolationLevel) -> int:
    """ListOffsets ``forTimestamp``: the smallest offset whose record timestamp is ≥ ``timestamp``.

    Every kind takes part (markers and aborted records too); an answer at or beyond the last fetchable offset
    (HW, or LSO under ``read_committed``) is ``UNKNOWN_OFFSET`` (``Partition#fetchOffsetForTimestamp``). A negative
    instant is searched as 0, as ``StreamThread#resetOffsets`` does, so it never turns into a special spec.
    """
    target = max(timestamp, 0)
    if state.records is None:
        if target not in state.offsets_for_times:
            raise PlanError(
                f"{tp}: the snapshot has neither the log records nor a ListOffsets answer for timestamp {target}; "
                f"the adapter must query positions.timestamps_needed() before planning"
            )
        return state.offsets_for_times[target]
    fetchable = state.latest(isolation)
    for record in sorted(state.records, key=lambda r: r.offset):
        if record.offset < state.log_start:
            continue
        if record.timestamp >= target:
            return record.offset if record.offset < fetchable else UNKNOWN_OFFSET
    return UNKNOWN_OFFSET


# --------------------------------------------------------------------------------------------------------------
# Resolution


def _policy_timestamp(policy: str, now_ms: int | None, tp: TopicPartition) -> int:
    """``StreamThread#resetOffsets`` for ``by_duration``: ``now − duration.toMillis()``, negative → 0."""
    duration = parse_duration(policy.removeprefix("by_duration:"), what=f"reset policy for {tp.topic}")
    if now_ms is None:
        raise BadRequest(f"{tp}: reset policy '{policy}' needs the plan's clock (now_ms) in the snapshot")
    return max(now_ms - duration // NANOS_PER_MILLI, 0)


def _validate_policy(policy: str, what: str) -> None:
    """``AutoOffsetResetStrategy#fromString`` (case-sensitive), with the validator's message."""
    if policy in ("earliest", "latest", "none"):
        return
    if policy.startswith("by_duration:"):
        parse_duration(policy.removeprefix("by_duration:"), what=what)
        return
    raise BadRequest(
        f"Invalid value `{policy}` for configuration {what}. The value must be either 'earliest', 'latest', 'none' "
        f"or of the format 'by_duration:<PnDTnHnMn.nS.>'."
    )


@dataclass(slots=True)
class _Failures:
    """Per-partition refusals, raised together (one error per kind, the first kind in catalogue order)."""

    items: dict[type[PlanRefusal], list[tuple[TopicPartition, str, dict[str, object]]]] = field(default_factory=dict)

    def add(self, kind: type[PlanRefusal], tp: TopicPartition, text: str, **detail: object) -> None:
        self.items.setdefault(kind, []).append((tp, text, detail))

    def raise_first(self, app: ApplicationSpec) -> None:
        order: tuple[type[PlanRefusal], ...] = (
            NoResetPolicy,
            NoCommittedOffsetToShift,
            ResetFileMismatch,
            BadRequest,
            CommittedBeyondEnd,
            OffsetOutOfRange,
            OutOfRangeRequest,
            EndBeyondHighWatermark,
            EndBeyondLastStableOffset,
            EndBeforeStart,
        )
        for kind in order:
            entries = self.items.get(kind)
            if not entries:
                continue
            entries.sort(key=lambda e: e[0])
            partitions = [e[0] for e in entries]
            texts = "; ".join(e[1] for e in entries)
            details: dict[str, object] = {}
            if kind is NoResetPolicy:
                topics = ",".join(sorted({tp.topic for tp in partitions}))
                texts = (
                    f"no committed offset for {', '.join(str(tp) for tp in partitions)} and reset policy 'none' "
                    f'(Kafka Streams would fail with "{_KAFKA_NO_RESET_POLICY.format(topics=topics)}"); set a '
                    f"reset policy for the run or commit offsets for these partitions"
                )
            elif kind is OffsetOutOfRange:
                details["lost"] = {str(e[0]): e[2] for e in entries}
                texts += "; re-plan with --start-policy=clamp or restore them from backup"
            raise kind(texts, partitions=partitions, topics={tp.topic for tp in partitions}, details=details)


def timestamps_needed(snapshot: ClusterSnapshot, app: ApplicationSpec, request: PlanRequest) -> frozenset[int]:
    """The instants a live adapter must ask ListOffsets about (for every source partition) before planning."""
    wanted: set[int] = set()
    for spec in (request.start, request.end):
        instant = _request_instant(spec, snapshot.now_ms)
        if instant is not None:
            wanted.add(max(instant, 0))
    for topic in app.source_topics:
        policy = _policy_for(topic, app)[0]
        if policy.startswith("by_duration:"):
            wanted.add(_policy_timestamp(policy, snapshot.now_ms, TopicPartition(topic, 0)))
    return frozenset(wanted)


def _request_instant(spec: object, now_ms: int | None) -> int | None:
    if isinstance(spec, ToDatetimeStart | ToDatetimeEnd):
        what = "to_datetime" if isinstance(spec, ToDatetimeStart) else "end to_datetime"
        return parse_datetime(spec.datetime, what=what)
    if isinstance(spec, ByDurationStart | ByDurationEnd):
        what = "by_duration" if isinstance(spec, ByDurationStart) else "end by_duration"
        duration = parse_duration(spec.duration, what=what)
        if now_ms is None:
            raise BadRequest(f"{what} '{spec.duration}' needs the plan's clock: the snapshot has no now_ms")
        instant = instant_minus(now_ms, duration)
        if instant < LONG_MIN:
            raise BadRequest(
                f"{what} '{spec.duration}' reaches before the earliest instant Java can express (the reset tools "
                f"would fail with an ArithmeticException); use a shorter duration, e.g. P36500D"
            )
        return instant
    return None


def _policy_for(topic: str, app: ApplicationSpec) -> tuple[str, str]:
    """(policy, where it comes from): the source's own policy, else ``auto.offset.reset`` (internal: global)."""
    if topic not in app.internal_source_topics and topic in app.reset_policies:
        return app.reset_policies[topic], "Consumed.withOffsetResetPolicy"
    return app.auto_offset_reset, "auto.offset.reset"


def plan_ranges(snapshot: ClusterSnapshot, app: ApplicationSpec, request: PlanRequest) -> ResolvedRanges:
    """Check the preconditions, then resolve ``[start, end)`` for every partition of every source topic."""
    check_group(snapshot.group, app.application_id)
    if snapshot.unstable_offsets:
        raise UnstableOffsets(
            pending_commit_message(
                app.application_id, snapshot.pending_commits, snapshot.pending_waited_s, then="plan again"
            )
        )
    check_topics(snapshot, app)
    check_partition_counts(snapshot, app)
    _validate_policy(app.auto_offset_reset, "auto.offset.reset")
    for topic, policy in sorted(app.reset_policies.items()):
        _validate_policy(policy, f"the reset policy of source topic '{topic}'")

    isolation = app.isolation_level
    start_instant = _request_instant(request.start, snapshot.now_ms)
    end_instant = _request_instant(request.end, snapshot.now_ms)
    partitions = sorted(
        TopicPartition(topic, p) for topic in set(app.source_topics) for p in snapshot.topics[topic].partitions
    )
    selected = _start_partitions(request, app, partitions, snapshot.committed)
    explicit = _explicit_offsets(request, app, partitions)
    end_offsets = _explicit_end_offsets(request, app, partitions)
    failures = _Failures()
    ranges: list[PartitionRange] = []
    stages, stage_of = _stages(app)
    for tp in partitions:
        state = snapshot.topics[tp.topic].partitions[tp.partition]
        internal = tp.topic in app.internal_source_topics
        resolved = _resolve_start(tp, state, snapshot, app, request, start_instant, explicit, selected, failures)
        if resolved is None:
            continue
        start, notes, partition_time = resolved
        end = _resolve_end(tp, state, app, request, end_instant, end_offsets, start, notes, failures)
        if end is None:
            continue
        appended_by: int | None = None
        if internal:
            upstream = stage_of.get(app.subtopology_of.get(tp.topic, -1), 0) - 1
            appended_by = upstream if upstream >= 0 else None
            notes.append(repartition_note(start == end, upstream))
        elif start == end:
            notes.append(Note("empty"))
        committed = snapshot.committed.get(tp)
        committed_offset = None if committed is None else committed.offset
        ranges.append(
            PartitionRange(
                tp,
                start,
                end,
                tuple(notes),
                partition_time,
                internal,
                committed_offset=committed_offset,
                start_from_committed=committed_offset is not None and committed_offset == start,
                appended_by_stage=appended_by,
            )
        )
    failures.raise_first(app)
    result = ResolvedRanges(
        application_id=app.application_id,
        isolation_level=isolation,
        start_mode=START_MODE_NAMES[type(request.start)],
        end_mode=END_MODE_NAMES[type(request.end)],
        ranges=tuple(ranges),
        start_policy=request.start_policy,
        now_ms=snapshot.now_ms,
        resolved_timestamp_ms=start_instant,
        resolved_end_timestamp_ms=end_instant,
        stages=stages,
        warnings=tuple(_warnings(request, isolation) + _backlog_warnings(request, ranges)),
    )
    logger.info(
        "Planned %s ranges for application %s (%s max records, start %s, end %s)",
        len(ranges),
        app.application_id,
        result.max_records_total,
        result.start_mode,
        result.end_mode,
    )
    return result


def repartition_note(empty: bool, upstream_stage: int) -> Note:
    """The note of a repartition partition: what its task reads in this run.

    With a backlog (records the application wrote before it stopped and did not process), the backlog, then the
    records this run's upstream stage writes (``repartition_backlog``). Without one, only those records
    (``repartition_no_backlog``): the range is empty, yet the partition is not idle, since the hand-off publishes
    the upstream records to it, commits past them and deletes them, which "empty" alone would hide.
    """
    writer = f"stage {upstream_stage}" if upstream_stage >= 0 else "the upstream stage"
    if not empty:
        return Note("repartition_backlog", (("followed_by", f"records written by {writer} of this run"),))
    receives = f"records written by {writer} of this run, which the hand-off commits and then deletes"
    return Note("repartition_no_backlog", (("receives", receives),))


def _backlog_warnings(request: PlanRequest, ranges: list[PartitionRange]) -> list[str]:
    """An explicit start that rewinds an input while a repartition backlog is kept may process data twice."""
    if isinstance(request.start, CommittedStart):
        return []
    moved = [r for r in ranges if not r.internal and not r.start_from_committed]
    backlog = [r for r in ranges if r.internal and r.end > r.start]
    if not moved or not backlog:
        return []
    return [
        f"the start of {', '.join(str(r.tp) for r in moved)} is not the committed offset while repartition topic "
        f"partitions {', '.join(str(r.tp) for r in backlog)} keep a backlog written from the old positions; "
        f"records may be processed twice or skipped downstream"
    ]


def _warnings(request: PlanRequest, isolation: IsolationLevel) -> list[str]:
    warnings = []
    if isolation is IsolationLevel.READ_COMMITTED and isinstance(
        request.start, LatestStart | ToDatetimeStart | ByDurationStart
    ):
        warnings.append(
            "latest is the last stable offset (read_committed); the reset tools would use the high watermark"
        )
    if isinstance(request.end, ToDatetimeEnd | ByDurationEnd):
        warnings.append(
            "the end is an offset cut: every record before the first record with timestamp >= t is included, "
            "out-of-order records with larger timestamps too, and later records with smaller timestamps are not"
        )
    return warnings


def _stages(app: ApplicationSpec) -> tuple[tuple[tuple[int, ...], ...], dict[int, int]]:
    """The analysis' stages when the spec has them (a plan from a topology), so notes and the plan agree.

    A spec without a topology (planning scenarios) knows only which sub-topologies read internal topics: those
    reading only external topics run first, each one reading internal topics follows, by id.
    """
    if app.stages:
        return app.stages, {s: i for i, stage in enumerate(app.stages) for s in stage}
    subs = sorted(set(app.subtopology_of.values()))
    if not subs:
        return (), {}
    reads_internal = {app.subtopology_of[t] for t in app.internal_source_topics if t in app.subtopology_of}
    first = tuple(s for s in subs if s not in reads_internal)
    later = [(s,) for s in subs if s in reads_internal]
    stages = ((first,) if first else ()) + tuple(later)
    return stages, {s: i for i, stage in enumerate(stages) for s in stage}


def _file_offsets(
    csv: str, file_name: str, app: ApplicationSpec, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """A reset file's offsets; it must list every external input partition and nothing else (§3 (g))."""
    offsets = parse_reset_file(csv, application_id=app.application_id, file_name=file_name)
    known = set(partitions)
    foreign = sorted(tp for tp in offsets if tp not in known)
    if foreign:
        raise ResetFileMismatch(
            "; ".join(
                f"{file_name} lists {tp} which is not an input partition of application '{app.application_id}'"
                for tp in foreign
            )
            + "; remove those lines",
            partitions=foreign,
        )
    missing = sorted(tp for tp in partitions if tp not in offsets and tp.topic not in app.internal_source_topics)
    if missing:
        raise ResetFileMismatch(
            f"{file_name} lists no offset for {', '.join(str(tp) for tp in missing)}; add a TOPIC,PARTITION,OFFSET "
            f"line for every input partition (StreamsResetter would fail with a NullPointerException)",
            partitions=missing,
        )
    return offsets


def _explicit_end_offsets(
    request: PlanRequest, app: ApplicationSpec, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The per-partition end offsets an explicit end mode names (``to_offset`` map, ``from_file``)."""
    end = request.end
    if isinstance(end, FromFileEnd):
        return _file_offsets(end.csv, end.file_name, app, partitions)
    if isinstance(end, ToOffsetEnd):
        return dict(end.offsets)
    return {}


def _explicit_offsets(
    request: PlanRequest, app: ApplicationSpec, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The per-partition offsets an explicit mode names (``to_offset`` map, ``from_file``), checked."""
    known = set(partitions)
    start = request.start
    if isinstance(start, FromFileStart):
        return _file_offsets(start.csv, start.file_name, app, partitions)
    for spec, what in ((start, "start to_offset"), (request.end, "end to_offset")):
        if isinstance(spec, ToOffsetStart | ToOffsetEnd):
            foreign = sorted(tp for tp in spec.offsets if tp not in known)
            if foreign:
                raise BadRequest(
                    f"{what} names {', '.join(str(tp) for tp in foreign)}, not input partitions of application "
                    f"'{app.application_id}'",
                    partitions=foreign,
                )
            if spec.offset is None and not spec.offsets:
                raise BadRequest(f"{what} needs an offset or a map of offsets per partition")
    if isinstance(start, ToOffsetStart):
        return dict(start.offsets)
    return {}


def _start_partitions(
    request: PlanRequest,
    app: ApplicationSpec,
    partitions: list[TopicPartition],
    committed: Mapping[TopicPartition, object],
) -> frozenset[TopicPartition] | None:
    """A partition selection (``--input-topic TOPIC[:P,…]`` of ``kafka-streams-groups.sh``) names input partitions
    of the application, and only for a start mode that resets (a file or a map names its partitions itself)."""
    if request.start_partitions is None:
        return None
    start = request.start
    if isinstance(start, CommittedStart | FromFileStart) or (isinstance(start, ToOffsetStart) and start.offsets):
        why = "resets nothing" if isinstance(start, CommittedStart) else "names its own partitions"
        raise BadRequest(
            f"start partitions select where a start mode applies, and start mode {START_MODE_NAMES[type(start)]} "
            f"{why}: give a --to-… / --by-duration / --shift-by start with them, or drop them"
        )
    if request.start_partitions.committed:  # nothing committed: nothing selected, as the tool resets nothing
        return frozenset(tp for tp in partitions if tp in committed and tp.topic not in app.internal_source_topics)
    known = {tp.topic: 0 for tp in partitions}
    for tp in partitions:
        known[tp.topic] = max(known[tp.topic], tp.partition + 1)
    unknown = sorted(t for t in request.start_partitions.topics if t not in known)
    selection = request.start_partitions.expand(known)
    foreign = sorted(tp for tp in selection if tp not in set(partitions))
    if unknown or foreign:
        named = ", ".join([f"topic {t}" for t in unknown] + [str(tp) for tp in foreign])
        raise BadRequest(
            f"start partitions {named}: not input partitions of application '{app.application_id}' "
            f"(kafka-streams-groups.sh: One or more topics are not part of the group)",
            partitions=foreign,
        )
    return selection


def _resolve_start(
    tp: TopicPartition,
    state: PartitionState,
    snapshot: ClusterSnapshot,
    app: ApplicationSpec,
    request: PlanRequest,
    start_instant: int | None,
    explicit: Mapping[TopicPartition, int],
    selection: frozenset[TopicPartition] | None,
    failures: _Failures,
) -> tuple[int, list[Note], int] | None:
    """(start, notes, partition time) of one partition, or ``None`` with the refusal recorded."""
    isolation = app.isolation_level
    latest = state.latest(isolation)
    committed = snapshot.committed.get(tp)
    internal = tp.topic in app.internal_source_topics
    partition_time = (
        TopicPartitionMetadata.decode(committed.metadata).partition_time
        if committed is not None
        else UNKNOWN_PARTITION_TIME
    )
    spec = request.start
    if tp in explicit:
        clamped = _clamp_explicit(tp, state, explicit[tp], request.start_policy, isolation, failures)
        return None if clamped is None else (clamped[0], clamped[1], UNKNOWN_PARTITION_TIME)
    selected = not internal if selection is None else tp in selection
    if not selected or isinstance(spec, CommittedStart) or (isinstance(spec, ToOffsetStart) and spec.offset is None):
        resolved = _committed_start(tp, state, committed, snapshot, app, request, failures)
        return None if resolved is None else (resolved[0], resolved[1], partition_time)
    if isinstance(spec, ToCurrentStart):
        if committed is None:
            return latest, [Note("no_committed_offset_to_latest", (("latest", latest),))], UNKNOWN_PARTITION_TIME
        resolved = _committed_start(tp, state, committed, snapshot, app, request, failures)
        return None if resolved is None else (resolved[0], resolved[1], UNKNOWN_PARTITION_TIME)
    if isinstance(spec, EarliestStart):
        return state.log_start, [], UNKNOWN_PARTITION_TIME
    if isinstance(spec, LatestStart):
        return latest, [], UNKNOWN_PARTITION_TIME
    if isinstance(spec, ToOffsetStart) and spec.offset is not None:
        clamped = _clamp_explicit(tp, state, spec.offset, request.start_policy, isolation, failures)
        return None if clamped is None else (clamped[0], clamped[1], UNKNOWN_PARTITION_TIME)
    if isinstance(spec, ShiftByStart):
        if committed is None:
            failures.add(
                NoCommittedOffsetToShift,
                tp,
                f"Cannot shift offset for partition {tp} since there is no current committed offset "
                f"(use another start mode for it)",
            )
            return None
        clamped = _clamp_explicit(tp, state, committed.offset + spec.shift, request.start_policy, isolation, failures)
        return None if clamped is None else (clamped[0], clamped[1], UNKNOWN_PARTITION_TIME)
    if start_instant is not None:
        found = offset_for_timestamp(tp, state, start_instant, isolation)
        if found == UNKNOWN_OFFSET:
            return latest, [Note("timestamp_not_found", (("fallback", latest),))], UNKNOWN_PARTITION_TIME
        return found, [], UNKNOWN_PARTITION_TIME
    raise BadRequest(f"unknown start mode {spec!r}")


def _latest_name(isolation: IsolationLevel) -> str:
    return "last stable offset" if isolation is IsolationLevel.READ_COMMITTED else "high watermark"


def _clamp_explicit(
    tp: TopicPartition,
    state: PartitionState,
    requested: int,
    policy: StartPolicy,
    isolation: IsolationLevel,
    failures: _Failures,
) -> tuple[int, list[Note]] | None:
    """``OffsetsUtils#checkOffsetsRange`` (strict comparisons), or a refusal under ``start_policy=strict``."""
    latest = state.latest(isolation)
    bound = _latest_name(isolation)
    if requested > latest:
        if policy is StartPolicy.STRICT:
            failures.add(OutOfRangeRequest, tp, f"{tp}: requested start {requested} is beyond the {bound} {latest}")
            return None
        return latest, [Note("clamped_to_latest", (("requested", requested), ("latest", latest)))]
    if requested < state.log_start:
        if policy is StartPolicy.STRICT:
            failures.add(
                OutOfRangeRequest,
                tp,
                f"{tp}: requested start {requested} is below the log start offset {state.log_start}",
            )
            return None
        return state.log_start, [
            Note("clamped_to_log_start", (("requested", requested), ("log_start", state.log_start)))
        ]
    return requested, []


def _committed_start(
    tp: TopicPartition,
    state: PartitionState,
    committed: CommittedOffset | None,
    snapshot: ClusterSnapshot,
    app: ApplicationSpec,
    request: PlanRequest,
    failures: _Failures,
) -> tuple[int, list[Note]] | None:
    """Mode (a) and §3.1: the committed offset, else the reset policy; out-of-range commits are refused."""
    isolation = app.isolation_level
    if committed is None:
        policy, source = _policy_for(tp.topic, app)
        note = Note("no_committed_offset", (("policy", policy), ("source", source)))
        if policy == "earliest":
            return state.log_start, [note]
        if policy == "latest":
            return state.latest(isolation), [note]
        if policy.startswith("by_duration:"):
            found = offset_for_timestamp(tp, state, _policy_timestamp(policy, snapshot.now_ms, tp), isolation)
            if found == UNKNOWN_OFFSET:
                latest = state.latest(isolation)
                return latest, [note, Note("timestamp_not_found", (("fallback", latest),))]
            return found, [note]
        failures.add(NoResetPolicy, tp, str(tp))
        return None
    offset = committed.offset
    if offset > state.high_watermark:
        failures.add(
            CommittedBeyondEnd,
            tp,
            f"{tp}: committed offset {offset} is beyond the high watermark {state.high_watermark} (log truncated or "
            f"topic re-created?); Kafka Streams would get OFFSET_OUT_OF_RANGE and reset per its policy; choose an "
            f"explicit start mode (e.g. to_earliest) if that is what you want",
        )
        return None
    if offset < state.log_start:
        lost = state.log_start - offset
        if request.start_policy is StartPolicy.CLAMP:
            logger.warning(
                "%s: accepting the loss of offsets %s..%s (log start %s)",
                tp,
                offset,
                state.log_start - 1,
                state.log_start,
            )
            return state.log_start, [
                Note(
                    "data_loss_accepted",
                    (("requested", offset), ("log_start", state.log_start), ("lost_offsets", lost)),
                )
            ]
        cause = "retention" if tp.topic not in app.internal_source_topics else "retention or DeleteRecords"
        policy, _ = _policy_for(tp.topic, app)
        failures.add(
            OffsetOutOfRange,
            tp,
            f"{tp} [{offset}, {state.latest(isolation)}): offsets {offset}..{state.log_start - 1} were deleted by "
            f"{cause} (log start is now {state.log_start}; Kafka Streams would silently reset per '{policy}')",
            **{"from": offset, "to_exclusive": state.log_start, "offsets": lost},
        )
        return None
    return offset, []


def _resolve_end(
    tp: TopicPartition,
    state: PartitionState,
    app: ApplicationSpec,
    request: PlanRequest,
    end_instant: int | None,
    end_offsets: Mapping[TopicPartition, int],
    start: int,
    notes: list[Note],
    failures: _Failures,
) -> int | None:
    """planning.md §4: latest, explicit (never clamped) or by timestamp; appends the end notes."""
    isolation = app.isolation_level
    latest = state.latest(isolation)
    internal = tp.topic in app.internal_source_topics
    spec = request.end
    explicit = end_offsets.get(tp)
    if explicit is None and isinstance(spec, ToOffsetEnd) and not internal:
        explicit = spec.offset
    if explicit is not None:
        if explicit > latest:
            if isolation is IsolationLevel.READ_COMMITTED:
                failures.add(
                    EndBeyondLastStableOffset,
                    tp,
                    f"{tp}: end {explicit} is beyond the last stable offset {latest} (high watermark "
                    f"{state.high_watermark}); a batch run reads only committed data that exists at plan time",
                )
            else:
                failures.add(
                    EndBeyondHighWatermark,
                    tp,
                    f"{tp}: end {explicit} is beyond the high watermark {latest}; a batch run reads only data that "
                    f"exists at plan time",
                )
            return None
        if explicit < start:
            failures.add(
                EndBeforeStart, tp, f"{tp} end {explicit} < start {start}; choose an end at or after the start"
            )
            return None
        return explicit
    end = latest
    if not internal and end_instant is not None:
        found = offset_for_timestamp(tp, state, end_instant, isolation)
        if found == UNKNOWN_OFFSET:
            notes.append(Note("timestamp_not_found", (("fallback", latest),)))
        elif found < start:
            notes.append(Note("end_before_start_by_timestamp"))
            return start
        else:
            end = found
    if end == latest and isolation is IsolationLevel.READ_COMMITTED and latest < state.high_watermark:
        notes.append(Note("end_is_last_stable_offset", (("high_watermark", state.high_watermark),)))
    if end < start:
        failures.add(
            EndBeforeStart,
            tp,
            f"{tp} end {end} < start {start} (the end is the {_latest_name(isolation)}); choose an explicit start "
            f"at or before {end}",
        )
        return None
    return end
