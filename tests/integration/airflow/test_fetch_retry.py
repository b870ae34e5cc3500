"""A fetch task killed mid-range is retried by Airflow and resumes: the retry fetches only the missing segments."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import psutil
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from streamproc.fetch import FETCH_LIMITS
from streamproc.ledger import Ledger
from tests.conftest import S3Server
from tests.integration.airflow import topologies
from tests.integration.airflow.conftest import (
    BACKFILL,
    AirflowSetup,
    TaskLog,
    backfill_conf,
    prepare_application,
    run_dag,
    task_states,
)

pytestmark = pytest.mark.integration

#: enough for three segments of the fetch's real size limit, so the fetch can be killed between two of them
RECORDS = FETCH_LIMITS.max_segment_records * 2 + 50_000


class FetchKiller(threading.Thread):
    """Waits until the first segment of the range is staged, then SIGKILLs the process doing the fetch (the fetch
    task's worker, a child of the DAG run's process)."""

    def __init__(self, s3: S3Server, bucket: str, prefix: str) -> None:
        super().__init__(daemon=True)
        self.s3, self.bucket, self.prefix = s3, bucket, prefix
        self.done = threading.Event()
        self.killed: int | None = None
        self.staged_when_killed = 0

    def _manifests(self) -> int:
        listed = self.s3.client().list_objects_v2(Bucket=self.bucket, Prefix=self.prefix)
        return sum(1 for o in listed.get("Contents", []) if o["Key"].endswith(".manifest.json"))

    def _fetch_worker(self) -> psutil.Process | None:
        for child in psutil.Process(os.getpid()).children(recursive=True):
            try:
                if any("spawn_main" in part for part in child.cmdline()):
                    return child
            except psutil.Error:
                continue
        return None

    def run(self) -> None:
        while not self.done.wait(0.05):
            worker = self._fetch_worker()
            if worker is None:
                continue
            staged = self._manifests()
            if staged >= 1:
                os.kill(worker.pid, signal.SIGKILL)
                self.killed, self.staged_when_killed = worker.pid, staged
                return


def test_a_fetch_task_killed_mid_range_is_retried_and_resumes(
    airflow_setup: AirflowSetup,
    dagbag: Any,
    admin: AdminClient,
    s3_server: S3Server,
    unique: Callable[[str], str],
    task_log: TaskLog,
) -> None:
    app_id = unique("retry")
    prepare_application(admin, airflow_setup.bootstrap, "retry", app_id, records=0)
    producer = Producer({"bootstrap.servers": airflow_setup.bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for i in range(RECORDS):
        producer.produce(topologies.input_topic("retry"), key=b"k", value=b"x", partition=0, timestamp=1_000 + i)
        if i % 50_000 == 0:
            producer.flush(60)
    producer.flush(60)
    killer = FetchKiller(s3_server, airflow_setup.bucket, f"{app_id}/topics/")
    killer.start()
    conf = backfill_conf(airflow_setup, "retry", app_id, dry_run=False)

    try:  # the steps after the fetch are not what this test is about: marked done without running
        run = run_dag(dagbag, BACKFILL, conf, log=task_log, mark_success_pattern="process|approve_handoff|handoff")
    finally:
        killer.done.set()
        killer.join(10)

    assert killer.killed is not None, "the fetch finished before it could be killed"
    assert 1 <= killer.staged_when_killed < 3
    states = task_states(run)
    assert (states["fetch[0]"], states["verify"]) == ("success", "success")
    assert "terminated abruptly" in task_log.text  # the first attempt's error, then Airflow's retry
    with Ledger(airflow_setup.ledger_url) as ledger:
        detail = ledger.run_for_dag_run(BACKFILL, run.run_id)
    assert detail is not None
    [staged] = [r for r in detail.ranges if r.topic == topologies.input_topic("retry")]
    assert (staged.records_planned, staged.records_staged) == (RECORDS, RECORDS)
    assert staged.segments_already_staged is not None and staged.segments_already_staged >= killer.staged_when_killed
    assert staged.segments_already_staged + (staged.segments_written or 0) == 3
    assert try_number(run, "fetch") == 2


def try_number(run: Any, task_id: str) -> int:
    from airflow import settings

    session = settings.Session()
    try:
        [ti] = [ti for ti in run.get_task_instances(session=session) if ti.task_id == task_id]
        return int(ti.try_number)
    finally:
        session.close()
