"""The hand-off's count of records stamped 0, the epoch, which librdkafka's producer sends with the current time."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from streamproc.handoff.publish import _EpochStamps
from streamproc.spark.task_output import OUTPUT_SCHEMA


def _batch(stamps: list[int]) -> pa.RecordBatch:
    columns = {
        "timestamp": pa.array(stamps, pa.int64()),
        "key": pa.array([b"k"] * len(stamps), pa.binary()),
        "value": pa.array([None] * len(stamps), pa.binary()),
        "headers": pa.array([[] for _ in stamps], OUTPUT_SCHEMA.field("headers").type),
    }
    return pa.record_batch(columns)


def test_epoch_stamps_pass_every_batch_through_and_count_the_zeros_per_partition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    epoch = _EpochStamps()
    batches = [_batch([0, 1, 0]), _batch([-1, 5]), _batch([0])]
    assert list(epoch.counted("out-0", batches[:2])) == batches[:2]
    assert list(epoch.counted("app-store-changelog-1", batches[2:])) == batches[2:]
    with caplog.at_level(logging.WARNING, logger="streamproc.handoff.publish"):
        epoch.warn("0_1")
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert "task [0_1] published 3 record(s) of timestamp 0 (1 to app-store-changelog-1, 2 to out-0)" in (
        warning.getMessage()
    )


def test_no_epoch_stamp_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    epoch = _EpochStamps()
    assert len(list(epoch.counted("out-0", [_batch([1, 2, -5])]))) == 1
    with caplog.at_level(logging.WARNING, logger="streamproc.handoff.publish"):
        epoch.warn("0_0")
    assert caplog.records == []
