"""The completeness proof of a fetched range (planning.md §8.2).

``end − start`` is only an upper bound on the records of a range: transaction markers (control batches, never
returned to applications), aborted records (dropped by ``read_committed`` consumers) and compacted-away offsets
take offsets too. The fetch manifest must show that every offset of ``[start, end)`` was either delivered or
explained by one of those reasons, and that the reader really reached ``end``; anything else is an unexplained
gap, and the partition must not be processed (``IncompleteRange``).

Two kinds of evidence are supported: the raw batch headers (kind of every offset known) and, for readers that
hide control records such as confluent-kafka, two passes (the run's isolation level, then ``read_uncommitted`` over
the offsets the first pass did not deliver). Kafka reference: ``FetchResponse`` aborted transactions and
``Fetcher``'s control-batch skipping (``CompletedFetch#nextFetchedRecord``), ``LogCleaner`` for compaction.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from streamproc.errors import ManifestError
from streamproc.intervals import Interval, count, is_run, to_intervals
from streamproc.plan.cluster_snapshot import IsolationLevel, RecordKind, TopicPartition

logger = logging.getLogger(__name__)


class Reason(enum.Enum):
    """Why an offset of the range was not delivered."""

    CONTROL = "control"
    ABORTED = "aborted"
    COMPACTED = "compacted"
    CONTROL_OR_COMPACTED = "control_or_compacted"


class Evidence(enum.Enum):
    """What the reader could see: raw batch headers, or only delivered records (two passes)."""

    TWO_PASS = "two_pass"
    BATCH_HEADERS = "batch_headers"


class IncompleteRange(ManifestError):
    """An offset of a planned range was neither delivered nor explained, or the reader stopped before the end."""

    def __init__(self, message: str, *, tp: TopicPartition, unexplained: tuple[Interval, ...] = ()) -> None:
        self.tp = tp
        self.unexplained = unexplained
        super().__init__(message)


def _interval_text(intervals: Iterable[Interval]) -> str:
    return ", ".join(f"{a}..{b}" for a, b in intervals)


@dataclass(frozen=True, slots=True)
class CompletenessProof:
    """Delivered ∪ explained = ``[start, end)``, disjointly; the counts add up to ``end − start``."""

    tp: TopicPartition
    start: int
    end: int
    isolation_level: IsolationLevel
    delivered: tuple[Interval, ...]
    explained: Mapping[Reason, tuple[Interval, ...]]

    @property
    def delivered_count(self) -> int:
        """Offsets delivered as records."""
        return count(self.delivered)

    @property
    def explained_count(self) -> int:
        """Offsets explained by a reason."""
        return sum(count(v) for v in self.explained.values())

    def to_dict(self) -> dict[str, object]:
        """The manifest's proof block (and the scenarios' ``manifest`` shape)."""
        return {
            "delivered": [list(i) for i in self.delivered],
            "delivered_count": self.delivered_count,
            "explained": {reason.value: [list(i) for i in runs] for reason, runs in self.explained.items() if runs},
            "explained_count": self.explained_count,
            "end_minus_start": self.end - self.start,
        }


def _delivered_in_range(
    tp: TopicPartition, start: int, end: int, delivered: Iterable[int]
) -> tuple[tuple[Interval, ...], bool]:
    """Rule 1: offsets ≥ end are dropped (and prove the reader passed ``end``); below ``start`` is a reader bug.

    Returns the delivered offsets inside the range as runs. A reading that delivered one unbroken run (the usual
    fetch) is settled from its first and last offsets alone.
    """
    if isinstance(delivered, Sequence) and is_run(delivered):
        first, last = delivered[0], delivered[-1]
        if first < start:
            _below_start(tp, first, start)
        inside_last = min(last, end - 1)
        return (((first, inside_last),) if first <= inside_last else ()), last >= end
    inside: set[int] = set()
    beyond = False
    for offset in delivered:
        if offset < start:
            _below_start(tp, offset, start)
        if offset >= end:
            beyond = True
        else:
            inside.add(offset)
    return to_intervals(inside), beyond


def _below_start(tp: TopicPartition, offset: int, start: int) -> NoReturn:
    raise ManifestError(
        f"{tp}: the reader delivered offset {offset} below the range start {start}; the reader is broken, "
        f"fetch the range again"
    )


def _undelivered(start: int, end: int, delivered: tuple[Interval, ...]) -> Iterator[int]:
    """The offsets of ``[start, end)`` outside the delivered runs, in order (usually none: no Python step each)."""
    position = start
    for first, last in delivered:
        yield from range(position, first)
        position = last + 1
    yield from range(position, end)


def _finish(
    tp: TopicPartition,
    start: int,
    end: int,
    isolation: IsolationLevel,
    delivered: tuple[Interval, ...],
    explained: dict[Reason, list[int]],
    unexplained: list[int],
    reached: bool,
) -> CompletenessProof:
    if unexplained:
        runs = to_intervals(unexplained)
        raise IncompleteRange(
            f"{tp} offsets {_interval_text(runs)} were neither read nor explained (range [{start}, {end}), "
            f"{isolation.value}); fetch the partition again and check the reader",
            tp=tp,
            unexplained=runs,
        )
    if not reached:
        last = delivered[-1][1] if delivered else None
        raise IncompleteRange(
            f"{tp}: the reader did not prove it reached the end {end} of [{start}, {end}) (last delivered offset "
            f"{last}, no partition EOF at or after {end}); fetch the partition again",
            tp=tp,
        )
    proof = CompletenessProof(
        tp=tp,
        start=start,
        end=end,
        isolation_level=isolation,
        delivered=delivered,
        explained={reason: to_intervals(offsets) for reason, offsets in explained.items() if offsets},
    )
    if proof.delivered_count + proof.explained_count != end - start:
        raise ManifestError(f"{tp}: proof counts do not add up to {end - start}; this is a streamproc bug")
    logger.info(
        "Proved %s [%s, %s): %s delivered, %s explained", tp, start, end, proof.delivered_count, proof.explained_count
    )
    return proof


def _reached_end(start: int, end: int, delivered: tuple[Interval, ...], beyond: bool, eof_position: int | None) -> bool:
    """Rule 4: a delivered offset ≥ end − 1, a dropped record ≥ end, or partition EOF at a position ≥ end."""
    return (
        start == end
        or beyond
        or (bool(delivered) and delivered[-1][1] >= end - 1)
        or (eof_position is not None and eof_position >= end)
    )


def prove_two_pass(
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    isolation: IsolationLevel,
    compacted: bool,
    first_pass: Iterable[int],
    second_pass: Iterable[int],
    eof_position: int | None = None,
) -> CompletenessProof:
    """Classify with two readings (confluent-kafka hides control records and batch headers).

    ``first_pass``: offsets delivered with the run's isolation level; ``second_pass``: offsets a
    ``read_uncommitted`` reading of the undelivered offsets delivered. Delivered only by the second pass: ``aborted``
    under ``read_committed``, unexplained under ``read_uncommitted`` (the first pass should have had it). Delivered
    by neither: ``control`` on a non-compacted topic (nothing else removes an offset between log start and HW),
    else ``control_or_compacted``.
    """
    delivered, beyond = _delivered_in_range(tp, start, end, first_pass)
    second = set(second_pass)
    explained: dict[Reason, list[int]] = {}
    unexplained: list[int] = []
    gap_reason = Reason.CONTROL_OR_COMPACTED if compacted else Reason.CONTROL
    for offset in _undelivered(start, end, delivered):
        if offset in second:
            if isolation is IsolationLevel.READ_COMMITTED:
                explained.setdefault(Reason.ABORTED, []).append(offset)
            else:
                unexplained.append(offset)
        else:
            explained.setdefault(gap_reason, []).append(offset)
    reached = _reached_end(start, end, delivered, beyond, eof_position)
    return _finish(tp, start, end, isolation, delivered, explained, unexplained, reached)


def prove_from_batch_headers(
    tp: TopicPartition,
    start: int,
    end: int,
    *,
    isolation: IsolationLevel,
    compacted: bool,
    delivered: Iterable[int],
    log: Mapping[int, RecordKind],
    eof_position: int | None = None,
) -> CompletenessProof:
    """Classify with the raw fetch response: ``log`` maps every offset the batches cover to its kind.

    An undelivered control record is ``control``; an undelivered aborted record is ``aborted`` under
    ``read_committed``; an offset no batch covers is ``compacted`` on a compacted topic. Anything else, e.g. an
    undelivered data record that the isolation level should have returned, is unexplained.
    """
    inside, beyond = _delivered_in_range(tp, start, end, delivered)
    explained: dict[Reason, list[int]] = {}
    unexplained: list[int] = []
    for offset in _undelivered(start, end, inside):
        kind = log.get(offset)
        if kind is None:
            if compacted:
                explained.setdefault(Reason.COMPACTED, []).append(offset)
            else:
                unexplained.append(offset)
        elif kind.is_control:
            explained.setdefault(Reason.CONTROL, []).append(offset)
        elif kind is RecordKind.DATA_TXN_ABORTED and isolation is IsolationLevel.READ_COMMITTED:
            explained.setdefault(Reason.ABORTED, []).append(offset)
        else:
            unexplained.append(offset)
    reached = _reached_end(start, end, inside, beyond, eof_position)
    return _finish(tp, start, end, isolation, inside, explained, unexplained, reached)
