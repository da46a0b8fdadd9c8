"""Analytics and the click log of a link — scoped like links: a public key never sees hidden ones.

Figures come from the roll-up cubes the click writer keeps (`slugline.analytics.cubes`, `rust_core/cube/`) and
leave bots out: a period's answer reads at most 365 day cubes and 72 per-link count rows, whatever the traffic.
Unique visitors are the sum over the period's days of each day's distinct visitor hashes (the hash's salt changes
daily, so nobody can be followed from one day to the next), counted exactly up to 1,024 a day and by a HyperLogLog
sketch above that (standard error 1.6%). A link with variants (an A/B split) also gets its figures per variant, from
the same cubes (`slugline.analytics.variants`).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from sqlalchemy import func, literal, select

from slugline.analytics import cache, cubes, reading, shape, toplinks
from slugline.analytics.variants import variant_figures
from slugline.common.caller import Caller
from slugline.common.clock import isoformat
from slugline.common.errors import Invalid
from slugline.common.inputs import AnalyticsParams, PageParams
from slugline.common.models import Click
from slugline.common.paging import pagination
from slugline.common.validation import parse, without_nulls
from slugline.limits import rules as limits
from slugline.links.service import find_link
from slugline.runtime import Runtime

# A click of a link's list: when, who (classified), where from (the place resolved by the click writer) and to which
# of the link's variants it was sent.
# The click list reaches back this many clicks, the newest (its `total` counts at most these): counting a link's
# whole log, or skipping through it to a deep page, would grow with its traffic. The export streams them all.
LISTED_CLICKS = 10_000
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
        kept = reading.Kept(rt.analytics, cache.epoch_of(session, view.account_id)) if not view.moves else None
        answer = reading.read_answer(session, view, first, last, filters, params.interval == "hour", kept)
        split = None
        if link_id is not None:
            top = [(link.id, link.slug, link.title, answer["total"])] if answer["total"] > 0 else []
            split = variant_figures(link, answer)
        else:
            top = toplinks.top_links(session, caller, view, first, last, filters, kept)
    out = shape.figures(answer, params.interval, filters, first, last)
    out["top_links"] = [{"id": i, "slug": slug, "title": title, "clicks": int(n)} for i, slug, title, n in top]
    out["variants"] = split
    return out


async def list_clicks(rt: Runtime, caller: Caller, link_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """One link's clicks, newest first, paginated like `GET /links` (bots included, flagged as device `bot`), back to
    the `LISTED_CLICKS` newest; in one of the account's query slots, as it reads the click log."""
    async with limits.analysing(rt, caller.account_id):
        return await anyio.to_thread.run_sync(clicks_on_thread, rt, caller, link_id, data)


def clicks_on_thread(rt: Runtime, caller: Caller, link_id: str, data: dict[str, Any]) -> dict[str, Any]:
    with rt.db.session() as session:
        link = find_link(session, caller, link_id)
        params = parse(PageParams, without_nulls(data))
        newest = select(literal(1)).where(Click.link_id == link.id).limit(LISTED_CLICKS).subquery()
        total = session.scalar(select(func.count()).select_from(newest)) or 0
        skip = (params.page - 1) * params.per
        stmt = (
            select(*CLICK_COLUMNS)
            .where(Click.link_id == link.id)
            .order_by(Click.clicked_at.desc(), Click.id.desc())
            .limit(min(params.per, total - skip))
            .offset(skip)
        )
        rows = session.execute(stmt).all() if skip < total else []
    names = [column.key for column in CLICK_COLUMNS]
    return {
        "data": [{**dict(zip(names, row, strict=True)), "clicked_at": isoformat(row[0])} for row in rows],
        "pagination": pagination(params.page, params.per, total),
    }
