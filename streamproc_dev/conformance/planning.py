"""Run a ``planning`` scenario (``scenarios/planning/*.json``) through ``streamproc.plan``.

The scenario's ``input`` is turned into a :class:`ClusterSnapshot`, an :class:`ApplicationSpec` and a
:class:`PlanRequest`; the result comes back in the ``expected`` shape (``ranges``, ``partition_times``,
``resolved_timestamp_ms``, ``manifest``, ``stages``, ``max_records_total``) or as ``{"error": {...}}`` with the
refusal's class name, message and the partitions/topics it names. Completeness cases simulate the reader from the
scenario's log content (or its ``observed_delivered`` fault injection) and prove each range (planning.md §8.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamproc.errors import ConfigError, StreamprocError
from streamproc.plan.cluster_snapshot import (
    ApplicationSpec,
    ByDurationEnd,
    ByDurationStart,
    ClusterSnapshot,
    CommittedOffset,
    CommittedStart,
    EarliestStart,
    EndSpec,
    FromFileEnd,
    FromFileStart,
    GroupMember,
    GroupState,
    IsolationLevel,
    LatestEnd,
    LatestStart,
    LogRecord,
    PartitionState,
    PlanRequest,
    RecordKind,
    ShiftByStart,
    StartPolicy,
    StartSpec,
    ToDatetimeEnd,
    ToDatetimeStart,
    ToOffsetEnd,
    ToOffsetStart,
    TopicPartition,
    TopicState,
)
from streamproc.plan.completeness import (
    CompletenessProof,
    Evidence,
    IncompleteRange,
    prove_from_batch_headers,
    prove_two_pass,
)
from streamproc.plan.positions import plan_ranges
from streamproc.plan.refusals import BadRequest, PlanRefusal
from streamproc.plan.resolved_ranges import ResolvedRanges

_EXACTLY_ONCE_V2 = "exactly_once_v2"


def _offsets(raw: Mapping[str, Any] | None) -> dict[TopicPartition, int]:
    return {TopicPartition.parse(k): int(v) for k, v in (raw or {}).items()}


def _start_spec(raw: Mapping[str, Any]) -> StartSpec:
    mode = raw.get("mode", "committed")
    if mode == "committed":
        return CommittedStart()
    if mode in ("earliest", "to_earliest"):
        return EarliestStart()
    if mode in ("latest", "to_latest"):
        return LatestStart()
    if mode == "to_offset":
        offset = raw.get("offset")
        return ToOffsetStart(offset=None if offset is None else int(offset), offsets=_offsets(raw.get("offsets")))
    if mode == "to_datetime":
        return ToDatetimeStart(raw["datetime"])
    if mode == "by_duration":
        return ByDurationStart(str(raw["duration"]))
    if mode == "shift_by":
        return ShiftByStart(int(raw["shift"]))
    if mode == "from_file":
        return FromFileStart(str(raw["csv"]), str(raw.get("file_name", "reset plan")))
    raise BadRequest(
        f"unknown start mode '{mode}'; use committed, earliest, latest, to_offset, to_datetime, by_duration, "
        f"shift_by or from_file"
    )


def _end_spec(raw: Mapping[str, Any]) -> EndSpec:
    mode = raw.get("mode", "latest")
    if mode == "latest":
        return LatestEnd()
    if mode == "to_offset":
        offset = raw.get("offset")
        return ToOffsetEnd(offset=None if offset is None else int(offset), offsets=_offsets(raw.get("offsets")))
    if mode == "to_datetime":
        return ToDatetimeEnd(raw["datetime"])
    if mode == "by_duration":
        return ByDurationEnd(str(raw["duration"]))
    if mode == "from_file":
        return FromFileEnd(str(raw["csv"]), str(raw.get("file_name", "end plan")))
    raise BadRequest(f"unknown end mode '{mode}'; use latest, to_offset, to_datetime, by_duration or from_file")


def _snapshot(inp: Mapping[str, Any]) -> ClusterSnapshot:
    topics: dict[str, TopicState] = {}
    for name, raw_topic in inp.get("topics", {}).items():
        partitions: dict[int, PartitionState] = {}
        for number, raw in raw_topic.get("partitions", {}).items():
            records = raw.get("records")
            partitions[int(number)] = PartitionState(
                log_start=int(raw["log_start"]),
                high_watermark=int(raw["high_watermark"]),
                last_stable_offset=int(raw.get("last_stable_offset", raw["high_watermark"])),
                log_end=int(raw.get("log_end", raw["high_watermark"])),
                records=None
                if records is None
                else tuple(LogRecord(int(o), int(ts), RecordKind(kind)) for o, ts, kind in records),
            )
        topics[name] = TopicState(
            partitions=partitions,
            cleanup_policy=str(raw_topic.get("cleanup_policy", "delete")),
            internal=bool(raw_topic.get("internal", False)),
        )
    raw_group = inp.get("group")
    group = (
        None
        if raw_group is None
        else GroupState(
            protocol=str(raw_group.get("protocol", "classic")),
            state=str(raw_group.get("state", "Empty")),
            members=tuple(
                GroupMember(str(m.get("client_id", "")), str(m.get("host", ""))) for m in raw_group.get("members", [])
            ),
        )
    )
    committed = {
        TopicPartition.parse(k): CommittedOffset(int(v["offset"]), str(v.get("metadata") or ""))
        for k, v in inp.get("committed", {}).items()
    }
    now = inp.get("now_ms")
    return ClusterSnapshot(
        topics=topics,
        committed=committed,
        group=group,
        now_ms=None if now is None else int(now),
        unstable_offsets=bool(inp.get("unstable_offsets", False)),
    )


def _application(inp: Mapping[str, Any]) -> ApplicationSpec:
    isolation = IsolationLevel(inp.get("isolation_level", "read_uncommitted"))
    if inp.get("processing_guarantee") == _EXACTLY_ONCE_V2:
        isolation = IsolationLevel.READ_COMMITTED
    return ApplicationSpec(
        application_id=str(inp["application_id"]),
        source_topics=tuple(inp.get("source_topics", [])),
        isolation_level=isolation,
        internal_source_topics=frozenset(inp.get("internal_source_topics", [])),
        subtopology_of={str(k): int(v) for k, v in inp.get("subtopology_of", {}).items()},
        changelog_topics={str(k): int(v) for k, v in inp.get("changelog_topics", {}).items()},
        copartition_groups=tuple(tuple(g) for g in inp.get("copartition_groups", [])),
        previous_partition_counts={str(k): int(v) for k, v in inp.get("previous_partition_counts", {}).items()},
        reset_policies={str(k): str(v) for k, v in inp.get("reset_policies", {}).items()},
        auto_offset_reset=str(inp.get("auto_offset_reset", "earliest")),
    )


def _request(inp: Mapping[str, Any]) -> PlanRequest:
    raw = inp.get("request", {})
    return PlanRequest(
        start=_start_spec(raw.get("start", {})),
        end=_end_spec(raw.get("end", {})),
        start_policy=StartPolicy(raw.get("start_policy", "default")),
    )


def _prove(plan: ResolvedRanges, snapshot: ClusterSnapshot, inp: Mapping[str, Any]) -> dict[str, CompletenessProof]:
    """Simulate the reader over every range whose log content the scenario gives, then prove the range."""
    evidence = Evidence(inp.get("evidence", Evidence.TWO_PASS.value))
    observed = {TopicPartition.parse(k): list(v) for k, v in inp.get("observed_delivered", {}).items()}
    proofs: dict[str, CompletenessProof] = {}
    for r in plan.ranges:
        topic = snapshot.topics[r.tp.topic]
        state = topic.partitions[r.tp.partition]
        if state.records is None:
            continue
        log = {rec.offset: rec.kind for rec in state.records}
        in_range = range(r.start, r.end)
        first = observed.get(r.tp, [o for o in in_range if o in log and log[o].visible_to(plan.isolation_level)])
        eof = state.latest(plan.isolation_level)
        if evidence is Evidence.BATCH_HEADERS:
            proof = prove_from_batch_headers(
                r.tp,
                r.start,
                r.end,
                isolation=plan.isolation_level,
                compacted=topic.compacted,
                delivered=first,
                log=log,
                eof_position=eof,
            )
        else:
            delivered = set(first)
            second = [
                o
                for o in in_range
                if o not in delivered and o in log and log[o].visible_to(IsolationLevel.READ_UNCOMMITTED)
            ]
            proof = prove_two_pass(
                r.tp,
                r.start,
                r.end,
                isolation=plan.isolation_level,
                compacted=topic.compacted,
                first_pass=first,
                second_pass=second,
                eof_position=eof,
            )
        proofs[str(r.tp)] = proof
    return proofs


def _error(exc: StreamprocError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, PlanRefusal):
        if exc.partitions:
            error["partitions"] = [str(tp) for tp in exc.partitions]
        if exc.topics:
            error["topics"] = list(exc.topics)
        error.update(exc.details)
    if isinstance(exc, IncompleteRange):
        error["partitions"] = [str(exc.tp)]
        if exc.unexplained:
            error["unexplained"] = {str(exc.tp): [list(i) for i in exc.unexplained]}
    return {"error": error}


def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """Plan (and prove, when the log content is given) one scenario; refusals come back as ``{"error": ...}``."""
    inp = scenario.get("input")
    if not isinstance(inp, dict):
        raise ConfigError(f"planning scenario {scenario.get('id')}: 'input' must be an object")
    try:
        snapshot = _snapshot(inp)
        plan = plan_ranges(snapshot, _application(inp), _request(inp))
        proofs = _prove(plan, snapshot, inp)
    except StreamprocError as exc:
        return _error(exc)
    result: dict[str, Any] = {
        "error": None,
        "ranges": {
            str(r.tp): {"start": r.start, "end": r.end, "notes": [n.to_dict() for n in r.notes]} for r in plan.ranges
        },
        "partition_times": {str(r.tp): r.partition_time for r in plan.ranges},
        "max_records_total": plan.max_records_total,
    }
    if plan.resolved_timestamp_ms is not None:
        result["resolved_timestamp_ms"] = plan.resolved_timestamp_ms
    if plan.resolved_end_timestamp_ms is not None:
        result["resolved_end_timestamp_ms"] = plan.resolved_end_timestamp_ms
    if plan.stages:
        result["stages"] = [list(s) for s in plan.stages]
    if proofs:
        result["manifest"] = {tp: proof.to_dict() for tp, proof in proofs.items()}
    return result
