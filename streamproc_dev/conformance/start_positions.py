"""A live Kafka Streams app as the oracle of a plan's committed start positions (``planning`` scenarios, live).

A planning scenario that starts from the group's committed offsets (start mode ``committed``) is rebuilt on a real
broker by the oracle jar's ``startpos`` mode (``StartPositionRunner``): its topics, log starts, log contents
(transactions included) and committed offsets with their metadata, then a real ``KafkaStreams`` app with the
scenario's application id, processing guarantee and reset policies. Kafka's answer per partition is where the app
really starts reading (the first offset it receives, or its consumer position after the first poll for an empty
range), the offsets it delivers, and any silent reset (``OFFSET_OUT_OF_RANGE`` → ``auto.offset.reset``); or the
exception the app dies with.

:func:`compare` judges a plan (or a refusal) against that answer:

- a plan: every range starts where the app starts, the manifest's delivered offsets (when the plan has one) are
  the ones the app delivered inside the range, a partition the app silently moved past unprocessed offsets carries
  the plan's ``data_loss_accepted`` note, and the app did not die;
- a refusal: Kafka Streams must fail (the refused partitions are the ones Kafka's exception names, when it names
  any), or silently reset exactly the refused partitions (the refusal's ``lost`` range is the one the app skipped),
  or deliver the offsets an ``IncompleteRange`` refusal calls unexplained (a reader that skipped them lost data).

Refusals about a requested *end* (``EndBeyondHighWatermark``, ``EndBeforeStart``) have no counterpart in a live app,
which has no end: those stay pending with the reason and the app's starts (:func:`not_comparable_reason`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STARTPOS_COMMAND = "startpos"
#: What the live app answers of a plan (h-report's ``partial`` status reads it): not the ends, notes or times.
ANSWERED = ("starts", "delivered")
NOT_OBSERVABLE = ("ends", "partition_times", "max_records_total", "stages", "resolved_timestamp_ms")
#: Refusals of the requested end: a live app runs on and has no end to refuse.
END_REFUSALS = frozenset({"EndBeyondHighWatermark", "EndBeforeStart"})


def covers(scenario: Mapping[str, Any]) -> bool:
    """Planning scenarios that start from committed offsets with no active group (the reset tool takes those)."""
    if scenario.get("kind") != "planning":
        return False
    spec = scenario.get("input") or {}
    if (spec.get("group") or {}).get("members"):
        return False
    return str(((spec.get("request") or {}).get("start") or {}).get("mode", "committed")) == "committed"


def not_comparable_reason(scenario: Mapping[str, Any], result: Mapping[str, Any]) -> str | None:
    """Why a scenario's live answer cannot judge it (an end refusal), with what the app did; else ``None``."""
    error = (scenario.get("expected") or {}).get("error")
    if isinstance(error, dict) and error.get("type") in END_REFUSALS:
        return (
            f"{error['type']} refuses the requested end, which a live Kafka Streams app does not have; the app "
            f"started at {result.get('live_starts')} and ran on to {result.get('end_positions')} without failing"
        )
    return None


def run_start_positions(bootstrap: str, paths: list[Path], *, parallelism: int = 2) -> dict[Path, dict[str, Any]]:
    """Each path's answer from one ``startpos`` JVM (``parallelism`` apps at a time): ``{"result", "observations"}``
    with ``answered``, ``not_observable`` and ``kafka_behaviour`` added, ``{"unsupported"}`` or ``{"oracle_error"}``.
    An end refusal comes back ``unsupported`` with :func:`not_comparable_reason`."""
    from streamproc_dev.conformance import oracle

    if not paths:
        return {}
    answers = oracle._run_live_jar(oracle.ensure_oracle_jar(), STARTPOS_COMMAND, bootstrap, paths, parallelism)
    out: dict[Path, dict[str, Any]] = {}
    for path, answer in answers.items():
        result = answer.get("result")
        if not isinstance(result, dict):
            out[path] = answer
            continue
        scenario = json.loads(path.read_text(encoding="utf-8"))
        reason = not_comparable_reason(scenario, result)
        if reason is not None:
            out[path] = {"unsupported": reason, "observations": answer.get("observations")}
            continue
        result["kafka_behaviour"] = behaviour(result)
        result["answered"] = list(ANSWERED)
        result["not_observable"] = list(NOT_OBSERVABLE)
        out[path] = {**answer, "result": result}
    return out


