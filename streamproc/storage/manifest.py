"""Segment manifests: what a staged segment holds, and the proof that it accounts for every offset of its range.

A manifest sits beside its segment (same stem, ``.manifest.json``) and is written after it, so a visible manifest
means a complete segment. It records the segment's facts (record count, min/max timestamp, size, sha256 of the
Parquet bytes, schema fingerprint) and the completeness proof of planning.md §8.2 as plain data: delivered offsets
and explained offsets per reason as inclusive ``[first, last]`` intervals, whose counts add up to ``end − start``.
The proof itself is computed by ``streamproc.plan.completeness``; this module only stores and re-checks it.
The JSON is versioned and written with sorted keys, so the same segment always has a byte-identical manifest.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamproc.errors import ConfigError, ManifestError
from streamproc.intervals import Interval, count, to_intervals
from streamproc.storage.object_store import ObjectStore
from streamproc.storage.segments import (
    SEGMENT_SCHEMA_FINGERPRINT,
    SegmentKey,
    WrittenSegment,
    decode_segment,
    parse_object_name,
    schema_fingerprint,
)

MANIFEST_VERSION = 1
MANIFEST_FORMAT = "streamproc.segment-manifest"

#: The reasons an undelivered offset may have (planning.md §8.2 rule 3).
REASONS = ("control", "aborted", "compacted", "control_or_compacted")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _clip(intervals: Iterable[Interval], start: int, end: int) -> tuple[Interval, ...]:
    clipped = ((max(first, start), min(last, end - 1)) for first, last in intervals)
    return tuple((first, last) for first, last in clipped if first <= last)


@dataclass(frozen=True, slots=True)
class SegmentProof:
    """The completeness proof of a range as stored data: delivered ∪ explained = ``[start, end)``, disjointly."""

    delivered: tuple[Interval, ...]
    explained: Mapping[str, tuple[Interval, ...]] = field(default_factory=dict)
    isolation_level: str | None = None

    @property
    def delivered_count(self) -> int:
        return count(self.delivered)

    @property
    def explained_count(self) -> int:
        return sum(count(runs) for runs in self.explained.values())

    def restrict(self, start: int, end: int) -> SegmentProof:
        """The proof of the sub-range ``[start, end)`` (a segment of a split range)."""
        explained = {reason: _clip(runs, start, end) for reason, runs in self.explained.items()}
        return SegmentProof(
            delivered=_clip(self.delivered, start, end),
            explained={reason: runs for reason, runs in sorted(explained.items()) if runs},
            isolation_level=self.isolation_level,
        )

    def problems(self, start: int, end: int) -> list[str]:
        """Why this is not a proof of ``[start, end)``; empty when it is one."""
        problems: list[str] = []
        if self.isolation_level is not None and self.isolation_level not in ISOLATION_LEVELS:
            problems.append(f"isolation level '{self.isolation_level}' is not one of {', '.join(ISOLATION_LEVELS)}")
        groups: list[tuple[str, tuple[Interval, ...]]] = [("delivered", self.delivered)]
        for reason, runs in sorted(self.explained.items()):
            if reason not in REASONS:
                problems.append(f"unknown reason '{reason}' (known: {', '.join(REASONS)})")
            groups.append((f"explained[{reason}]", runs))
        everything: list[tuple[int, int, str]] = []
        for label, runs in groups:
            previous: Interval | None = None
            for first, last in runs:
                if first > last or first < start or last >= end:
                    problems.append(f"{label} interval {first}..{last} is not inside [{start}, {end})")
                elif previous is not None and first <= previous[1] + 1:
                    problems.append(
                        f"{label} intervals {previous[0]}..{previous[1]} and {first}..{last} are not "
                        f"sorted, disjoint and separated"
                    )
                previous = (first, last)
                everything.append((first, last, label))
        everything.sort()
        for (_, a_last, a_label), (b_first, b_last, b_label) in zip(everything, everything[1:], strict=False):
            if b_first <= a_last and a_label != b_label:
                problems.append(f"offsets {b_first}..{min(a_last, b_last)} are both {a_label} and {b_label}")
        total = self.delivered_count + self.explained_count
        if not problems and total != end - start:
            missing = _gaps(sorted((a, b) for a, b, _ in everything), start, end)
            text = ", ".join(f"{a}..{b - 1}" for a, b in missing)
            problems.append(
                f"delivered ({self.delivered_count}) + explained ({self.explained_count}) = {total}, not "
                f"end - start = {end - start}; offsets {text} are neither delivered nor explained"
            )
        return problems

    def to_dict(self, start: int, end: int) -> dict[str, Any]:
        """The manifest's ``proof`` block, in the shape of the planning scenarios' ``manifest`` expectation."""
        return {
            "isolation_level": self.isolation_level,
            "delivered": [list(i) for i in self.delivered],
            "delivered_count": self.delivered_count,
            "explained": {reason: [list(i) for i in runs] for reason, runs in sorted(self.explained.items()) if runs},
            "explained_count": self.explained_count,
            "end_minus_start": end - start,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, isolation_level: str | None = None) -> SegmentProof:
        """Read a proof block: the manifest's own, or ``CompletenessProof.to_dict()`` of the planner.

        Only the shape is checked here (:class:`ManifestError` on a bad one); :meth:`problems` checks the content.
        """
        if not isinstance(data, Mapping):
            raise ManifestError(f"a proof must be a JSON object, not {type(data).__name__}")
        level = data.get("isolation_level", isolation_level)
        if level is not None and not isinstance(level, str):
            raise ManifestError(f"proof isolation_level must be a string or null, not {level!r}")
        explained = data.get("explained", {})
        if not isinstance(explained, Mapping):
            raise ManifestError(f"proof 'explained' must map reasons to intervals, not {explained!r}")
        proof = cls(
            delivered=_intervals(data.get("delivered"), "delivered"),
            explained={str(reason): _intervals(runs, f"explained[{reason}]") for reason, runs in explained.items()},
            isolation_level=level,
        )
        for name, actual in (("delivered_count", proof.delivered_count), ("explained_count", proof.explained_count)):
            if name in data and data[name] != actual:
                raise ManifestError(f"proof {name} is {data[name]!r} but its intervals hold {actual} offsets")
        return proof


def _intervals(value: Any, label: str) -> tuple[Interval, ...]:
    if not isinstance(value, list | tuple):
        raise ManifestError(f"proof {label} must be a list of [first, last] intervals, not {value!r}")
    runs: list[Interval] = []
    for item in value:
        if not (isinstance(item, list | tuple) and len(item) == 2 and all(_is_int(x) for x in item)):
            raise ManifestError(f"proof {label}: {item!r} is not a [first, last] pair of offsets")
        runs.append((int(item[0]), int(item[1])))
    return tuple(runs)


def _gaps(intervals: Iterable[Interval], start: int, end: int) -> list[tuple[int, int]]:
    """Half-open ``[a, b)`` runs of ``[start, end)`` that the sorted inclusive ``intervals`` leave uncovered."""
    gaps: list[tuple[int, int]] = []
    position = start
    for first, last in intervals:
        if first > position:
            gaps.append((position, min(first, end)))
        position = max(position, last + 1)
    if position < end:
        gaps.append((position, end))
    return gaps


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Manifest:
    """The manifest of one segment. ``record_count`` equals the proof's delivered count; min/max timestamps are
    ``None`` for a segment without records (a range of markers only)."""

    key: SegmentKey
    record_count: int
    min_timestamp: int | None
    max_timestamp: int | None
    size_bytes: int
    sha256: str
    proof: SegmentProof
    schema_fingerprint: str = SEGMENT_SCHEMA_FINGERPRINT
    version: int = MANIFEST_VERSION
    #: Kafka's topic id (``Uuid`` text) when the fetcher knew it: a topic deleted and re-created under the same name
    #: gets a new id, so its segments are never taken for the old incarnation's.
    topic_id: str | None = None

    @property
    def topic(self) -> str:
        return self.key.topic

    @property
    def partition(self) -> int:
        return self.key.partition

    @property
    def start(self) -> int:
        return self.key.start

    @property
    def end(self) -> int:
        return self.key.end

    @property
    def name(self) -> str:
        return self.key.manifest_name

    @property
    def segment_name(self) -> str:
        return self.key.segment_name

    @classmethod
    def for_segment(cls, written: WrittenSegment, proof: SegmentProof) -> Manifest:
        """The manifest of a segment just written; :class:`ManifestError` if the records do not match the proof."""
        manifest = cls(
            key=written.key,
            record_count=written.record_count,
            min_timestamp=written.min_timestamp,
            max_timestamp=written.max_timestamp,
            size_bytes=written.size_bytes,
            sha256=written.sha256,
            proof=proof,
        )
        manifest.validate()
        if to_intervals(written.offsets) != proof.delivered:
            raise ManifestError(
                f"{written.key}: the records written ({_describe(to_intervals(written.offsets))}) are not the "
                f"delivered offsets of the proof ({_describe(proof.delivered)}); the fetcher is inconsistent"
            )
        return manifest

    def problems(self) -> list[str]:
        """Why this manifest is invalid; empty when it is valid."""
        problems: list[str] = []
        if self.version != MANIFEST_VERSION:
            problems.append(f"version {self.version} is not {MANIFEST_VERSION}")
        if self.record_count < 0 or self.size_bytes < 0:
            problems.append("record_count and size_bytes must not be negative")
        if not _HEX64.fullmatch(self.sha256):
            problems.append(f"sha256 '{self.sha256}' is not 64 lowercase hex digits")
        if not _HEX64.fullmatch(self.schema_fingerprint):
            problems.append(f"schema_fingerprint '{self.schema_fingerprint}' is not 64 lowercase hex digits")
        if (self.min_timestamp is None) != (self.max_timestamp is None) or (
            (self.min_timestamp is None) != (self.record_count == 0)
        ):
            problems.append("min/max timestamp must be null exactly when the segment has no records")
        elif (
            self.min_timestamp is not None
            and self.max_timestamp is not None
            and (self.min_timestamp > self.max_timestamp)
        ):
            problems.append(f"min_timestamp {self.min_timestamp} is after max_timestamp {self.max_timestamp}")
        if self.record_count != self.proof.delivered_count:
            problems.append(
                f"record_count {self.record_count} differs from the proof's delivered count "
                f"{self.proof.delivered_count}"
            )
        problems += [f"proof: {p}" for p in self.proof.problems(self.start, self.end)]
        return problems

    def validate(self, name: str | None = None) -> None:
        problems = self.problems()
        if problems:
            raise ManifestError(
                f"manifest '{name or self.name}' of {self.key} is invalid: {'; '.join(problems)}; delete it and "
                f"fetch the range again"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "version": self.version,
            "topic": self.topic,
            "topic_id": self.topic_id,
            "partition": self.partition,
            "start": self.start,
            "end": self.end,
            "segment": self.segment_name,
            "record_count": self.record_count,
            "min_timestamp": self.min_timestamp,
            "max_timestamp": self.max_timestamp,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "schema_fingerprint": self.schema_fingerprint,
            "proof": self.proof.to_dict(self.start, self.end),
        }

    def to_json(self) -> bytes:
        return (json.dumps(self.to_dict(), sort_keys=True, indent=2) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes, *, name: str) -> Manifest:
        """Parse and validate manifest ``name``; any defect is a :class:`ManifestError` naming the object."""

        def bad(reason: str) -> ManifestError:
            return ManifestError(f"manifest '{name}' is invalid: {reason}; delete it and fetch the range again")

        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise bad(f"not JSON ({e})") from e
        if not isinstance(doc, dict):
            raise bad("not a JSON object")
        if doc.get("format") != MANIFEST_FORMAT:
            raise bad(f"format is {doc.get('format')!r}, not '{MANIFEST_FORMAT}' (a foreign object?)")
        version = doc.get("version")
        if not _is_int(version):
            raise bad("no integer 'version'")
        assert isinstance(version, int)
        if version > MANIFEST_VERSION:
            raise ManifestError(
                f"manifest '{name}' has version {version}, newer than this streamproc's {MANIFEST_VERSION}; "
                f"upgrade streamproc to read it"
            )
        if version != MANIFEST_VERSION:
            raise bad(f"unsupported version {version}")
        for field_name in ("partition", "start", "end", "record_count", "size_bytes"):
            if not _is_int(doc.get(field_name)):
                raise bad(f"'{field_name}' must be an integer, not {doc.get(field_name)!r}")
        for field_name in ("topic", "segment", "sha256", "schema_fingerprint"):
            if not isinstance(doc.get(field_name), str):
                raise bad(f"'{field_name}' must be a string, not {doc.get(field_name)!r}")
        if doc.get("topic_id") is not None and not isinstance(doc.get("topic_id"), str):
            raise bad(f"'topic_id' must be a string or null, not {doc.get('topic_id')!r}")
        for field_name in ("min_timestamp", "max_timestamp"):
            if doc.get(field_name) is not None and not _is_int(doc.get(field_name)):
                raise bad(f"'{field_name}' must be an integer or null, not {doc.get(field_name)!r}")
        try:
            key = SegmentKey(doc["topic"], doc["partition"], doc["start"], doc["end"])
            proof = SegmentProof.from_dict(doc.get("proof", {}))
        except (ManifestError, ConfigError) as e:
            raise bad(str(e)) from e
        if doc["segment"] != key.segment_name:
            raise bad(f"'segment' is '{doc['segment']}', expected '{key.segment_name}'")
        parsed = parse_object_name(name)
        if parsed is not None and parsed[0] != key:
            raise bad(f"it describes {key} but its name says {parsed[0]}")
        if doc["proof"].get("end_minus_start") != key.end - key.start:
            raise bad(f"proof end_minus_start is {doc['proof'].get('end_minus_start')!r}, not {key.end - key.start}")
        manifest = cls(
            key=key,
            record_count=doc["record_count"],
            min_timestamp=doc.get("min_timestamp"),
            max_timestamp=doc.get("max_timestamp"),
            size_bytes=doc["size_bytes"],
            sha256=doc["sha256"],
            proof=proof,
            schema_fingerprint=doc["schema_fingerprint"],
            version=version,
            topic_id=doc.get("topic_id"),
        )
        manifest.validate(name)
        return manifest


def _describe(intervals: Iterable[Interval]) -> str:
    text = ", ".join(f"{a}..{b}" for a, b in intervals)
    return text or "none"


def write_manifest(store: ObjectStore, manifest: Manifest) -> None:
    store.put(manifest.name, manifest.to_json())


def read_manifest(store: ObjectStore, name: str) -> Manifest:
    """Read and validate manifest ``name``: ``ObjectNotFoundError`` if absent, :class:`ManifestError` if bad."""
    return Manifest.from_json(store.get(name), name=name)


# ------------------------------------------------------------------------------------------------------- checks
def check_segment(manifest: Manifest, data: bytes) -> list[str]:
    """Problems of a segment's bytes against its (valid) manifest: size, hash, schema, count, offsets, timestamps."""
    problems: list[str] = []
    if len(data) != manifest.size_bytes:
        problems.append(f"size is {len(data)} bytes, the manifest says {manifest.size_bytes}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest.sha256:
        problems.append(f"sha256 is {digest}, the manifest says {manifest.sha256} (modified or corrupt)")
    if manifest.schema_fingerprint != SEGMENT_SCHEMA_FINGERPRINT:
        problems.append(
            f"the manifest's schema fingerprint {manifest.schema_fingerprint} is not this streamproc's segment "
            f"schema {SEGMENT_SCHEMA_FINGERPRINT}"
        )
    try:
        table = decode_segment(data, manifest.segment_name)
    except ManifestError as e:
        problems.append(str(e))
        return problems
    if schema_fingerprint(table.schema) != manifest.schema_fingerprint:
        problems.append("the segment's schema does not match the manifest's fingerprint")
    if table.num_rows != manifest.record_count:
        problems.append(f"holds {table.num_rows} records, the manifest says {manifest.record_count}")
    offsets = to_intervals(table.column("offset").to_pylist())
    if offsets != manifest.proof.delivered:
        problems.append(
            f"holds offsets {_describe(offsets)}, but the manifest proves delivered "
            f"{_describe(manifest.proof.delivered)}"
        )
    timestamps = table.column("timestamp").to_pylist()
    actual = (min(timestamps), max(timestamps)) if timestamps else (None, None)
    if actual != (manifest.min_timestamp, manifest.max_timestamp):
        problems.append(
            f"timestamps span {actual[0]}..{actual[1]}, the manifest says "
            f"{manifest.min_timestamp}..{manifest.max_timestamp}"
        )
    return problems
