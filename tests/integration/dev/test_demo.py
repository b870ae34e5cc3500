"""``make demo`` end to end on the session broker, with less data: a real Kafka Streams app processes week one, the
backfill DAG (``airflow dags test``, the approval answered) hands the backlog off, the app resumes without restoring
a record, and its outputs and stores equal those of a Kafka Streams run over everything."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from streamproc_dev import demo

pytestmark = pytest.mark.integration

#: small, and 3 partitions rather than 8: 3 fetch and 6 Spark tasks keep the DAG run short
SIZE = demo.DemoSize(orders=1_200, new_orders=40, customers=150, corrupt_every=60, late_every=90, partitions=3)


def test_the_demo_resumes_kafka_streams_on_the_handoff_and_its_check_passes(
    kafka_broker: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now_ms = int(time.time() * 1000)
    # the session's AIRFLOW_HOME (tests/conftest.py): this process answers the approval from Airflow's metadata DB
    places = demo.DemoPlaces(tmp_path, Path(os.environ["AIRFLOW_HOME"]))
    result = demo.run_demo(kafka_broker, places, SIZE, now_ms=now_ms)
    out = capsys.readouterr().out

    assert result.passed, f"{result.differences}\n{out[-6000:]}"
    assert result.restored_after_handoff == 0
    orders = demo.generate(SIZE, now_ms)
    corrupt = [sum(o.corrupt for o in part) for part in (orders.week1, orders.backlog, orders.new)]
    assert corrupt[0] > 0 and corrupt[1] > 0, "the data must hold corrupt values in both parts"
    assert result.dropped_week1 == corrupt[0]  # Kafka Streams' dropped-records metric
    assert result.dropped_backlog == corrupt[1]  # streamproc's, in the run ledger
    assert result.dropped_reference == sum(corrupt)
    assert any(o.late for o in orders.backlog), "the backlog must hold orders past the window's grace"
    # the resumed app drops these only if Kafka Streams decodes the partition times the hand-off committed
    assert any(o.late for o in orders.new), "the new orders must hold orders past the window's grace"
    assert "Approval gate: Hand off plan" in out and "auto-approved for the demo" in out
    assert "PASSED: the resumed app equals a Kafka Streams run over everything" in out
