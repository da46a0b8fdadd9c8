"""The daily clicks chart, drawn on the server as SVG: it needs no script, reads in any browser and is described
for screen readers by its accessible name and one title per bar. The axis labels are HTML beside the SVG, so the
bars can stretch to any width without stretching the text: the day labels sit in a grid of one column per bar (CSS
`grid-auto-columns: 1fr`, no inline style under the pages' CSP), each centred under its own bar."""

from __future__ import annotations

from datetime import date
from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT = 720, 160  # the SVG's own units; it is stretched to the page's width
AXIS_LABELS = 7  # at most this many day labels: they fit side by side under a phone-wide chart
LABEL_STEPS = (1, 2, 3, 5, 7, 14, 15, 30, 60, 90, 120, 180, 365)  # days between labels: whole days, weeks, months


def nice_ceiling(value: int) -> int:
    """The top of the axis: the smallest of 1, 2 or 5 times a power of ten that is at least `value`."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def clicks_chart(series: list[dict[str, Any]], label: str) -> Markup:
    """Bars of `series` ([{date, clicks}] in order, as analytics returns it) under the accessible name `label`."""
    total = sum(int(point["clicks"]) for point in series)
    top = nice_ceiling(max([int(point["clicks"]) for point in series] + [1]))
    slot = WIDTH / max(len(series), 1)
    bar_w = max(slot * 0.8, 0.5)
    name = f"{label}: {total} clicks from {series[0]['date']} to {series[-1]['date']}" if series else label
    parts = [
        '<figure class="chart">',
        f'<div class="chart-y" aria-hidden="true"><span>{top}</span><span>{top // 2 if top > 1 else ""}</span>'
        "<span>0</span></div>",
        f'<svg role="img" aria-label="{escape(name)}" viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(name)}</title>",
    ]
    for y in (0, HEIGHT / 2, HEIGHT):
        parts.append(f'<line class="grid" x1="0" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}"/>')
    for i, point in enumerate(series):
        clicks = int(point["clicks"])
        h = HEIGHT * clicks / top
        x = i * slot + (slot - bar_w) / 2
        parts.append(
            f'<rect class="bar" x="{x:.2f}" y="{HEIGHT - h:.2f}" width="{bar_w:.2f}" height="{h:.2f}">'
            f"<title>{escape(point['date'])}: {clicks} clicks</title></rect>"
        )
    parts.append('</svg><div class="chart-x" aria-hidden="true">')
    named = set(label_positions(len(series)))
    for i, point in enumerate(series):  # one cell per bar, under it; only the labelled days have text
        text = date.fromisoformat(point["date"]).strftime("%b %-d") if i in named else ""
        parts.append(f"<span>{text}</span>")
    parts.append("</div></figure>")
    return Markup("".join(parts))


def label_step(count: int, most: int = AXIS_LABELS) -> int:
    """Days between two labels: the smallest of `LABEL_STEPS` that names at most `most` of `count` days."""
    for step in LABEL_STEPS:
        if -(-count // step) <= most:
            return step
    return -(-count // most)


def label_positions(count: int, most: int = AXIS_LABELS) -> list[int]:
    """Indices of the days named under the axis, evenly spaced: every day up to `most` days, else every
    `label_step` days counted back from the last (today is always named)."""
    step = label_step(count, most)
    return [i for i in range(count) if (count - 1 - i) % step == 0]
