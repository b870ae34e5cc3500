"""The comparison's plans: ``--quick`` still answers the issue's table and every goal it states (each system × each
workload at 1 M), ``--scaling`` has the points of both curves. No broker: this checks what would be run."""

from __future__ import annotations

from typing import Any

import pytest

from bench import compare

pytestmark = pytest.mark.bench


def _rows(plan: compare.Plan, workloads: tuple[str, ...]) -> list[dict[str, Any]]:
    """The summary rows a plan's runs would give, every figure a goal reads set to one value."""
    figures = {"records_per_cpu_s": 1, "records_per_stream_thread_cpu_s": 1, "wall_s": 1.0}
    return [{**spec, **figures, "records": n, "partitions": p}
            for n in plan.sizes for p in plan.partitions for spec in compare.runs_for(plan, workloads)]  # fmt: skip


def test_quick_runs_every_system_on_every_workload_and_feeds_every_goal() -> None:
    rows = _rows(compare.QUICK, compare.WORKLOADS)
    systems = {(r["system"], r["workload"]) for r in rows}
    for workload in compare.WORKLOADS:
        for system in ("streamproc", "kafka-streams", "quix-streams", compare.SSS):
            assert (system, workload) in systems
    assert {w for s, w in systems if s == "streamproc-engine"} == set(compare.WORKLOADS)  # the window's 2 stages too
    goals = compare.goals(rows, 1_000_000, 8, 2)
    # engine: pass-through (cache off), count (cache off, default); run: each workload against KS and Quix, and
    # against each of Spark Structured Streaming's versions (the count: SQL and transformWithStateInPandas)
    sss_versions = sum(len(apis) for apis in compare.SSS_APIS.values())
    assert len(goals) == 3 + 2 * len(compare.WORKLOADS) + sss_versions
    assert len({(r["system"], r["variant"], r["workload"], r["cores"]) for r in rows}) == len(rows)  # no repeats


def test_spark_structured_streaming_runs_the_sql_queries_and_the_processor_api_count() -> None:
    """Issue #28: ``groupBy(key).count()``, the windowed sum and the pass-through as SQL (api ``dsl``), the count
    also as ``transformWithStateInPandas`` (``papi``), each against ``streamproc run`` per CPU-second."""
    rows = _rows(compare.QUICK, compare.WORKLOADS)
    sss = {(r["workload"], r["api"], r["variant"]) for r in rows if r["system"] == compare.SSS}
    assert sss == {
        ("pass_through", "dsl", "dsl local[2]"),
        ("count", "dsl", "dsl local[2]"),
        ("count", "papi", "papi transformWithStateInPandas local[2]"),
        ("window", "dsl", "dsl local[2]"),
    }
    count = [g["goal"] for g in compare.goals(rows, 1_000_000, 8, 2) if "Spark" in g["goal"] and "count" in g["goal"]]
    assert count == [
        "streamproc run count ≥ 1.5× Spark Structured Streaming",
        "streamproc run count ≥ 1.5× Spark Structured Streaming transformWithStateInPandas",
    ]


def test_a_spark_structured_streaming_run_that_missed_records_reports_no_speed() -> None:
    """Its app's progress and the output topic must agree with the data set, as the other peers' counts must."""
    done = {"input_rows": 1000, "output_rows": 40, "dropped_by_watermark": 0}
    assert compare.sss_incomplete(done, 40, 1000, "dsl") is None
    assert compare.sss_incomplete({**done, "input_rows": 999}, 40, 1000, "dsl") == "read 999 of 1000 records"
    assert compare.sss_incomplete({**done, "dropped_by_watermark": 3}, 40, 1000, "dsl") is not None
    assert compare.sss_incomplete(done, 39, 1000, "dsl") is not None  # the sink said 40
    assert compare.sss_incomplete(done, 0, 1000, "dsl") is not None
    assert compare.sss_incomplete({**done, "output_rows": 1000}, 1000, 1000, "papi") is None
    assert compare.sss_incomplete(done, 40, 1000, "papi") == "sent 40 counts for 1000 records"


def test_the_spark_peer_runs_the_connector_release_its_venv_pins() -> None:
    """``bench/sss-pom.xml``'s spark-sql-kafka-0-10 and ``.venv-sss``'s pyspark are one Spark release."""
    from bench import sss_connector

    pins = sss_connector.REQUIREMENTS.read_text().splitlines()
    assert f"pyspark=={sss_connector.spark_version()}" in pins


def test_the_dsl_window_has_an_engine_row_and_goals_against_both_cache_settings() -> None:
    """Issue #16's window goal: the engine (both stages) against Kafka Streams' DSL stream thread, with its default
    settings (what the issue names) and with the cache off, as for the other DSL workloads."""
    plan = compare.override(compare.QUICK, apis="dsl", ks_variants="1:default,1:off")
    rows = _rows(plan, ("window",))
    assert {(r["system"], r["variant"]) for r in rows if r["system"] == "streamproc-engine"} == {
        ("streamproc-engine", "engine dsl")
    }
    window = [g["goal"] for g in compare.goals(rows, 1_000_000, 8, 2) if "engine window" in g["goal"]]
    assert window == [
        "DSL engine window ≥ 1.0× KS DSL stream thread, cache off",
        "DSL engine window ≥ 1.0× KS DSL stream thread, default cache",
    ]


def test_scaling_has_both_curves() -> None:
    rows = _rows(compare.SCALING, ("count",))
    for system in ("streamproc", "kafka-streams"):
        points = {(r["records"], r["cores"]) for r in rows if r["system"] == system}
        assert {n for n, _ in points} == set(compare.SCALING.sizes) and len(compare.SCALING.sizes) >= 2
        assert {c for _, c in points} == {1, 2}
    two_threads = [r for r in rows if r["system"] == "kafka-streams" and r.get("threads") == 2]
    assert {r["records"] for r in two_threads} == set(compare.SCALING.sizes)


def test_the_command_line_narrows_a_plan_to_the_points_asked_for() -> None:
    """``--sizes 10000000 --partitions 32 --cores 2 --ks-variants …``: the 10 M and 32-partition points alone."""
    plan = compare.override(compare.QUICK, sizes="10000000", partitions="32", cores="2", ks_variants="1:off,2:off")
    rows = _rows(plan, ("count",))
    assert {(r["records"], r["partitions"]) for r in rows} == {(10_000_000, 32)}
    assert {r["cores"] for r in rows if r["system"] != "streamproc-engine"} == {2}  # the engine runs on one core
    assert {(r.get("threads"), r.get("cache")) for r in rows if r["system"] == "kafka-streams"} == {
        (1, "off"),
        (2, "off"),
    }
    assert compare.override(compare.SCALING) == compare.SCALING  # nothing asked: the plan as it is


def test_a_second_user_of_the_cached_broker_attaches_and_the_last_one_stops_it() -> None:
    """Two invocations (here: this process and a child) never restart the broker under each other's runs."""
    import subprocess
    import sys
    from pathlib import Path

    from bench import generator
    from streamproc_dev.service_process import is_alive

    handle = generator.start_broker()
    try:
        child = subprocess.run(
            [sys.executable, "-c", "from bench import generator as g; print(g.start_broker().pid); g.stop_broker()"],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1],
        )  # fmt: skip
        assert child.stdout.strip() == str(handle.pid)  # attached, not restarted
        assert is_alive(handle.pid)  # its stop left the broker to this process
    finally:
        generator.stop_broker()
    assert not is_alive(handle.pid)
