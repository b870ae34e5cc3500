"""Start and end offsets per input partition, resolved exactly as the reset tools and Kafka Streams would.

This is the pure core of the plan step (planning.md §2–§7, §9). It mirrors:

- ``kafka-streams-application-reset`` (``org.apache.kafka.tools.StreamsResetter``, 4.2) and
  ``kafka-consumer-groups --reset-offsets`` (``ConsumerGroupCommand``/``OffsetsUtils``) for the start modes,
  their clamping (``checkOffsetsRange``: strict comparisons) and their text formats
  (``Utils#getDateTime``, ``Duration.parse``, ``parseResetPlan``);
- the broker's ListOffsets by timestamp (``UnifiedLog#fetchOffsetByTimestamp``, ``Partition#fetchOffsetForTimestamp``):
  the first offset whose timestamp is ≥ t, ``UNKNOWN_OFFSET`` at or beyond the last fetchable offset;
- Kafka Streams' own reset for partitions without a committed offset (``StreamThread#resetOffsets``) and its commit
  metadata (``TopicPartitionMetadata#decode``).

Where Kafka would silently lose or skip data, streamproc refuses with a :class:`PlanRefusal` that names the
partitions and offsets and says what to do.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import struct
from collections.abc import Iterable, Mapping
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
    GroupState,
    IsolationLevel,
    LatestStart,
    PartitionState,
    PlanRequest,
    ShiftByStart,
    StartPolicy,
    ToDatetimeEnd,
    ToDatetimeStart,
    ToOffsetEnd,
    ToOffsetStart,
    TopicPartition,
)

logger = logging.getLogger(__name__)

# ``TopicPartitionMetadata.LATEST_MAGIC_BYTE`` and the older version without processor metadata.
_METADATA_V1: Final = 1
_METADATA_V2: Final = 2
_INACTIVE_GROUP_STATES: Final = frozenset({"Empty", "Dead"})
_NANOS_PER_MILLI: Final = 1_000_000
_NANOS_PER_SECOND: Final = 1_000_000_000
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1

ACCEPTED_DATETIMES: Final = (
    "yyyy-MM-ddTHH:mm:ss.SSS with an optional zone Z, +hh, +hhmm or +hh:mm (or -), no zone meaning UTC "
    "(e.g. 2024-03-01T12:00:00.000Z), or an integer of epoch milliseconds"
)
ACCEPTED_DURATIONS: Final = (
    "an ISO-8601 duration as Java's Duration.parse reads it, PnDTnHnMn.nS (e.g. PT30M, P1DT12H, PT0.5S, P7D; "
    "no weeks, months or years)"
)
_KAFKA_NO_RESET_POLICY: Final = (
    "No valid committed offset found for input [{topics}] and no valid reset policy configured. You need to set "
    'configuration parameter "auto.offset.reset" or specify a topic specific reset policy via '
    "StreamsBuilder#stream(..., Consumed.with(Topology.AutoOffsetReset)) or "
    "StreamsBuilder#table(..., Consumed.with(Topology.AutoOffsetReset))"
)


# --------------------------------------------------------------------------------------------------------------
# Refusals (planning.md §7)


class PlanRefusal(PlanError):
    """A plan streamproc will not make; carries the partitions/topics it concerns and structured details."""

    def __init__(
        self,
        message: str,
        *,
        partitions: Iterable[TopicPartition] = (),
        topics: Iterable[str] = (),
        details: Mapping[str, object] | None = None,
    ) -> None:
        self.partitions: tuple[TopicPartition, ...] = tuple(sorted(set(partitions)))
        self.topics: tuple[str, ...] = tuple(sorted(set(topics)))
        self.details: dict[str, object] = dict(details or {})
        super().__init__(message)


class GroupActive(PlanRefusal):
    """The application's group still has members (the reset tools refuse too)."""


class MissingTopic(PlanRefusal):
    """A source or internal topic does not exist (Kafka Streams: ``MissingSourceTopicException``)."""


class PartitionCountChanged(PlanRefusal):
    """A topic's partition count differs from what its changelogs or a previous plan prove."""


class NotCopartitioned(PlanRefusal):
    """Co-partitioned topics differ in partition count (Kafka Streams: ``TopologyException``)."""


class UnstableOffsets(PlanRefusal):
    """OffsetFetch kept answering ``UNSTABLE_OFFSET_COMMIT`` (a transactional offset commit is pending)."""


