"""``streamproc.plan.completeness``: every offset of a range delivered or explained, counts adding up."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.errors import ManifestError
from streamproc.plan.cluster_snapshot import IsolationLevel, RecordKind, TopicPartition
from streamproc.plan.completeness import (
    IncompleteRange,
    Reason,
    prove_from_batch_headers,
    prove_two_pass,
    to_intervals,
)

TP = TopicPartition("orders", 0)
RC = IsolationLevel.READ_COMMITTED
RU = IsolationLevel.READ_UNCOMMITTED

# committed txn (1, 2) + marker 3, aborted txn (4, 5) + marker 6, data 7, committed 8 + marker 9
LOG = {
    0: RecordKind.DATA,
    1: RecordKind.DATA_TXN_COMMITTED,
    2: RecordKind.DATA_TXN_COMMITTED,
    3: RecordKind.MARKER_COMMIT,
    4: RecordKind.DATA_TXN_ABORTED,
    5: RecordKind.DATA_TXN_ABORTED,
    6: RecordKind.MARKER_ABORT,
    7: RecordKind.DATA,
    8: RecordKind.DATA_TXN_COMMITTED,
    9: RecordKind.MARKER_COMMIT,
}


def test_to_intervals() -> None:
    assert to_intervals([5, 0, 1, 2, 2, 9, 8]) == ((0, 2), (5, 5), (8, 9))
    assert to_intervals([]) == ()


def test_two_pass_read_committed_classifies_markers_and_aborted() -> None:
    proof = prove_two_pass(
        TP, 0, 10, isolation=RC, compacted=False, first_pass=[0, 1, 2, 7, 8], second_pass=[4, 5], eof_position=10
    )
    assert proof.to_dict() == {
        "delivered": [[0, 2], [7, 8]],
        "delivered_count": 5,
        "explained": {"control": [[3, 3], [6, 6], [9, 9]], "aborted": [[4, 5]]},
        "explained_count": 5,
        "end_minus_start": 10,
    }


def test_two_pass_read_uncommitted_only_markers_are_gaps() -> None:
    proof = prove_two_pass(
        TP, 0, 10, isolation=RU, compacted=False, first_pass=[0, 1, 2, 4, 5, 7, 8], second_pass=[], eof_position=10
    )
    assert proof.explained == {Reason.CONTROL: ((3, 3), (6, 6), (9, 9))}
    assert proof.delivered_count + proof.explained_count == 10


def test_two_pass_on_a_compacted_topic_cannot_separate_markers_from_compaction() -> None:
    proof = prove_two_pass(TP, 0, 5, isolation=RU, compacted=True, first_pass=[0, 4], second_pass=[])
    assert proof.explained == {Reason.CONTROL_OR_COMPACTED: ((1, 3),)}


def test_two_pass_read_uncommitted_gap_delivered_by_second_pass_is_unexplained() -> None:
    with pytest.raises(IncompleteRange) as info:
        prove_two_pass(TP, 0, 6, isolation=RU, compacted=False, first_pass=[0, 1, 2, 5], second_pass=[3, 4])
    assert str(info.value).startswith("orders-0 offsets 3..4 were neither read nor explained")
    assert info.value.unexplained == ((3, 4),)


def test_offsets_at_or_beyond_end_are_dropped_and_prove_the_end_was_reached() -> None:
    # range ends on a marker (9): only a record beyond the end or an EOF proves the reader got there
    proof = prove_two_pass(TP, 0, 10, isolation=RU, compacted=False, first_pass=[*range(9), 10, 11], second_pass=[])
    assert proof.delivered == ((0, 8),)
    assert proof.explained == {Reason.CONTROL: ((9, 9),)}


def test_a_reader_that_stopped_early_is_incomplete() -> None:
    with pytest.raises(IncompleteRange, match="did not prove it reached the end 10"):
        prove_two_pass(TP, 0, 10, isolation=RU, compacted=False, first_pass=range(8), second_pass=[])
    with pytest.raises(IncompleteRange):
        prove_two_pass(TP, 0, 10, isolation=RU, compacted=False, first_pass=range(8), second_pass=[], eof_position=9)
    proof = prove_two_pass(
        TP, 0, 10, isolation=RU, compacted=False, first_pass=range(8), second_pass=[], eof_position=10
    )
    assert proof.explained_count == 2


def test_delivered_below_start_is_a_broken_reader() -> None:
    with pytest.raises(ManifestError, match="below the range start 5"):
        prove_two_pass(TP, 5, 10, isolation=RU, compacted=False, first_pass=[4, 5], second_pass=[])


def test_empty_range_is_trivially_complete() -> None:
    proof = prove_two_pass(TP, 7, 7, isolation=RC, compacted=False, first_pass=[], second_pass=[])
    assert proof.to_dict() == {
        "delivered": [],
        "delivered_count": 0,
        "explained": {},
        "explained_count": 0,
        "end_minus_start": 0,
    }


def test_batch_headers_classify_every_offset() -> None:
    proof = prove_from_batch_headers(
        TP, 0, 10, isolation=RC, compacted=False, delivered=[0, 1, 2, 7, 8], log=LOG, eof_position=10
    )
    assert proof.explained == {Reason.CONTROL: ((3, 3), (6, 6), (9, 9)), Reason.ABORTED: ((4, 5),)}


def test_batch_headers_compacted_gaps() -> None:
    log = {0: RecordKind.DATA, 3: RecordKind.DATA, 4: RecordKind.MARKER_COMMIT}
    proof = prove_from_batch_headers(TP, 0, 5, isolation=RU, compacted=True, delivered=[0, 3], log=log, eof_position=5)
    assert proof.explained == {Reason.COMPACTED: ((1, 2),), Reason.CONTROL: ((4, 4),)}


def test_batch_headers_gap_on_a_non_compacted_topic_is_unexplained() -> None:
    log = {0: RecordKind.DATA, 3: RecordKind.DATA}
    with pytest.raises(IncompleteRange, match="offsets 1..2 were neither read nor explained"):
        prove_from_batch_headers(TP, 0, 4, isolation=RU, compacted=False, delivered=[0, 3], log=log)


def test_batch_headers_aborted_record_not_delivered_under_read_uncommitted_is_unexplained() -> None:
    with pytest.raises(IncompleteRange) as info:
        prove_from_batch_headers(
            TP, 0, 10, isolation=RU, compacted=False, delivered=[0, 1, 2, 7, 8], log=LOG, eof_position=10
        )
    assert info.value.unexplained == ((4, 5),)


def test_batch_headers_undelivered_committed_record_is_unexplained() -> None:
    with pytest.raises(IncompleteRange) as info:
        prove_from_batch_headers(
            TP, 0, 10, isolation=RC, compacted=True, delivered=[0, 1, 7, 8], log=LOG, eof_position=10
        )
    assert info.value.unexplained == ((2, 2),)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=30),
    st.integers(0, 3),
    st.integers(0, 40),
    st.booleans(),
    st.sampled_from(IsolationLevel),
)
def test_a_delivered_run_is_proved_as_any_other_delivery(
    offsets: list[int], start: int, length: int, run: bool, isolation: IsolationLevel
) -> None:
    """The one-run shortcut (a sequence of consecutive offsets) proves or refuses exactly as the general rule does."""
    delivered = list(range(offsets[0], offsets[0] + len(offsets))) if run and offsets else sorted(set(offsets))
    end = start + length

    def prove(first_pass: Iterable[int]) -> object:
        try:
            return prove_two_pass(
                TP, start, end, isolation=isolation, compacted=False, first_pass=first_pass, second_pass=[]
            )
        except ManifestError as error:  # IncompleteRange too
            return str(error)

    assert prove(delivered) == prove(iter(delivered))
