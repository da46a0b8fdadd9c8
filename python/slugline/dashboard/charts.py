"""The clicks chart, drawn on the server as SVG: it needs no script, reads in any browser and is described
for screen readers by its accessible name and one title per bar. The axis labels are HTML beside the SVG, so the
bars can stretch to any width without stretching the text: the labels sit in a grid of one column per bar (CSS
`grid-auto-columns: 1fr`, no inline style under the pages' CSP), each centred under its own bar.

One bar per bucket of the analytics series: an hour, a day, a week (named by its Monday) or a month (its 1st)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from markupsafe import Markup, escape

WIDTH, HEIGHT = 720, 160  # the SVG's own units; it is stretched to the page's width
AXIS_LABELS = 7  # at most this many labels: they fit side by side under a phone-wide chart
# Buckets between two labels, per interval: whole days, weeks or months; hours that divide a day, so labels fall on
# the same hours every day and midnight, named by its date, is among them.
LABEL_STEPS = {
    "day": (1, 2, 3, 5, 7, 14, 15, 30, 60, 90, 120, 180, 365),
    "hour": (1, 2, 3, 4, 6, 8, 12, 24, 48, 72, 96, 168),
    "week": (1, 2, 4, 8, 13, 26, 52),
    "month": (1, 2, 3, 6, 12),
}


def nice_ceiling(value: int) -> int:
    """The top of the axis: the smallest of 1, 2 or 5 times a power of ten that is at least `value`."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def clicks_chart(
    series: list[dict[str, Any]], label: str, interval: str = "day", period: tuple[str, str] | None = None
) -> Markup:
    """Bars of `series` ([{date, clicks}] in order, as analytics returns it) under the accessible name `label`,
    followed by the total and `period` (first and last day; else the series' first and last bucket)."""
    total = sum(int(point["clicks"]) for point in series)
    top = nice_ceiling(max([int(point["clicks"]) for point in series] + [1]))
    slot = WIDTH / max(len(series), 1)
    bar_w = max(slot * 0.8, 0.5)
    first, last = period or ((series[0]["date"][:10], series[-1]["date"][:10]) if series else ("", ""))
    name = f"{label}: {plural(total, 'click')} from {first} to {last}" if series else label
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
            f"<title>{escape(bucket_name(point['date'], interval))}: {plural(clicks, 'click')}</title></rect>"
        )
    parts.append('</svg><div class="chart-x" aria-hidden="true">')
    named = set(label_positions(len(series), interval=interval))
    for i, point in enumerate(series):  # one cell per bar, under it; only the labelled buckets have text
        parts.append(f"<span>{axis_label(point['date'], interval) if i in named else ''}</span>")
    parts.append("</div></figure>")
    return Markup("".join(parts))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def bucket_name(stamp: str, interval: str) -> str:
    """A bar's title: the bucket it counts, whole."""
    if interval == "hour":
        return f"{stamp[:10]} {stamp[11:16]} UTC"
    if interval == "week":
        return f"week of {stamp}"
    if interval == "month":
        return date.fromisoformat(stamp).strftime("%B %Y")
    return stamp


def axis_label(stamp: str, interval: str) -> str:
    """A label under the axis, short: "Nov 26" for a day or a week's Monday, "14:00" for an hour but its date at
    midnight, "Nov" for a month but its year in January."""
    if interval == "hour":
        at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
        return at.strftime("%b %-d") if at.hour == 0 else at.strftime("%H:%M")
    day = date.fromisoformat(stamp)
    if interval == "month":
        return day.strftime("%b %Y" if day.month == 1 else "%b")
    return day.strftime("%b %-d")


def label_step(count: int, most: int = AXIS_LABELS, interval: str = "day") -> int:
    """Buckets between two labels: the smallest step of the interval that names at most `most` of `count`."""
    for step in LABEL_STEPS[interval]:
        if -(-count // step) <= most:
            return step
    return -(-count // most)


def label_positions(count: int, most: int = AXIS_LABELS, interval: str = "day") -> list[int]:
    """Indices of the buckets named under the axis, evenly spaced: every one up to `most`, else every `label_step`
    counted back from the last (today is always named), or for hours counted from the first (a midnight) so they
    fall on the same hours of every day."""
    step = label_step(count, most, interval)
    if interval == "hour":
        return [i for i in range(count) if i % step == 0]
    return [i for i in range(count) if (count - 1 - i) % step == 0]
