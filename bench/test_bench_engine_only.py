"""``bench/engine_only.py`` on a two-stage workload: the window's stage 2 gets stage 1's repartition output.

Not a timing: a small data set of the benchmark's shape on the session's real broker, run through
``engine_only.main`` (what ``compare.py`` runs in a subprocess) for the DSL and Processor API windows. It checks the
figure's bookkeeping (both stages measured apart, every input record processed by stage 1, every re-keyed record
by stage 2) and that stage 2 really aggregated the handed-over records: the largest sum sent per item and window is
the sum of the input's amounts in that window (sums only grow; grace is longer than the data spans). The DSL
count is the one-stage control: one stage, nothing handed over.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient

from bench import engine_only, generator, workloads
from tests.integration.conftest import create_topic

pytestmark = pytest.mark.bench
RECORDS, PARTITIONS = 3_000, 4


def _run(
    workload: str, api: str, bootstrap: str, admin: AdminClient, work: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """``engine_only.main`` on the small data set (produced once per session broker); returns the output topic."""
    data = generator.DataSet(RECORDS, PARTITIONS)
    if data.topic not in admin.list_topics(timeout=30).topics:
        create_topic(admin, data.topic, partitions=PARTITIONS)
        generator.produce(bootstrap, data)
    output = create_topic(admin, f"bench-out-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    monkeypatch.setenv("STREAMPROC_BENCH_INPUT", data.topic)
    monkeypatch.setenv("STREAMPROC_BENCH_OUTPUT", output)
    app = f"bench-eng-{workload.replace('_', '-')}-{api}-{uuid.uuid4().hex[:8]}"
    engine_only.main(bootstrap, app, workload, api, str(work / "run"), RECORDS, str(work / "staging"))
    return output


@pytest.mark.parametrize("api", ["dsl", "papi"])
def test_window_runs_both_stages_and_stage_two_sums_every_record(
    api: str,
    kafka_broker: str,
    admin: AdminClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    output = _run("window", api, kafka_broker, admin, tmp_path, monkeypatch)
    staging = tmp_path / "staging"

    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    stages = figures["stages"]
    assert [s["tasks"] for s in stages] == [PARTITIONS, PARTITIONS] and figures["tasks"] == 2 * PARTITIONS
    assert [s["records"] for s in stages] == [RECORDS, RECORDS] == [RECORDS, figures["handed_over"]]
    assert figures["cpu_s"] == pytest.approx(sum(s["cpu_s"] for s in stages))
    assert all(s["cpu_s"] > 0 and s["wall_s"] > 0 for s in stages)

    expected: dict[tuple[bytes, int], int] = defaultdict(int)
    for _, value, timestamp in generator.values(RECORDS, seed=0):
        expected[(value[:5], timestamp // workloads.WINDOW_MS)] += workloads.amount(value)
    sent: dict[tuple[bytes, int], int] = defaultdict(int)
    files = sorted(staging.glob(f"process/*/tasks/*/outputs/{output}+*.parquet"))
    assert files, f"no output objects of {output} under {staging}"
    rows = [row for file in files for row in pq.read_table(file, columns=["key", "value", "timestamp"]).to_pylist()]
    assert len(rows) == RECORDS  # every update sent on (no cache)
    for row in rows:
        window = (row["key"], row["timestamp"] // workloads.WINDOW_MS)
        sent[window] = max(sent[window], int.from_bytes(row["value"], "big", signed=True))
    assert sent == expected


def test_a_single_stage_workload_is_one_stage_with_nothing_handed_over(
    kafka_broker: str,
    admin: AdminClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The count (its changelog created by the first-run plan, as for the window): one stage, every record."""
    _run("count", "dsl", kafka_broker, admin, tmp_path, monkeypatch)
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [(s["tasks"], s["records"]) for s in figures["stages"]] == [(PARTITIONS, RECORDS)]
    assert figures["handed_over"] == 0 and figures["cpu_s"] == figures["stages"][0]["cpu_s"]