def behaviour(kafka: Mapping[str, Any]) -> str:
    """One line saying what the live app did, shown next to streamproc's plan or refusal."""
    error = kafka.get("error")
    if isinstance(error, dict):
        text = f"the app died with {error.get('kafka_exception')}: {error.get('kafka_message')}"
        return text + (f" (cause {error['kafka_cause']})" if error.get("kafka_cause") else "")
    resets = kafka.get("resets") or {}
    moves = [
        f"{tp} from committed {r['committed']} to {r['started_at']}"
        + (f", skipping {r['started_at'] - r['committed']} unprocessed offsets" if r["started_at"] > r["committed"] else
           f", re-reading {r['committed'] - r['started_at']} offsets")
        for tp, r in sorted(resets.items())
    ]  # fmt: skip
    starts = f"started at {kafka.get('live_starts')}"
    return starts + ("; silently reset " + "; ".join(moves) if moves else "")


def compare(reference: Mapping[str, Any], kafka: Mapping[str, Any]) -> list[str]:
    """Differences between a plan or refusal (streamproc's, or a scenario's ``expected``) and the live app's answer."""
    refusal = reference.get("error")
    if isinstance(refusal, dict):
        return _compare_refusal(refusal, kafka)
    if isinstance(kafka.get("error"), dict):
        return [f"the reference plans; Kafka Streams fails: {behaviour(kafka)}"]
    starts: Mapping[str, int] = kafka.get("live_starts") or {}
    delivered: Mapping[str, list[list[int]]] = kafka.get("delivered") or {}
    resets: Mapping[str, Mapping[str, int]] = kafka.get("resets") or {}
    diffs = []
    for tp, r in (reference.get("ranges") or {}).items():
        if starts.get(tp) != r.get("start"):
            diffs.append(f"{tp}: start {r.get('start')!r}, the live app starts at {starts.get(tp)!r}")
            continue
        reset = resets.get(tp)
        codes = {n.get("code") for n in r.get("notes") or []}
        if reset is not None and reset["started_at"] > reset["committed"] and "data_loss_accepted" not in codes:
            diffs.append(f"{tp}: the app skipped [{reset['committed']}, {reset['started_at']}) silently and the plan "
                         f"starts there without a data_loss_accepted note")  # fmt: skip
        manifest = (reference.get("manifest") or {}).get(tp)
        if manifest is not None and "delivered" in manifest:
            live = _clip(delivered.get(tp, []), int(r["start"]), int(r["end"]))
            if live != manifest["delivered"]:
                diffs.append(f"{tp}: manifest delivers {manifest['delivered']}, the live app {live} in the range")
    return diffs


def _compare_refusal(refusal: Mapping[str, Any], kafka: Mapping[str, Any]) -> list[str]:
    """A refusal agrees when Kafka Streams fails, or loses/rewinds data, exactly on the refused partitions."""
    refused = sorted(refusal.get("partitions") or [])
    error = kafka.get("error")
    if isinstance(error, dict):
        named = error.get("partitions")
        if named is not None and refused and sorted(named) != refused:
            return [f"refuses {refused}; Kafka Streams fails on {sorted(named)}: {behaviour(kafka)}"]
        return []
    resets: Mapping[str, Mapping[str, int]] = kafka.get("resets") or {}
    if resets:
        diffs = []
        if sorted(resets) != refused:
            diffs.append(f"refuses {refused}; Kafka Streams silently resets {sorted(resets)}: {behaviour(kafka)}")
        for tp, lost in (refusal.get("lost") or {}).items():
            reset = resets.get(tp)
            if reset is None or (lost.get("from"), lost.get("to_exclusive")) != (
                reset["committed"],
                reset["started_at"],
            ):
                diffs.append(f"{tp}: refusal names lost [{lost.get('from')}, {lost.get('to_exclusive')}), Kafka "
                             f"Streams skipped {reset and [reset['committed'], reset['started_at']]}")  # fmt: skip
        return diffs
    unexplained: Mapping[str, list[list[int]]] = refusal.get("unexplained") or {}
    if unexplained:
        delivered = kafka.get("delivered") or {}
        missing = [
            f"{tp} {lo}..{hi}"
            for tp, intervals in unexplained.items()
            for lo, hi in intervals
            if not _covers(delivered.get(tp, []), lo, hi)
        ]
        if missing:
            return [f"the refusal calls {missing} unexplained, but the live app did not deliver them either"]
        return []
    return [f"refuses ({refusal.get('type')}) where Kafka Streams neither fails nor loses data: {behaviour(kafka)}"]


def _clip(intervals: list[list[int]], start: int, end: int) -> list[list[int]]:
    """Inclusive intervals cut to the half-open range [start, end)."""
    return [[max(lo, start), min(hi, end - 1)] for lo, hi in intervals if hi >= start and lo < end]


def _covers(intervals: list[list[int]], lo: int, hi: int) -> bool:
    return all(any(a <= o <= b for a, b in intervals) for o in range(lo, hi + 1))
