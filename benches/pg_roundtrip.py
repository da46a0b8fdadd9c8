"""One PostgreSQL round trip on the event loop's connections (`pgwire.PgConnection`), and what each of its settings
costs: CPU per statement in this process and in the server's backend (read from /proc), variants alternated.

    python benches/pg_roundtrip.py [--database-url postgresql://postgres@127.0.0.1:5432/test] [--reads 3000]
                                   [--in-flight 8]

Rows, each against the same statement with one thing changed:
- `tls`: the loopback connection with TLS (`sslmode=require`) against without (what `db.plaintext_on_loopback` picks);
- `limit`: the statement under `asyncio.timeout` against under `deadline.within` against no limit;
- `timestamps`: a link's row with its two timestamps loaded as `datetime` and shown with `clock.isoformat`, against
  loaded as text and shown with `loopread.iso`;
- `plans`: a page of 20 links with its links version (`links.with_version`, a LATERAL join) under the server's own
  plan choice against generic plans (`plan_cache_mode`), in an account of 10,000 links.
- `in flight`: `--in-flight` (default 8) callers each reading a link, one read after another, each on a plain
  connection of its own (`PgConnection`, as the loop's reads went before) against all through one pipelined connection
  (`pgwire.PgPipeline`, as they go now); the server figure is every backend's together.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvloop
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.dialects import postgresql

from httpbench import own_schema
from slugline.common.clock import isoformat
from slugline.common.deadline import within
from slugline.links import service as links
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from slugline.storage.loopread import iso, named
from slugline.storage.pgwire import PgConnection, PgPipeline

TICKS = os.sysconf("SC_CLK_TCK")
LINKS = 10_000
DIALECT = postgresql.psycopg.dialect()  # type: ignore[no-untyped-call]
Read = Callable[[PgConnection], Awaitable[Any]]


def backend_cpu(pid: int) -> float:
    """Seconds of CPU the backend `pid` has used (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def seed(url: str) -> None:
    engine = create_engine(normalize_url(url))
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO accounts (id, username, password_hash, plan, created_at, links_version) "
                "VALUES (1, 'bench', 'x', 'pro', now(), 1)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO links (id, account_id, slug, destination_url, title, hashtags, visibility, clicks, "
                "created_at, updated_at) SELECT lpad(i::text, 12, '0'), 1, 's' || i, 'https://example.org/' || i, "
                "'rust guide ' || i, '[\"rust\"]'::json, 'public', 0, now() - i * interval '1 second', now() "
                f"FROM generate_series(1, {LINKS}) i"
            )
        )
        conn.execute(text("ANALYZE"))
    engine.dispose()


def with_setting(url: str, **query: str) -> str:
    return make_url(url).update_query_dict(query).render_as_string(hide_password=False)


async def measure(url: str, read: Read, reads: int, setup: str | None = None) -> tuple[float, float]:
    """Worker and backend CPU per statement, in µs: the least of 3 rounds of `reads`, after a warm-up."""
    wire = await PgConnection.open(url, connect_timeout=3, statement_timeout=3)
    try:
        if setup:
            await wire.rows(setup, {})
        ((pid,),) = await wire.rows("SELECT pg_backend_pid()", {})
        for _ in range(20):
            await read(wire)
        best = (float("inf"), float("inf"))
        for _ in range(3):
            mine, theirs = time.process_time(), backend_cpu(pid)
            for _ in range(reads):
                await read(wire)
            took = ((time.process_time() - mine) * 1e6 / reads, (backend_cpu(pid) - theirs) * 1e6 / reads)
            best = min(best, took)
        return best
    finally:
        wire.close()


