"""Keeping the roll-up cubes (`click_cubes`) in step with the click log, inside the click writer's transaction.

A batch's clicks are merged into the cubes they touch: each link's day and month, and its account's views (every
link, and the public ones). Rust builds the batch's cubes, merges them into the stored rows read here, and hands back
the rows to write, so no Python work is done per click.

A link leaving or joining a view (deleted; hidden from or shown to public-only keys) is recorded by triggers in
`cube_moves`, in the transaction that changed it (migration 0009). The writer takes such a link's cubes out of (or
adds them to) the account's views before it adds any of the link's new clicks, holding the link's row lock, so
a click is never moved twice nor missed; analytics allows for the moves not yet made (`pending`). On PostgreSQL
every transaction that changes an account's views takes the account's advisory lock after its links' row locks and
the move rows' locks, each in a fixed order, so two workers never deadlock and never merge into the same row at once.
"""

from __future__ import annotations

import time

import orjson
from sqlalchemy import Connection

from slugline import _core
from slugline.common.clock import month_days, month_of_day

DAY, MONTH = 0, 1
PACK = 2  # a month of an account view's closed days in one row (`slugline.clicks.packs`); bucket: its last day
# A link's month projected onto device and browser and os (BY_AGENT), source and referrer host (BY_ORIGIN), or country
# and city (BY_PLACE): written with the month, read by filtered top links instead of it (`rust_core/cube/mod.rs`).
BY_AGENT, BY_ORIGIN, BY_PLACE = 3, 4, 5
# Rows as the core takes and gives them: (account id, scope, level, bucket, cube, uniques, hours, links, sketches);
# a new row's cube is None when it is to be deleted.
CubeKey = tuple[int, str, int, int]
StoredCube = tuple[int, str, int, int, bytes, bytes | None, bytes | None, bytes | None, bytes | None]
NewCube = tuple[int, str, int, int, bytes | None, bytes | None, bytes | None, bytes | None, bytes | None]
ALL, PUBLIC = "", "p"
MOVES_PER_WRITE = 50  # moves a write makes besides those of its own links
# Days back from today whose visitors are recounted from the view's links' sketches after a move (the others only
# lose the moved link's own visitors, which undercounts anyone who also clicked another of the view's links).
RECOUNTED_DAYS = 2
_LOCK_KEY = 0x5C0BE  # first half of the accounts' advisory lock keys
_COLUMNS = "account_id, scope, level, bucket, cube, uniques, links, hours, sketches"

_READ = {
    "sqlite": f"SELECT {_COLUMNS} FROM json_each(?) AS k CROSS JOIN click_cubes AS c "
    "ON c.account_id = k.value ->> 0 AND c.scope = k.value ->> 1 AND c.level = k.value ->> 2 "
    "AND c.bucket = k.value ->> 3",
    "postgresql": f"SELECT {_COLUMNS} FROM click_cubes WHERE (account_id, scope, level, bucket) IN "
    "(SELECT (e ->> 0)::bigint, e ->> 1, (e ->> 2)::int, (e ->> 3)::int FROM json_array_elements(%s::json) AS e)",
}
_UPSERT = {
    dialect: f"INSERT INTO click_cubes ({_COLUMNS}) VALUES ({', '.join([mark] * 9)}) "
    "ON CONFLICT (account_id, scope, level, bucket) DO UPDATE SET cube = excluded.cube, uniques = excluded.uniques, "
    "links = excluded.links, hours = excluded.hours, sketches = excluded.sketches"
    for dialect, mark in (("sqlite", "?"), ("postgresql", "%s"))
}
# Raises an account's epoch (`slugline.common.models.CubeEpoch`); nothing for an account that is gone.
_BUMP = {
    dialect: f"INSERT INTO cube_epochs (account_id, epoch) SELECT id, 1 FROM accounts WHERE id = {mark} "
    "ON CONFLICT (account_id) DO UPDATE SET epoch = cube_epochs.epoch + 1"
    for dialect, mark in (("sqlite", "?"), ("postgresql", "%s"))
}
# Deletes the packs of a view that hold a day: (account, scope, the day, the last day of its month).
_UNPACK = {
    dialect: f"DELETE FROM click_cubes WHERE account_id = {m} AND scope = {m} AND level = {PACK} "
    f"AND bucket BETWEEN {m} AND {m}"
    for dialect, m in (("sqlite", "?"), ("postgresql", "%s"))
}
_DELETE = {
    dialect: f"DELETE FROM click_cubes WHERE account_id = {m} AND scope = {m} AND level = {m} AND bucket = {m}"
    for dialect, m in (("sqlite", "?"), ("postgresql", "%s"))
}


