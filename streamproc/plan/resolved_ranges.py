"""The positions part of a plan: one ``[start, end)`` range per input partition, its notes, and the plan report.

Values only (planning.md §5): :mod:`streamproc.plan.positions` computes them, :mod:`streamproc.plan.run_plan`
puts them into the ``RunPlan``, and :meth:`ResolvedRanges.report` prints them as planning.md §5.2 shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from streamproc.plan.cluster_snapshot import UNKNOWN_PARTITION_TIME, IsolationLevel, StartPolicy, TopicPartition


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
    appended_by_stage: int | None = None
    """A repartition partition: the stage of this run whose records are appended after ``end`` (``None``: none)."""

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


def note_summary(note: Mapping[str, object]) -> str:
    """A note in the plan report's NOTES column: its code, or for a note whose code alone would mislead (a
    repartition partition without a backlog is not idle) its code and what it says."""
    if note.get("code") == "repartition_no_backlog":
        return f"repartition_no_backlog (receives {note.get('receives')})"
    return str(note.get("code"))


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
