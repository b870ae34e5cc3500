"""The ``RunPlan``: the plan step's output, a versioned JSON document that every later step reads.

A plan is pure data (DESIGN.md §1): the ranges per input partition with their notes, the Kafka Streams tasks and
the stores they restore, and a preview of every irreversible hand-off action (group offsets before → after of input
and repartition partitions, the task directories replaced and their ``.checkpoint`` files, the DeleteRecords offsets
of repartition partitions), so that an operator reviews what will change before anything does. Where an offset is
only known after the process step (a repartition partition's end once this run's upstream stage appended to it),
the preview says so (``plus_appended_by_stage``); ``streamproc.handoff.preview`` gives the exact offsets from the
task reports. The same inputs give byte-identical JSON (sorted keys, no clock unless the request used one). Reading
validates the document: a hand-edited or truncated plan is a ``PlanError`` naming the field, never a
half-understood run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamproc.engine.topology_analysis import TopologyAnalysis
from streamproc.errors import PlanError
from streamproc.intervals import first_overlap
from streamproc.plan.cluster_snapshot import IsolationLevel, TopicPartition
from streamproc.plan.internal_topics import NewInternalTopic
from streamproc.plan.resolved_ranges import ResolvedRanges, note_summary
from streamproc.state.committable_offsets import purge_offsets

FORMAT = "streamproc-run-plan"
#: 2: the hand-off preview lists every repartition commit and purge (``plus_appended_by_stage``) and the task
#: directories. Version 1 plans still read, and are written back byte for byte (their plan id stays the same).
VERSION = 2
READABLE_VERSIONS = (1, 2)
ISOLATION_LEVELS = tuple(level.value for level in IsolationLevel)


@dataclass(frozen=True, slots=True)
class PlannedRange:
    """``[start, end)`` of one input partition, as fetch and hand-off need it."""

    topic: str
    partition: int
    start: int
    end: int
    internal: bool
    compacted: bool
    committed_offset: int | None
    partition_time: int
    notes: tuple[Mapping[str, Any], ...] = ()
    topic_id: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def empty(self) -> bool:
        return self.start == self.end


@dataclass(frozen=True, slots=True)
class PlannedStore:
    """A store of a task and the changelog partition it is restored from."""

    name: str
    changelog_topic: str
    changelog_partition: int


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """One Kafka Streams task: its sub-topology, partition number, source partitions and stores."""

    task_id: str
    subtopology: int
    partition: int
    source_partitions: tuple[str, ...]
    stores: tuple[PlannedStore, ...] = ()


@dataclass(frozen=True, slots=True)
class PlannedRestore:
    """How one store of one task is restored before processing: changelog ``[start, end)`` after its checkpoint.

    ``task_corrupted``/``local_state_wiped`` say what Kafka Streams itself would do with the task's local state
    (``state.restore_plan``): a wiped task restores from the changelog's log start.
    """

    task_id: str
    store: str
    changelog_topic: str
    changelog_partition: int
    start: int
    end: int
    checkpoint_offset: int | None
    task_corrupted: bool = False
    local_state_wiped: bool = False

    @property
    def name(self) -> str:
        return f"{self.changelog_topic}-{self.changelog_partition}"


@dataclass(frozen=True, slots=True)
class OffsetCommitPreview:
    """Hand-off step 1: the group's offset for one partition, before → after.

    ``plus_appended_by_stage``: a repartition partition that stage N of this run appends records to; the hand-off
    commits it at ``after`` plus those records and their transaction markers, a number only the process step's
    reports give (``None``: ``after`` is exact). With ``before == after`` (no backlog) it is committed only if that
    stage writes to it at all.
    """

    partition: str
    before: int | None
    after: int
    plus_appended_by_stage: int | None = None

    @property
    def moves(self) -> bool:
        """The hand-off commits it whatever the process step reports: the plan itself moves the offset."""
        return self.after != self.before

    def text(self) -> str:
        before = "none" if self.before is None else str(self.before)
        return f"commit {self.partition}: {before} -> {self.after}{appended_text(self.plus_appended_by_stage)}"


@dataclass(frozen=True, slots=True)
class PurgePreview:
    """Hand-off step 4: DeleteRecords on a repartition partition up to the offset committed for it.

    ``plus_appended_by_stage`` as for :class:`OffsetCommitPreview`: the committed offset is only known after the
    process step."""

    partition: str
    before_offset: int
    plus_appended_by_stage: int | None = None

    def text(self) -> str:
        offset = f"{self.before_offset}{appended_text(self.plus_appended_by_stage)}"
        return f"delete records of {self.partition} before offset {offset}"


def appended_text(stage: int | None) -> str:
    """What a repartition partition's offset grows by after the plan (the preview's wording, one definition)."""
    if stage is None:
        return ""
    return f" + the records stage {stage} of this run appends (and their transaction markers; known after processing)"


def task_directory(application_id: str, task_id: str) -> str:
    """A task's directory relative to ``state.dir``: ``<application.id>/<task id>`` (``StateDirectory``)."""
    return f"{application_id}/{task_id}"


