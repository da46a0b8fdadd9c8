"""The figures an analytics answer shows, shaped from `_core.analyse`'s answer: the zero-filled clicks per bucket, and
each breakdown's top entries with one OTHER row for the rest.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from itertools import islice
from typing import Any

from slugline.common.clock import day_number

# Breakdowns show the most frequent entries and one OTHER row with the rest: sources come from anonymous
# visitors' utm_source values, so without a cap anyone could make an account's analytics arbitrarily large.
TOP_ENTRIES = 20
OTHER = "(other)"
BREAKDOWNS = (
    ("devices", "device", "device"),
    ("browsers", "browser", "browser"),
    ("operating_systems", "os", "os"),
    ("sources", "source", "source"),
    ("referrers", "referrer", "referrer"),
    ("countries", "country", "country"),
    ("cities", "city", "city"),
)
MAX_COUNTRIES = 250  # every country there is: a map shows them all


def series(answer: dict[str, Any], interval: str, first: date, last: date) -> list[dict[str, Any]]:
    """Zero-filled clicks per bucket of the period, each named by its first hour or day (a week's Monday, a month's
    1st, even where that falls before the period: the bucket then counts only the period's days)."""
    if interval == "hour":
        midnight = datetime.combine(first, time.min)
        hours = (last - first).days * 24 + 24
        base = day_number(first) * 24
        return [
            {
                "date": (midnight + timedelta(hours=h)).strftime("%Y-%m-%dT%H:00:00Z"),
                "clicks": answer["hours"].get(base + h, 0),
            }
            for h in range(hours)
        ]
    buckets: dict[date, int] = {}
    day = first
    while day <= last:
        if interval == "week":
            start = day - timedelta(days=day.weekday())
        elif interval == "month":
            start = day.replace(day=1)
        else:
            start = day
        buckets[start] = buckets.get(start, 0) + answer["days"].get(day_number(day), 0)
        day += timedelta(days=1)
    return [{"date": start.isoformat(), "clicks": n} for start, n in buckets.items()]


def with_other(
    name: str, rows: list[tuple[str, int]], total: int, top_entries: int = TOP_ENTRIES
) -> list[dict[str, Any]]:
    """The top entries, and an OTHER row with the clicks of every entry past them. A cube counts combinations past
    its bound under OTHER already (`rust_core/cube/mod.rs`): those clicks join the rest, never take a top place, so
    a flood of sources that filled the cube still gives one OTHER row."""
    top = list(islice(((value, n) for value, n in rows if value != OTHER), top_entries))
    out: list[dict[str, Any]] = [{name: value, "clicks": int(n)} for value, n in top]
    rest = total - sum(int(n) for _, n in top)
    if rest > 0:
        out.append({name: OTHER, "clicks": rest})
    return out


def figures(answer: dict[str, Any], interval: str, filters: dict[str, str], first: date, last: date) -> dict[str, Any]:
    """The period, the filters it was asked with, and its figures: totals, the series and every breakdown."""
    out: dict[str, Any] = {
        "days": (last - first).days + 1,
        "from": first.isoformat(),
        "to": last.isoformat(),
        "interval": interval,
        **{name: filters.get(name) for name in ("source", "device", "browser", "os", "referrer", "city")},
        "variant": int(filters["variant"]) if "variant" in filters else None,
        "country": filters["country"].upper() if "country" in filters else None,
        "total_clicks": int(answer["total"]),
        "unique_visitors": round(answer["visitors"]),
        "clicks": series(answer, interval, first, last),
    }
    for key, name, dimension in BREAKDOWNS:
        rows_of = answer["breakdowns"][dimension]
        shown = MAX_COUNTRIES if name == "country" else TOP_ENTRIES
        out[key] = with_other(name, rows_of, sum(n for _, n in rows_of), shown)
    return out
