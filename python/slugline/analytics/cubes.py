"""Reading the roll-up cubes of a view over a period, with the cube moves the click writer has not made yet.

A view is one link's cubes, or an account's (`""`: every link; `"p"`: the public and unlisted ones, what a
public-only key sees). A period's series, breakdowns and visitors come from its day cubes: at most 365 rows, each a
few KiB, however many clicks the days had; for an account's view, a month's closed days come from its pack, one row
(`slugline.clicks.packs`), so a year reads about a dozen packs and the days since the last was made. Per-link counts
(top links) come from month cubes for the whole months of the period and day cubes for the days around them: at most
12 + 60 rows.

A link deleted, hidden or shown since the writer's last batch still has its cubes where they were
(`slugline.clicks.cubes`): its pending move is applied here, as a weight on the link's own cubes, so an answer never
counts a deleted link's clicks nor a hidden link's for a public-only key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy.orm import Session

from slugline import _core
from slugline.clicks.cubes import ALL, DAY, MONTH, PACK, PUBLIC, read, recent, view_change, view_parts
from slugline.common.caller import Caller
from slugline.common.clock import day_date, day_number, month_days, month_number, month_start

DayRow = tuple[int, int, bytes, bytes | None, bytes | None]  # weight, epoch day, cube, uniques, hours
PackRow = tuple[int, int, int, bytes, bytes | None]  # weight, first and last epoch day read, cube, uniques


@dataclass(frozen=True)
class View:
    account_id: int
    scope: str
    # (link id, weight) of pending moves: the link's own cubes are added with this weight.
    moves: tuple[tuple[str, int], ...] = ()


def account_view(session: Session, caller: Caller) -> View:
    """The caller's account as its key sees it, with the moves not yet made."""
    scope = PUBLIC if caller.public_only else ALL
    moves = query(
        session, "SELECT link_id, kind, public FROM cube_moves WHERE account_id = ? ORDER BY id", [caller.account_id]
    )
    weighted = []
    for link_id, kind, public in moves:
        scopes, weight = view_change(kind, public, public_only=caller.public_only)
        if scope in scopes:
            weighted.append((link_id, weight))
    return View(caller.account_id, scope, tuple(weighted))


def period_rows(
    session: Session, view: View, first: date, last: date, *, hours: bool, uniques: bool
) -> tuple[list[DayRow], list[PackRow]]:
    """The rows that add up to the view over the period: the packs of its months (`slugline.clicks.packs`: a month's
    closed days in one row, read for the days of the period they hold) and the day cubes of the days no pack holds
    (`day_rows`). Packs keep no hours: a question per hour reads day cubes only."""
    if hours or view.scope not in (ALL, PUBLIC):  # only an account's views are packed
        return day_rows(session, view, first, last, hours=hours, uniques=uniques), []
    sql = (
        f"SELECT bucket, cube, {'uniques' if uniques else 'NULL'} FROM click_cubes WHERE account_id = ? "
        f"AND scope = ? AND level = {PACK} AND bucket BETWEEN ? AND ?"
    )
    # A pack's bucket is the last day it holds, in the month it packs: those of the months the period touches.
    end = month_days(month_number(last))[1]
    latest: dict[int, tuple[int, bytes, bytes | None]] = {}
    for through, cube, more in query(session, sql, [view.account_id, view.scope, day_number(first), end]):
        month = month_number(day_date(through))
        if month not in latest or latest[month][0] < through:
            latest[month] = (through, cube, more)
    packs: list[PackRow] = []
    held: list[tuple[int, int]] = []
    for month, (through, cube, more) in latest.items():
        start = day_number(month_start(month))
        held.append((start, through))
        a, b = max(start, day_number(first)), min(through, day_number(last))
        if a <= b:
            packs.append((1, a, b, cube, more))
    return day_rows(session, view, first, last, hours=False, uniques=uniques, held=held), packs


