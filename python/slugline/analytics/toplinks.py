"""The account's most clicked links over a period that the caller sees, from the per-link count rows the click writer
keeps, or under a filter from each candidate link's own cubes; closed days' counts from this worker's cache.
"""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from slugline import _core
from slugline.analytics import cubes
from slugline.analytics.reading import Kept
from slugline.common.caller import Caller
from slugline.common.models import Link
from slugline.links.service import visible

TOP_LINKS = 10
# Under a filter, top links are ranked among the period's most clicked links: per-link counts are kept per link,
# not per link and filter value (that would be a cube per link in every account cube).
TOP_CANDIDATES = 25
TopLink = tuple[str, str, str | None, int]  # id, slug, title, clicks


def _link_counts(
    session: Session, view: cubes.View, first: date, last: date, want: int, kept: Kept | None
) -> list[tuple[str, int]]:
    """The view's `want` most clicked links over the period (and more with pending moves), most clicked first.
    With the cache: every link's clicks over the closed days, kept in the core (`_core.LinkCounts`), and the recent
    days' added to them."""
    closed = kept.closed(first, last) if kept else None
    if kept is None or closed is None:
        return _core.top_links(cubes.link_count_rows(session, view, first, last), want + len(view.moves))
    key = ("links", view.account_id, view.scope, *closed)
    counts: _core.LinkCounts = kept.get_or_make(
        key, lambda: _core.link_counts(cubes.link_count_rows(session, view, *closed))
    )
    if closed[1] == last:
        return counts.top(want)
    return counts.top_with(cubes.link_count_rows(session, view, closed[1] + timedelta(days=1), last), want)


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
        # One call for every link, each link's rows a group: the core reads only their strings and combinations.
        rows = cubes.fitting_rows(session, view.account_id, some, start, end, filters)
        per_link = _core.fitting_totals(rows, filters)
        return {link: per_link.get(at, 0) for at, link in enumerate(some)}

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


def top_links(
    session: Session,
    caller: Caller,
    view: cubes.View,
    first: date,
    last: date,
    filters: dict[str, str],
    kept: Kept | None = None,
) -> list[TopLink]:
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
    found = titles(session, caller, [c[0] for c in counted])
    return [(link, *found[link], n) for link, n in counted if link in found][:TOP_LINKS]


def titles(session: Session, caller: Caller, links: list[str]) -> dict[str, tuple[str, str | None]]:
    """The slug and title of each of `links` the caller sees (a link deleted or hidden since is left out)."""
    found = session.execute(
        select(Link.id, Link.slug, Link.title).where(Link.id.in_(links), *visible(caller, by_ids=True))
    )
    return {link_id: (slug, title) for link_id, slug, title in found}
