"""Commit metadata: exact base64 strings (JDK-encoded examples of state.md §8.2) and Kafka's lenient decoding."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamproc.state.commit_metadata import (
    UNKNOWN,
    ProcessorMetadata,
    TopicPartitionMetadata,
    java_base64_decode,
)


@pytest.mark.parametrize(
    ("time", "entries", "expected"),
    [
        (1700000000000, (), "AgAAAYvP5WgA"),
        (0, (), "AgAAAAAAAAAA"),
        (-1, (), "Av//////////"),
        (1700000000000, (("counts", 1699999940000),), "AgAAAYvP5WgAAAAAAQAAAAZjb3VudHMAAAGLz+R9oA=="),
    ],
)
def test_encode_exact(time: int, entries: tuple[tuple[str, int], ...], expected: str) -> None:
    assert TopicPartitionMetadata(time, ProcessorMetadata(entries)).encode() == expected


def test_processor_metadata_serialize_layout() -> None:
    data = ProcessorMetadata.of({"ab": 1, "c": -1}).serialize()
    assert data == (
        b"\x00\x00\x00\x02" + b"\x00\x00\x00\x02ab" + (1).to_bytes(8, "big") + b"\x00\x00\x00\x01c" + b"\xff" * 8
    )
    assert ProcessorMetadata().serialize() == b""


def test_processor_metadata_update_keeps_max() -> None:
    merged = ProcessorMetadata.of({"a": 5, "b": 1}).update(ProcessorMetadata.of({"a": 3, "b": 9, "c": 2}))
    assert merged.as_dict() == {"a": 5, "b": 9, "c": 2}


def test_encode_rejects_values_outside_java_long() -> None:
    with pytest.raises(ValueError, match="Java long"):
        TopicPartitionMetadata(2**63)


@pytest.mark.parametrize(
    ("metadata", "time", "processor"),
    [
        ("", UNKNOWN, {}),
        ("AQAAAAAAAABk", 100, {}),
        ("AQAAAAAAAABkAAA=", 100, {}),
        ("Aw==", UNKNOWN, {}),
        ("AgAAAAAAAAAqAAAABQ==", 42, {}),
        ("AgAAAYvP5WgAAAAAAQAAAAZjb3VudHMAAAGLz+R9oA", 1700000000000, {"counts": 1699999940000}),
        ("AgAAAYvP5WgAAAAAAQAAAAZjb3VudHMAAAGLz-R9oA==", UNKNOWN, {}),
        ("not base64!", UNKNOWN, {}),
        ("Ag==", UNKNOWN, {}),
        ("AgAAAAAAAAAq/////w==", 42, {}),
    ],
)
def test_decode_like_kafka(metadata: str, time: int, processor: dict[str, int]) -> None:
    decoded = TopicPartitionMetadata.decode(metadata)
    assert decoded.partition_time == time
    assert decoded.processor_metadata.as_dict() == processor


def test_decode_warns_on_garbage(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        TopicPartitionMetadata.decode("Aw==")
        TopicPartitionMetadata.decode("!!")
    assert "Unsupported offset metadata version found" in caplog.text
    assert "Unsupported offset metadata found" in caplog.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("QQ", b"A"), ("QQ==", b"A"), ("QUI=", b"AB"), ("QUI", b"AB"), ("QUJD", b"ABC")],
)
def test_java_base64_accepts(text: str, expected: bytes) -> None:
    assert java_base64_decode(text) == expected


@pytest.mark.parametrize("text", ["Q", "QQ=", "Q===", "QQ==x", "QUJD=", "A-_B", "AB CD", "=", "QU=I"])
def test_java_base64_rejects(text: str) -> None:
    with pytest.raises(Exception, match="ending|base64|bits"):
        java_base64_decode(text)


@given(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.dictionaries(st.text(max_size=10), st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=5),
)
def test_round_trip(time: int, processor: dict[str, int]) -> None:
    metadata = TopicPartitionMetadata(time, ProcessorMetadata.of(processor))
    decoded = TopicPartitionMetadata.decode(metadata.encode())
    assert decoded.partition_time == time
    assert decoded.processor_metadata.as_dict() == processor


@pytest.mark.parametrize("entries", [(), (("counts", 1699999940000),)])
def test_a_handoff_mark_decodes_as_kafka_streams_own_and_reads_back(entries: tuple[tuple[str, int], ...]) -> None:
    """The mark follows the processor metadata (an explicit empty map when there is none), which Kafka Streams'
    ``ProcessorMetadata.deserialize`` ignores: the decoded value is the same as without it (issue #27, 2)."""
    from streamproc.state.commit_metadata import handoff_mark

    plain = TopicPartitionMetadata(1700000000000, ProcessorMetadata(entries))
    marked = plain.encode(handoff_mark="0123456789abcdef/1_3")
    assert marked != plain.encode()
    assert TopicPartitionMetadata.decode(marked) == plain
    assert handoff_mark(marked) == "0123456789abcdef/1_3"
    assert handoff_mark(plain.encode()) is None
    for other in ("", "not base64!", "AQAAAYvP5WgA", "AgAAAYvP5WgAAAAAAA=="):
        assert handoff_mark(other) is None