def day_rows(
    session: Session,
    view: View,
    first: date,
    last: date,
    *,
    hours: bool,
    uniques: bool,
    held: Sequence[tuple[int, int]] = (),
) -> list[DayRow]:
    """The view's day cubes from `first` to `last` but those of the days in `held` (epoch day ranges its packs
    hold), and its pending moves' links' (weighted); a recent day touched by a pending move is made again from the
    links in the view now, as the writer will (`clicks.cubes.recent`). The `uniques` column (visitors by source and
    referrer) and the hours are read only when asked for."""
    scopes = {view.scope: 1, **{link: weight for link, weight in view.moves}}
    ranges = " OR ".join(f"bucket BETWEEN {int(a)} AND {int(b)}" for a, b in held)
    sql = (
        f"SELECT scope, bucket, cube, {'uniques' if uniques else 'NULL'}, {'hours' if hours else 'NULL'} "
        f"FROM click_cubes WHERE account_id = ? AND scope IN ({_marks(scopes)}) AND level = {DAY} "
        "AND bucket BETWEEN ? AND ?" + (f" AND NOT (scope = ? AND ({ranges}))" if held else "")
    )
    params = [view.account_id, *scopes, day_number(first), day_number(last), *([view.scope] if held else [])]
    found = query(session, sql, params)
    rows = [(scopes[row[0]], row[1], row[2], row[3], row[4]) for row in found]
    moved = {row[1] for row in found if row[0] != view.scope and recent(row[1])}
    if not moved:
        return rows
    rows = [row for row in rows if row[1] not in moved]
    conn = session.connection()
    for day in sorted(moved):
        stored = read(conn, [(view.account_id, view.scope, DAY, day)])
        if stored:
            made = _core.recount(stored[0], view_parts(conn, view.account_id, view.scope, day))
            if made[4] is not None:
                rows.append((1, day, made[4], made[5] if uniques else None, made[6] if hours else None))
    return rows


def _marks(values: Any) -> str:
    return ", ".join("?" * len(values))


def query(session: Session, sql: str, params: list[Any]) -> list[Any]:
    """The rows of `sql` (`?` marks), in the session's transaction, as text built here: a statement built with
    SQLAlchemy for each question cost more to make (its cache key walked) than to run. On PostgreSQL through a
    cursor that takes `bytea` in the binary format, not as hex text (a year of a busy account's day cubes, ~5 MB:
    35 -> 12 ms)."""
    conn = session.connection()
    if conn.dialect.name != "postgresql":
        return list(conn.exec_driver_sql(sql, tuple(params)))
    driver: Any = conn.connection.driver_connection
    with driver.cursor(binary=True) as cursor:
        return list(cursor.execute(sql.replace("?", "%s"), params).fetchall())


def _covering(first: date, last: date) -> tuple[dict[int, int], dict[int, int]]:
    """The month and day cubes (with their weights) that add up to the period: whole months, and for a month the
    period only partly covers, its days inside the period, or the month less its days outside it, whichever reads
    fewer rows (so at most 15 day cubes each side). A month less its days after `last`, read in one statement, is
    what its days up to `last` were then, however the month's later days change it afterwards (what
    `analytics.cache` relies on: it keeps the sum of closed days of a month still under way)."""
    months: dict[int, int] = {}
    days: dict[int, int] = {}
    for m in range(month_number(first), month_number(last) + 1):
        start, end = month_start(m), month_start(m + 1) - timedelta(days=1)
        inside = [start + timedelta(days=i) for i in range((end - start).days + 1)]
        outside = [d for d in inside if not first <= d <= last]
        inside = [d for d in inside if first <= d <= last]
        if len(outside) + 1 < len(inside):
            months[m] = 1
            days.update((day_number(d), -1) for d in outside)
        else:
            days.update((day_number(d), 1) for d in inside)
    return months, days


def _in_cover(months: dict[int, int], days: dict[int, int], packs: dict[int, int] | None = None) -> str:
    """The condition on (level, bucket) of a cover's rows (its buckets are ints, written into the text)."""
    parts = [
        f"(level = {level} AND bucket IN ({', '.join(str(int(b)) for b in buckets)}))"
        for level, buckets in ((MONTH, months), (DAY, days), (PACK, packs or {}))
        if buckets
    ]
    return " OR ".join(parts) or "1 = 0"