class OffsetOutOfRange(PlanRefusal):
    """The committed offset is below the log start: unprocessed data was deleted."""


class CommittedBeyondEnd(PlanRefusal):
    """The committed offset is above the high watermark (log truncated or topic re-created)."""


class NoResetPolicy(PlanRefusal):
    """No committed offset and the reset policy is ``none`` (Kafka Streams: ``StreamsException``)."""


class NoCommittedOffsetToShift(PlanRefusal):
    """``shift_by`` on a partition without a committed offset (``kafka-consumer-groups.sh`` refuses too)."""


class OutOfRangeRequest(PlanRefusal):
    """``start_policy=strict`` and an explicit start outside ``[log start, latest]``."""


class EndBeyondHighWatermark(PlanRefusal):
    """An explicit end above the high watermark (a batch run does not wait for data)."""


class EndBeyondLastStableOffset(PlanRefusal):
    """An explicit end above the last stable offset of a ``read_committed`` run."""


class EndBeforeStart(PlanRefusal):
    """An end offset below the start offset."""


class BadResetFile(PlanRefusal):
    """A ``from_file`` CSV that ``StreamsResetter#parseResetPlan`` would not read (or with duplicates)."""


class ResetFileMismatch(PlanRefusal):
    """A ``from_file`` CSV that misses an input partition or lists a partition that is not an input."""


class BadRequest(PlanRefusal):
    """A malformed request: datetime or duration text, negative duration, unknown partition or mode."""


# --------------------------------------------------------------------------------------------------------------
# Text formats of the reset tools


def _days_from_epoch(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in ``java.util.GregorianCalendar``'s calendar: Julian before 1582-10-15."""
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    if (year, month, day) >= (1582, 10, 15):
        jdn = day + (153 * m + 2) // 5 + 365 * y + y // 4 - y // 100 + y // 400 - 32045
    else:
        jdn = day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083
    return jdn - 2440588


def _valid_date(year: int, month: int, day: int) -> bool:
    """What a non-lenient ``GregorianCalendar`` accepts (Julian leap years before 1582, no 1582-10-05..14)."""
    if year < 1 or not 1 <= month <= 12 or day < 1:
        return False
    if (year, month) == (1582, 10) and 5 <= day <= 14:
        return False
    if year < 1582 or (year == 1582 and month < 10):
        leap = year % 4 == 0
    else:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    return day <= days


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
    r"(?:(Z)|([+-])(\d{2})(?:(:?)(\d{2}))?)?"
)
_EPOCH_MILLIS = re.compile(r"\d{1,19}")
# ``GregorianCalendar`` bounds of ZONE_OFFSET, which a non-lenient ``SimpleDateFormat`` enforces.
_MIN_ZONE_MINUTES: Final = -13 * 60
_MAX_ZONE_MINUTES: Final = 14 * 60


def _kafka_datetime_error(text: str) -> str:
    """The message ``Utils#getDateTime`` would raise for a text it cannot read."""
    parts = text.split("T")
    while parts and parts[-1] == "":
        parts.pop()
    if len(parts) < 2:
        return "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"
    second = parts[1]
    shown = text if any(c in second for c in "+-Z") else text + "Z"
    return f'Unparseable date: "{shown}"'