def state_text(directory: str) -> str:
    """The preview's line for a task directory the hand-off replaces."""
    return f"replace {directory} with the process step's stores, then write {directory}/.checkpoint"


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Everything a run will do, decided before it does anything."""

    application_id: str
    isolation_level: str
    start_mode: str
    end_mode: str
    start_policy: str
    ranges: tuple[PlannedRange, ...]
    tasks: tuple[PlannedTask, ...]
    stages: tuple[tuple[int, ...], ...]
    commits: tuple[OffsetCommitPreview, ...]
    checkpoint_files: tuple[str, ...]
    purges: tuple[PurgePreview, ...]
    now_ms: int | None = None
    warnings: tuple[str, ...] = field(default=())
    restores: tuple[PlannedRestore, ...] = ()
    #: The topology's ``describe()`` text the plan was made from (``None``: planned from topics only); the process
    #: step refuses a topology whose ``describe()`` differs.
    topology: str | None = None
    #: A first run's internal topics (``--create-internal-topics``): created by the plan step, or with
    #: ``internal_topics_created`` false only previewed (a dry run creates nothing).
    internal_topics: tuple[NewInternalTopic, ...] = ()
    internal_topics_created: bool = False
    #: The plan file's version: a plan read from a version 1 file is written back as version 1.
    version: int = VERSION
    #: The partition count of each output topic the topology's sinks write that the plan does not read (read from
    #: the cluster when planning): the process step partitions the sinks' records as Kafka's producer would.
    sink_partitions: Mapping[str, int] = field(default_factory=dict)
    #: The epoch of the application's KIP-1071 streams group when the plan was made (``None``: a classic group, or
    #: none): the hand-off's guard refuses a group whose epoch moved since, as members joined or left (the
    #: application ran) or its topology changed, which its offsets alone may not show (docs/streams-groups.md).
    streams_group_epoch: int | None = None

    @property
    def nothing_new(self) -> bool:
        """No record to read (no input or repartition backlog) and no committed offset the hand-off would move: a
        run of this plan would start Spark and a hand-off to change nothing (an idle application's scheduled run),
        so it stops after planning. A range that is empty but not at the group's committed offset (a first run
        starting at ``latest``) still makes a hand-off, whose commit fixes where the application starts."""
        return all(r.empty for r in self.ranges) and not any(c.moves for c in self.commits)

    # ------------------------------------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        positions: ResolvedRanges,
        *,
        compacted_topics: Sequence[str] = (),
        analysis: TopologyAnalysis | None = None,
        restores: Sequence[PlannedRestore] = (),
        topic_ids: Mapping[str, str] | None = None,
        topology: str | None = None,
    ) -> RunPlan:
        """Combine the resolved positions with the topology's tasks and derive the hand-off preview."""
        compacted = set(compacted_topics)
        ranges = tuple(
            PlannedRange(
                topic=r.tp.topic,
                partition=r.tp.partition,
                start=r.start,
                end=r.end,
                internal=r.internal,
                compacted=r.tp.topic in compacted,
                committed_offset=r.committed_offset,
                partition_time=r.partition_time,
                notes=tuple(n.to_dict() for n in r.notes),
                topic_id=(topic_ids or {}).get(r.tp.topic),
            )
            for r in positions.ranges
        )
        tasks: tuple[PlannedTask, ...] = ()
        stages = positions.stages
        checkpoint_files: list[str] = []
        if analysis is not None:
            task_list = []
            for task_id, sources in sorted(analysis.tasks.items()):
                sub = analysis.subtopology(task_id.subtopology)
                stores = tuple(
                    PlannedStore(s.name, s.changelog_topic, task_id.partition)
                    for s in sorted(sub.stores, key=lambda s: s.name)
                )
                task_list.append(
                    PlannedTask(
                        task_id=str(task_id),
                        subtopology=task_id.subtopology,
                        partition=task_id.partition,
                        source_partitions=tuple(f"{t}-{p}" for t, p in sources),
                        stores=stores,
                    )
                )
                if stores:
                    checkpoint_files.append(f"{task_directory(positions.application_id, str(task_id))}/.checkpoint")
            tasks = tuple(task_list)
            stages = analysis.stages or stages
        commits = handoff_commits(positions)
        return cls(
            application_id=positions.application_id,
            isolation_level=positions.isolation_level.value,
            start_mode=positions.start_mode,
            end_mode=positions.end_mode,
            start_policy=positions.start_policy.value,
            ranges=ranges,
            tasks=tasks,
            stages=tuple(tuple(s) for s in stages),
            commits=commits,
            checkpoint_files=tuple(checkpoint_files),
            purges=handoff_purges(commits, {r.topic for r in ranges if r.internal}),
            now_ms=positions.now_ms,
            warnings=(*(analysis.warnings if analysis is not None else ()), *positions.warnings),
            restores=tuple(restores),
            topology=topology,
        )

    @property
    def task_directories(self) -> tuple[str, ...]:
        """The task directories (relative to ``state.dir``) the hand-off replaces: those of the checkpoint files."""
        return tuple(f.removesuffix("/.checkpoint") for f in self.checkpoint_files)

    def handoff_lines(self, state_dir: Path | None = None, *, no_state_line: str | None = None) -> list[str]:
        """Every irreversible action of the hand-off, one line each, from the plan alone (the plan report, the
        Airflow plan log): commits, task directories, purges, in the hand-off's order.

        Paths are relative to ``state.dir`` unless ``state_dir`` is given; ``no_state_line`` replaces the task
        directories (a hand-off that writes no state). A task whose stores are all in-memory has no directory
        written (the plan cannot tell from ``describe()``; ``streamproc.handoff.preview`` can, from the reports).
        """
        lines = [c.text() for c in self.commits]
        if no_state_line is not None:
            lines += [no_state_line] if self.task_directories else []
        else:
            for directory in self.task_directories:
                lines.append(state_text(directory if state_dir is None else str(state_dir / directory)))
        lines += [p.text() for p in self.purges]
        return lines

    # --------------------------------------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        data = {
            "format": FORMAT,
            "version": self.version,
            "application_id": self.application_id,
            "isolation_level": self.isolation_level,
            "start_mode": self.start_mode,
            "end_mode": self.end_mode,
            "start_policy": self.start_policy,
            "now_ms": self.now_ms,
            "ranges": [
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "start": r.start,
                    "end": r.end,
                    "internal": r.internal,
                    "compacted": r.compacted,
                    "committed_offset": r.committed_offset,
                    "partition_time": r.partition_time,
                    "notes": [dict(n) for n in r.notes],
                    "topic_id": r.topic_id,
                }
                for r in self.ranges
            ],
            "tasks": [
                {
                    "task_id": t.task_id,
                    "subtopology": t.subtopology,
                    "partition": t.partition,
                    "source_partitions": list(t.source_partitions),
                    "stores": [
                        {
                            "name": s.name,
                            "changelog_topic": s.changelog_topic,
                            "changelog_partition": s.changelog_partition,
                        }
                        for s in t.stores
                    ],
                }
                for t in self.tasks
            ],
            "stages": [list(s) for s in self.stages],
            "restores": [
                {
                    "task_id": r.task_id,
                    "store": r.store,
                    "changelog_topic": r.changelog_topic,
                    "changelog_partition": r.changelog_partition,
                    "start": r.start,
                    "end": r.end,
                    "checkpoint_offset": r.checkpoint_offset,
                    "task_corrupted": r.task_corrupted,
                    "local_state_wiped": r.local_state_wiped,
                }
                for r in self.restores
            ],
            "handoff_preview": self._preview_dict(),
            "warnings": list(self.warnings),
        }
        if self.topology is not None:  # absent rather than null: plans made without a topology keep their bytes
            data["topology"] = self.topology
        if self.internal_topics:  # absent too when no topic is created
            data["create_internal_topics"] = {
                "created": self.internal_topics_created,
                "topics": [t.to_dict() for t in self.internal_topics],
            }
        if self.sink_partitions:  # absent too for a topology without output topics, and in older plans
            data["sink_partitions"] = dict(sorted(self.sink_partitions.items()))
        if self.streams_group_epoch is not None:  # absent too for a classic group, and in older plans
            data["streams_group_epoch"] = self.streams_group_epoch
        return data

    def _preview_dict(self) -> dict[str, Any]:
        if self.version == 1:  # exactly the fields version 1 wrote: the same bytes, the same plan id
            return {
                "commit_offsets": [
                    {"partition": c.partition, "before": c.before, "after": c.after} for c in self.commits
                ],
                "checkpoint_files": list(self.checkpoint_files),
                "delete_records": [{"partition": p.partition, "before_offset": p.before_offset} for p in self.purges],
            }
        return {
            "commit_offsets": [
                {
                    "partition": c.partition,
                    "before": c.before,
                    "after": c.after,
                    "plus_appended_by_stage": c.plus_appended_by_stage,
                }
                for c in self.commits
            ],
            "checkpoint_files": list(self.checkpoint_files),
            "task_directories": list(self.task_directories),
            "delete_records": [
                {
                    "partition": p.partition,
                    "before_offset": p.before_offset,
                    "plus_appended_by_stage": p.plus_appended_by_stage,
                }
                for p in self.purges
            ],
        }

    def to_json(self) -> str:
        """Canonical text: sorted keys, two-space indent, trailing newline; equal plans give equal bytes."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def write(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> RunPlan:
        """Read and validate a plan file; anything wrong is a ``PlanError`` naming the file and the field."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PlanError(f"cannot read plan {path}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise PlanError(f"plan {path} is not JSON ({exc}); re-run `streamproc plan`") from exc
        try:
            return cls.from_dict(data)
        except PlanError as exc:
            raise PlanError(f"plan {path}: {exc}") from exc

    @classmethod
    def from_dict(cls, data: Any) -> RunPlan:
        v = _Validator(data)
        if v.text("format") != FORMAT:
            raise PlanError(f"'format' must be '{FORMAT}'")
        version = v.integer("version")
        if version not in READABLE_VERSIONS:
            raise PlanError(
                f"plan version {version} is not supported (this streamproc reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}); re-run `streamproc plan`"
            )
        ranges = []
        for i, item in enumerate(v.items("ranges")):
            r = _Validator(item, f"ranges[{i}]")
            start, end = r.integer("start"), r.integer("end")
            if not 0 <= start <= end:
                raise PlanError(f"ranges[{i}]: [{start}, {end}) is not a valid range")
            ranges.append(
                PlannedRange(
                    topic=r.text("topic"),
                    partition=r.integer("partition"),
                    start=start,
                    end=end,
                    internal=r.flag("internal"),
                    compacted=r.flag("compacted"),
                    committed_offset=r.optional_integer("committed_offset"),
                    partition_time=r.integer("partition_time"),
                    notes=tuple(r.items("notes")),
                    topic_id=r.topic_id("topic_id"),
                )
            )
        tasks = []
        for i, item in enumerate(v.items("tasks")):
            t = _Validator(item, f"tasks[{i}]")
            stores = tuple(
                PlannedStore(s.text("name"), s.text("changelog_topic"), s.integer("changelog_partition"))
                for s in (_Validator(x, f"tasks[{i}].stores[{j}]") for j, x in enumerate(t.items("stores")))
            )
            tasks.append(
                PlannedTask(
                    task_id=t.text("task_id"),
                    subtopology=t.integer("subtopology"),
                    partition=t.integer("partition"),
                    source_partitions=tuple(str(p) for p in t.items("source_partitions")),
                    stores=stores,
                )
            )
        restores = []
        for i, item in enumerate(v.items("restores")):
            r = _Validator(item, f"restores[{i}]")
            restores.append(
                PlannedRestore(
                    task_id=r.text("task_id"),
                    store=r.text("store"),
                    changelog_topic=r.text("changelog_topic"),
                    changelog_partition=r.integer("changelog_partition"),
                    start=r.integer("start"),
                    end=r.integer("end"),
                    checkpoint_offset=r.optional_integer("checkpoint_offset"),
                    task_corrupted=r.flag("task_corrupted"),
                    local_state_wiped=r.flag("local_state_wiped"),
                )
            )
        preview = _Validator(v.obj("handoff_preview"), "handoff_preview")
        commits, checkpoint_files, purges = _read_preview(preview, version)
        isolation_level = v.text("isolation_level")
        if isolation_level not in ISOLATION_LEVELS:
            raise PlanError(f"'isolation_level' must be one of {', '.join(ISOLATION_LEVELS)}, not '{isolation_level}'")
        _check_ranges_disjoint(ranges, restores)
        return cls(
            application_id=v.text("application_id"),
            isolation_level=isolation_level,
            start_mode=v.text("start_mode"),
            end_mode=v.text("end_mode"),
            start_policy=v.text("start_policy"),
            ranges=tuple(ranges),
            tasks=tuple(tasks),
            stages=tuple(tuple(int(x) for x in s) for s in v.items("stages")),
            commits=commits,
            checkpoint_files=checkpoint_files,
            purges=purges,
            now_ms=v.optional_integer("now_ms"),
            warnings=tuple(str(w) for w in v.items("warnings")),
            restores=tuple(restores),
            topology=_optional_topology(data),
            version=version,
            **_optional_internal_topics(data),
            sink_partitions=_optional_sink_partitions(data),
            streams_group_epoch=v.optional_integer("streams_group_epoch") if "streams_group_epoch" in data else None,
        )

    # ---------------------------------------------------------------------------------------------- text
    def report(self) -> str:
        """The ``--dry-run`` table: ranges, tasks and every hand-off action the run would take."""
        lines = [f"Plan for application '{self.application_id}' ({self.isolation_level}; start {self.start_mode}, "
                 f"end {self.end_mode}, start policy {self.start_policy})", ""]  # fmt: skip
        # As wide as the longest name: a DSL app's internal topics run past 70 characters.
        width = max([40, *(len(r.name) for r in self.ranges)])
        lines.append(f"{'PARTITION':<{width}} {'START':>12} {'END':>12} {'MAX-RECORDS':>12}  NOTES")
        for r in self.ranges:
            notes = ", ".join(note_summary(n) for n in r.notes)
            lines.append(f"{r.name:<{width}} {r.start:>12} {r.end:>12} {r.end - r.start:>12}  {notes}".rstrip())
        lines.append(f"{len(self.ranges)} partition(s), at most {sum(r.end - r.start for r in self.ranges)} records")
        if self.tasks:
            lines += ["", f"{'TASK':<8} SOURCE PARTITIONS / STORES"]
            for t in self.tasks:
                stores = "; stores " + ", ".join(s.name for s in t.stores) if t.stores else ""
                lines.append(f"{t.task_id:<8} {', '.join(t.source_partitions)}{stores}")
        if self.restores:
            lines += ["", "State restores (changelog ranges after each task's checkpoint):"]
            for restore in self.restores:
                offset = restore.checkpoint_offset
                checkpoint = "no checkpoint" if offset is None else f"checkpoint {offset}"
                wiped = ", local state wiped (as Kafka Streams would)" if restore.local_state_wiped else ""
                lines.append(
                    f"  {restore.task_id} {restore.store}: {restore.name} [{restore.start}, {restore.end}) "
                    f"({checkpoint}{wiped})"
                )
        if self.internal_topics:
            if self.internal_topics_created:
                lines += ["", "Internal topics created for the application's first run (as Kafka Streams would):"]
            else:
                lines += ["", "Internal topics to create for the application's first run (dry run: none created yet):"]
            lines.extend(f"  {t.describe()}" for t in self.internal_topics)
        lines += ["", "Hand-off (irreversible, after processing):"]
        lines += [f"  {line}" for line in self.handoff_lines()] or ["  nothing"]
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _check_ranges_disjoint(ranges: Sequence[PlannedRange], restores: Sequence[PlannedRestore]) -> None:
    """One partition is planned once; a changelog restore never shares offsets with another planned range."""
    seen: set[str] = set()
    for r in ranges:
        if r.name in seen:
            raise PlanError(f"ranges: {r.name} is planned twice; each partition has one range (re-plan)")
        seen.add(r.name)
    spans = [(r.name, r.start, r.end) for r in ranges if not r.empty]
    spans += [(r.name, r.start, r.end) for r in restores if r.end > r.start]
    pair = first_overlap(spans)
    if pair is not None:
        (name, a, b), (_, c, d) = pair
        raise PlanError(f"{name} [{a}, {b}) and [{c}, {d}) overlap: they would be fetched twice at once (re-plan)")


