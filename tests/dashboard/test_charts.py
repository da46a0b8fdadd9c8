"""The clicks chart's day labels: evenly spaced, each under its own bar, today always named."""

from __future__ import annotations

import re
from datetime import date, timedelta
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
