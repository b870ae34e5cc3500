"""Parquet segments: the staged copy of one offset range of one partition (DESIGN.md §3, a contract).

A segment holds the records of ``[start, end)`` that the consumer delivered, sorted by offset, in the schema below,
as ``org.apache.kafka.clients.consumer.ConsumerRecord`` carries them (checked against Kafka 4.2). The raw record
type is the engine's own :data:`streamproc.engine.records.RawRecord`, so what the process step reads back is
exactly what the fetch step stored. Offsets of the range without a record (transaction markers, aborted or
compacted records) are explained by the manifest beside the segment, not by the segment.

The same records always encode to the same bytes: the writer settings are fixed here and Parquet stores no write
time; the only varying field is the ``created_by`` string, which names the (pinned) pyarrow version.
"""

from __future__ import annotations

import hashlib
import logging
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamproc.engine.records import NULL_SIZE, ConsumerRecord, RawRecord, TimestampType
from streamproc.engine.slotted_init import build_slotted
from streamproc.errors import ConfigError, ManifestError
from streamproc.intervals import is_run
from streamproc.storage.object_store import ObjectStore

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

HEADER_TYPE = pa.struct([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.binary())])

#: DESIGN.md §3. Parquet names a list's item ``element`` (compliant nested types), so the schema does too: a
#: segment read back has exactly this schema and fingerprint.
SEGMENT_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("timestamp_type", pa.int8(), nullable=False),
        pa.field("key", pa.binary(), nullable=True),
        pa.field("value", pa.binary(), nullable=True),
        pa.field("headers", pa.list_(pa.field("element", HEADER_TYPE, nullable=False)), nullable=False),
        pa.field("leader_epoch", pa.int32(), nullable=True),
    ]
)

SEGMENT_SUFFIX = ".parquet"
MANIFEST_SUFFIX = ".manifest.json"
TOPICS_PREFIX = "topics/"

#: ``org.apache.kafka.common.internals.Topic``: legal characters and maximum length of a topic name.
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249

_OBJECT_NAME = re.compile(
    r"topics/(?P<topic>[a-zA-Z0-9._-]+)/partition=(?P<partition>0|[1-9][0-9]*)/"
    r"(?P<topic2>[a-zA-Z0-9._-]+)\+(?P<partition2>0|[1-9][0-9]*)\+(?P<start>[0-9]{20})\+(?P<end>[0-9]{20})"
    r"(?P<suffix>\.parquet|\.manifest\.json)"
)

#: Fixed writer settings; changing any of them changes every segment's bytes (and so its content hash).
ROW_GROUP_ROWS = 64 * 1024
_WRITE_OPTIONS: dict[str, object] = {
    "version": "2.6",
    # LZ4: staged data is written once and read once, on the same machine or next to it; zstd's denser files cost
    # twice LZ4's CPU to write and three times to read (250 000 records: 0.34 against 0.21-0.25 CPU-s to encode,
    # 0.18-0.22 against 0.07-0.09 to read, for files 1.4x the size)
    "compression": "lz4",
    # Dictionary pages only where values repeat: offsets, timestamps and values rarely do, and trying them cost a
    # third of a segment's encoding for a larger file (100 000 bench records: 4.4 MB with them, 4.0 without).
    "use_dictionary": [
        "topic",
        "partition",
        "timestamp_type",
        "key",
        "leader_epoch",
        "headers.list.element.key",
        "headers.list.element.value",
    ],
    "write_statistics": True,
    "data_page_version": "1.0",
    "data_page_size": 1024 * 1024,
    "use_compliant_nested_type": True,
    "store_schema": True,
    "write_page_index": False,
    "write_page_checksum": False,
    "write_batch_size": 1024,
    "row_group_size": ROW_GROUP_ROWS,
    "sorting_columns": [pq.SortingColumn(SEGMENT_SCHEMA.get_field_index("offset"))],
}

