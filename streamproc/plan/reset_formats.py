"""The reset tools' text formats: datetimes, ISO durations, the ``--from-file`` reset plan CSV and the
``--input-topic TOPIC[:P,…]`` partition selection.

``kafka-streams-application-reset`` (``org.apache.kafka.tools.StreamsResetter``, 4.2) and ``kafka-consumer-groups
--reset-offsets`` read ``--to-datetime`` with ``Utils#getDateTime``, ``--by-duration`` with ``Duration.parse`` and
``--from-file`` with ``StreamsResetter#parseResetPlan``. streamproc reads the same texts to the same values, and
refuses (:class:`~streamproc.plan.refusals.BadRequest`, :class:`~streamproc.plan.refusals.BadResetFile`) the forms
where Kafka would silently read something other than what was written.
"""

from __future__ import annotations

import re
from typing import Final

from streamproc.plan.cluster_snapshot import PartitionSelection, TopicPartition
from streamproc.plan.refusals import BadRequest, BadResetFile

NANOS_PER_MILLI: Final = 1_000_000
_NANOS_PER_SECOND: Final = 1_000_000_000
#: ``Long.MIN_VALUE`` / ``Long.MAX_VALUE``: the range of Java's ``long``.
LONG_MIN: Final = -(2**63)
LONG_MAX: Final = 2**63 - 1
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
    if _EPOCH_MILLIS.fullmatch(text) and int(text) <= LONG_MAX:
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
        if not LONG_MIN <= value <= LONG_MAX or not LONG_MIN <= value * unit <= LONG_MAX:
            raise BadRequest(f"{what} '{text}' overflows Java's Duration (long seconds); use {ACCEPTED_DURATIONS}")
        seconds += value * unit
        if not LONG_MIN <= seconds <= LONG_MAX:
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
    return (now_ms * NANOS_PER_MILLI - duration_nanos) // NANOS_PER_MILLI


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
        if offset is None or not LONG_MIN <= offset <= LONG_MAX:
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


def parse_partition_selection(texts: tuple[str, ...] | list[str], *, what: str = "--start-partitions") -> (
    PartitionSelection
):  # fmt: skip
    """``TOPIC`` or ``TOPIC:P,P,…`` per text, as ``OffsetsUtils#parseTopicPartitionsToReset`` reads
    ``kafka-streams-groups.sh --input-topic`` (and ``kafka-consumer-groups.sh --topic``): split on ``:`` with
    ``String#split`` (exactly two parts when there is a ``:``), partitions on ``,``, each an ``int``."""
    topics: set[str] = set()
    partitions: set[TopicPartition] = set()
    for text in texts:
        if ":" not in text:
            if not text:
                raise BadRequest(f"{what}: an empty topic name; give TOPIC or TOPIC:P,P")
            topics.add(text)
            continue
        parts = _java_split(text, ":")
        if len(parts) != 2:
            raise BadRequest(
                f"{what} '{text}': Invalid topic arg '{text}', expected topic name and partitions (TOPIC:P,P)"
            )
        topic, numbers = parts
        for number in _java_split(numbers, ","):
            value = int(number) if _JAVA_INTEGER.fullmatch(number) else None
            if value is None or not 0 <= value <= _INT_MAX:
                raise BadRequest(
                    f"{what} '{text}': Invalid partition '{number}' specified in topic arg '{text}' (TOPIC:P,P)"
                )
            partitions.add(TopicPartition(topic, value))
    return PartitionSelection(frozenset(topics), frozenset(partitions))
