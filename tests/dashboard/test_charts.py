"""The clicks chart's labels: evenly spaced, each under its own bar, today always named; an hourly series named at
the same hours every day (midnight by its date); weeks and months by their first day."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from itertools import pairwise

import pytest

from slugline.dashboard.charts import AXIS_LABELS, clicks_chart, label_positions


def series(days: int, end: date = date(2026, 11, 26)) -> list[dict[str, object]]:
    return [{"date": (end - timedelta(days=days - 1 - i)).isoformat(), "clicks": i % 3} for i in range(days)]


@pytest.mark.parametrize("count", [1, 2, 7, 8, 14, 30, 31, 90, 365])
def test_labels_are_evenly_spaced_end_on_today_and_fit(count: int) -> None:
    named = label_positions(count)
    assert named[-1] == count - 1
    assert len(named) <= AXIS_LABELS
    assert len({b - a for a, b in pairwise(named)}) <= 1


def test_a_week_names_every_day_under_its_own_bar() -> None:
    chart = str(clicks_chart(series(7), "Clicks per day"))
    axis = chart.split('<div class="chart-x" aria-hidden="true">', 1)[1]
    labels = re.findall(r"<span>([^<]*)</span>", axis)
    assert labels == ["Nov 20", "Nov 21", "Nov 22", "Nov 23", "Nov 24", "Nov 25", "Nov 26"]
    assert chart.count('<rect class="bar"') == 7


def test_a_month_has_one_cell_per_bar_and_a_label_every_five_days() -> None:
    chart = str(clicks_chart(series(30), "Clicks per day"))
    labels = re.findall(r"<span>([^<]*)</span>", chart.split('class="chart-x"', 1)[1])
    assert len(labels) == 30  # one cell per bar: a label sits under the bar of its day
    assert [i for i, text in enumerate(labels) if text] == [4, 9, 14, 19, 24, 29]
    assert labels[-1] == "Nov 26"


def hours(days: int, start: datetime = datetime(2026, 11, 24)) -> list[dict[str, object]]:
    return [
        {"date": (start + timedelta(hours=h)).strftime("%Y-%m-%dT%H:00:00Z"), "clicks": h % 2} for h in range(24 * days)
    ]


def axis(chart: str) -> list[str]:
    return re.findall(r"<span>([^<]*)</span>", chart.split('class="chart-x"', 1)[1])


def test_a_days_hours_are_named_every_four_hours_from_its_date() -> None:
    chart = str(clicks_chart(hours(1), "Clicks per hour", "hour", ("2026-11-24", "2026-11-24")))
    assert chart.count('<rect class="bar"') == 24
    assert [text for text in axis(chart) if text] == ["Nov 24", "04:00", "08:00", "12:00", "16:00", "20:00"]
    assert "<title>2026-11-24 13:00 UTC: 1 click</title>" in chart
    assert 'aria-label="Clicks per hour: 12 clicks from 2026-11-24 to 2026-11-24"' in chart


@pytest.mark.parametrize(
    ("days", "named"),
    [
        (2, ["Nov 24", "08:00", "16:00", "Nov 25", "08:00", "16:00"]),
        (3, ["Nov 24", "12:00", "Nov 25", "12:00", "Nov 26", "12:00"]),
        (7, ["Nov 24", "Nov 25", "Nov 26", "Nov 27", "Nov 28", "Nov 29", "Nov 30"]),
    ],
)
def test_longer_hourly_series_are_named_at_the_same_hours_each_day(days: int, named: list[str]) -> None:
    labels = axis(str(clicks_chart(hours(days), "Clicks per hour", "hour")))
    assert len(labels) == 24 * days
    assert [text for text in labels if text] == named
    assert all(labels[i] for i in range(0, 24 * days, 24))  # every midnight is named, by its date


def test_weeks_and_months_are_named_by_their_first_day() -> None:
    weeks = [{"date": (date(2026, 1, 5) + timedelta(weeks=w)).isoformat(), "clicks": 1} for w in range(53)]
    chart = str(clicks_chart(weeks, "Clicks per week", "week"))
    assert "<title>week of 2026-01-05: 1 click</title>" in chart
    assert 0 < len([t for t in axis(chart) if t]) <= AXIS_LABELS and axis(chart)[-1] == "Jan 4"
    months = [{"date": date(2025 + (10 + m) // 12, (10 + m) % 12 + 1, 1).isoformat(), "clicks": 0} for m in range(4)]
    chart = str(clicks_chart(months, "Clicks per month", "month"))
    assert axis(chart) == ["Nov", "Dec", "Jan 2026", "Feb"]
    assert "<title>January 2026: 0 clicks</title>" in chart
