"""``OffsetCheckpoint``: the ``.checkpoint`` file format of Kafka Streams (``SI/OffsetCheckpoint.java``, 4.2.0).

The same class (unchanged in 4.3) writes the per-task ``.checkpoint``, the global ``.checkpoint`` and the
``<store>.position`` files, so a file this module writes must parse in Kafka Streams exactly as Kafka's own does, and a
file Kafka Streams wrote must parse here with the same result or the same error (state.md §2):

- text, UTF-8: the version ``0``, the entry count, then one ``<topic> <partition> <offset>`` line per entry, each line
  ended by the platform line separator (``\\n`` here: Kafka Streams on Linux);
- entries in ``HashMap<TopicPartition, Long>`` iteration order (:mod:`streamproc.state.java_hash_map`);
- an empty map deletes the file and writes nothing;
- offsets must be ``>= 0`` or :data:`OFFSET_UNKNOWN`; a reader skips other negative offsets (and decrements the
  expected count);
- written atomically: ``<file>.tmp``, flush, fsync, rename over the file, fsync of the directory
  (``Utils.atomicMoveWithFallback``).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from streamproc.engine.records import TopicPartition
from streamproc.errors import StateError
from streamproc.state.java_hash_map import topic_partition_map_order

LOG = logging.getLogger(__name__)

#: ``OffsetCheckpoint.VERSION``: the only version that exists.
VERSION = 0
#: ``OffsetCheckpoint.OFFSET_UNKNOWN``: "store known, changelog offset unknown" (restore from the beginning).
OFFSET_UNKNOWN = -4
#: The suffix ``OffsetCheckpoint.write`` appends to the absolute file name for its temporary file.
TMP_SUFFIX = ".tmp"
#: ``System.lineSeparator()`` on the platforms Kafka Streams runs on in production (Linux).
LINE_SEPARATOR = "\n"

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
#: ``Pattern.compile("\\s+")``: Java's ``\s`` is ASCII whitespace only: space, \t, \n, \x0B, \f, \r.
_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
#: Kafka's legal topic names (``org.apache.kafka.common.internals.Topic.validate``).
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class CheckpointCorrupt(StateError):
    """A ``.checkpoint``/``.position`` file cannot be read; quotes the exception ``OffsetCheckpoint.read`` throws."""

    def __init__(self, path: Path | str, kafka_exception: str, kafka_message: str) -> None:
        self.path = str(path)
        self.kafka_exception = kafka_exception
        self.kafka_message = kafka_message
        super().__init__(
            f"checkpoint file {self.path} is corrupt: {kafka_exception}: {kafka_message} -- Kafka Streams would fail "
            "the stream thread with 'Error loading and deleting checkpoint file when creating the state manager'; "
            "delete the file (the task then restores its stores from the changelogs) or rewrite it"
        )


class InvalidCheckpointOffset(StateError):
    """An offset below zero other than ``OFFSET_UNKNOWN`` was about to be written (``IllegalStateException``)."""

    kafka_exception = "java.lang.IllegalStateException"
    kafka_message = "Attempted to write a negative offset to the checkpoint file"

    def __init__(self, path: Path | str, partition: TopicPartition, offset: int) -> None:
        self.path = str(path)
        self.partition = partition
        self.offset = offset
        super().__init__(
            f"{self.kafka_message}: offset={offset} for {partition} in {self.path}; a checkpoint holds the offset of "
            f"the last changelog record in the store (>= 0) or {OFFSET_UNKNOWN} (OFFSET_UNKNOWN); nothing was written"
        )


def _parse_java_integer(text: str, low: int, high: int, path: str) -> int:
    """``Integer.parseInt``/``Long.parseLong`` with radix 10: optional sign, then Unicode decimal digits only."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(unicodedata.decimal(ch, -1) >= 0 for ch in digits):
        raise CheckpointCorrupt(path, "java.lang.NumberFormatException", f'For input string: "{text}"')
    value = int("".join(str(unicodedata.decimal(ch)) for ch in digits))
    if text.startswith("-"):
        value = -value
    if not low <= value <= high:
        raise CheckpointCorrupt(path, "java.lang.NumberFormatException", f'For input string: "{text}"')
    return value


def _java_lines(text: str) -> list[str]:
    """``BufferedReader.readLine`` until ``null``: ``\\n``, ``\\r\\n`` and ``\\r`` end a line; the last needs none."""
    lines: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n" or ch == "\r":
            lines.append(text[start:i])
            i += 2 if ch == "\r" and i + 1 < n and text[i + 1] == "\n" else 1
            start = i
        else:
            i += 1
    if start < n:
        lines.append(text[start:])
    return lines


