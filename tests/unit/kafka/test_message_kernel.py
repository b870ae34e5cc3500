"""The fetch's compiled loops (``_message_kernel.c``) against their Python references, over generated batches.

Messages are stand-ins with confluent-kafka ``Message``'s methods: the loops only call those methods, and a real
``Message`` cannot be built without a broker (the fetch's integration tests run the compiled loops on real ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamproc.kafka import message_kernel
from streamproc.storage.segments import SegmentColumns


@dataclass(frozen=True)
class Message:
    offset_: int
    key_: bytes | None
    value_: bytes | None
    headers_: list[tuple[str, bytes | None]] | None
    timestamp_: tuple[int, int]
    leader_epoch_: int | None
    error_: Any = None

    def offset(self) -> int:
        return self.offset_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.headers_

    def timestamp(self) -> tuple[int, int]:
        return self.timestamp_

    def leader_epoch(self) -> int | None:
        return self.leader_epoch_

    def error(self) -> Any:
        return self.error_


payloads = st.one_of(st.none(), st.binary(max_size=40))
headers = st.one_of(st.none(), st.just([]), st.lists(st.tuples(st.text(max_size=6), payloads), min_size=1, max_size=3))


@st.composite
def batches(draw: st.DrawFn) -> list[Message]:
    start = draw(st.integers(0, 2**40))
    gaps = draw(st.lists(st.integers(1, 3), max_size=30))
    messages, offset = [], start
    for gap in gaps:
        messages.append(
            Message(
                offset, draw(payloads), draw(payloads), draw(headers),
                (draw(st.integers(0, 3)), draw(st.integers(-1, 2**45))), draw(st.one_of(st.none(), st.integers(0, 9))),
                draw(st.sampled_from([None, None, None, None, "an error"])),
            )
        )  # fmt: skip
        offset += gap
    return messages


@pytest.fixture(autouse=True)
def _compiled() -> None:
    assert message_kernel.message_kernel() is not None, "streamproc/kafka/_message_kernel.c is not built: make install"


def test_the_scan_constants_agree() -> None:
    kernel = message_kernel._message_kernel
    assert (kernel.SCAN_ALL, kernel.SCAN_ERROR, kernel.SCAN_PAST_END, kernel.SCAN_LAST_OFFSET) == (
        message_kernel.SCAN_ALL, message_kernel.SCAN_ERROR, message_kernel.SCAN_PAST_END,
        message_kernel.SCAN_LAST_OFFSET,
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(batches(), st.integers(0, 80))
def test_scan_equals_the_python_loop(messages: list[Message], past_first: int) -> None:
    end = (messages[0].offset_ if messages else 0) + past_first
    assert message_kernel.scan(messages, end) == message_kernel.scan_python(messages, end)


def columns_of(columns: SegmentColumns) -> tuple[Any, ...]:
    return tuple(getattr(columns, name) for name in SegmentColumns.__slots__)


@settings(max_examples=300, deadline=None)
@given(batches(), st.integers(1, 12), st.integers(1, 400), st.integers(0, 5))
def test_fill_closes_segments_and_appends_as_the_python_loop(
    messages: list[Message], max_records: int, max_bytes: int, first: int
) -> None:
    messages = [m for m in messages if m.error_ is None]
    types = {0: -1, 1: 0, 2: 1}
    compiled, python = [SegmentColumns()], [SegmentColumns()]
    for segments, kernel in ((compiled, message_kernel.message_kernel()), (python, None)):
        index, steps = min(first, len(messages)), []
        while index < len(messages):
            index, added = segments[-1].fill(messages, index, max_records, max_bytes, types, kernel)
            steps.append((index, added))
            if index < len(messages):
                segments.append(SegmentColumns())
        segments.append(steps)  # type: ignore[arg-type]
    assert [columns_of(c) for c in compiled[:-1]] == [columns_of(c) for c in python[:-1]]
    assert compiled[-1] == python[-1]


def test_fill_refuses_a_header_that_is_not_a_pair_as_python_does() -> None:
    message = Message(0, b"k", b"v", [("h", b"1", b"extra")], (1, 5), None)  # type: ignore[list-item]
    with pytest.raises((TypeError, ValueError)):
        SegmentColumns().fill_python([message], 0, 10, 10_000, {1: 0})
    with pytest.raises(TypeError):
        SegmentColumns().fill([message], 0, 10, 10_000, {1: 0}, message_kernel.message_kernel())
