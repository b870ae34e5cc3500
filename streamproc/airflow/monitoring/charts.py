"""Inline SVG bar charts for the run page: no JavaScript, no library fetched from the internet.

Every label passes through ``html.escape`` before it becomes markup, so a hostile task id or topic name in the ledger
is shown as text. The charts are horizontal bars: one row per label, one bar per series, scaled to the largest value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

ROW_HEIGHT = 18
BAR_GAP = 2
LABEL_WIDTH = 190
BAR_WIDTH = 420
VALUE_WIDTH = 90


@dataclass(frozen=True, slots=True)
class Series:
    """One bar per row: its name (shown in the legend), CSS colour and one value per row (``None``: no bar)."""

    name: str
    colour: str
    values: Sequence[int | None]


def bar_chart(title: str, labels: Sequence[str], series: Sequence[Series]) -> Markup:
    """A grouped horizontal bar chart; empty ``labels`` give a short 'nothing to chart' note instead."""
    if not labels:
        return Markup("<p class='empty'>{}: nothing to chart.</p>").format(title)
    peak = max((v for s in series for v in s.values if v is not None), default=0) or 1
    group = len(series) * (ROW_HEIGHT + BAR_GAP) + 6
    legend_height = 22
    height = legend_height + group * len(labels)
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' role='img' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'><title>{escape(title)}</title>"
    ]
    x = LABEL_WIDTH
    for s in series:
        parts.append(
            f"<rect x='{x}' y='4' width='12' height='12' fill='{escape(s.colour)}'/>"
            f"<text x='{x + 16}' y='14' class='legend'>{escape(s.name)}</text>"
        )
        x += 16 + 8 * len(s.name) + 20
    for row, label in enumerate(labels):
        top = legend_height + row * group
        parts.append(
            f"<text x='{LABEL_WIDTH - 6}' y='{top + ROW_HEIGHT - 4}' text-anchor='end' class='label'>"
            f"{escape(label)}</text>"
        )
        for index, s in enumerate(series):
            value = s.values[row]
            y = top + index * (ROW_HEIGHT + BAR_GAP)
            if value is None:
                parts.append(f"<text x='{LABEL_WIDTH + 4}' y='{y + ROW_HEIGHT - 4}' class='value'>n/a</text>")
                continue
            length = round(BAR_WIDTH * value / peak) if value > 0 else 0
            parts.append(
                f"<rect x='{LABEL_WIDTH}' y='{y}' width='{max(length, 1)}' height='{ROW_HEIGHT}' "
                f"fill='{escape(s.colour)}'><title>{escape(label)} {escape(s.name)}: {value}</title></rect>"
                f"<text x='{LABEL_WIDTH + length + 4}' y='{y + ROW_HEIGHT - 4}' class='value'>{value:,}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every interpolated string above went through escape()
