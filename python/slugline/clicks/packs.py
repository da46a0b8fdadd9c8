"""Packs: a month of an account view's closed day cubes as one row (`rust_core/cube/pack.rs`), which analytics reads
instead of the month's day cubes (`slugline.analytics.cubes.period_rows`). A year's question then reads about a
dozen rows and the few days since the last pack was made, instead of 365 day cubes.

A pack is made by the servers' click upkeep (`slugline.clicks.retention.Upkeep`, a pass every few minutes; `slugline
clicks pack` makes them all at once): one for each month of each account view (every link, the public ones) with
clicks, holding its days up to the last closed day (`slugline.analytics.cache.FRESH_DAYS` before today), the month
under way's made again each day. Its bucket is the last day it holds. It also holds each link's clicks over its days,
which top links read for the month under way instead of its day cubes. The click writer deletes a pack when it writes
a day the pack holds (a late click, a link deleted, hidden or shown: `slugline.clicks.cubes.save`), in the same
transaction, so a pack never answers for days that changed after it was made; until it is made again, its days are
read from their day cubes, as before any pack was made. A pack holds exactly the counts of its day cubes, so an
answer is the same either way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from sqlalchemy import Connection, bindparam, text

from slugline import _core
from slugline.clicks.cubes import ALL, DAY, MONTH, PACK, PUBLIC, blob_or_none, lock_accounts
from slugline.common.clock import month_days, month_of_day
from slugline.storage.db import Database

# Days back from today a pack may hold up to: closed days (`slugline.analytics.cache.FRESH_DAYS`), which the click
# writer only changes for a late click or a link leaving or joining a view.
CLOSED_AFTER = 2

_ACCOUNT_BATCH = 100  # accounts whose due packs one query finds
_ACCOUNTS = text(f"SELECT id FROM accounts WHERE id > :after ORDER BY id LIMIT {_ACCOUNT_BATCH}")
_MONTHS = text(
    "SELECT account_id, scope, level, bucket FROM click_cubes WHERE account_id IN :accounts "
    f"AND scope IN ('{ALL}', '{PUBLIC}') AND level IN ({MONTH}, {PACK})"
).bindparams(bindparam("accounts", expanding=True))
_DAYS = text(
    f"SELECT bucket, cube, uniques, links FROM click_cubes WHERE account_id = :a AND scope = :s AND level = {DAY} "
    "AND bucket BETWEEN :first AND :last"
)
_HAS_MONTH = text(f"SELECT 1 FROM click_cubes WHERE account_id = :a AND scope = :s AND level = {MONTH} AND bucket = :m")
_HAS_PACK = text(
    f"SELECT 1 FROM click_cubes WHERE account_id = :a AND scope = :s AND level = {PACK} AND bucket = :through"
)
_UNPACK = text(
    f"DELETE FROM click_cubes WHERE account_id = :a AND scope = :s AND level = {PACK} "
    "AND bucket BETWEEN :first AND :last"
)
_INSERT = text(
    "INSERT INTO click_cubes (account_id, scope, level, bucket, cube, uniques, links, hours, sketches) "
    f"VALUES (:a, :s, {PACK}, :through, :cube, :uniques, :links, NULL, NULL)"
)


def last_closed(now: float | None = None) -> int:
    """The latest epoch day a pack made now may hold."""
    return int((time.time() if now is None else now) // 86_400) - CLOSED_AFTER


def due(conn: Connection, accounts: list[int], closed: int) -> dict[int, list[tuple[str, int, int]]]:
    """The packs of the accounts' views to make, in one query: for each account, (scope, month, last day to hold)
    of each month with clicks whose pack is missing or does not yet hold every closed day of the month."""
    months: set[tuple[int, str, int]] = set()
    made: dict[tuple[int, str, int], int] = {}
    for account, scope, level, bucket in conn.execute(_MONTHS, {"accounts": accounts}):
        if level == MONTH:
            months.add((account, scope, bucket))
        else:
            key = (account, scope, month_of_day(bucket))
            made[key] = max(bucket, made.get(key, bucket))
    out: dict[int, list[tuple[str, int, int]]] = {account: [] for account in accounts}
    for account, scope, month in sorted(months):
        first, last = month_days(month)
        if first > closed:
            continue
        through = min(last, closed)
        if made.get((account, scope, month)) != through:
            out[account].append((scope, month, through))
    return out


def make(conn: Connection, account: int, scope: str, month: int, through: int) -> bool:
    """Makes one pack, in the caller's transaction (which must be the only one changing the account's cubes: on
    PostgreSQL the account's lock is taken here); whether one was made. A pack another worker made meanwhile is
    left as it is; a month whose cubes are gone meanwhile (its links deleted, or the account) gets none."""
    lock_accounts(conn, {account})
    first, last = month_days(month)
    if conn.execute(_HAS_PACK, {"a": account, "s": scope, "through": through}).first() is not None:
        return False  # another worker's pass made it meanwhile
    conn.execute(_UNPACK, {"a": account, "s": scope, "first": first, "last": last})
    if conn.execute(_HAS_MONTH, {"a": account, "s": scope, "m": month}).first() is None:
        return False
    days = [
        (int(b), bytes(c), blob_or_none(u), blob_or_none(ln))
        for b, c, u, ln in conn.execute(_DAYS, {"a": account, "s": scope, "first": first, "last": through})
    ]
    cube, uniques, links = _core.pack_days(days)
    made = {"cube": cube, "uniques": uniques, "links": links}
    conn.execute(_INSERT, {"a": account, "s": scope, "through": through, **made})
    return True


def upkeep(db: Database, now: float | None = None) -> Iterator[int]:
    """One pass: every account's due packs (found a hundred accounts a query), each made in a transaction of its
    own; yields after each step (a pack, or a batch of accounts with none due) the packs it made."""
    closed = last_closed(now)
    after = 0
    while True:
        with db.session() as session:
            accounts = list(session.execute(_ACCOUNTS, {"after": after}).scalars())
            todo = due(session.connection(), accounts, closed) if accounts else {}
        if not accounts:
            return
        steps = 0
        for account, packs in todo.items():
            for scope, month, through in packs:
                with db.writing() as session:
                    made = make(session.connection(), account, scope, month, through)
                steps += 1
                yield int(made)
        if not steps:
            yield 0
        after = accounts[-1]