def handoff_commits(positions: ResolvedRanges) -> tuple[OffsetCommitPreview, ...]:
    """The group offsets the hand-off commits, from the plan alone.

    A range that starts at the group's own committed offset and is empty changes nothing (the live app would commit
    nothing either); every other range moves the group to its end (planning.md §8.3). A repartition partition this
    run's upstream stage appends to moves further, by what that stage writes, and is listed even with no backlog.
    """
    commits = []
    for r in positions.ranges:
        stage = r.appended_by_stage if r.internal else None
        if r.start == r.end and r.committed_offset == r.start and stage is None:
            continue
        commits.append(OffsetCommitPreview(str(r.tp), r.committed_offset, r.end, stage))
    return tuple(commits)


def handoff_purges(commits: Sequence[OffsetCommitPreview], repartition_topics: set[str]) -> tuple[PurgePreview, ...]:
    """DeleteRecords of the hand-off: each repartition partition it commits, up to the committed offset
    (``state.committable_offsets.purge_offsets``, the rule the hand-off runs)."""
    by_partition = {TopicPartition.parse(c.partition): c for c in commits}
    purge = purge_offsets({tp: c.after for tp, c in by_partition.items()}, repartition_topics)
    return tuple(PurgePreview(str(tp), offset, by_partition[tp].plus_appended_by_stage) for tp, offset in purge.items())