def _java_split_whitespace(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``: a leading empty field is kept, trailing empty fields dropped."""
    if not _WHITESPACE.search(line):
        return [line]
    pieces = _WHITESPACE.split(line)
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def _is_valid(offset: int) -> bool:
    """``OffsetCheckpoint.isValid``."""
    return offset >= 0 or offset == OFFSET_UNKNOWN


def parse_offsets(data: bytes, path: Path | str = "<checkpoint>") -> dict[TopicPartition, int]:
    """Parse the bytes of a checkpoint file as ``OffsetCheckpoint.read`` does, raising :class:`CheckpointCorrupt`."""
    where = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointCorrupt(
            where, "java.nio.charset.MalformedInputException", f"Input length = {exc.end - exc.start}"
        ) from exc
    lines = iter(_java_lines(text))

    def read_int() -> int:
        line = next(lines, None)
        if line is None:
            raise CheckpointCorrupt(where, "java.io.EOFException", "File ended prematurely.")
        return _parse_java_integer(line, _INT_MIN, _INT_MAX, where)

    version = read_int()
    if version != VERSION:
        raise CheckpointCorrupt(
            where, "java.lang.IllegalArgumentException", f"Unknown offset checkpoint version: {version}"
        )
    expected_size = read_int()
    offsets: dict[TopicPartition, int] = {}
    for line in lines:
        pieces = _java_split_whitespace(line)
        if len(pieces) != 3:
            raise CheckpointCorrupt(
                where, "java.io.IOException", f"Malformed line in offset checkpoint file: '{line}'."
            )
        partition = _parse_java_integer(pieces[1], _INT_MIN, _INT_MAX, where)
        tp = TopicPartition(pieces[0], partition)
        offset = _parse_java_integer(pieces[2], _LONG_MIN, _LONG_MAX, where)
        if _is_valid(offset):
            offsets[tp] = offset
        else:
            LOG.warning("Read offset=%s from checkpoint file for %s (%s); entry skipped", offset, tp, where)
            expected_size -= 1
    if len(offsets) != expected_size:
        raise CheckpointCorrupt(
            where, "java.io.IOException", f"Expected {expected_size} entries but found only {len(offsets)}"
        )
    return offsets


def serialize_offsets(
    offsets: Mapping[TopicPartition, int],
    path: Path | str = "<checkpoint>",
    *,
    line_separator: str = LINE_SEPARATOR,
) -> bytes:
    """The bytes ``OffsetCheckpoint.write`` produces for ``offsets``.

    ``offsets`` is taken in the order Kafka Streams would have put the entries into its ``HashMap`` (for a task
    checkpoint: store registration order); the file lists them in that map's iteration order. Every offset is
    validated before anything is produced, so an invalid map never leaves a partial file behind.
    """
    for tp, offset in offsets.items():
        if not _LEGAL_TOPIC.match(tp.topic):
            raise StateError(
                f"cannot write checkpoint {path}: {tp.topic!r} is not a legal Kafka topic name (it would make the "
                "file unreadable); check the changelog topic names"
            )
        if not _INT_MIN <= tp.partition <= _INT_MAX:
            raise StateError(f"cannot write checkpoint {path}: partition {tp.partition} of {tp.topic} is no Java int")
        if not _is_valid(offset) or offset > _LONG_MAX:
            LOG.error("Received offset=%s to write to checkpoint file for %s", offset, tp)
            raise InvalidCheckpointOffset(path, tp, offset)
    lines = [str(VERSION), str(len(offsets))]
    lines.extend(f"{tp.topic} {tp.partition} {offsets[tp]}" for tp in topic_partition_map_order(offsets))
    return "".join(line + line_separator for line in lines).encode("utf-8")


def _fsync_directory(directory: Path) -> None:
    """``Utils.flushDir``: make a rename or delete in ``directory`` durable (not possible on Windows)."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OffsetCheckpoint:
    """One checkpoint file; ``write`` replaces it atomically, ``read`` parses it (``OffsetCheckpoint``)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return str(self.path.absolute())

    @property
    def tmp_path(self) -> Path:
        """``new File(file.getAbsolutePath() + ".tmp")``."""
        return Path(str(self.path.absolute()) + TMP_SUFFIX)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Write ``offsets`` (insertion order = Kafka's ``HashMap`` insertion order), or delete the file if empty.

        After the atomic replace the file is read back and compared, so a checkpoint that Kafka Streams could not
        read is never left behind silently.
        """
        with self._lock:
            if not offsets:
                if self.path.exists():
                    self.path.unlink()
                    _fsync_directory(self.path.absolute().parent)
                    LOG.info("Checkpoint %s deleted (no offsets to write)", self.path)
                return
            data = serialize_offsets(offsets, self.path)
            tmp = self.tmp_path
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            _fsync_directory(self.path.absolute().parent)
            written = parse_offsets(self.path.read_bytes(), self.path)
            if written != dict(offsets):
                raise CheckpointCorrupt(
                    self.path, "java.io.IOException", f"read back {written} after writing {dict(offsets)}"
                )
            LOG.info("Checkpoint written: %s with %d entries", self.path, len(offsets))

    def read(self) -> dict[TopicPartition, int]:
        """The offsets in the file; an absent file is an empty map (``NoSuchFileException`` is caught by Kafka)."""
        with self._lock:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return {}
            return parse_offsets(data, self.path)

    def delete(self) -> None:
        """``Files.deleteIfExists``."""
        with self._lock:
            self.path.unlink(missing_ok=True)