def _reorder(row: NewCube) -> tuple[object, ...]:
    """Core rows are (…, cube, uniques, hours, links, sketches); the table's columns put links before hours."""
    return (*row[:6], row[7], row[6], row[8])


def read(conn: Connection, keys: list[CubeKey]) -> list[StoredCube]:
    """The stored rows of `keys` (those that exist), as the core takes them."""
    if not keys:
        return []
    rows = conn.exec_driver_sql(_READ[conn.dialect.name], (orjson.dumps(keys).decode(),)).all()
    return [
        (a, s, lv, b, bytes(c), blob_or_none(u), blob_or_none(h), blob_or_none(ln), blob_or_none(sk))
        for a, s, lv, b, c, u, ln, h, sk in rows
    ]


def blob_or_none(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[call-overload]


def write(conn: Connection, rows: list[NewCube]) -> None:
    """Writes (or, with no cube, deletes) rows, and nothing else: what migrations use (0009 builds the cubes before
    `cube_epochs` exists). The click writer saves (`save`)."""
    dialect = conn.dialect.name
    kept = [_reorder(r) for r in rows if r[4] is not None]
    gone = [r[:4] for r in rows if r[4] is None]
    if kept:
        conn.exec_driver_sql(_UPSERT[dialect], kept)
    if gone:
        conn.exec_driver_sql(_DELETE[dialect], gone)


def save(conn: Connection, rows: list[NewCube]) -> None:
    """Writes rows (`write`); an account whose closed rows change gets a new epoch (`closed`), and an account view's
    pack that holds a day written is deleted (`slugline.clicks.packs` makes it again)."""
    write(conn, rows)
    dialect = conn.dialect.name
    today = int(time.time() // 86_400)
    # A pack holds days before the day it was made on; its bucket is the last of them, in the same month.
    packed = [
        (r[0], r[1], r[3], month_days(month_of_day(r[3]))[1])
        for r in rows
        if r[2] == DAY and r[1] in (ALL, PUBLIC) and r[3] < today
    ]
    if packed:
        conn.exec_driver_sql(_UNPACK[dialect], packed)
    stale = sorted({r[0] for r in rows if closed(r[2], r[3], today)})
    if stale:
        conn.exec_driver_sql(_BUMP[dialect], [(account,) for account in stale])


def closed(level: int, bucket: int, today: int) -> bool:
    """Whether a change to the row (level, bucket) raises its account's epoch: a day before `today` (a UTC epoch
    day), or a month before today's. Answers may keep only days before yesterday (`slugline.analytics.cache`), so
    a write that began yesterday and commits today still raises the epoch for every day they keep."""
    if level == DAY:
        return bucket < today
    return bucket < month_of_day(today)


def lock_accounts(conn: Connection, accounts: set[int]) -> None:
    """PostgreSQL: this transaction alone changes these accounts' views until it ends (taken in id order)."""
    if conn.dialect.name == "postgresql":
        for account in sorted(accounts):
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_KEY, account))


def add_batch(conn: Connection, encoded: _core.EncodedClicks, owners: dict[str, tuple[int, bool]]) -> None:
    """Merges a batch's clicks into the cubes; `owners` are the batch's links still there (see `moves_due`)."""
    cubes = _core.BatchCubes(encoded, owners)
    save(conn, cubes.merged(read(conn, cubes.keys()), projected=True))


Move = tuple[int, int, str, str, bool]  # id, account id, link id, kind, public


