"""Reading a view's roll-up cubes over a period into one answer of `_core.analyse`: the closed days' from this worker's
cache (`slugline.analytics.cache`) while the account's epoch stays, the recent days' fresh, the two merged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy.orm import Session

from slugline import _core
from slugline.analytics import cubes
from slugline.analytics.cache import AnswerCache, last_closed_day
from slugline.common.clock import day_date


@dataclass(frozen=True)
class Kept:
    """The worker's cache of answers over closed days, and the account's epoch they must have been made at."""

    cache: AnswerCache
    epoch: int

    def closed(self, first: date, last: date) -> tuple[date, date] | None:
        """The part of the period the cache may hold (None: none of it), the rest being read fresh."""
        cut = min(last, day_date(last_closed_day()))
        return (first, cut) if first <= cut else None

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        found = self.cache.get(key, self.epoch)
        if found is None:
            found = make()
            self.cache.put(key, self.epoch, found)
        return found


def read_answer(
    session: Session,
    view: cubes.View,
    first: date,
    last: date,
    filters: dict[str, str],
    hourly: bool,
    kept: Kept | None,
) -> dict[str, Any]:
    """`_core.analyse` of the view's packs and day cubes over the period: the closed days' from the cache if it has
    them."""
    by_origin = "source" in filters or "referrer" in filters  # visitors kept by source and referrer

    def read(start: date, end: date) -> dict[str, Any]:
        rows, packs = cubes.period_rows(session, view, start, end, hours=hourly, uniques=by_origin)
        out: dict[str, Any] = _core.analyse(rows, filters, hourly, packs)
        return out

    closed = kept.closed(first, last) if kept else None
    if kept is None or closed is None:
        return read(first, last)
    key = ("answer", view.account_id, view.scope, *closed, hourly, tuple(sorted(filters.items())))
    answer: dict[str, Any] = kept.get_or_make(key, lambda: read(*closed))
    if closed[1] < last:
        answer = _merged(answer, read(closed[1] + timedelta(days=1), last))
    return answer


def _merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two answers of `_core.analyse` over days apart, as one (`a` is left as it is: it may be cached)."""
    breakdowns = {}
    for dimension, ranked in a["breakdowns"].items():
        more = b["breakdowns"][dimension]
        if not more:
            breakdowns[dimension] = ranked
            continue
        counts = dict(ranked)
        for value, n in more:
            counts[value] = counts.get(value, 0) + n
        breakdowns[dimension] = sorted(counts.items(), key=lambda c: (-c[1], c[0]))
    return {
        "total": a["total"] + b["total"],
        "visitors": a["visitors"] + b["visitors"],
        "days": {**a["days"], **b["days"]},
        "hours": {**a["hours"], **b["hours"]},
        "breakdowns": breakdowns,
        "variant_visitors": {
            v: a["variant_visitors"].get(v, 0.0) + b["variant_visitors"].get(v, 0.0)
            for v in {*a["variant_visitors"], *b["variant_visitors"]}
        },
    }