def _read_preview(
    preview: _Validator, version: int
) -> tuple[tuple[OffsetCommitPreview, ...], tuple[str, ...], tuple[PurgePreview, ...]]:
    """``handoff_preview``: version 1 has no ``plus_appended_by_stage`` and no ``task_directories``; version 2 has
    both, and its ``task_directories`` must be the checkpoint files' directories."""
    v2 = version >= 2

    def stage(x: _Validator) -> int | None:
        return x.optional_integer("plus_appended_by_stage") if v2 else None

    commits = tuple(
        OffsetCommitPreview(c.text("partition"), c.optional_integer("before"), c.integer("after"), stage(c))
        for c in (_Validator(x, f"commit_offsets[{i}]") for i, x in enumerate(preview.items("commit_offsets")))
    )
    purges = tuple(
        PurgePreview(p.text("partition"), p.integer("before_offset"), stage(p))
        for p in (_Validator(x, f"delete_records[{i}]") for i, x in enumerate(preview.items("delete_records")))
    )
    checkpoint_files = tuple(str(f) for f in preview.items("checkpoint_files"))
    if v2:
        directories = [str(d) for d in preview.items("task_directories")]
        derived = [f.removesuffix("/.checkpoint") for f in checkpoint_files]
        if directories != derived:
            raise PlanError(
                f"handoff_preview.task_directories {directories} are not the directories of its checkpoint_files "
                f"{derived}; re-run `streamproc plan`"
            )
    return commits, checkpoint_files, purges