def pending_links(conn: Connection) -> list[str]:
    """Links of the oldest moves not yet made: the writer locks them with its batch's links."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    stmt = f"SELECT link_id FROM cube_moves ORDER BY id LIMIT {mark}"
    return list(conn.exec_driver_sql(stmt, (MOVES_PER_WRITE,)).scalars())


def claim_moves(conn: Connection, links: list[str]) -> list[Move]:
    """The moves of `links` (whose rows this transaction has locked, or which are gone), oldest first, locked."""
    if not links:
        return []
    if conn.dialect.name == "sqlite":
        stmt = (
            "SELECT id, account_id, link_id, kind, public FROM cube_moves "
            "WHERE link_id IN (SELECT value FROM json_each(?)) ORDER BY id"
        )
    else:
        stmt = (
            "SELECT id, account_id, link_id, kind, public FROM cube_moves WHERE link_id IN "
            "(SELECT json_array_elements_text(%s::json)) ORDER BY id FOR UPDATE"
        )
    rows = conn.exec_driver_sql(stmt, (orjson.dumps(links).decode(),)).all()
    return [(int(i), int(a), str(link), str(kind), bool(public)) for i, a, link, kind, public in rows]


def make_moves(conn: Connection, moves: list[Move]) -> None:
    """Moves each link's cubes in or out of its account's views, oldest move first, and forgets the moves."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    for move_id, account, link_id, kind, public in moves:
        scopes, weight = view_change(kind, public, public_only=False)
        link_rows = [
            (int(lv), int(b), bytes(c), blob_or_none(u), blob_or_none(h))
            for lv, b, c, u, h in conn.exec_driver_sql(
                f"SELECT level, bucket, cube, uniques, hours FROM click_cubes WHERE account_id = {mark} "
                f"AND scope = {mark} AND level IN ({DAY}, {MONTH})",  # not its projections: views keep none
                (account, link_id),
            )
        ]
        keys = [(account, scope, lv, b) for lv, b, *_ in link_rows for scope in scopes]
        save(conn, _core.move_link(link_id, account, scopes, link_rows, read(conn, keys), weight))
        _recount(conn, account, scopes, [b for lv, b, *_ in link_rows if lv == DAY and recent(b)])
        if kind == "delete":
            conn.exec_driver_sql(
                f"DELETE FROM click_cubes WHERE account_id = {mark} AND scope = {mark}", (account, link_id)
            )
        conn.exec_driver_sql(f"DELETE FROM cube_moves WHERE id = {mark}", (move_id,))


def _recount(conn: Connection, account: int, scopes: list[str], days: list[int]) -> None:
    for scope in scopes:
        for day in days:
            stored = read(conn, [(account, scope, DAY, day)])
            if stored:
                save(conn, [_core.recount(stored[0], view_parts(conn, account, scope, day))])


Part = tuple[bytes, bytes | None, bytes | None, bytes | None]


def view_parts(conn: Connection, account: int, scope: str, day: int) -> list[Part]:
    """The day cubes of the links in an account's view now (a link deleted is gone from `links`; one hidden is no
    longer public): one primary-key lookup per link of the account."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    join = "CROSS JOIN" if conn.dialect.name == "sqlite" else "JOIN"  # SQLite: from the links, not the cubes
    public = " AND l.visibility IN ('public', 'unlisted')" if scope == PUBLIC else ""
    rows = conn.exec_driver_sql(
        f"SELECT c.cube, c.uniques, c.hours, c.sketches FROM links AS l {join} click_cubes AS c "
        f"ON c.account_id = l.account_id AND c.scope = l.id AND c.level = {DAY} AND c.bucket = {mark} "
        f"WHERE l.account_id = {mark}{public}",
        (day, account),
    ).all()
    return [(bytes(c), blob_or_none(u), blob_or_none(h), blob_or_none(s)) for c, u, h, s in rows]


def recent(day: int) -> bool:
    """Whether a day's view cubes are made again from their links' after a move (`RECOUNTED_DAYS`)."""
    return day > int(time.time() // 86_400) - RECOUNTED_DAYS


def make_pending_moves(conn: Connection) -> int:
    """Makes the oldest pending moves outside a click batch (a worker without clicks to write); the number made."""
    if conn.dialect.name == "sqlite":  # a write first: the transaction takes the write lock before it reads
        conn.exec_driver_sql("UPDATE cube_moves SET kind = kind WHERE id = (SELECT min(id) FROM cube_moves)")
    pending = pending_links(conn)
    if not pending:
        return 0
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "SELECT id FROM links WHERE id IN (SELECT json_array_elements_text(%s::json)) ORDER BY id FOR UPDATE",
            (orjson.dumps(sorted(set(pending))).decode(),),
        )
    moves = claim_moves(conn, sorted(set(pending)))
    lock_accounts(conn, {m[1] for m in moves})
    make_moves(conn, moves)
    return len(moves)


def view_change(kind: str, public: bool, public_only: bool) -> tuple[list[str], int]:
    """The views a move changes and how (1: the link's cubes join, -1: they leave); with `public_only`, only as a
    public-only key's view sees it."""
    if kind == "delete":
        scopes = [ALL, PUBLIC] if public else [ALL]
        weight = -1
    else:
        scopes, weight = [PUBLIC], (1 if kind == "show" else -1)
    if public_only:
        scopes = [s for s in scopes if s == PUBLIC]
    return scopes, weight
