"""What the run page shows, computed once from the ledger's ``RunDetail``: totals, the charts, readable times."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup

from streamproc.airflow.monitoring.charts import Series, bar_chart
from streamproc.ledger import RunDetail

PROCESSED_COLOUR = "#2b6cb0"
DROPPED_COLOUR = "#c05621"
LAG_BEFORE_COLOUR = "#805ad5"
LAG_AFTER_COLOUR = "#38a169"


@dataclass(frozen=True, slots=True)
class RunPage:
    """The run and the figures derived from it for the template."""

    run: RunDetail
    dropped_by_reason: dict[str, int]
    dead_letters_by_topic: dict[str, int]
    records_chart: Markup
    lag_chart: Markup


def run_page(run: RunDetail) -> RunPage:
    dropped: Counter[str] = Counter()
    dead_letters: Counter[str] = Counter()
    for task in run.tasks:
        dropped.update(task.dropped)
        dead_letters.update(task.dead_letter_queue)
    tasks = sorted(run.tasks, key=lambda t: t.task_id)
    records_chart = bar_chart(
        "Records per task",
        [t.task_id for t in tasks],
        [
            Series("processed", PROCESSED_COLOUR, [t.records_processed for t in tasks]),
            Series("dropped", DROPPED_COLOUR, [sum(t.dropped.values()) for t in tasks]),
        ],
    )
    lag_chart = bar_chart(
        "Lag per partition",
        [row.partition for row in run.lag],
        [
            Series("lag before", LAG_BEFORE_COLOUR, [row.lag_before for row in run.lag]),
            Series("lag after", LAG_AFTER_COLOUR, [row.lag_after for row in run.lag]),
        ],
    )
    return RunPage(run, dict(sorted(dropped.items())), dict(sorted(dead_letters.items())), records_chart, lag_chart)


def stream_time(millis: int | None) -> str:
    """A task's stream time (epoch milliseconds) as UTC ISO-8601; none yet (no record seen) as a dash."""
    if millis is None or millis < 0:
        return "–"
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds")


def short_time(iso: str | None) -> str:
    """An ISO-8601 UTC timestamp from the ledger to the second, for tables (``2026-11-24 14:20:25``)."""
    if not iso:
        return "–"
    return iso.replace("T", " ")[:19]