async def in_flight(url: str, callers: int, reads: int, piped: bool) -> tuple[float, float]:
    """Worker and server CPU per statement, in µs, with `callers` reading at once: the least of 3 rounds."""
    key = {"link_id": "1".rjust(12, "0"), "account_id": 1}
    get = named(DIALECT, links._GET, frozenset(key))
    conns: list[PgConnection] | list[PgPipeline] = (
        [await PgPipeline.open(url, connect_timeout=3, statement_timeout=3)]
        if piped
        else [await PgConnection.open(url, connect_timeout=3, statement_timeout=3) for _ in range(callers)]
    )
    try:
        pids = [(await conn.rows("SELECT pg_backend_pid()", {}))[0][0] for conn in conns]

        async def caller(index: int, count: int) -> None:
            conn = conns[index % len(conns)]
            for _ in range(count):
                await conn.rows(get.sql, get.named(key), text_times=True)

        await asyncio.gather(*(caller(i, 20) for i in range(callers)))
        best = (float("inf"), float("inf"))
        for _ in range(3):
            mine, theirs = time.process_time(), sum(backend_cpu(pid) for pid in pids)
            await asyncio.gather(*(caller(i, reads // callers) for i in range(callers)))
            done = reads // callers * callers
            took = (
                (time.process_time() - mine) * 1e6 / done,
                (sum(backend_cpu(pid) for pid in pids) - theirs) * 1e6 / done,
            )
            best = min(best, took)
        return best
    finally:
        for conn in conns:
            conn.close()


async def run(url: str, reads: int, callers: int) -> None:
    key = {"link_id": "1".rjust(12, "0"), "account_id": 1}
    get = named(DIALECT, links._GET, frozenset(key))
    page_binds = {"account_id": 1, "limit": 20, "offset": 0}
    page = named(
        DIALECT,
        links.with_version(
            links.page_statement("postgresql", "created_at", "desc", False, False), ("created_at", "desc")
        ),
        frozenset(page_binds),
    )

    async def plain(wire: PgConnection) -> Any:
        return await wire.rows(get.sql, get.named(key))

    async def under_timeout(wire: PgConnection) -> Any:
        async with asyncio.timeout(3):
            return await plain(wire)

    async def under_within(wire: PgConnection) -> Any:
        with within(3):
            return await plain(wire)

    async def shown_from_datetimes(wire: PgConnection) -> Any:
        row = (await wire.rows(get.sql, get.named(key)))[0]
        return isoformat(row[-2]), isoformat(row[-1])

    async def shown_from_text(wire: PgConnection) -> Any:
        row = (await wire.rows(get.sql, get.named(key), text_times=True))[0]
        return iso(row[-2]), iso(row[-1])

    async def a_page(wire: PgConnection) -> Any:
        return await wire.rows(page.sql, page.named(page_binds), text_times=True)

    plaintext = with_setting(url, sslmode="disable")
    rows: list[tuple[str, str, Read, str | None]] = [
        ("tls", "sslmode=require", plain, None),
        ("tls", "no TLS", plain, None),
        ("limit", "asyncio.timeout", under_timeout, None),
        ("limit", "deadline.within", under_within, None),
        ("limit", "none", plain, None),
        ("timestamps", "datetime + isoformat", shown_from_datetimes, None),
        ("timestamps", "text + iso", shown_from_text, None),
        ("plans", "server's choice", a_page, "SET plan_cache_mode = auto"),
        ("plans", "generic", a_page, "SET plan_cache_mode = force_generic_plan"),
    ]
    print(f"{reads} statements x 3 rounds each, least round; CPU per statement, µs")
    print("| row | variant | worker | server backend |\n|---|---|---|---|")
    for _ in range(2):  # the variants alternate twice
        for row, variant, read, setup in rows:
            target = with_setting(url, sslmode="require") if variant == "sslmode=require" else plaintext
            mine, theirs = await measure(target, read, reads, setup)
            print(f"| {row} | {variant} | {mine:.1f} | {theirs:.1f} |", flush=True)
        for piped in (False, True):
            variant = "one pipeline" if piped else f"{callers} connections"
            mine, theirs = await in_flight(plaintext, callers, reads, piped)
            print(f"| {callers} in flight | {variant} | {mine:.1f} | {theirs:.1f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--reads", type=int, default=3000, help="statements per round (default 3,000)")
    parser.add_argument("--in-flight", type=int, default=8, help="callers reading at once (default 8)")
    args = parser.parse_args()
    with own_schema(args.database_url) as url:
        assert url is not None
        seed(url)
        uvloop.run(run(url, args.reads, args.in_flight))
    return 0


if __name__ == "__main__":
    sys.exit(main())
