"""What a conformance row really compared: the parts of a result Kafka answered, and those only ``expected`` holds.

A scenario's ``expected`` is made of *parts*: its top-level keys, except that a planning plan's ``ranges`` split
into ``starts``, ``ends`` and ``notes`` (the reset tool answers a plan's starts and nothing else). An oracle's
answer may say it covers only some of them: ``answered`` (a list of parts, as the live planning mode gives it),
``not_observable`` (the keys it cannot show, as the live topology and application modes give them) or, for Kafka's
reset tool, ``reset_tool_starts`` (``starts`` only). Every other answer covers the whole result.

Parts Kafka did not answer are still compared, against ``expected``: the report shows such a row as ``partial``
(never ``pass``) and any disagreement there fails it. A scenario whose ``expected`` was written from streamproc's
own output (a snapshot, not a reference) says so with ``expected_source`` (conformance/README.md), naming the parts
that came from streamproc; the report labels those rows ``snapshot``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamproc.errors import ConfigError

#: The parts a planning plan's ``ranges`` splits into, and the key of each inside a range.
RANGE_PARTS = {"starts": "start", "ends": "end", "notes": "notes"}
#: Keys of an oracle's answer that describe the answer rather than belong to the result.
ANSWER_META = frozenset({"answered", "not_observable"})
#: Informational fields of planning expectations (never compared; tests/unit/conformance/test_planning_scenarios).
PLANNING_INFORMATIONAL = frozenset(
    {"reference_tool_output", "kafka_exception", "kafka_streams_would", "kafka_reference"}
)
#: The only source ``expected_source`` may name: the parts written from streamproc's own output.
SNAPSHOT_SOURCE = "streamproc"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The parts of a scenario's ``expected`` that were written from streamproc's output (``expected_source``)."""

    source: str
    parts: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "parts": list(self.parts)}


def result_parts(kind: str, result: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The parts of a result in the scenario's ``expected`` shape, in a stable order.

    A refusal is one part, ``error``; ``"error": null`` (a plan, not a refusal) is no part of its own.
    """
    if result is None:
        return ()
    if result.get("error") is not None:
        return ("error",)
    parts: list[str] = []
    for key in result:
        if key in ANSWER_META or key == "error" or (kind == "planning" and key in PLANNING_INFORMATIONAL):
            continue
        if kind == "planning" and key == "ranges":
            ranges = result["ranges"] or {}
            parts.extend(
                part
                for part, field in RANGE_PARTS.items()
                if not ranges or any(field in r for r in ranges.values() if isinstance(r, Mapping))
            )
        else:
            parts.append(key)
    return tuple(parts)


def kafka_answered(kind: str, kafka: Mapping[str, Any], expected_parts: Iterable[str]) -> tuple[str, ...]:
    """The parts of ``expected_parts`` an oracle's answer covers (``answered``, ``not_observable``, the reset tool)."""
    wanted = tuple(expected_parts)
    if "answered" in kafka:
        named = {_part_name(str(p)) for p in kafka["answered"]}
        if wanted == ("error",) and kafka.get("kafka_behaviour"):
            # a live planning oracle that says what Kafka did there (died, reset silently, skipped unprocessed
            # offsets) has judged the refusal whole (start_positions.compare, reset_tool.compare)
            return wanted
        return tuple(p for p in wanted if p in named)
    if kind == "planning" and "reset_tool_starts" in kafka:
        return tuple(p for p in wanted if p == "starts")
    if "error" in kafka and kafka.get("error") is not None:
        return wanted  # a refusal answers the whole result: there is nothing beside it
    hidden = {_part_name(str(p)) for p in kafka.get("not_observable", [])}
    if "ranges" in hidden:
        hidden.update(RANGE_PARTS)
    return tuple(p for p in wanted if p not in hidden)


def _part_name(name: str) -> str:
    """``ranges.start`` and ``start`` name the part ``starts`` (likewise ends and notes); others are themselves."""
    for part, field in RANGE_PARTS.items():
        if name in (part, field, f"ranges.{field}", f"ranges.{part}"):
            return part
    return name


def project(kind: str, result: Mapping[str, Any], parts: Iterable[str]) -> dict[str, Any]:
    """``result`` cut down to ``parts``: a planning plan keeps only the named fields of each range."""
    wanted = set(parts)
    out: dict[str, Any] = {}
    fields = [field for part, field in RANGE_PARTS.items() if part in wanted]
    if kind == "planning" and fields and isinstance(result.get("ranges"), Mapping):
        out["ranges"] = {
            tp: {f: r[f] for f in fields if f in r} if isinstance(r, Mapping) else r
            for tp, r in result["ranges"].items()
        }
    for key, value in result.items():
        if key in wanted and key not in RANGE_PARTS:
            out[key] = value
    return out


def only_expected_differences(
    kind: str, expected: Mapping[str, Any], actual: Mapping[str, Any], parts: Iterable[str]
) -> list[str]:
    """streamproc's result against ``expected`` on the parts no oracle answered (equality, part by part)."""
    wanted = tuple(parts)
    if not wanted:
        return []
    if actual.get("error") is not None and expected.get("error") is None:
        return [f"unexpected error {actual['error']!r}"]
    want, got = project(kind, expected, wanted), project(kind, actual, wanted)
    diffs = []
    for key in sorted(want):
        if key not in got:
            diffs.append(f"missing key {key!r}")
        elif key == "ranges":
            diffs.extend(
                f"{tp}: expected {want_range!r}, got {got['ranges'].get(tp)!r}"
                for tp, want_range in sorted(want["ranges"].items())
                if got["ranges"].get(tp) != want_range
            )
            diffs.extend(
                f"{tp}: unexpected range {r!r}" for tp, r in sorted(got["ranges"].items()) if tp not in want["ranges"]
            )
        elif want[key] != got[key]:
            diffs.append(f"{key}: expected {want[key]!r}, got {got[key]!r}")
    return diffs


def snapshot_of(scenario: Mapping[str, Any]) -> Snapshot | None:
    """The scenario's ``expected_source`` as a :class:`Snapshot`, or ``None`` when ``expected`` is all reference.

    ``"expected_source": {"streamproc": ["ends", "notes", …]}``: those parts of ``expected`` are streamproc's own
    output; a part must be one of ``expected``'s parts. A malformed field is a :class:`ConfigError` naming the file.
    """
    raw = scenario.get("expected_source")
    if raw is None:
        return None
    where = f"scenario {scenario.get('id')!r}"
    if not isinstance(raw, Mapping) or set(raw) != {SNAPSHOT_SOURCE} or not isinstance(raw[SNAPSHOT_SOURCE], list):
        raise ConfigError(
            f"{where}: expected_source must be {{{SNAPSHOT_SOURCE!r}: [parts of expected]}}, got {raw!r}; "
            "see conformance/README.md"
        )
    parts = tuple(str(p) for p in raw[SNAPSHOT_SOURCE])
    expected = scenario.get("expected")
    known = result_parts(str(scenario.get("kind")), expected if isinstance(expected, Mapping) else None)
    unknown = [p for p in parts if p not in known]
    if not parts or unknown:
        raise ConfigError(
            f"{where}: expected_source names {unknown or 'no'} part(s) of expected; its parts are {list(known)}"
        )
    return Snapshot(SNAPSHOT_SOURCE, parts)