#: Bytes a record costs besides key, value and headers (offset, timestamp, type, epoch, partition); used only for
#: splitting by ``max_segment_bytes``, which bounds uncompressed record bytes, not the Parquet file size.
RECORD_OVERHEAD_BYTES = 32

#: :class:`SegmentColumns`' fixed-width cells, native byte order as Arrow's buffers hold them.
_INT64, _INT32, _INT8 = struct.Struct("=q"), struct.Struct("=i"), struct.Struct("=b")

_TIMESTAMP_TYPES = {t.id: t for t in TimestampType}


def _type_text(field: pa.Field) -> str:
    return f"{field.type}{'' if field.nullable else ' not null'}"


def schema_fingerprint(schema: pa.Schema) -> str:
    """sha256 of the schema's names, types and nullability (metadata ignored), as lowercase hex."""
    text = "\n".join(f"{f.name}: {_type_text(f)}" for f in schema)
    return hashlib.sha256(text.encode()).hexdigest()


SEGMENT_SCHEMA_FINGERPRINT = schema_fingerprint(SEGMENT_SCHEMA)


# ------------------------------------------------------------------------------------------------------- names
def check_topic(topic: str) -> str:
    """Kafka's topic name rule (``Topic.validate``); a name that passes can never contain ``/`` or ``+``."""
    if not topic or topic in (".", "..") or len(topic) > MAX_TOPIC_NAME_LENGTH or not _LEGAL_TOPIC.fullmatch(topic):
        raise ConfigError(
            f"'{topic}' is not a legal Kafka topic name (1..{MAX_TOPIC_NAME_LENGTH} of [a-zA-Z0-9._-], not '.' or '..')"
        )
    return topic


@dataclass(frozen=True, slots=True, order=True)
class SegmentKey:
    """What a segment covers: ``topic``, ``partition`` and the offset range ``[start, end)``."""

    topic: str
    partition: int
    start: int
    end: int

    def __post_init__(self) -> None:
        check_topic(self.topic)
        if self.partition < 0 or not 0 <= self.start <= self.end:
            raise ConfigError(
                f"{self.topic}-{self.partition} [{self.start}, {self.end}) is not a valid segment range "
                f"(partition >= 0, 0 <= start <= end)"
            )

    @property
    def stem(self) -> str:
        return (
            f"{partition_prefix(self.topic, self.partition)}"
            f"{self.topic}+{self.partition}+{self.start:020d}+{self.end:020d}"
        )

    @property
    def segment_name(self) -> str:
        return self.stem + SEGMENT_SUFFIX

    @property
    def manifest_name(self) -> str:
        return self.stem + MANIFEST_SUFFIX

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.start}, {self.end})"


def partition_prefix(topic: str, partition: int) -> str:
    """``topics/<topic>/partition=<p>/``: where the segments of one partition live."""
    return f"{TOPICS_PREFIX}{check_topic(topic)}/partition={partition}/"


def segment_name(topic: str, partition: int, start: int, end: int) -> str:
    """``topics/<topic>/partition=<p>/<topic>+<p>+<start:020d>+<end:020d>.parquet``."""
    return SegmentKey(topic, partition, start, end).segment_name


def manifest_name(topic: str, partition: int, start: int, end: int) -> str:
    """The manifest beside :func:`segment_name`: same stem, ``.manifest.json``."""
    return SegmentKey(topic, partition, start, end).manifest_name


def parse_object_name(name: str) -> tuple[SegmentKey, str] | None:
    """``(key, suffix)`` for a segment or manifest name, ``None`` for any other name."""
    m = _OBJECT_NAME.fullmatch(name)
    if m is None or m["topic"] != m["topic2"] or m["partition"] != m["partition2"]:
        return None
    try:
        key = SegmentKey(m["topic"], int(m["partition"]), int(m["start"]), int(m["end"]))
    except ConfigError:
        return None
    return key, m["suffix"]


