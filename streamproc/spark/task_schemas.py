"""Pandera schemas a task's DLQ, drops and report must satisfy before they are published.

The hand-off reads these objects to publish dead letter queue records and to commit offsets; an object that breaks
their shape (a DLQ record without its KIP-1034 headers, a negative count, a drop with an unknown reason) would be
published or committed wrongly, so the task checks its own objects and fails — naming the task and the object —
rather than publish them. Checked with pandera's polars backend on the local file just written.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandera.errors
import pandera.polars as pa
import polars as pl

from streamproc.engine.dead_letter_queue import ERROR_HEADERS
from streamproc.engine.dropped_records import REASONS
from streamproc.errors import ProcessingError

#: The partition of a record the producer places (``task_output.UNASSIGNED``).
_UNASSIGNED = -1


def _has_error_headers(data: Any) -> Any:
    """Every DLQ record carries the six ``__streams.errors.*`` headers."""
    names = pl.col("headers").list.eval(pl.element().struct.field("key"))
    return data.lazyframe.select(pl.all_horizontal([names.list.contains(name) for name in ERROR_HEADERS]))


DEAD_LETTER_QUEUE = pa.DataFrameSchema(
    {
        "sequence": pa.Column(pl.Int64, pa.Check.ge(0), unique=True),
        "topic": pa.Column(pl.String, pa.Check.str_length(min_value=1)),
        "partition": pa.Column(pl.Int32, pa.Check.eq(_UNASSIGNED)),
        "timestamp": pa.Column(pl.Int64),
        "key": pa.Column(pl.Binary, nullable=True),
        "value": pa.Column(pl.Binary, nullable=True),
        "headers": pa.Column(checks=pa.Check(_has_error_headers, error="a record lacks a KIP-1034 error header")),
        "processor_node_id": pa.Column(pl.String),
    },
    strict=True,
    name="dead letter queue",
)

DROPS = pa.DataFrameSchema(
    {
        "topic": pa.Column(pl.String, nullable=True),
        "partition": pa.Column(pl.Int32, pa.Check.ge(-1)),
        "offset": pa.Column(pl.Int64, pa.Check.ge(-1)),
        "reason": pa.Column(
            pl.String,
            pa.Check.isin(list(REASONS)),
        ),
        "records_processed": pa.Column(pl.Int64, pa.Check.ge(0)),
    },
    strict=True,
    name="drops",
)

REPORT = pa.DataFrameSchema(
    {
        "plan_id": pa.Column(pl.String, pa.Check.str_matches(r"^[0-9a-f]{16}$")),
        "task_id": pa.Column(pl.String, pa.Check.str_matches(r"^\d+_\d+$")),
        "attempt": pa.Column(pl.Int64, pa.Check.ge(0)),
        "records_processed": pa.Column(pl.Int64, pa.Check.ge(0)),
        "steps": pa.Column(pl.Int64, pa.Check.ge(0)),
        "stream_time": pa.Column(pl.Int64, pa.Check.ge(-1)),
        "punctuations": pa.Column(pl.Int64, pa.Check.ge(0)),
        "dropped": pa.Column(pl.Int64, pa.Check.ge(0)),
        "dead_letter_queue": pa.Column(pl.Int64, pa.Check.ge(0)),
        "bytes_read": pa.Column(pl.Int64, pa.Check.ge(0)),
        "bytes_written": pa.Column(pl.Int64, pa.Check.ge(0)),
        "seconds": pa.Column(pl.Float64, pa.Check.ge(0)),
    },
    checks=[
        pa.Check(
            lambda data: data.lazyframe.select(pl.col("steps") >= pl.col("records_processed")),
            error="steps count every record processed",
        )
    ],
    strict=True,
    name="report",
)


def _fail(schema: pa.DataFrameSchema, what: str, task_id: str, exc: Exception) -> ProcessingError:
    cases = getattr(exc, "failure_cases", None)
    detail = (
        "; ".join(
            f"{r.get('column') or schema.name}: {r.get('check')} ({r.get('failure_case')})"
            for r in cases.head(5).iter_rows(named=True)
        )  # fmt: skip
        if isinstance(cases, pl.DataFrame)
        else str(exc)
    )
    return ProcessingError(
        f"{what} failed the {schema.name} schema before publishing ({detail}); nothing was published as done — this is "
        "a bug in streamproc or in a handler that built it, report it with the task's input",
        task_id=task_id,
    )


def check_file(schema: pa.DataFrameSchema, source: Path | bytes, what: str, task_id: str) -> None:
    """Validate a Parquet file (or its bytes) the task wrote; raises ``ProcessingError`` naming task and ``what``."""
    try:
        schema.validate(pl.read_parquet(io.BytesIO(source) if isinstance(source, bytes) else source), lazy=True)
    except (pandera.errors.SchemaErrors, pandera.errors.SchemaError) as exc:
        raise _fail(schema, what, task_id, exc) from None


def check_report(report: Mapping[str, Any]) -> None:
    """Validate the report's counts (one row of them) before it is published as the task's commit marker."""
    row = {
        "plan_id": report["plan_id"],
        "task_id": report["task_id"],
        "attempt": report["attempt"],
        "records_processed": report["records_processed"],
        "steps": report["steps"],
        "stream_time": report["stream_time"],
        "punctuations": report["punctuations"],
        "dropped": sum(report["dropped"].values()),
        "dead_letter_queue": sum(report["dead_letter_queue"].values()),
        "bytes_read": report["bytes_read"],
        "bytes_written": report["bytes_written"],
        "seconds": float(report["seconds"]),
    }
    frame = pl.DataFrame([row], schema={name: REPORT.columns[name].dtype.type for name in row})
    try:
        REPORT.validate(frame, lazy=True)
    except (pandera.errors.SchemaErrors, pandera.errors.SchemaError) as exc:
        raise _fail(REPORT, f"report of task [{report['task_id']}]", str(report["task_id"]), exc) from None