#: Kafka's topic id (``Uuid``) as text: 16 bytes in base64 without padding.
_TOPIC_ID = re.compile(r"[A-Za-z0-9+/_-]{22}")


def _optional_internal_topics(data: dict[str, Any]) -> dict[str, Any]:
    """The plan's ``create_internal_topics`` block (absent: none created)."""
    block = data.get("create_internal_topics")
    if block is None:
        return {}
    v = _Validator(block, "create_internal_topics")
    items = enumerate(v.items("topics"))
    topics = tuple(NewInternalTopic.from_dict(item, f"create_internal_topics.topics[{i}]") for i, item in items)
    return {"internal_topics": topics, "internal_topics_created": v.flag("created")}


def _optional_sink_partitions(data: dict[str, Any]) -> dict[str, int]:
    """The plan's ``sink_partitions`` (absent in plans made before they were recorded: ``--partitions`` gives them)."""
    block = data.get("sink_partitions") or {}
    v = _Validator(block, "sink_partitions")
    counts = {str(topic): v.integer(topic) for topic in block}
    bad = sorted(topic for topic, count in counts.items() if count < 1)
    if bad:
        raise PlanError(f"sink_partitions: {', '.join(bad)} must have at least one partition")
    return counts


def _optional_topology(data: dict[str, Any]) -> str | None:
    """The plan's ``topology`` (the describe() text it was made from): absent or null for plans made from topics."""
    text = data.get("topology")
    if text is not None and not isinstance(text, str):
        raise PlanError(f"'topology' must be the topology's describe() text, not {text!r}")
    return text