# ------------------------------------------------------------------------------------------------------ writing
def record_size(record: RawRecord) -> int:
    """Uncompressed bytes a record adds to a segment, for size-based splitting."""
    size = RECORD_OVERHEAD_BYTES + len(record.key or b"") + len(record.value or b"")
    return size + sum(len(k.encode()) + len(v or b"") for k, v in record.headers)


def encode_segment(records: Iterable[RawRecord]) -> bytes:
    """The Parquet bytes of ``records`` (one partition, already in offset order), with the fixed writer settings."""
    columns = SegmentColumns()
    topic, partition = "", 0
    for r in records:
        topic, partition = r.topic, r.partition
        columns.append(r.offset, r.timestamp, r.timestamp_type.id, r.key, r.value, r.headers, r.leader_epoch)
    return columns.encode(topic, partition)


class SegmentColumns:
    """One segment's rows as Arrow's buffers, built without a record object or a Python value per row.

    The fetcher appends straight from the consumer's messages (a ``ConsumerRecord`` per row and a size computed
    several times over cost more than the whole Parquet encoding); :func:`encode_segment` goes through it too, so
    both paths give the same bytes for the same rows. The columns are the buffers Arrow lays them out in (native
    fixed-width values, binary offsets and data, validity bitmaps) so that encoding wraps them without a copy: built
    as Python lists, converting them cost a fetch more than Parquet's encoding did. Headers, rare in practice, stay
    Python lists of their keys and values.
    """

    __slots__ = (
        "count", "size", "offsets", "timestamps", "timestamp_types", "key_offsets", "key_data", "key_validity",
        "value_offsets", "value_data", "value_validity", "header_offsets", "header_keys", "header_values",
        "leader_epochs", "leader_epoch_validity",
    )  # fmt: skip

    def __init__(self) -> None:
        self.count = 0
        self.size = 0
        self.offsets = bytearray()  # int64
        self.timestamps = bytearray()  # int64
        self.timestamp_types = bytearray()  # int8
        self.key_offsets = bytearray(_INT32.pack(0))  # int32: row i's key is key_data[offsets[i]:offsets[i + 1]]
        self.key_data = bytearray()
        self.key_validity = bytearray()  # a bit per row, least significant first: 1 where the key is not null
        self.value_offsets = bytearray(_INT32.pack(0))
        self.value_data = bytearray()
        self.value_validity = bytearray()
        # Headers flattened as Arrow lays a list column out: row i owns header_keys[offsets[i]:offsets[i + 1]].
        self.header_offsets = bytearray(_INT32.pack(0))  # int32
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []
        self.leader_epochs = bytearray()  # int32
        self.leader_epoch_validity = bytearray()

    def __len__(self) -> int:
        return self.count

    def append(
        self,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[tuple[str, bytes | None]] | None,
        leader_epoch: int | None,
    ) -> int:
        """Add one row; returns its size as :func:`record_size` counts it."""
        size = RECORD_OVERHEAD_BYTES + (len(key) if key else 0) + (len(value) if value else 0)
        if headers:
            for k, v in headers:
                self.header_keys.append(k)
                self.header_values.append(v)
                size += len(k.encode()) + (len(v) if v else 0)
        self._append_row(offset, timestamp, timestamp_type, key, value, leader_epoch)
        self.size += size
        return size

    def _append_row(
        self, offset: int, timestamp: int, timestamp_type: int, key: bytes | None, value: bytes | None,
        leader_epoch: int | None,
    ) -> None:  # fmt: skip
        """The row's cells, its headers already appended: :meth:`append` and :meth:`fill_python`'s one definition
        of the layout, which ``_message_kernel.c``'s ``fill`` writes too."""
        row = self.count
        if row % 8 == 0:  # a new byte of every validity bitmap
            self.key_validity.append(0)
            self.value_validity.append(0)
            self.leader_epoch_validity.append(0)
        bit = 1 << (row % 8)
        self.offsets += _INT64.pack(offset)
        self.timestamps += _INT64.pack(timestamp)
        self.timestamp_types += _INT8.pack(timestamp_type)
        if key is not None:
            self.key_data += key
            self.key_validity[-1] |= bit
        self.key_offsets += _INT32.pack(len(self.key_data))
        if value is not None:
            self.value_data += value
            self.value_validity[-1] |= bit
        self.value_offsets += _INT32.pack(len(self.value_data))
        self.header_offsets += _INT32.pack(len(self.header_keys))
        if leader_epoch is not None:
            self.leader_epoch_validity[-1] |= bit
        self.leader_epochs += _INT32.pack(leader_epoch if leader_epoch is not None else 0)
        self.count = row + 1

    def fill(
        self,
        messages: Sequence[Any],
        first: int,
        max_records: int,
        max_bytes: int,
        timestamp_type_ids: dict[int, int],
        kernel: ModuleType | None,
    ) -> tuple[int, int]:
        """Append confluent-kafka ``messages[first:]`` until the next one would close the segment; returns the index
        of the first message not appended (``len(messages)``: all were) and the bytes appended.

        A non-empty segment closes before the row that would pass ``max_records`` or ``max_bytes`` (the rule of
        ``staging.split_range``); an empty one always takes its first row. The fetch's per-record loop: ``kernel``'s
        compiled ``fill`` (``streamproc.kafka.message_kernel``, which the fetch passes on), else
        :meth:`fill_python`, its reference.
        """
        if kernel is None:
            return self.fill_python(messages, first, max_records, max_bytes, timestamp_type_ids)
        return kernel.fill(self, messages, first, max_records, max_bytes, RECORD_OVERHEAD_BYTES, timestamp_type_ids)  # type: ignore[no-any-return]

    def fill_python(
        self,
        messages: Sequence[Any],
        first: int,
        max_records: int,
        max_bytes: int,
        timestamp_type_ids: Mapping[int, int],
    ) -> tuple[int, int]:
        """:meth:`fill` in Python: each size counted once."""
        added, overhead = 0, RECORD_OVERHEAD_BYTES
        index, end = first, len(messages)
        while index < end:
            message = messages[index]
            key, value, headers = message.key(), message.value(), message.headers()
            size = overhead + (len(key) if key else 0) + (len(value) if value else 0)
            if headers:
                size += sum(len(k.encode()) + (len(v) if v else 0) for k, v in headers)
            if self.count and (self.count >= max_records or self.size + size > max_bytes):
                break
            if headers:
                for k, v in headers:
                    self.header_keys.append(k)
                    self.header_values.append(v)
            ts_type, timestamp = message.timestamp()
            self._append_row(
                message.offset(), timestamp, timestamp_type_ids.get(ts_type, -1), key, value, message.leader_epoch()
            )
            self.size += size
            added += size
            index += 1
        return index, added

    def offset_sequence(self) -> Sequence[int]:
        """The rows' offsets: a ``range`` when they are one run (a fetch's usual segment, which proofs and manifests
        then settle from its ends), else a tuple."""
        with memoryview(self.offsets) as view, view.cast("q") as offsets:  # released: the buffer may grow again
            if is_run(offsets):
                return range(offsets[0], offsets[-1] + 1)
            return tuple(offsets)

    def encode(self, topic: str, partition: int) -> bytes:
        """The Parquet bytes of these rows, with the fixed writer settings."""
        n = self.count
        header_type = SEGMENT_SCHEMA.field("headers").type
        header_rows = pa.StructArray.from_arrays(
            [pa.array(self.header_keys, pa.string()), pa.array(self.header_values, pa.binary())],
            fields=list(HEADER_TYPE),
        )
        header_offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(self.header_offsets)])
        headers = pa.ListArray.from_arrays(header_offsets, header_rows, type=header_type)
        table = pa.Table.from_arrays(
            [
                pa.repeat(pa.scalar(topic, pa.string()), n),  # one value n times: no list of n
                pa.repeat(pa.scalar(partition, pa.int32()), n),
                _array(pa.int64(), n, self.offsets),
                _array(pa.int64(), n, self.timestamps),
                _array(pa.int8(), n, self.timestamp_types),
                _array(pa.binary(), n, self.key_data, self.key_offsets, self.key_validity),
                _array(pa.binary(), n, self.value_data, self.value_offsets, self.value_validity),
                headers,
                _array(pa.int32(), n, self.leader_epochs, validity=self.leader_epoch_validity),
            ],
            schema=SEGMENT_SCHEMA,
        )
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **_WRITE_OPTIONS)
        data: bytes = sink.getvalue().to_pybytes()
        return data

    def write(self, store: ObjectStore, topic: str, partition: int, start: int, end: int) -> WrittenSegment:
        """Store the rows as the segment of ``[start, end)`` (the caller guarantees order and bounds)."""
        key = SegmentKey(check_topic(topic), partition, start, end)
        offsets = self.offset_sequence()
        if offsets and not (start <= offsets[0] and offsets[-1] < end):
            raise ManifestError(f"{key}: offsets {offsets[0]}..{offsets[-1]} lie outside the segment's range")
        stamps = pc.min_max(_array(pa.int64(), self.count, self.timestamps)) if self.count else None
        data = self.encode(topic, partition)
        store.put(key.segment_name, data)
        return WrittenSegment(
            key=key,
            record_count=self.count,
            min_timestamp=None if stamps is None else stamps["min"].as_py(),
            max_timestamp=None if stamps is None else stamps["max"].as_py(),
            offsets=offsets,
            size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )


def _array(
    type_: pa.DataType, length: int, data: bytearray, offsets: bytearray | None = None,
    validity: bytearray | None = None,
) -> pa.Array:  # fmt: skip
    """An Arrow array over :class:`SegmentColumns`' buffers, without copying them; no validity bitmap where no value
    is null (what ``pa.array`` of the same values gives, so the Parquet bytes do not depend on how a column was
    built)."""
    bitmap = None
    if validity is not None and int.from_bytes(validity, "little").bit_count() < length:
        bitmap = pa.py_buffer(validity)
    buffers = [bitmap, pa.py_buffer(data)] if offsets is None else [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(type_, length, buffers)


@dataclass(frozen=True, slots=True)
class WrittenSegment:
    """What :meth:`SegmentWriter.write` stored: the facts the manifest records about the Parquet object."""

    key: SegmentKey
    record_count: int
    min_timestamp: int | None
    max_timestamp: int | None
    offsets: Sequence[int]  # a range when the offsets are one run, else a tuple
    size_bytes: int
    sha256: str

    @property
    def name(self) -> str:
        return self.key.segment_name


class SegmentWriter:
    """Collects the raw records of one partition, in strictly increasing offsets, and writes them as one segment.

    The records are what Kafka's consumer returned (``ConsumerRecord``), so nothing is re-derived: timestamp type,
    leader epoch and headers (order kept, null values kept) survive the round trip.
    """

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = check_topic(topic)
        self._partition = partition
        self._records: list[RawRecord] = []
        self._bytes = 0

    @property
    def record_count(self) -> int:
        return len(self._records)

    @property
    def estimated_bytes(self) -> int:
        """Uncompressed record bytes appended so far (see :func:`record_size`)."""
        return self._bytes

    @property
    def last_offset(self) -> int | None:
        return self._records[-1].offset if self._records else None

    def append(self, record: RawRecord) -> None:
        if record.topic != self._topic or record.partition != self._partition:
            raise ManifestError(
                f"record {record.topic}-{record.partition}@{record.offset} does not belong to the segment of "
                f"{self._topic}-{self._partition}; the fetcher mixed partitions"
            )
        last = self.last_offset
        if last is not None and record.offset <= last:
            raise ManifestError(
                f"{self._topic}-{self._partition}: offset {record.offset} after {last}; a segment must be in "
                f"strictly increasing offset order (duplicate or rewound fetch)"
            )
        self._records.append(record)
        self._bytes += record_size(record)

    def extend(self, records: Iterable[RawRecord]) -> None:
        for record in records:
            self.append(record)

    def to_bytes(self) -> bytes:
        return encode_segment(self._records)

    def write(self, store: ObjectStore, start: int, end: int) -> WrittenSegment:
        """Store the records as the segment of ``[start, end)``; every record must lie in that range."""
        key = SegmentKey(self._topic, self._partition, start, end)
        outside = [r.offset for r in self._records if not start <= r.offset < end]
        if outside:
            raise ManifestError(
                f"{key}: offsets {outside[:5]} lie outside the segment's range; records at or beyond the end of a "
                f"range must be dropped by the fetcher (planning.md §8.2)"
            )
        data = self.to_bytes()
        store.put(key.segment_name, data)
        timestamps = [r.timestamp for r in self._records]
        written = WrittenSegment(
            key=key,
            record_count=len(self._records),
            min_timestamp=min(timestamps) if timestamps else None,
            max_timestamp=max(timestamps) if timestamps else None,
            offsets=tuple(r.offset for r in self._records),
            size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )
        logger.debug("Wrote segment %s: %s records, %s bytes", key.segment_name, written.record_count, len(data))
        return written


# ------------------------------------------------------------------------------------------------------ reading
#: Parquet read in streamproc's own processes (the CLI, Airflow tasks) does not use Arrow's thread pool: a pool thread
#: Arrow started is still alive when the interpreter exits, and its C++ destructor then calls ``std::terminate``
#: ("terminate called without an active exception", SIGABRT, exit -6; apache/arrow#34314). It aborted
#: ``streamproc verify`` once in 60 runs on a loaded machine, after its work was done. Spark's Python workers leave
#: through ``os._exit`` and may use the pool.
ARROW_USE_THREADS = False


def decode_segment(data: bytes, name: str) -> pa.Table:
    """The table in ``data``, checked against :data:`SEGMENT_SCHEMA` and offset order; ``name`` is for messages.

    Anything that is not a segment (another file format, a truncated object, other columns) is a
    :class:`ManifestError` naming the object.
    """
    try:
        table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=ARROW_USE_THREADS)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ManifestError(
            f"object '{name}' is not a readable Parquet segment ({e}); delete it and fetch its range again"
        ) from e
    if schema_fingerprint(table.schema) != SEGMENT_SCHEMA_FINGERPRINT:
        expected = {f.name: f for f in SEGMENT_SCHEMA}
        actual = {f.name: f for f in table.schema}
        diffs = [f"missing {n}" for n in expected if n not in actual]
        diffs += [f"unexpected {n}" for n in actual if n not in expected]
        diffs += [
            f"{n}: {_type_text(actual[n])} instead of {_type_text(f)}"
            for n, f in expected.items()
            if n in actual and _type_text(actual[n]) != _type_text(f)
        ]
        if not diffs:
            diffs = ["columns in another order"]
        raise ManifestError(
            f"object '{name}' does not have the segment schema ({'; '.join(diffs)}); it is not a streamproc "
            f"segment of this version: delete it and fetch its range again"
        )
    offsets = table.column("offset").to_pylist()
    for before, after in zip(offsets, offsets[1:], strict=False):
        if after <= before:
            raise ManifestError(
                f"object '{name}': offset {after} follows {before}; a segment is sorted by offset without duplicates"
            )
    parsed = parse_object_name(name)
    if parsed is not None and table.num_rows:
        key = parsed[0]
        topics = set(table.column("topic").unique().to_pylist())
        partitions = set(table.column("partition").unique().to_pylist())
        if topics != {key.topic} or partitions != {key.partition}:
            raise ManifestError(
                f"object '{name}' holds records of topics {sorted(topics)} partitions {sorted(partitions)}, not "
                f"only {key.topic}-{key.partition}; delete it and fetch its range again"
            )
        if offsets[0] < key.start or offsets[-1] >= key.end:
            raise ManifestError(
                f"object '{name}' holds offsets {offsets[0]}..{offsets[-1]} outside its range [{key.start}, "
                f"{key.end}); delete it and fetch its range again"
            )
    return table