def _weight(level: int, bucket: int, months: dict[int, int], days: dict[int, int]) -> int:
    return months[bucket] if level == MONTH else days[bucket] if level == DAY else 1


def link_count_rows(session: Session, view: View, first: date, last: date) -> list[tuple[int, bytes]]:
    """Per-link click counts of the view over the period: (weight, links column) rows. A month the period covers
    from its first day to before its last (the month under way) is its pack's counts and the days after the pack's
    last, when the month has a pack that ends within the period: one row and a day or two instead of up to 15."""
    months, days = _covering(first, last)
    packs: dict[int, int] = {}
    start, end = month_start(month_number(last)), month_start(month_number(last) + 1) - timedelta(days=1)
    if view.scope in (ALL, PUBLIC) and first <= start and last < end:
        sql = (
            f"SELECT max(bucket) FROM click_cubes WHERE account_id = ? AND scope = ? AND level = {PACK} "
            "AND bucket BETWEEN ? AND ?"
        )
        [(through,)] = query(session, sql, [view.account_id, view.scope, day_number(start), day_number(last)])
        if through is not None:
            months.pop(month_number(last), None)
            for n in range((end - start).days + 1):
                days.pop(day_number(start + timedelta(days=n)), None)
            days.update((d, 1) for d in range(int(through) + 1, day_number(last) + 1))
            packs[int(through)] = 1
    sql = (
        "SELECT level, bucket, links FROM click_cubes WHERE account_id = ? AND scope = ? AND links IS NOT NULL "
        f"AND ({_in_cover(months, days, packs)})"
    )
    found = query(session, sql, [view.account_id, view.scope])
    return [(_weight(lv, b, months, days), links) for lv, b, links in found if links is not None]


def link_rows(session: Session, account_id: int, links: list[str], first: date, last: date) -> dict[str, list[Any]]:
    """Each link's own cubes adding up to the period (`_covering`), as day rows for `_core.analyse` (whose per-day
    series then means nothing: only totals are read from them)."""
    months, days = _covering(first, last)
    out: dict[str, list[Any]] = {link: [] for link in links}
    if not links:
        return out
    sql = (
        f"SELECT scope, level, bucket, cube FROM click_cubes WHERE account_id = ? AND scope IN ({_marks(links)}) "
        f"AND ({_in_cover(months, days)})"
    )
    for scope, level, bucket, cube in query(session, sql, [account_id, *links]):
        out[scope].append((_weight(level, bucket, months, days), 0, cube, None, None))
    return out


def fitting_rows(
    session: Session, account_id: int, links: list[str], first: date, last: date, filters: dict[str, str]
) -> list[tuple[int, int, bytes]]:
    """Rows for `_core.fitting_totals` adding up to each link's clicks over the period: (the link's position in
    `links`, weight, cube column). A month is read as its projection that keeps every dimension `filters` name,
    where one is stored (a fraction of the month's bytes: a busy link's month holds thousands of combinations of
    places and origins), else as itself; days as they are (`_covering`)."""
    if not links:
        return []
    months, days = _covering(first, last)
    level = _core.projection_for(filters)
    position = {link: at for at, link in enumerate(links)}
    if level is None or not months:
        own = link_rows(session, account_id, links, first, last)
        return [(position[link], weight, cube) for link, rows in own.items() for weight, _, cube, _, _ in rows]
    in_months = ", ".join(str(int(m)) for m in months)
    unprojected = (
        f"level = {MONTH} AND bucket IN ({in_months}) AND NOT EXISTS (SELECT 1 FROM click_cubes AS p WHERE "
        f"p.account_id = c.account_id AND p.scope = c.scope AND p.level = {level} AND p.bucket = c.bucket)"
    )
    sql = (
        f"SELECT scope, level, bucket, cube FROM click_cubes AS c WHERE account_id = ? AND scope IN ({_marks(links)}) "
        f"AND ((level = {level} AND bucket IN ({in_months})) OR ({_in_cover({}, days)}) OR ({unprojected}))"
    )
    found = query(session, sql, [account_id, *links])
    return [(position[link], days[b] if lv == DAY else months[b], cube) for link, lv, b, cube in found]
