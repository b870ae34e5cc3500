"""Validating a source's decoded values with a pandera schema (``Topology.add_source(..., value_schema=...)``).

A streamproc addition, not a Kafka Streams feature: Kafka Streams leaves validation to the user's processors, where
a failure is a processing exception. Here the source node checks each decoded value against the schema before
forwarding it; a value that fails raises :class:`~streamproc.errors.RecordValidationError` *at the source node* and
goes to the processing exception handler like a processor's exception: continue drops the record (reason
``validation``) and, with ``errors.dead.letter.queue.topic.name`` set, sends a KIP-1034 dead letter queue record with
the reason as ``__streams.errors.message``; fail ends the task naming the record. ``describe()`` is unchanged (the
schema is no node), so a validating topology still matches the live application's description.

The schema is a ``pandera.polars`` ``DataFrameSchema`` (or ``DataFrameModel`` class); a value that is a mapping is
one row with a column per key, any other value (``None`` too) a row with one column ``value``. Pandera's polars
backend is used because it is pyarrow-native and keeps pandas out of the install.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from streamproc.engine.dropped_records import REASON_VALIDATION
from streamproc.engine.processor_topology import Deserializer, SourceNode
from streamproc.engine.records import RawRecord, Record
from streamproc.engine.timestamp_extractor import TimestampExtractor
from streamproc.errors import RecordValidationError, TopologyError


def check_schema(schema: object, source: str) -> None:
    """Refuse, when the topology is built, a ``value_schema`` that is not a pandera polars schema."""
    from streamproc import extras

    extras.require(extras.VALIDATION, f"source {source}: value_schema")
    import pandera.polars as pa

    if isinstance(schema, pa.DataFrameSchema) or (isinstance(schema, type) and issubclass(schema, pa.DataFrameModel)):
        return
    raise TopologyError(
        f"source {source}: value_schema {schema!r} is not a pandera.polars DataFrameSchema or DataFrameModel class"
    )


#: Values validated per pandera call when a source's input is checked ahead (:func:`prevalidated`).
BATCH_VALUES = 8192


def _reason(cases: Any) -> str:
    """One part per failed check, from pandera's ``failure_cases`` rows (column, check, failing value), in order."""
    parts = []
    for row in cases.iter_rows(named=True):
        column = row.get("column")
        where = f"column {column!r}" if column else "the value"
        parts.append(f"{where} failed {row.get('check')} (failure case: {row.get('failure_case')})")
    return "the value failed its schema: " + "; ".join(parts)


def _row(value: object) -> dict[str, object]:
    return {str(name): field for name, field in value.items()} if isinstance(value, Mapping) else {"value": value}


def _validate_rows(schema: object, rows: list[dict[str, object]], keys: tuple[str, ...]) -> list[str | None] | None:
    """Each row's failure reason (``None``: valid) for rows with the same keys, or ``None`` when the rows cannot be
    judged one by one from a single pandera call (a column-level failure, a frame polars cannot build)."""
    import pandera.errors
    import polars as pl

    try:
        frame = pl.DataFrame({key: [row[key] for row in rows] for key in keys})
    except Exception as exc:  # mixed types in a column; alone, a value may still be fine
        if len(rows) == 1:
            return [f"the value does not form a table row ({exc})"]
        return None
    try:
        schema.validate(frame, lazy=True)  # type: ignore[attr-defined]
    except pandera.errors.SchemaErrors as exc:
        cases = exc.failure_cases
        if "index" not in cases.columns or cases["index"].null_count() > 0:  # about the column, not a row
            return [_reason(cases)] if len(rows) == 1 else None
        reasons: list[str | None] = [None] * len(rows)
        for index in sorted(set(cases["index"].to_list())):
            reasons[index] = _reason(cases.filter(pl.col("index") == index))
        return reasons
    except pandera.errors.SchemaError as exc:
        return [f"the value failed its schema: {exc}"] if len(rows) == 1 else None
    return [None] * len(rows)