def records_from_table(table: pa.Table) -> Iterator[RawRecord]:
    """The rows of a checked segment table as raw consumer records, in offset order (one batch in memory at a time:
    a table read in one chunk is cut, without copying, into batches of a row group's size)."""
    for batch in table.to_batches(max_chunksize=ROW_GROUP_ROWS):
        yield from records_from_batch(batch)


def _column(array: pa.Array) -> list[Any]:
    """The column as Python values; one shared value when the column holds only one (topic, partition, epoch)."""
    if len(array) and len(pc.unique(array)) == 1:
        return [array[0].as_py()] * len(array)
    values: list[Any] = array.to_pylist()
    return values


def serialized_sizes(array: pa.Array | pa.ChunkedArray) -> list[int]:
    """``serialized_key_size``/``serialized_value_size``: the length of the bytes, ``NULL_SIZE`` for a null."""
    sizes: list[int] = pc.fill_null(pc.binary_length(array), NULL_SIZE).to_pylist()
    return sizes


def kept_records(batch: pa.RecordBatch, rows: Sequence[int] | np.ndarray) -> list[RawRecord]:
    """The records of ``batch``'s ``rows`` (ascending indices), built only for those: a key shard's own rows
    (``spark/owned_input.py``, ``spark/shard_restore.py``)."""
    if len(rows) == batch.num_rows:
        return records_from_batch(batch)
    if not len(rows):
        return []
    return records_from_batch(batch.take(pa.array(rows)))


