"""``OffsetCheckpoint``: exact bytes, atomic replace, and every read error with Kafka's own message.

The read cases were cross-checked against the real 4.2.0 ``OffsetCheckpoint.read`` on a JVM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError
from streamproc.state.offset_checkpoint import (
    OFFSET_UNKNOWN,
    CheckpointCorrupt,
    InvalidCheckpointOffset,
    OffsetCheckpoint,
    parse_offsets,
    serialize_offsets,
)

TP = TopicPartition


def test_serialize_single_entry() -> None:
    assert serialize_offsets({TP("app-counts-changelog", 0): 41}) == b"0\n1\napp-counts-changelog 0 41\n"


def test_serialize_sentinel_and_hashmap_order() -> None:
    offsets = {TP("t", 0): 0, TP("t", 1): OFFSET_UNKNOWN}
    assert serialize_offsets(offsets) == b"0\n2\nt 1 -4\nt 0 0\n"


def test_serialize_crlf_separator() -> None:
    assert serialize_offsets({TP("t", 0): 1}, line_separator="\r\n") == b"0\r\n1\r\nt 0 1\r\n"


@pytest.mark.parametrize("offset", [-1, -2, -3, -5, 2**63])
def test_serialize_rejects_invalid_offsets(offset: int) -> None:
    with pytest.raises(InvalidCheckpointOffset) as info:
        serialize_offsets({TP("t", 0): 1, TP("t", 3): offset}, "x/.checkpoint")
    assert "Attempted to write a negative offset to the checkpoint file" in str(info.value)
    assert "t-3" in str(info.value) and "x/.checkpoint" in str(info.value)
    assert info.value.kafka_exception == "java.lang.IllegalStateException"


@pytest.mark.parametrize("topic", ["", "a b", "a\nb", "x" * 250])
def test_serialize_rejects_topics_that_would_corrupt_the_file(topic: str) -> None:
    with pytest.raises(StateError, match="legal Kafka topic"):
        serialize_offsets({TP(topic, 0): 1})


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpoint(tmp_path / ".checkpoint")
    offsets = {TP("a-changelog", 2): 7, TP("b-changelog", 2): OFFSET_UNKNOWN}
    checkpoint.write(offsets)
    assert checkpoint.read() == offsets
    assert not checkpoint.tmp_path.exists()
    assert checkpoint.tmp_path.name == ".checkpoint.tmp"


def test_write_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n1\nold 0 1\n")
    OffsetCheckpoint(path).write({TP("new", 0): 5})
    assert path.read_bytes() == b"0\n1\nnew 0 5\n"


def test_empty_map_deletes_existing_file(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n1\napp-store-changelog 0 12\n")
    OffsetCheckpoint(path).write({})
    assert not path.exists()


def test_empty_map_without_file_writes_nothing(tmp_path: Path) -> None:
    OffsetCheckpoint(tmp_path / ".checkpoint").write({})
    assert list(tmp_path.iterdir()) == []


def test_invalid_offset_leaves_existing_file_and_no_tmp(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n1\nt 0 3\n")
    checkpoint = OffsetCheckpoint(path)
    with pytest.raises(InvalidCheckpointOffset):
        checkpoint.write({TP("t", 0): -1})
    assert path.read_bytes() == b"0\n1\nt 0 3\n"
    assert not checkpoint.tmp_path.exists()


def test_read_absent_file_is_empty(tmp_path: Path) -> None:
    assert OffsetCheckpoint(tmp_path / ".checkpoint").read() == {}


def test_delete(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\n0\n")
    checkpoint = OffsetCheckpoint(path)
    checkpoint.delete()
    checkpoint.delete()
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"0\n0\n", {}),
        (b"0\n1\nt 0 -4\n", {TP("t", 0): -4}),
        (b"0\n2\nt 0 5\nt 1 -1\n", {TP("t", 0): 5}),
        (b"0\n1\napp-counts-changelog 3 17", {TP("app-counts-changelog", 3): 17}),
        (b"0\r\n1\r\nt 0 5\r\n", {TP("t", 0): 5}),
        (b"0\r1\rt 0 5", {TP("t", 0): 5}),
        (b"0\n1\nt\t0   5 \n", {TP("t", 0): 5}),
        (b"0\n1\nt 0 +5\n", {TP("t", 0): 5}),
        (b"0\n1\nt 0 \xd9\xa5\n", {TP("t", 0): 5}),
        (b"0\n2\nt 0 -1\nt 1 -1\n", {}),
    ],
)
def test_parse_valid(content: bytes, expected: dict[TopicPartition, int]) -> None:
    assert parse_offsets(content) == expected


@pytest.mark.parametrize(
    ("content", "exception", "message"),
    [
        (b"", "java.io.EOFException", "File ended prematurely."),
        (b"0\n", "java.io.EOFException", "File ended prematurely."),
        (b"1\n1\nt 0 5\n", "java.lang.IllegalArgumentException", "Unknown offset checkpoint version: 1"),
        (b" 0\n0\n", "java.lang.NumberFormatException", 'For input string: " 0"'),
        (b"\xef\xbb\xbf0\n0\n", "java.lang.NumberFormatException", 'For input string: "\ufeff0"'),
        (b"0\nx\n", "java.lang.NumberFormatException", 'For input string: "x"'),
        (b"0\n2\nt 0 5\n", "java.io.IOException", "Expected 2 entries but found only 1"),
        (b"0\n1\nt 0 5\nu 0 6\n", "java.io.IOException", "Expected 1 entries but found only 2"),
        (b"0\n2\nt 0 5\nt 0 6\n", "java.io.IOException", "Expected 2 entries but found only 1"),
        (b"0\n1\nt 0\n", "java.io.IOException", "Malformed line in offset checkpoint file: 't 0'."),
        (b"0\n1\nt 0 5\n\n", "java.io.IOException", "Malformed line in offset checkpoint file: ''."),
        (b"0\n1\n t 0 5\n", "java.io.IOException", "Malformed line in offset checkpoint file: ' t 0 5'."),
        (b"0\n1\nt 0 x\n", "java.lang.NumberFormatException", 'For input string: "x"'),
        (b"0\n1\nt 9999999999 5\n", "java.lang.NumberFormatException", 'For input string: "9999999999"'),
        (b"0\n1\nt 0 \xff\n", "java.nio.charset.MalformedInputException", "Input length = 1"),
    ],
)
def test_parse_errors_quote_kafka(content: bytes, exception: str, message: str) -> None:
    with pytest.raises(CheckpointCorrupt) as info:
        parse_offsets(content, "/state/app/0_1/.checkpoint")
    assert info.value.kafka_exception == exception
    assert info.value.kafka_message == message
    assert message in str(info.value)
    assert "/state/app/0_1/.checkpoint" in str(info.value)


_topics = st.sampled_from(["t", "app-counts-changelog", "app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"])
_offsets = st.one_of(st.just(OFFSET_UNKNOWN), st.integers(min_value=0, max_value=2**63 - 1))


@given(st.dictionaries(st.builds(TP, _topics, st.integers(0, 500)), _offsets, max_size=40))
def test_serialize_parse_round_trip(offsets: dict[TopicPartition, int]) -> None:
    data = serialize_offsets(offsets)
    if offsets:
        assert parse_offsets(data) == offsets
    assert data.startswith(f"0\n{len(offsets)}\n".encode())
