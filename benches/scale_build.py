"""The data of `analytics_scale.py`: one pro account with a full API key, its links, and a year of clicks written the
way the server writes them.

The account, its key and its links go through the service layer; the clicks through the click writer: raw clicks
recorded into a `_core.ClickQueue`, taken 1,000 at a time, encoded (`Clicks.encode` with the day's visitor salt
from `SaltBook`) and written by `write_batch` on a thread of its own, as `ClickRecorder` does, while the next
batch is drawn. Only names that the older versions measured against also have are used, so the same code builds
their databases under their own interpreters. On PostgreSQL the tables are then vacuumed and analysed (what
autovacuum would do after such a load); on SQLite the write-ahead log is checkpointed.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any

from sqlalchemy import select, text

from httpbench import SECRET
from scale_traffic import CLICKS_PER_VISITOR, Traffic, utc
from slugline import _core
from slugline.accounts import keys
from slugline.accounts import service as accounts
from slugline.clicks import packs
from slugline.clicks.store import MAX_TEXT, SaltBook, write_batch
from slugline.common.bounds import MAX_CLICK_REFERRER, MAX_CLICK_USER_AGENT, MAX_SOURCE
from slugline.common.caller import Caller
from slugline.common.models import Account
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage import migrate

BATCH = 1000  # clicks per write
USERNAME = "scale"
READY = 1  # `ClickQueue.record`: a full batch waits
PROGRESS_SECONDS = 1.0


def build(database_url: str, clicks: int, links_count: int, days: int, now: float, seed: int) -> dict[str, Any]:
    """Builds into an empty database; returns what `measure` needs: the key, the links by rank, the build's rate."""
    rt = Runtime.create(Settings(database_url=database_url, secret_key=SECRET))
    try:
        migrate.upgrade(rt.db.engine)
        key, caller = _account(rt)
        started = time.monotonic()
        made = _links(rt, caller, links_count)
        link_seconds = time.monotonic() - started
        traffic = Traffic(seed, links_count, clicks // CLICKS_PER_VISITOR)
        click_seconds = _clicks(rt, traffic, [link_id for link_id, _ in made], clicks, days, now)
        _settle(rt)
        # The month packs the servers' click upkeep would have made over the year (`slugline.clicks.packs`).
        started = time.monotonic()
        packs_made = sum(packs.upkeep(rt.db))
        pack_seconds = time.monotonic() - started
        print(f"  month packs: {packs_made} in {pack_seconds:,.1f} s", flush=True)
    finally:
        rt.close()
    return {
        "database_url": database_url,
        "key": key,
        "links": made,
        "clicks": clicks,
        "days": days,
        "now": now,
        "seed": seed,
        "link_seconds": link_seconds,
        "click_seconds": click_seconds,
        "clicks_per_second": clicks / click_seconds if click_seconds else 0.0,
        "packs": packs_made,
        "pack_seconds": pack_seconds,
    }


def _account(rt: Runtime) -> tuple[str, Caller]:
    """The account on the pro plan, its full API key, and a caller acting with that key."""
    accounts.register(rt, {"username": USERNAME, "password": "scale-password"}, plan="pro")
    with rt.db.session() as session:
        account = session.execute(select(Account).where(Account.username == USERNAME)).scalar_one()
        account_id, created_at = account.id, account.created_at
    session_caller = Caller(account_id, USERNAME, "pro", "session", created_at)
    key = str(keys.create_key(rt, session_caller, {"scope": "full"})["key"])
    return key, Caller(account_id, USERNAME, "pro", "full", created_at)


def _links(rt: Runtime, caller: Caller, count: int) -> list[tuple[str, str]]:
    """(id, slug) of each new link; the first is the one the traffic makes hottest."""
    made: list[tuple[str, str]] = []
    progress = Progress("links", count)
    for i in range(count):
        body = {"destination_url": f"https://example.org/articles/{i}", "slug": f"scale{i}", "title": f"Article {i}"}
        link = links.create_on_thread(rt, caller, body)
        made.append((str(link["id"]), str(link["slug"])))
        progress.show(i + 1)
    progress.done()
    return made


def _clicks(rt: Runtime, traffic: Traffic, link_ids: list[str], clicks: int, days: int, now: float) -> float:
    """Draws the clicks day by day, oldest first, and has a writer thread store them; the seconds it took."""
    clicks_queue = _core.ClickQueue(
        budget=1 << 30,
        batch=BATCH,
        max_user_agent=MAX_CLICK_USER_AGENT,
        max_referrer=MAX_CLICK_REFERRER,
        max_source=MAX_SOURCE,
    )
    writer = Writer(rt)
    started = time.monotonic()
    progress = Progress("clicks", clicks)
    record = clicks_queue.record
    for day, length, count in traffic.day_counts(clicks, days, utc(now)):
        for ts, rank in zip(traffic.times(day, length, count), traffic.ranks(count), strict=True):
            ip, agent, bot = traffic.visitor()
            referrer, utm, qr = (b"", None, False) if bot else traffic.origin()
            if record(link_ids[rank], agent, referrer, utm, qr, ip, ts) == READY:
                writer.send(clicks_queue, clicks_queue.take(BATCH))
                progress.show(writer.written, f" up to {day:%Y-%m-%d}")
    while len(clicks_queue):
        writer.send(clicks_queue, clicks_queue.take(BATCH))
    writer.finish(clicks_queue)
    progress.done()
    return time.monotonic() - started


class Writer:
    """`ClickRecorder._write` on a thread of its own: salts, encoding and the write. The queue is only touched by
    the drawing thread, which releases the batches written whenever it hands over a new one."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.written = 0
        self._salts = SaltBook()
        self._todo: queue.Queue[_core.Clicks | None] = queue.Queue(maxsize=4)
        self._done: queue.Queue[_core.Clicks] = queue.Queue()
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="click-writer", daemon=True)
        self._thread.start()

    def send(self, clicks_queue: _core.ClickQueue, batch: _core.Clicks) -> None:
        if self._failed:
            raise RuntimeError("writing clicks failed") from self._failed[0]
        self._todo.put(batch)
        while not self._done.empty():
            clicks_queue.release(self._done.get())

    def finish(self, clicks_queue: _core.ClickQueue) -> None:
        self._todo.put(None)
        self._thread.join()
        if self._failed:
            raise RuntimeError("writing clicks failed") from self._failed[0]
        while not self._done.empty():
            clicks_queue.release(self._done.get())

    def _run(self) -> None:
        while (batch := self._todo.get()) is not None:
            if self._failed:
                continue  # the drawing thread raises at its next batch
            try:
                salts: dict[int, bytes] = {}
                for day in batch.days():  # one at a time: a sparse year puts more days in a batch than it keeps
                    salts.update(self._salts.get(self.rt.db, [day]))
                self.written += write_batch(self.rt.db, batch.encode(salts, MAX_TEXT))
            except BaseException as exc:
                self._failed.append(exc)
            self._done.put(batch)


def _settle(rt: Runtime) -> None:
    """What a server that had been running would find: statistics made (PostgreSQL), the log folded in (SQLite)."""
    if rt.db.engine.dialect.name == "postgresql":
        with rt.db.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    else:
        with rt.db.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


class Progress:
    """One line, rewritten at most once a second: how far, how fast."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total = what, total
        self.started = self.shown = time.monotonic()

    def show(self, done: int, note: str = "") -> None:
        now = time.monotonic()
        if now - self.shown < PROGRESS_SECONDS:
            return
        self.shown = now
        rate = done / (now - self.started)
        sys.stdout.write(f"\r  {self.what}: {done:,} of {self.total:,} ({rate:,.0f}/s){note}   ")
        sys.stdout.flush()

    def done(self) -> None:
        seconds = time.monotonic() - self.started
        rate = self.total / seconds if seconds else 0.0
        print(f"\r  {self.what}: {self.total:,} in {seconds:,.1f} s ({rate:,.0f}/s)" + " " * 30, flush=True)