def records_from_batch(batch: pa.RecordBatch) -> list[RawRecord]:
    """The rows of one checked segment batch as raw consumer records, built column by column.

    The same records as ``ConsumerRecord.raw`` row by row, without Python work per field: every column is turned
    into Python values by Arrow, columns with one value (topic, partition, timestamp type, leader epoch, empty
    headers) are one shared value, and the records are built from the columns by the compiled kernel
    (``_bulk_kernel.build_slotted``: what ``ConsumerRecord.__init__`` stores, without running it per row; or
    ``map`` over the columns where the kernel is not built). This was ≈ 3.5 CPU-seconds per million records, row by
    row, more than Kafka Streams' whole consume path.
    """
    rows = batch.num_rows
    ts_types = batch.column("timestamp_type")
    known = pc.is_in(ts_types, value_set=pa.array(list(_TIMESTAMP_TYPES), pa.int8()))
    if rows and not pc.all(known).as_py():
        row = known.to_pylist().index(False)
        topic, partition, offset = (batch.column(name)[row].as_py() for name in ("topic", "partition", "offset"))
        raise ManifestError(
            f"{topic}-{partition}@{offset}: unknown timestamp type id {ts_types[row].as_py()}; the segment is corrupt"
        )
    timestamp_types = [_TIMESTAMP_TYPES[i] for i in _column(ts_types)] if rows else []
    headers = batch.column("headers")
    if len(headers.flatten()) == 0:
        header_column: list[Any] = [()] * rows
    else:
        header_column = [tuple((h["key"], h["value"]) for h in row) for row in headers.to_pylist()]
    key, value = batch.column("key"), batch.column("value")
    columns = (
        _column(batch.column("topic")),
        _column(batch.column("partition")),
        batch.column("offset").to_pylist(),
        batch.column("timestamp").to_pylist(),
        timestamp_types,
        key.to_pylist(),
        value.to_pylist(),
        header_column,
        _column(batch.column("leader_epoch")),
        serialized_sizes(key),
        serialized_sizes(value),
    )
    return build_slotted(ConsumerRecord, columns)


def read_segment(store: ObjectStore, name: str) -> Iterator[RawRecord]:
    """The records of segment ``name`` in offset order (the object is read and checked before the first one)."""
    table = decode_segment(store.get(name), name)
    return records_from_table(table)