def parse_datetime(text: str | int, *, what: str = "to_datetime") -> int:
    """Epoch milliseconds of a ``--to-datetime`` value, as ``org.apache.kafka.common.utils.Utils#getDateTime``.

    Kafka accepts ``yyyy-MM-dd'T'HH:mm:ss.SSS`` plus an ISO zone (``XXX``, else ``X``) with a non-lenient
    ``SimpleDateFormat``, appending ``Z`` when the time part has no zone, so no zone means UTC. streamproc accepts
    the subset whose value Kafka computes correctly (full-width fields, exactly three millisecond digits, zone
    offsets within ``GregorianCalendar``'s -13:00..+14:00) and refuses the forms where Kafka silently differs from
    the text (``+0130`` and ``+14:30`` are read by Kafka as ``+01`` and ``+14``), plus epoch milliseconds.
    """
    if isinstance(text, bool):
        raise BadRequest(f"{what} {text!r} is not a datetime; use {ACCEPTED_DATETIMES}")
    if isinstance(text, int):
        if text < 0:
            raise BadRequest(f"{what} {text} is negative; use {ACCEPTED_DATETIMES}")
        return text
    if _EPOCH_MILLIS.fullmatch(text) and int(text) <= _LONG_MAX:
        return int(text)
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise BadRequest(
            f"{what} '{text}' is not an accepted datetime (Kafka's reset tools would say: "
            f"{_kafka_datetime_error(text)}); use {ACCEPTED_DATETIMES}"
        )
    year, month, day, hour, minute, second, millis = (int(match.group(i)) for i in range(1, 8))
    if not _valid_date(year, month, day) or hour > 23 or minute > 59 or second > 59:
        raise BadRequest(
            f"{what} '{text}' is not a valid calendar date and time (Kafka's reset tools would say: "
            f"{_kafka_datetime_error(text)}); use {ACCEPTED_DATETIMES}"
        )
    zone_minutes = 0
    if match.group(9) is not None:
        sign = 1 if match.group(9) == "+" else -1
        zone_hours = int(match.group(10))
        zone_mins = int(match.group(12)) if match.group(12) is not None else 0
        colon = match.group(11) == ":"
        sign_text, hh, mm = match.group(9), match.group(10), match.group(12)
        if match.group(12) is not None and not colon and zone_mins != 0:
            raise BadRequest(
                f"{what} '{text}': Kafka's Utils#getDateTime reads the zone +hhmm as +hh and ignores the minutes "
                f"({sign_text}{hh}{mm} would become {sign_text}{hh}:00); write the zone as {sign_text}{hh}:{mm}"
            )
        zone_minutes = sign * (zone_hours * 60 + zone_mins)
        if zone_hours > 23 or zone_mins > 59 or not _MIN_ZONE_MINUTES <= zone_minutes <= _MAX_ZONE_MINUTES:
            raise BadRequest(
                f"{what} '{text}': zone offset outside -13:00..+14:00, which Kafka's Utils#getDateTime rejects or "
                f"truncates to whole hours; use {ACCEPTED_DATETIMES}"
            )
    local_ms = (((_days_from_epoch(year, month, day) * 24 + hour) * 60 + minute) * 60 + second) * 1000 + millis
    return local_ms - zone_minutes * 60_000


# ``java.time.Duration.parse``'s pattern (JDK 17), case-insensitive.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str, *, what: str = "by_duration") -> int:
    """Nanoseconds of a ``--by-duration`` value, read as ``java.time.Duration.parse`` reads it.

    ``PnDTnHnMn.nS``, each number optionally signed, a leading sign negating the whole, up to 9 fraction digits
    after ``.`` or ``,``; no weeks/months/years, ``T`` needs a time part, values must fit Java's ``long`` seconds.
    Negative durations are refused (Kafka would look into the future and fall back to latest).
    """
    match = _DURATION.fullmatch(text)
    if match is None or match.group(3) in ("T", "t") or all(match.group(i) is None for i in (2, 4, 5, 6)):
        raise BadRequest(
            f"{what} '{text}' is not a duration (Java's Duration.parse: Text cannot be parsed to a Duration); "
            f"use {ACCEPTED_DURATIONS}"
        )
    seconds = 0
    for group, unit in ((2, 86_400), (4, 3_600), (5, 60), (6, 1)):
        number = match.group(group)
        if number is None:
            continue
        value = int(number)
        if not _LONG_MIN <= value <= _LONG_MAX or not _LONG_MIN <= value * unit <= _LONG_MAX:
            raise BadRequest(f"{what} '{text}' overflows Java's Duration (long seconds); use {ACCEPTED_DURATIONS}")
        seconds += value * unit
        if not _LONG_MIN <= seconds <= _LONG_MAX:
            raise BadRequest(f"{what} '{text}' overflows Java's Duration (long seconds); use {ACCEPTED_DURATIONS}")
    fraction = match.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if match.group(6) is not None and match.group(6).startswith("-"):
        nanos = -nanos
    total = seconds * _NANOS_PER_SECOND + nanos
    if match.group(1) == "-":
        total = -total
    if total < 0:
        raise BadRequest(
            f"{what} '{text}' is negative: it would point after the plan's now (Kafka would fall back to latest); "
            f"use a positive duration, {ACCEPTED_DURATIONS}"
        )
    return total


