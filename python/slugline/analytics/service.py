"""Analytics and the click log of a link — scoped like links: a public key never sees hidden ones.

Figures come from the roll-up cubes the click writer keeps (`slugline.analytics.cubes`, `rust_core/cube/`) and
leave bots out: a period's answer reads at most 365 day cubes and 72 per-link count rows, whatever the traffic.
Unique visitors are the sum over the period's days of each day's distinct visitor hashes (the hash's salt changes
daily, so nobody can be followed from one day to the next), counted exactly up to 1,024 a day and by a HyperLogLog
sketch above that (standard error 1.6%). A link with variants (an A/B split) also gets its figures per variant, from
the same cubes (`slugline.analytics.variants`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from itertools import islice
from typing import Any

import anyio.to_thread
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from slugline import _core
from slugline.analytics import cache, cubes
from slugline.analytics.cache import AnswerCache
from slugline.analytics.variants import variant_figures
from slugline.common.caller import Caller
from slugline.common.clock import isoformat
from slugline.common.errors import Invalid
from slugline.common.inputs import AnalyticsParams, PageParams
from slugline.common.models import Click, Link
from slugline.common.paging import pagination
from slugline.common.validation import parse, without_nulls
from slugline.limits import rules as limits
from slugline.links.service import find_link, visible
from slugline.runtime import Runtime

TOP_LINKS = 10
# Under a filter, top links are ranked among the period's most clicked links: per-link counts are kept per link,
# not per link and filter value (that would be a cube per link in every account cube).
TOP_CANDIDATES = 25
# Breakdowns show the most frequent entries and one OTHER row with the rest: sources come from anonymous
# visitors' utm_source values, so without a cap anyone could make an account's analytics arbitrarily large.
TOP_ENTRIES = 20
OTHER = "(other)"
# A click of a link's list: when, who (classified), where from (the place resolved by the click writer) and to which
# of the link's variants it was sent.
CLICK_COLUMNS = (
    Click.clicked_at,
    Click.device,
    Click.browser,
    Click.os,
    Click.source,
    Click.referrer,
    Click.country,
    Click.region,
    Click.city,
    Click.variant,
)
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


async def get_analytics(
    rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None
) -> dict[str, Any]:
    """The account's (or one link's) clicks over a period; in one of the account's query slots
    (`limits.analysing`), on a worker thread."""
    async with limits.analysing(rt, caller.account_id):
        return await anyio.to_thread.run_sync(analytics_on_thread, rt, caller, data, link_id)


def analytics_on_thread(
    rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None
) -> dict[str, Any]:
    """The account's figures, or with `link_id` one link's (its page in the dashboard): 404 for a hidden link."""
    with rt.db.session() as session:
        if session.get_bind().dialect.name == "postgresql":  # cubes and pending moves read as of one moment
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        if link_id is not None:  # an unknown or hidden link is 404 before its query is looked at, as elsewhere
            link = find_link(session, caller, link_id)
            view = cubes.View(caller.account_id, link.id)
        params = parse(AnalyticsParams, without_nulls(data))
        first, last = params.period()
        filters = params.filters()
        if link_id is None:
            if "variant" in filters:  # an index means nothing across links: the account's cubes keep no variants
                raise Invalid("variant filters one link's analytics only (the link's variants are its own)")
            view = cubes.account_view(session, caller)
        # Closed days come from this worker's cache while the account's epoch stays (read before any cube); with
        # cube moves pending, everything is read.
        kept = Kept(rt.analytics, cache.epoch_of(session, view.account_id)) if not view.moves else None
        answer = _answer(session, view, first, last, filters, params.interval == "hour", kept)
        split = None
        if link_id is not None:
            top = [(link.id, link.slug, link.title, answer["total"])] if answer["total"] > 0 else []
            split = variant_figures(link, answer)
        else:
            top = _top_links(session, caller, view, first, last, filters, kept)
    total = int(answer["total"])
    out: dict[str, Any] = {
        "days": (last - first).days + 1,
        "from": first.isoformat(),
        "to": last.isoformat(),
        "interval": params.interval,
        **{name: filters.get(name) for name in ("source", "device", "browser", "os", "referrer", "city")},
        "variant": int(filters["variant"]) if "variant" in filters else None,
        "country": filters["country"].upper() if "country" in filters else None,
        "total_clicks": total,
        "unique_visitors": round(answer["visitors"]),
        "clicks": _series(answer, params.interval, first, last),
    }
    for key, name, dimension in BREAKDOWNS:
        rows_of = answer["breakdowns"][dimension]
        shown = MAX_COUNTRIES if name == "country" else TOP_ENTRIES
        out[key] = _with_other(name, rows_of, sum(n for _, n in rows_of), shown)
    out["top_links"] = [{"id": i, "slug": slug, "title": title, "clicks": int(n)} for i, slug, title, n in top]
    out["variants"] = split
    return out


@dataclass(frozen=True)
class Kept:
    """The worker's cache of answers over closed days, and the account's epoch they must have been made at."""

    cache: AnswerCache
    epoch: int

    def closed(self, first: date, last: date) -> tuple[date, date] | None:
        """The part of the period the cache may hold (None: none of it), the rest being read fresh."""
        cut = min(last, cubes.EPOCH + timedelta(days=cache.last_closed_day()))
        return (first, cut) if first <= cut else None

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        found = self.cache.get(key, self.epoch)
        if found is None:
            found = make()
            self.cache.put(key, self.epoch, found)
        return found


def _answer(
    session: Session,
    view: cubes.View,
    first: date,
    last: date,
    filters: dict[str, str],
    hourly: bool,
    kept: Kept | None,
) -> dict[str, Any]:
    """`_core.analyse` of the view's day cubes over the period: the closed days' from the cache if it has them."""
    by_origin = "source" in filters or "referrer" in filters  # visitors kept by source and referrer

    def read(start: date, end: date) -> dict[str, Any]:
        rows = cubes.day_rows(session, view, start, end, hours=hourly, uniques=by_origin)
        out: dict[str, Any] = _core.analyse(rows, filters, hourly)
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


ALL_LINKS = 1 << 40  # `_core.top_links` asked for every link


def _link_counts(
    session: Session, view: cubes.View, first: date, last: date, want: int, kept: Kept | None
) -> list[tuple[str, int]]:
    """The view's `want` most clicked links over the period (and more with pending moves), most clicked first.
    With the cache: every link's clicks over the closed days, kept most clicked first, and the recent days' added
    to them."""
    closed = kept.closed(first, last) if kept else None
    if kept is None or closed is None:
        return _core.top_links(cubes.link_count_rows(session, view, first, last), want + len(view.moves))
    key = ("links", view.account_id, view.scope, *closed)

    def make() -> tuple[list[tuple[str, int]], dict[str, int]]:
        ranked = _core.top_links(cubes.link_count_rows(session, view, *closed), ALL_LINKS)
        return ranked, dict(ranked)

    ranked: list[tuple[str, int]]
    ranked, by_link = kept.get_or_make(key, make)
    if closed[1] == last:
        return ranked[:want]
    fresh = _core.top_links(cubes.link_count_rows(session, view, closed[1] + timedelta(days=1), last), ALL_LINKS)
    # A link without recent clicks can make the top only from the closed top `want`: each link past those is beaten
    # by all of them, closed and now. A link with recent clicks needs at least the closed `want`-th count.
    counts = dict(ranked[:want])
    floor = ranked[want - 1][1] if len(ranked) >= want else 0
    for link, n in fresh:
        now = by_link.get(link, 0) + n
        if now >= floor:
            counts[link] = now
    return sorted(counts.items(), key=lambda c: (-c[1], c[0]))[:want]


def _filtered_totals(
    session: Session,
    view: cubes.View,
    links: list[str],
    first: date,
    last: date,
    filters: dict[str, str],
    kept: Kept | None,
) -> list[tuple[str, int]]:
    """Each link's clicks over the period that fit `filters`, from its own cubes (closed days' from the cache)."""

    def totals(some: list[str], start: date, end: date) -> dict[str, int]:
        # One call for every link: each link's rows are given its index as their "day", so the per-day series is
        # the per-link totals (a link without clicks that fit has none), and the core splits the rows over two
        # threads as it does a long period's.
        own = cubes.link_rows(session, view.account_id, some, start, end)
        rows = [(weight, at, cube, u, h) for at, link in enumerate(some) for weight, _, cube, u, h in own[link]]
        per_link = _core.analyse(rows, filters, False)["days"]
        return {link: int(per_link.get(at, 0)) for at, link in enumerate(some)}

    closed = kept.closed(first, last) if kept else None
    if kept is None or closed is None:
        return list(totals(links, first, last).items())
    keys = {link: ("filtered", view.account_id, link, *closed, tuple(sorted(filters.items()))) for link in links}
    found = {link: kept.cache.get(key, kept.epoch) for link, key in keys.items()}
    missing = [link for link, n in found.items() if n is None]
    if missing:
        for link, n in totals(missing, *closed).items():
            kept.cache.put(keys[link], kept.epoch, n)
            found[link] = n
    if closed[1] < last:
        for link, n in totals(links, closed[1] + timedelta(days=1), last).items():
            found[link] = (found[link] or 0) + n
    return [(link, int(n or 0)) for link, n in found.items()]


def _top_links(
    session: Session,
    caller: Caller,
    view: cubes.View,
    first: date,
    last: date,
    filters: dict[str, str],
    kept: Kept | None = None,
) -> list[tuple[str, str, str | None, int]]:
    """The most clicked links the caller sees: from the per-link counts, or under a filter each candidate's own
    cubes. Links deleted or hidden since the counts were made drop out when their rows are looked up."""
    want = TOP_CANDIDATES if filters else TOP_LINKS
    counted = _link_counts(session, view, first, last, want, kept)
    if view.moves:  # links shown since the counts were made are not in them yet; deleted and hidden ones still are
        by_link = dict(counted)
        own = cubes.link_rows(session, view.account_id, [link for link, _ in view.moves], first, last)
        for link, weight in view.moves:
            by_link[link] = by_link.get(link, 0) + weight * _core.analyse(own[link], {}, False)["total"]
        counted = sorted(((k, n) for k, n in by_link.items() if n > 0), key=lambda c: (-c[1], c[0]))[:want]
    if filters and counted:
        counted = _filtered_totals(session, view, [link for link, _ in counted], first, last, filters, kept)
        counted = sorted((c for c in counted if c[1] > 0), key=lambda c: (-c[1], c[0]))
    if not counted:
        return []
    found = {
        link_id: (slug, title)
        for link_id, slug, title in session.execute(
            select(Link.id, Link.slug, Link.title).where(Link.id.in_([c[0] for c in counted]), *visible(caller))
        )
    }
    return [(link, *found[link], n) for link, n in counted if link in found][:TOP_LINKS]


def _series(answer: dict[str, Any], interval: str, first: date, last: date) -> list[dict[str, Any]]:
    """Zero-filled clicks per bucket of the period, each named by its first hour or day (a week's Monday, a month's
    1st, even where that falls before the period: the bucket then counts only the period's days)."""
    if interval == "hour":
        midnight = datetime.combine(first, time.min)
        hours = (last - first).days * 24 + 24
        base = cubes.epoch_day(first) * 24
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
        buckets[start] = buckets.get(start, 0) + answer["days"].get(cubes.epoch_day(day), 0)
        day += timedelta(days=1)
    return [{"date": start.isoformat(), "clicks": n} for start, n in buckets.items()]


def _with_other(
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


async def list_clicks(rt: Runtime, caller: Caller, link_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """One link's clicks, newest first, paginated like `GET /links` (bots included, flagged as device `bot`); in one
    of the account's query slots, as counting the link's clicks grows with its traffic."""
    async with limits.analysing(rt, caller.account_id):
        return await anyio.to_thread.run_sync(clicks_on_thread, rt, caller, link_id, data)


def clicks_on_thread(rt: Runtime, caller: Caller, link_id: str, data: dict[str, Any]) -> dict[str, Any]:
    with rt.db.session() as session:
        link = find_link(session, caller, link_id)
        params = parse(PageParams, without_nulls(data))
        total = session.scalar(select(func.count()).select_from(Click).where(Click.link_id == link.id)) or 0
        stmt = (
            select(*CLICK_COLUMNS)
            .where(Click.link_id == link.id)
            .order_by(Click.clicked_at.desc(), Click.id.desc())
            .limit(params.per)
            .offset((params.page - 1) * params.per)
        )
        rows = session.execute(stmt).all()
    names = [column.key for column in CLICK_COLUMNS]
    return {
        "data": [{**dict(zip(names, row, strict=True)), "clicked_at": isoformat(row[0])} for row in rows],
        "pagination": pagination(params.page, params.per, total),
    }
