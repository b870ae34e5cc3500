"""Verify a staging area: every segment matches its manifest, and, given the plan, every planned range is covered.

Checking segments alone cannot fail on what is *absent*: a wrong path, an empty prefix, a fetch killed half-way or
a partition whose segment and manifest were both deleted all leave nothing to contradict. So ``verify`` without a
plan fails on a store that holds no segment at all, and with the plan's ranges it proves each of them is tiled by
segments whose bytes match their manifests (and were staged from the planned topic id), naming every sub-range
that is not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from streamproc.errors import ManifestError
from streamproc.storage.manifest import Manifest, check_segment, read_manifest
from streamproc.storage.object_store import ObjectNotFoundError, ObjectStore
from streamproc.storage.segments import MANIFEST_SUFFIX, SEGMENT_SUFFIX, TOPICS_PREFIX, parse_object_name
from streamproc.storage.staging import tile

logger = logging.getLogger(__name__)


class PlannedSpan(Protocol):
    """A planned ``[start, end)`` of one partition, as the fetch step stages it (``streamproc.fetch.FetchRange``)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def topic_id(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Problem:
    """One defect found by :func:`verify`: the object (or planned range) concerned and what is wrong with it."""

    name: str
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify` checked and found; ``ranges_checked`` is 0 when no plan was given."""

    location: str
    segments_checked: int
    segments_ok: int
    problems: tuple[Problem, ...]
    ranges_checked: int = 0
    ranges_covered: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self) -> None:
        if self.problems:
            listed = "\n".join(f"  {p}" for p in self.problems)
            raise ManifestError(
                f"{len(self.problems)} problem(s) in staged segments under {self.location}:\n{listed}\n"
                f"delete the segments concerned and fetch their ranges again"
            )


def location(store: ObjectStore, prefix: str) -> str:
    """``store.uri`` and ``prefix`` joined by exactly one ``/`` (a directory's URI has no trailing slash)."""
    return f"{store.uri.rstrip('/')}/{prefix.lstrip('/')}"


def verify(
    store: ObjectStore, prefix: str = TOPICS_PREFIX, *, planned: Sequence[PlannedSpan] | None = None
) -> VerifyReport:
    """Re-check every staged segment under ``prefix`` against its manifest and cover ``planned``; report problems.

    Checks: every manifest parses and proves its range; its segment exists and has the recorded size, hash,
    schema, record count, offsets (exactly the delivered ones) and timestamps; every segment has a manifest;
    every object under ``topics/`` is a segment or a manifest. Objects outside ``topics/`` are not staged
    segments and are ignored. Without ``planned``, a store without any segment is a problem (nothing proves
    anything); with it, each non-empty planned range must be tiled by sound segments of its topic id.
    """
    where = location(store, prefix)
    names = store.list(prefix)
    present = set(names)
    problems: list[Problem] = []
    sound: dict[tuple[str, int], list[Manifest]] = {}
    checked = ok = 0
    for name in names:
        if not name.startswith(TOPICS_PREFIX):
            continue
        parsed = parse_object_name(name)
        if parsed is None:
            problems.append(Problem(name, "not a segment or manifest name; a foreign object in the staging area"))
            continue
        key, suffix = parsed
        if suffix == SEGMENT_SUFFIX:
            if key.manifest_name not in present:
                problems.append(Problem(name, "segment without a manifest (an interrupted fetch?); fetch it again"))
            continue
        assert suffix == MANIFEST_SUFFIX
        checked += 1
        try:
            manifest = read_manifest(store, name)
        except ManifestError as e:
            problems.append(Problem(name, str(e)))
            continue
        try:
            data = store.get(key.segment_name)
        except ObjectNotFoundError:
            problems.append(Problem(key.segment_name, f"missing; its manifest {name} exists; fetch {key} again"))
            continue
        segment_problems = check_segment(manifest, data)
        problems.extend(Problem(key.segment_name, p) for p in segment_problems)
        if not segment_problems:
            ok += 1
            sound.setdefault((key.topic, key.partition), []).append(manifest)
    ranges_checked = ranges_covered = 0
    if planned is None:
        if checked == 0:
            problems.append(
                Problem(where, "no staged segment here: nothing was fetched to this store, or the URI is wrong")
            )
    else:
        for span in planned:
            if span.start == span.end:
                continue
            ranges_checked += 1
            gaps = _uncovered(span, sound.get((span.topic, span.partition), []))
            problems.extend(gaps)
            ranges_covered += not gaps
    report = VerifyReport(where, checked, ok, tuple(problems), ranges_checked, ranges_covered)
    logger.info(
        "Verified %s segment(s) under %s: %s ok, %s problem(s)%s",
        checked, where, ok, len(problems),
        f"; {ranges_covered} of {ranges_checked} planned range(s) covered" if planned is not None else "",
    )  # fmt: skip
    return report


def _uncovered(span: PlannedSpan, manifests: list[Manifest]) -> list[Problem]:
    label = f"{span.topic}-{span.partition} [{span.start}, {span.end})"
    other_ids = {m.topic_id for m in manifests if span.topic_id is not None and m.topic_id != span.topic_id}
    usable = [m for m in manifests if span.topic_id is None or m.topic_id == span.topic_id]
    _complete, missing = tile(usable, span.start, span.end)
    why = (
        f" (segments there were staged from topic id {', '.join(sorted(map(str, other_ids)))}, not the planned "
        f"{span.topic_id}: the topic was re-created)"
        if other_ids
        else ""
    )
    return [
        Problem(label, f"planned offsets [{a}, {b}) are not staged by a sound segment{why}; run fetch again")
        for a, b in missing
    ]