def instant_minus(now_ms: int, duration_nanos: int) -> int:
    """``Instant.ofEpochMilli(now).minus(duration).toEpochMilli()``: the reset tools' arithmetic (floors)."""
    return (now_ms * _NANOS_PER_MILLI - duration_nanos) // _NANOS_PER_MILLI


def _java_split(text: str, separator: str) -> list[str]:
    """``String#split`` with a literal separator: trailing empty strings are removed."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_KAFKA_RESET_FILE_FORMAT: Final = "Reset plan CSV file is not following the format `TOPIC,PARTITION,OFFSET`."
_KAFKA_RESET_FILE_EMPTY: Final = "Error parsing reset plan CSV file. It is empty,"


def parse_reset_file(csv: str, *, application_id: str, file_name: str = "reset plan") -> dict[TopicPartition, int]:
    """Read a ``--from-file`` CSV as ``StreamsResetter#parseResetPlan`` does, refusing what it would choke on.

    Lines split on ``\\n`` and fields on ``,`` with Java's ``String#split`` (trailing empty parts dropped);
    exactly three fields, partition an ``int``, offset a ``long`` (no spaces, no ``\\r``). streamproc also accepts
    ``GROUP,TOPIC,PARTITION,OFFSET`` when the group is the application id, and refuses duplicate partitions
    (Kafka keeps the last).
    """
    if csv == "":
        raise BadResetFile(
            f"{file_name} is empty (StreamsResetter: {_KAFKA_RESET_FILE_EMPTY}); write one TOPIC,PARTITION,OFFSET "
            f"line per input partition",
            details={"line": 0},
        )
    offsets: dict[TopicPartition, int] = {}
    for number, line in enumerate(_java_split(csv, "\n"), start=1):
        fields = _java_split(line, ",")
        if len(fields) == 4:
            group, fields = fields[0], fields[1:]
            if group != application_id:
                raise BadResetFile(
                    f"{file_name} line {number}: group '{group}' is not the application '{application_id}'; "
                    f"keep only this application's lines or use the TOPIC,PARTITION,OFFSET form",
                    details={"line": number},
                )
        if len(fields) != 3:
            raise BadResetFile(
                f"{file_name} line {number} {line!r}: {_KAFKA_RESET_FILE_FORMAT} (StreamsResetter throws "
                f"ParseException); write one TOPIC,PARTITION,OFFSET line per partition, no header, no spaces",
                details={"line": number},
            )
        topic, partition_text, offset_text = fields
        partition = int(partition_text) if _JAVA_INTEGER.fullmatch(partition_text) else None
        offset = int(offset_text) if _JAVA_INTEGER.fullmatch(offset_text) else None
        if partition is None or not _INT_MIN <= partition <= _INT_MAX:
            raise BadResetFile(
                f"{file_name} line {number}: partition {partition_text!r} is not an int "
                f"(StreamsResetter: NumberFormatException); {_KAFKA_RESET_FILE_FORMAT}",
                details={"line": number},
            )
        if offset is None or not _LONG_MIN <= offset <= _LONG_MAX:
            hint = " (a Windows line ending?)" if offset_text.endswith("\r") else ""
            raise BadResetFile(
                f"{file_name} line {number}: offset {offset_text!r} is not a long{hint} "
                f"(StreamsResetter: NumberFormatException); {_KAFKA_RESET_FILE_FORMAT}",
                details={"line": number},
            )
        tp = TopicPartition(topic, partition)
        if tp in offsets:
            raise BadResetFile(
                f"{file_name} line {number}: {tp} is listed twice (Kafka would silently keep the last line); "
                f"keep one line per partition",
                partitions=[tp],
                details={"line": number},
            )
        offsets[tp] = offset
    return offsets


def decode_partition_time(metadata: str) -> int:
    """Partition time from Kafka Streams' commit metadata (``TopicPartitionMetadata#decode``), else ``-1``.

    ``base64(version | int64 partition time | processor metadata)``; version 1 has no processor metadata.
    Empty, undecodable or unknown-version metadata means unknown (Kafka Streams only logs a warning).
    """
    if not metadata:
        return UNKNOWN_PARTITION_TIME
    try:
        raw = base64.b64decode(metadata + "=" * (-len(metadata) % 4), validate=True)
    except (binascii.Error, ValueError):
        logger.warning("Unsupported offset metadata found: %r", metadata)
        return UNKNOWN_PARTITION_TIME
    if len(raw) < 9 or raw[0] not in (_METADATA_V1, _METADATA_V2):
        logger.warning("Unsupported offset metadata found: %r", metadata)
        return UNKNOWN_PARTITION_TIME
    partition_time: int = struct.unpack(">q", raw[1:9])[0]
    return partition_time


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
# Results


@dataclass(frozen=True, slots=True)
class Note:
    """One remark on a partition's range, with the values that justify it (``code`` as in planning.md §5.2)."""

    code: str
    fields: tuple[tuple[str, int | str], ...] = ()

    def to_dict(self) -> dict[str, int | str]:
        """The scenario form: ``{"code": ..., <field>: <value>, ...}``."""
        return {"code": self.code, **dict(self.fields)}


