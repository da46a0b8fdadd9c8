"""Analytics and the click log of a link — scoped like links: a public key never sees hidden ones.

Figures come from the `click_daily` roll-up and leave bots out; unique visitors are distinct visitor hashes
in the click log. The hash's salt rotates daily, so a person counts once per day they visited, and a day's count,
once made, is remembered for as long as it stays exact (`slugline.analytics.visitors`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import anyio.to_thread
from sqlalchemy import ColumnElement, Date, Select, cast, func, select
from sqlalchemy.orm import Session

from slugline.common.caller import Caller
from slugline.common.clock import isoformat, utcnow
from slugline.common.inputs import AnalyticsParams, PageParams
from slugline.common.models import Account, Click, ClickDaily, Link
from slugline.common.paging import pagination
from slugline.common.validation import parse, without_nulls
from slugline.limits import rules as limits
from slugline.links.service import find_link, visible
from slugline.runtime import Runtime

TOP_LINKS = 10
# Devices and sources show the most frequent entries and one OTHER row with the rest: sources come from anonymous
# visitors' utm_source values, so without a cap anyone could make an account's analytics arbitrarily large.
TOP_ENTRIES = 20
OTHER = "(other)"


async def get_analytics(
    rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None
) -> dict[str, Any]:
    """The account's (or one link's) clicks over the last `days` days. Its work grows with the account's traffic, so
    it runs on a worker thread inside one of the account's query slots (`limits.analysing`)."""
    async with limits.analysing(rt, caller.account_id):
        return await anyio.to_thread.run_sync(analytics_on_thread, rt, caller, data, link_id)


def analytics_on_thread(
    rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None
) -> dict[str, Any]:
    """The account's figures, or with `link_id` one link's (its page in the dashboard): 404 for a hidden link."""
    params = parse(AnalyticsParams, without_nulls(data))
    source = (params.source or "").strip().lower() or None
    last = utcnow().date()
    first = last - timedelta(days=params.days - 1)
    conds: list[ColumnElement[bool]] = [*visible(caller), ClickDaily.day >= first, ClickDaily.device != "bot"]
    if source is not None:
        conds.append(ClickDaily.source == source)
    if link_id is not None:
        with rt.db.session() as session:
            link_id = find_link(session, caller, link_id).id
        conds.append(ClickDaily.link_id == link_id)

    def rollup(*columns: Any) -> Select[Any]:
        total = func.sum(ClickDaily.clicks).label("n")
        return select(*columns, total).join(Link, Link.id == ClickDaily.link_id).where(*conds).group_by(*columns)

    with rt.db.session() as session:
        # Read before the figures and before unique visitors are counted: see `slugline.analytics.visitors`.
        version = session.scalar(select(Account.links_version).where(Account.id == caller.account_id)) or 0
        per_day = {day: int(n) for day, n in session.execute(rollup(ClickDaily.day))}
        devices, sources = (
            session.execute(
                rollup(column).order_by(func.sum(ClickDaily.clicks).desc(), column).limit(TOP_ENTRIES)
            ).all()
            for column in (ClickDaily.device, ClickDaily.source)
        )
        top = session.execute(
            rollup(Link.id, Link.slug, Link.title)
            .order_by(func.sum(ClickDaily.clicks).desc(), Link.id)
            .limit(TOP_LINKS)
        ).all()
        unique = _unique_visitors(rt, session, caller, version, per_day, source, link_id)
    series = [
        {"date": (first + timedelta(days=i)).isoformat(), "clicks": per_day.get(first + timedelta(days=i), 0)}
        for i in range(params.days)
    ]
    total = sum(per_day.values())
    return {
        "days": params.days,
        "from": first.isoformat(),
        "to": last.isoformat(),
        "source": source,
        "total_clicks": total,
        "unique_visitors": unique,
        "clicks": series,
        "devices": _with_other("device", devices, total),
        "sources": _with_other("source", sources, total),
        "top_links": [
            {"id": link_id, "slug": slug, "title": title, "clicks": int(n)} for link_id, slug, title, n in top
        ],
    }


def _with_other(name: str, rows: Any, total: int) -> list[dict[str, Any]]:
    """The top entries, and an OTHER row with the clicks of every entry past them."""
    out = [{name: value, "clicks": int(n)} for value, n in rows]
    rest = total - sum(entry["clicks"] for entry in out)
    if rest > 0:
        out.append({name: OTHER, "clicks": rest})
    return out


def _unique_visitors(
    rt: Runtime,
    session: Session,
    caller: Caller,
    version: int,
    per_day: dict[date, int],
    source: str | None,
    link_id: str | None,
) -> int:
    """The period's unique visitors: the sum of its days' (a visitor hash is one day's), each day's remembered while
    the account's links version and the day's click total read the same (`slugline.analytics.visitors`); the other days
    are counted in one scan from the earliest of them. A day without clicks has no visitors."""
    view = (caller.account_id, caller.created_at, caller.public_only, link_id, source)
    total, missing = 0, []
    for day, clicks in per_day.items():
        kept = rt.visitor_counts.get((*view, day), version, clicks)
        if kept is None:
            missing.append(day)
        else:
            total += kept
    if missing:
        counted = _count_days(session, caller, min(missing), source, link_id)
        for day in missing:
            visitors = counted.get(day, 0)
            rt.visitor_counts.put((*view, day), version, per_day[day], visitors)
            total += visitors
    return total


def _count_days(
    session: Session, caller: Caller, first: date, source: str | None, link_id: str | None
) -> dict[date, int]:
    """Distinct visitor hashes per day (UTC) of the clicks from `first` on, bots left out."""
    day: ColumnElement[Any]
    if session.get_bind().dialect.name == "postgresql":
        day = cast(func.timezone("UTC", Click.clicked_at), Date)
    else:  # stored as ISO text, UTC
        day = func.substr(Click.clicked_at, 1, 10)
    stmt = (
        select(day, func.count(func.distinct(Click.visitor)))
        .join(Link, Link.id == Click.link_id)
        .where(
            *visible(caller),
            Click.clicked_at >= datetime.combine(first, time.min, tzinfo=UTC),
            Click.device != "bot",
        )
        .group_by(day)
    )
    if source is not None:
        stmt = stmt.where(Click.source == source)
    if link_id is not None:
        stmt = stmt.where(Click.link_id == link_id)
    return {d if isinstance(d, date) else date.fromisoformat(d): int(n) for d, n in session.execute(stmt)}


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
            select(Click.clicked_at, Click.device, Click.browser, Click.os, Click.source, Click.referrer)
            .where(Click.link_id == link.id)
            .order_by(Click.clicked_at.desc(), Click.id.desc())
            .limit(params.per)
            .offset((params.page - 1) * params.per)
        )
        rows = session.execute(stmt).all()
    return {
        "data": [
            {
                "clicked_at": isoformat(at),
                "device": device,
                "browser": browser,
                "os": os,
                "source": source,
                "referrer": referrer,
            }
            for at, device, browser, os, source, referrer in rows
        ],
        "pagination": pagination(params.page, params.per, total),
    }
