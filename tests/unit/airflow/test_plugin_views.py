"""The monitoring page's pieces that need no server: the SVG charts, the run page's totals, the time formats."""

from __future__ import annotations

import re

from streamproc.airflow.monitoring.charts import BAR_WIDTH, ROW_HEIGHT, Series, bar_chart
from streamproc.airflow.monitoring.views import run_page, short_time, stream_time
from streamproc.ledger import LagRow, RunDetail, RunSummary, TaskRow


def test_a_chart_escapes_its_labels_and_scales_its_bars_to_the_largest_value() -> None:
    chart = str(bar_chart("t <b>", ["<script>x</script>", "b&c"], [Series("s\"'", "#000", [50, 100])]))
    assert "<script>" not in chart and "&lt;script&gt;x&lt;/script&gt;" in chart and "b&amp;c" in chart
    assert "<title>t &lt;b&gt;</title>" in chart and "s&quot;&#x27;" in chart
    bars = re.findall(rf"<rect x='\d+' y='\d+' width='(\d+)' height='{ROW_HEIGHT}'", chart)  # not the legend's
    widths = [int(w) for w in bars]
    assert widths == [BAR_WIDTH // 2, BAR_WIDTH]


def test_a_missing_value_is_marked_and_an_empty_chart_says_so() -> None:
    assert ">n/a<" in str(bar_chart("lag", ["p-0"], [Series("after", "#000", [None])]))
    empty = str(bar_chart("Records <per> task", [], []))
    assert "<svg" not in empty and "Records &lt;per&gt; task: nothing to chart." in empty


def test_the_run_page_sums_drops_per_reason_and_dead_letters_per_topic_over_tasks() -> None:
    summary = RunSummary("r", "app", "cli", None, None, "p", "succeeded", "handoff", None, "t0", "t1", 10, 7, 3)
    tasks = [
        TaskRow("0_1", 4, {"late": 1, "bad-key": 1}, {"dlq": 1}, 1_700_000_000_000, 1.0, False),
        TaskRow("0_0", 3, {"late": 1}, {}, -1, 0.5, False),
    ]
    lag = [LagRow("t-0", None, 10, 10, 10, 0)]
    page = run_page(RunDetail(summary, [], lag, tasks, []))
    assert page.dropped_by_reason == {"bad-key": 1, "late": 2}
    assert page.dead_letters_by_topic == {"dlq": 1}
    assert page.records_chart.index(">0_0<") < page.records_chart.index(">0_1<")  # tasks in id order


def test_times_are_shown_in_utc() -> None:
    assert stream_time(1_700_000_000_000) == "2023-11-14T22:13:20.000+00:00"
    assert stream_time(-1) == "–"  # no record seen yet
    assert short_time("2026-11-24T14:20:25.521+00:00") == "2026-11-24 14:20:25"
    assert short_time(None) == "–"