@dataclass(frozen=True, slots=True)
class PartitionRange:
    """``[start, end)`` of one input partition, its notes, and the partition time the task starts with."""

    tp: TopicPartition
    start: int
    end: int
    notes: tuple[Note, ...] = ()
    partition_time: int = UNKNOWN_PARTITION_TIME
    internal: bool = False
    committed_offset: int | None = None
    start_from_committed: bool = False
    """The start is the group's committed offset (hand-off then commits nothing for an empty range)."""

    def to_dict(self) -> dict[str, object]:
        """The plan JSON form of one range."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "start": self.start,
            "end": self.end,
            "notes": [n.to_dict() for n in self.notes],
            "partition_time": self.partition_time,
            "internal": self.internal,
            "committed_offset": self.committed_offset,
            "start_from_committed": self.start_from_committed,
        }

    @property
    def max_records(self) -> int:
        """``end − start``: an upper bound on the record count (markers, aborted, compacted take offsets)."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class ResolvedRanges:
    """The positions part of a plan: one range per input partition, sorted by topic then partition."""

    application_id: str
    isolation_level: IsolationLevel
    start_mode: str
    end_mode: str
    ranges: tuple[PartitionRange, ...]
    start_policy: StartPolicy = StartPolicy.DEFAULT
    now_ms: int | None = None
    resolved_timestamp_ms: int | None = None
    resolved_end_timestamp_ms: int | None = None
    stages: tuple[tuple[int, ...], ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        """The plan JSON form (ranges sorted by topic then partition); same inputs, same output."""
        return {
            "application_id": self.application_id,
            "isolation_level": self.isolation_level.value,
            "start_mode": self.start_mode,
            "end_mode": self.end_mode,
            "start_policy": self.start_policy.value,
            "now_ms": self.now_ms,
            "resolved_timestamp_ms": self.resolved_timestamp_ms,
            "resolved_end_timestamp_ms": self.resolved_end_timestamp_ms,
            "ranges": [r.to_dict() for r in self.ranges],
            "max_records_total": self.max_records_total,
            "stages": [list(s) for s in self.stages],
            "warnings": list(self.warnings),
        }

    @property
    def max_records_total(self) -> int:
        """Sum of ``end − start`` over all ranges."""
        return sum(r.max_records for r in self.ranges)

    def report(self) -> str:
        """The plan report of planning.md §5.2: one row per partition, then totals and the run's settings."""
        lines = [f"{'TOPIC':<30} {'PARTITION':<10} {'START':<12} {'END':<12} {'MAX-RECORDS':<12} NOTE"]
        for r in self.ranges:
            note = "; ".join(_note_text(n, r) for n in r.notes)
            lines.append(
                f"{r.tp.topic:<30} {r.tp.partition:<10} {r.start:<12} {r.end:<12} {r.max_records:<12} {note}".rstrip()
            )
        lines.append(f"partitions: {len(self.ranges)}, max records: {self.max_records_total}")
        lines.append(f"isolation level: {self.isolation_level.value}")
        lines.append(
            f"start mode: {self.start_mode} (start policy {self.start_policy.value}), end mode: {self.end_mode}"
        )
        if self.now_ms is not None:
            lines.append(f"now: {self.now_ms}")
        if self.resolved_timestamp_ms is not None:
            lines.append(f"start timestamp: {self.resolved_timestamp_ms}")
        if self.resolved_end_timestamp_ms is not None:
            lines.append(f"end timestamp: {self.resolved_end_timestamp_ms}")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _note_text(note: Note, r: PartitionRange) -> str:
    f = dict(note.fields)
    if note.code == "clamped_to_log_start":
        return (
            f"clamped_to_log_start: requested {f['requested']}, log start {f['log_start']} (Kafka: New offset "
            f"({f['requested']}) is lower than earliest offset for topic partition {r.tp}. Value will be set to "
            f"{f['log_start']})"
        )
    if note.code == "clamped_to_latest":
        return (
            f"clamped_to_latest: requested {f['requested']}, latest {f['latest']} (Kafka: New offset "
            f"({f['requested']}) is higher than latest offset for topic partition {r.tp}. Value will be set to "
            f"{f['latest']})"
        )
    if note.code == "timestamp_not_found":
        return (
            f"timestamp_not_found: no fetchable record has a timestamp >= the requested instant, latest "
            f"{f['fallback']} used (the reset tools print 'Partition {r.tp.partition} from topic {r.tp.topic} is "
            f"empty ... Falling back to latest known offset.')"
        )
    if not f:
        return note.code
    return f"{note.code}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in f.items())


# --------------------------------------------------------------------------------------------------------------
# Preconditions (planning.md §2)


def check_group(group: GroupState | None, application_id: str) -> None:
    """Refuse while the group has members or is not ``Empty``/``Dead`` (a missing group is inactive)."""
    if group is None:
        return
    if not group.members and group.state in _INACTIVE_GROUP_STATES:
        return
    clients = ", ".join(m.client_id for m in group.members) or "no members listed"
    raise GroupActive(
        f"group '{application_id}' has {len(group.members)} member(s) in state {group.state} ({clients}); stop every "
        f"instance of the application (or wait session.timeout.ms for crashed ones) and plan again "
        f"(kafka-consumer-groups.sh: Error: Assignments can only be reset if the group '{application_id}' is "
        f"inactive, but the current state is {group.state}.)",
        details={"members": len(group.members), "state": group.state},
    )


def check_topics(snapshot: ClusterSnapshot, app: ApplicationSpec) -> None:
    """Every source topic (external and internal) must exist (``StreamsPartitionAssignor``)."""
    missing = [t for t in app.source_topics if t not in snapshot.topics or not snapshot.topics[t].partitions]
    if not missing:
        return
    external = sorted(t for t in missing if t not in app.internal_source_topics)
    internal = sorted(t for t in missing if t in app.internal_source_topics)
    parts = []
    for topic in external:
        sub = app.subtopology_of.get(topic)
        where = f" of sub-topology {sub}" if sub is not None else ""
        parts.append(f"source topic '{topic}'{where} does not exist")
    for topic in internal:
        sub = app.subtopology_of.get(topic)
        where = f" of sub-topology {sub}" if sub is not None else ""
        parts.append(
            f"internal topic '{topic}'{where} does not exist (Kafka Streams creates it at startup: start the "
            f"application once or create it, then plan again)"
        )
    quoted = f' (Kafka Streams would fail with "Missing source topics. [{", ".join(external)}]")' if external else ""
    raise MissingTopic("; ".join(parts) + quoted + "; create the topic or fix the topology", topics=missing)


def check_partition_counts(snapshot: ClusterSnapshot, app: ApplicationSpec) -> None:
    """Co-partitioned topics must agree; sources must match their changelogs, a previous plan and the commits."""
    counts = {name: len(topic.partitions) for name, topic in snapshot.topics.items()}
    for group in app.copartition_groups:
        present = {t: counts[t] for t in group if t in counts}
        if len(set(present.values())) > 1:
            shown = ", ".join(f"{t}={n}" for t, n in sorted(present.items()))
            raise NotCopartitioned(
                f"co-partitioned topics {sorted(present)} have different partition counts ({shown}); Kafka Streams "
                f'would fail with "Topics not co-partitioned: [{{{shown}}}]"; repartition or recreate the topics so '
                f"that they have the same number of partitions",
                topics=present,
                details={"partition_counts": present},
            )
    for changelog, sub in sorted(app.changelog_topics.items()):
        if changelog not in counts:
            continue
        sources = [t for t in app.source_topics if app.subtopology_of.get(t) == sub and t in counts]
        if not sources:
            continue
        expected = max(counts[t] for t in sources)
        if expected != counts[changelog]:
            grown = max(sources, key=lambda t: (counts[t], t))
            kafka = (
                f"Existing internal topic {changelog} has invalid partitions: expected: {expected}; actual: "
                f"{counts[changelog]}. Use 'org.apache.kafka.tools.StreamsResetter' tool to clean up invalid topics "
                f"before processing."
            )
            raise PartitionCountChanged(
                f"{grown} now has {expected} partitions, {counts[changelog]} when changelog {changelog} was created; "
                f'Kafka Streams would fail with "{kafka}"',
                topics=[grown, changelog],
            )
    for topic, previous in sorted(app.previous_partition_counts.items()):
        if topic in counts and counts[topic] != previous and topic in app.source_topics:
            raise PartitionCountChanged(
                f"{topic} now has {counts[topic]} partitions, {previous} when the previous plan was made; the tasks "
                f"of the changed partitions have no state; reset the application (StreamsResetter) and plan again",
                topics=[topic],
            )
    vanished = [
        tp
        for tp in snapshot.committed
        if tp.topic in app.source_topics
        and tp.topic in snapshot.topics
        and tp.partition not in snapshot.topics[tp.topic].partitions
    ]
    if vanished:
        names = ", ".join(str(tp) for tp in sorted(vanished))
        raise PartitionCountChanged(
            f"the group has committed offsets for {names}, which no longer exist (topic deleted and re-created "
            f"with fewer partitions?); reset the application (StreamsResetter) and plan again",
            partitions=vanished,
            topics={tp.topic for tp in vanished},
        )


# --------------------------------------------------------------------------------------------------------------
# Resolution


def _policy_timestamp(policy: str, now_ms: int | None, tp: TopicPartition) -> int:
    """``StreamThread#resetOffsets`` for ``by_duration``: ``now − duration.toMillis()``, negative → 0."""
    duration = parse_duration(policy.removeprefix("by_duration:"), what=f"reset policy for {tp.topic}")
    if now_ms is None:
        raise BadRequest(f"{tp}: reset policy '{policy}' needs the plan's clock (now_ms) in the snapshot")
    return max(now_ms - duration // _NANOS_PER_MILLI, 0)


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
        if instant < _LONG_MIN:
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
            f"group '{app.application_id}' has a pending transactional offset commit; wait for the transaction to "
            f"finish or abort, then plan again"
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
    explicit = _explicit_offsets(request, app, partitions)
    end_offsets = _explicit_end_offsets(request, app, partitions)
    failures = _Failures()
    ranges: list[PartitionRange] = []
    stages, stage_of = _stages(app)
    for tp in partitions:
        state = snapshot.topics[tp.topic].partitions[tp.partition]
        internal = tp.topic in app.internal_source_topics
        resolved = _resolve_start(tp, state, snapshot, app, request, start_instant, explicit, failures)
        if resolved is None:
            continue
        start, notes, partition_time = resolved
        end = _resolve_end(tp, state, app, request, end_instant, end_offsets, start, notes, failures)
        if end is None:
            continue
        if internal:
            upstream = stage_of.get(app.subtopology_of.get(tp.topic, -1), 0) - 1
            followed = (
                f"records written by stage {upstream} of this run"
                if upstream >= 0
                else "records written by the upstream stage of this run"
            )
            notes.append(Note("repartition_backlog", (("followed_by", followed),)))
        if start == end:
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
    """Sub-topologies reading only external topics run first; each one reading internal topics follows, by id."""
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


def _resolve_start(
    tp: TopicPartition,
    state: PartitionState,
    snapshot: ClusterSnapshot,
    app: ApplicationSpec,
    request: PlanRequest,
    start_instant: int | None,
    explicit: Mapping[TopicPartition, int],
    failures: _Failures,
) -> tuple[int, list[Note], int] | None:
    """(start, notes, partition time) of one partition, or ``None`` with the refusal recorded."""
    isolation = app.isolation_level
    latest = state.latest(isolation)
    committed = snapshot.committed.get(tp)
    internal = tp.topic in app.internal_source_topics
    partition_time = decode_partition_time(committed.metadata) if committed is not None else UNKNOWN_PARTITION_TIME
    spec = request.start
    if tp in explicit:
        clamped = _clamp_explicit(tp, state, explicit[tp], request.start_policy, isolation, failures)
        return None if clamped is None else (clamped[0], clamped[1], UNKNOWN_PARTITION_TIME)
    if internal or isinstance(spec, CommittedStart) or (isinstance(spec, ToOffsetStart) and spec.offset is None):
        resolved = _committed_start(tp, state, committed, snapshot, app, request, failures)
        return None if resolved is None else (resolved[0], resolved[1], partition_time)
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
