"""The fetch step's values: the ranges a plan stages and what fetching one of them did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamproc.errors import FetchError
from streamproc.intervals import first_overlap
from streamproc.storage.staging import SegmentLimits

if TYPE_CHECKING:
    from streamproc.plan.run_plan import RunPlan

# Segment limits of a fetch. A segment is held in memory until it is proved, so they bound a fetch's memory
# (two segments per piece in flight); they also decide segment names, so a retry must use the same limits. Pieces
# of 400 000 offsets (two full segments) let a partition's range be read in parallel (range_fetch.RangeFetch) at the
# cost of a consumer and one fetch read past its end per piece.
FETCH_LIMITS = SegmentLimits(max_segment_bytes=64 * 1024 * 1024, max_segment_records=200_000, piece_offsets=400_000)


@dataclass(frozen=True, slots=True)
class FetchRange:
    """One planned range to stage; ``compacted`` is the topic's cleanup policy (it decides how gaps are explained)."""

    topic: str
    partition: int
    start: int
    end: int
    compacted: bool = False
    #: the topic id the plan saw; a different id at fetch time means the topic was re-created since
    topic_id: str | None = None

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


def planned_ranges(run_plan: RunPlan) -> list[FetchRange]:
    """The non-empty ranges a plan stages: its input ranges, then its stores' changelog restore ranges.

    Changelogs are compacted topics (Kafka Streams creates them so): a gap there is a marker or a compacted offset.
    ``fetch`` stages exactly these and ``verify --plan`` proves exactly these are covered.
    """
    ranges = [
        FetchRange(r.topic, r.partition, r.start, r.end, r.compacted, r.topic_id)
        for r in run_plan.ranges
        if not r.empty
    ]
    ranges += [
        FetchRange(r.changelog_topic, r.changelog_partition, r.start, r.end, compacted=True)
        for r in run_plan.restores
        if r.end > r.start
    ]
    return ranges


def check_disjoint(ranges: Sequence[FetchRange]) -> None:
    """Two ranges of one partition that share offsets would stage the same segments twice, at once: refuse them."""
    pair = first_overlap((f"{r.topic}-{r.partition}", r.start, r.end) for r in ranges)
    if pair is not None:
        (name, a, b), (_, c, d) = pair
        raise FetchError(
            f"{name} [{a}, {b}) and [{c}, {d}) overlap: the same offsets would be fetched twice at once; the plan "
            f"is inconsistent (edited by hand?), re-plan"
        )


@dataclass(frozen=True, slots=True)
class RangeFetchResult:
    """What fetching one range did: segments written now, segments found complete, records and bytes copied now,
    and the records staged for the range in all (``records_staged``: what the ledger records, so that a fetch that
    resumed a range an earlier, interrupted attempt had partly staged still reports the range's whole count)."""

    range: FetchRange
    segments_written: int
    segments_already_complete: int
    records: int
    bytes: int
    seconds: float
    records_staged: int

    @property
    def skipped(self) -> bool:
        """Nothing was fetched: every segment of the range was already staged."""
        return self.segments_written == 0