class _Validator:
    """Typed access to one JSON object of a plan, with errors that name the field."""

    def __init__(self, data: Any, where: str = "top level") -> None:
        if not isinstance(data, dict):
            raise PlanError(f"{where} must be a JSON object")
        self._data = data
        self._where = where

    def _get(self, key: str) -> Any:
        if key not in self._data:
            raise PlanError(f"{self._where}: missing field '{key}'")
        return self._data[key]

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise PlanError(f"{self._where}.{key} must be a string, not {value!r}")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise PlanError(f"{self._where}.{key} must be an integer, not {value!r}")
        return value

    def topic_id(self, key: str) -> str:
        """A topic id is required: without it a topic deleted and re-created since the plan goes unnoticed."""
        value = self._data.get(key)
        if value is None:
            raise PlanError(
                f"{self._where}.{key} is missing or null; the plan records each topic's id so that fetch notices "
                "a topic re-created since planning: re-run `streamproc plan`"
            )
        if not isinstance(value, str) or not _TOPIC_ID.fullmatch(value):
            raise PlanError(f"{self._where}.{key} must be a Kafka topic id (22 base64 characters), not {value!r}")
        return value

    def optional_integer(self, key: str) -> int | None:
        return None if self._get(key) is None else self.integer(key)

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise PlanError(f"{self._where}.{key} must be true or false, not {value!r}")
        return value

    def items(self, key: str) -> list[Any]:
        value = self._get(key)
        if not isinstance(value, list):
            raise PlanError(f"{self._where}.{key} must be a list, not {value!r}")
        return value

    def obj(self, key: str) -> dict[str, Any]:
        value = self._get(key)
        if not isinstance(value, dict):
            raise PlanError(f"{self._where}.{key} must be an object, not {value!r}")
        return value


def plan_id(plan: RunPlan) -> str:
    """A short content hash of the plan: the prefix of every object this plan's tasks write, and the key the
    hand-off and the ledger use for the run (here, not in the Spark job, so that they need no Spark)."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]
