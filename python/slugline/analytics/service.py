"""Analytics and the click log of a link — scoped like links: a public key never sees hidden ones.

Figures come from the roll-up cubes the click writer keeps (`slugline.analytics.cubes`, `rust_core/cube/`) and
leave bots out: a period's answer reads at most 365 day cubes and 72 per-link count rows, whatever the traffic.
Unique visitors are the sum over the period's days of each day's distinct visitor hashes (the hash's salt changes
daily, so nobody can be followed from one day to the next), counted exactly up to 1,024 a day and by a HyperLogLog
sketch above that (standard error 1.6%). A link with variants (an A/B split) also gets its figures per variant, from
the same cubes (`slugline.analytics.variants`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

import anyio
import anyio.to_thread
from sqlalchemy import func, literal, select
from sqlalchemy.orm import Session

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
    (`limits.analysing`), on a worker thread. An account's figures and its top links are read at once on two threads
    when the account has a second slot free (`limits.spare_query`): they are independent reads of about the same
    cost, and the core and SQLite let the GIL go while they work."""
    async with limits.analysing(rt, caller.account_id):
        if link_id is None:
            async with limits.spare_query(rt, caller.account_id) as spare:
                if spare:
                    return await _account_at_once(rt, caller, _Question.of(data))
        return await anyio.to_thread.run_sync(analytics_on_thread, rt, caller, data, link_id)


@dataclass(frozen=True)
class _Question:
    params: AnalyticsParams
    first: date
    last: date
    filters: dict[str, str]

    @classmethod
    def of(cls, data: dict[str, Any], link_id: str | None = None) -> _Question:
        params = parse(AnalyticsParams, without_nulls(data))
        first, last = params.period()
        filters = params.filters()
        if link_id is None and "variant" in filters:  # an index means nothing across links: no variants kept there
            raise Invalid("variant filters one link's analytics only (the link's variants are its own)")
        return cls(params, first, last, filters)

    def answer(self, session: Session, view: cubes.View, kept: reading.Kept | None) -> dict[str, Any]:
        hourly = self.params.interval == "hour"
        return reading.read_answer(session, view, self.first, self.last, self.filters, hourly, kept)

    def figures(self, answer: dict[str, Any], top: list[toplinks.TopLink], split: Any = None) -> dict[str, Any]:
        out = shape.figures(answer, self.params.interval, self.filters, self.first, self.last)
        out["top_links"] = [{"id": i, "slug": slug, "title": title, "clicks": int(n)} for i, slug, title, n in top]
        out["variants"] = split
        return out


@contextmanager
def _reading(rt: Runtime) -> Iterator[Session]:
    """A session whose reads all see one moment: on PostgreSQL at REPEATABLE READ (cubes and pending moves read as
    of one moment); SQLite's read transaction does that already."""
    with rt.db.session() as session:
        if session.get_bind().dialect.name == "postgresql":
            session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        yield session


def _account(rt: Runtime, session: Session, caller: Caller) -> tuple[cubes.View, reading.Kept | None]:
    """The account's view as the caller's key sees it, and the worker's cache of closed days while the account's
    epoch stays (read before any cube); with cube moves pending, everything is read."""
    view = cubes.account_view(session, caller)
    return view, reading.Kept(rt.analytics, cache.epoch_of(session, view.account_id)) if not view.moves else None


async def _account_at_once(rt: Runtime, caller: Caller, question: _Question) -> dict[str, Any]:
    """The account's figures and top links, each read on a thread of its own in a transaction of its own: each sees
    the account's cubes and pending moves as of one moment, the two moments as far apart as the two threads' starts
    (a click batch committed between them shows in one and not yet in the other)."""

    def answer() -> dict[str, Any]:
        with _reading(rt) as session:
            return question.answer(session, *_account(rt, session, caller))

    def top() -> list[toplinks.TopLink]:
        with _reading(rt) as session:
            view, kept = _account(rt, session, caller)
            return toplinks.top_links(session, caller, view, question.first, question.last, question.filters, kept)

    parts: dict[str, Any] = {}

    async def run(name: str, part: Callable[[], Any]) -> None:
        parts[name] = await anyio.to_thread.run_sync(part)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, "top", top)
            group.start_soon(run, "answer", answer)
    except ExceptionGroup as failed:  # the first part's error, as the request would have raised it on one thread
        raise failed.exceptions[0] from None
    return question.figures(parts["answer"], parts["top"])


def analytics_on_thread(
    rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None
) -> dict[str, Any]:
    """The account's figures, or with `link_id` one link's (its page in the dashboard): 404 for a hidden link.
    Everything in one transaction."""
    with _reading(rt) as session:
        if link_id is not None:  # an unknown or hidden link is 404 before its query is looked at, as elsewhere
            link = find_link(session, caller, link_id)
            question = _Question.of(data, link_id)
            view = cubes.View(caller.account_id, link.id)
            answer = question.answer(
                session, view, reading.Kept(rt.analytics, cache.epoch_of(session, view.account_id))
            )
            top = [(link.id, link.slug, link.title, answer["total"])] if answer["total"] > 0 else []
            return question.figures(answer, top, variant_figures(link, answer))
        question = _Question.of(data)
        view, kept = _account(rt, session, caller)
        answer = question.answer(session, view, kept)
        ranked = toplinks.top_links(session, caller, view, question.first, question.last, question.filters, kept)
    return question.figures(answer, ranked)


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