def value_failures(schema: object, values: Sequence[object]) -> list[str | None]:
    """Per value, why it fails ``schema`` (``None``: it passes), each judged as if validated alone.

    Values are grouped by their keys and each group is checked with one pandera call; a group whose failure is
    about a column rather than rows (a dtype inferred from several values, a missing column) is judged value by
    value, so that the answer never depends on the other values in the batch (checks are meant row by row).
    """
    reasons: list[str | None] = [None] * len(values)
    groups: dict[tuple[str, ...], list[int]] = {}
    rows = [_row(value) for value in values]
    for index, row in enumerate(rows):
        groups.setdefault(tuple(row), []).append(index)
    for keys, indices in groups.items():
        group = _validate_rows(schema, [rows[i] for i in indices], keys)
        if group is None:
            group = [_one(schema, rows[i], keys) for i in indices]
        for index, reason in zip(indices, group, strict=True):
            reasons[index] = reason
    return reasons


def _one(schema: object, row: dict[str, object], keys: tuple[str, ...]) -> str | None:
    result = _validate_rows(schema, [row], keys)
    assert result is not None  # one row is always judged
    return result[0]


def validate_value(schema: object, value: object) -> None:
    """Raise :class:`RecordValidationError` with the failed checks when ``value`` does not satisfy ``schema``."""
    row = _row(value)
    reason = _one(schema, row, tuple(row))
    if reason is not None:
        raise RecordValidationError(reason)


class ValidatingSourceNode(SourceNode):
    """A ``SourceNode`` that checks each decoded value against ``value_schema`` before forwarding it."""

    def __init__(
        self,
        name: str,
        topics: tuple[str, ...],
        key_deserializer: Deserializer,
        value_deserializer: Deserializer,
        timestamp_extractor: TimestampExtractor | None,
        value_schema: object,
    ) -> None:
        super().__init__(name, topics, key_deserializer, value_deserializer, timestamp_extractor)
        self.value_schema = value_schema
        #: Per (topic, partition): offsets below this were checked ahead by :func:`prevalidated`.
        self.checked_to: dict[tuple[str, int], int] = {}
        #: Reasons of the values checked ahead that failed, by (topic, partition, offset); taken when processed.
        self.failures: dict[tuple[str, int, int], str] = {}

    def process(self, record: Record[Any, Any]) -> None:
        assert self._context is not None
        context = self._context.record_context
        topic, partition, offset = context.topic or "", context.partition, context.offset
        try:
            if offset < self.checked_to.get((topic, partition), -1):
                reason = self.failures.pop((topic, partition, offset), None)
                if reason is not None:
                    raise RecordValidationError(reason)
            else:
                validate_value(self.value_schema, record.value)
        except RecordValidationError as failure:
            if self._handler is None:
                raise
            self._handle(record, failure, REASON_VALIDATION)
            return
        self._context.forward(record)


def prevalidated(node: ValidatingSourceNode, records: Iterable[RawRecord]) -> Iterator[RawRecord]:
    """``records`` unchanged, their values checked ``BATCH_VALUES`` at a time ahead of processing.

    A pandera call per value costs milliseconds; per batch it costs microseconds a value. The verdicts wait in the
    node until the record is processed; a value whose deserializer fails is left to the task (the deserialization
    handler decides; it never reaches the source node).
    """
    iterator = iter(records)
    while chunk := list(itertools.islice(iterator, BATCH_VALUES)):
        checked: list[RawRecord] = []
        values: list[object] = []
        for raw in chunk:
            try:
                values.append(node.value_deserializer(raw.topic, raw.value))
            except Exception:  # noqa: S112 - the task's deserialization handler judges it when it gets there
                continue
            checked.append(raw)
        for raw, reason in zip(checked, value_failures(node.value_schema, values), strict=True):
            if reason is not None:
                node.failures[(raw.topic, raw.partition, raw.offset)] = reason
        last = chunk[-1]
        node.checked_to[(last.topic, last.partition)] = last.offset + 1
        yield from chunk
