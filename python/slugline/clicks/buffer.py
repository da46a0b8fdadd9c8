"""The click buffer: a redirect makes one call into the Rust `ClickQueue` and returns; a flusher writes batches.

A redirect's click costs the serving thread one call (well under a microsecond with the GIL held): the queue keeps
the raw click, its headers already cut to what is stored, in Rust memory. A batch goes out every
`click_flush_seconds` (at most 1 s), or sooner when `click_flush_max` (100,000 by default) clicks or a quarter of the
byte budget wait: a commit costs mostly the pages it touches, one or more per link of the batch and a rewrite of
each of its links' cubes, so under heavy traffic spread over many links one large commit a second costs a fraction
of many small ones (see `CLICK_FLUSH_MAX` in `slugline.settings`). The flusher takes
the batch out of the queue and, in a worker thread, has Rust classify it (each distinct user agent once), hash the
visitors, roll it up and order its rows by link and time (the click log's index) with the GIL released, into three
JSON arrays; one transaction then bumps each link's counter (bots excluded), adds the click rows and upserts
`click_daily`, each a single statement the database runs over the whole array (`json_each` on SQLite,
`json_array_elements` on PostgreSQL), so no Python work is done per click. A failed write gives the batch back for
the next round.
The queue holds at most `click_buffer_bytes` (clicks waiting and clicks being written): a click recorded at the
budget is dropped, counted (`dropped`, shown by /health) and logged — redirects that outpace the database cannot
grow a worker without bound, and no loss is silent. Headers are cut when the click is recorded, so a huge User-Agent
costs its 512 bytes, not its size (and the client address its first 64 characters). A batch that fails
`MAX_BATCH_FAILURES` times in a row is written one click at a time instead: clicks the database still refuses while
it answers are dropped (and counted in the log), so one bad row cannot hold back every click after it; while the
database is unreachable nothing is dropped. Shutdown (the lifespan ending, e.g. on SIGTERM) flushes whatever is
left, trying again for up to `SHUTDOWN_SECONDS` if a write fails. The client IP is the ASGI `client` address (behind
proxies listed in `SLUGLINE_TRUSTED_PROXIES`, the app puts the forwarded address there); it only feeds the visitor
hash and, on the flusher's side, the click's country, region and city (`clicks.geo`: a trusted proxy's country
header, noted by the redirect, else the GeoIP database), and is never stored. Between flushes the flusher also
keeps the click log: old clicks deleted, partitions made ahead (`slugline.clicks.retention`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from time import perf_counter

from slugline import _core
from slugline.clicks.geo import GeoIp
from slugline.clicks.retention import Upkeep
from slugline.clicks.store import MAX_TEXT, SaltBook, make_pending_moves, reachable, write_batch
from slugline.common.bounds import MAX_CLICK_REFERRER, MAX_CLICK_USER_AGENT, MAX_SOURCE
from slugline.runtime import Runtime
from slugline.storage.db import unavailable

log = logging.getLogger("slugline.clicks")

# link id, unix time, user agent, referrer, utm_source, via QR, client IP
RawClick = tuple[str, float, bytes, bytes, str | None, bool, str]
MAX_BATCH_FAILURES = 3  # then the batch at the head goes one click at a time
SHUTDOWN_SECONDS = 5.0  # how long shutdown keeps trying to write what is buffered
RETRY_SECONDS = 0.1  # between those tries
KEPT, READY, DROPPED = 0, 1, 2  # what `ClickQueue.record` answers
# Bytes held (a share of `click_buffer_bytes`) that start a write before the second is up, looked at this often:
# a quarter of 64 MiB is ~70,000 clicks with a browser's headers, ~7,000 with the longest headers kept, and the
# rest of the budget holds what comes in meanwhile and during the write.
EARLY_SHARE = 4
EARLY_POLL_SECONDS = 0.1


class ClickRecorder:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._every = rt.settings.click_flush_seconds
        self._max = rt.settings.click_flush_max
        self._early = rt.settings.click_buffer_bytes // EARLY_SHARE  # bytes held that start a write at once
        self.queue = _core.ClickQueue(
            budget=rt.settings.click_buffer_bytes,
            batch=self._max,
            max_user_agent=MAX_CLICK_USER_AGENT,
            max_referrer=MAX_CLICK_REFERRER,
            max_source=MAX_SOURCE,
        )
        self._refused = 0  # clicks the database refused even one at a time
        self._dropping = False
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self.salts = SaltBook()  # shared with the redirects' variant draws (`redirects.routing`)
        self._closing = False
        self._failures = 0  # consecutive failed writes of the batch at the head of the queue
        self._upkeep = Upkeep(rt.db, rt.settings.click_log_days, rt.link_hooks)
        # Places each batch's clicks on this (the flusher's) side; the redirects' country rules share it.
        self.geo = GeoIp(rt.settings.geoip_db)
        self.written = 0  # clicks written to the database since the worker started
        self.on_write: Callable[[float], None] | None = None  # given each batch write's seconds (`slugline.metrics`)

    def record(self, click: RawClick) -> None:
        """Keep one click given as a tuple (the redirect calls `queue.record` itself, then `notice`)."""
        link_id, ts, agent, referrer, utm, via_qr, ip = click
        outcome = self.queue.record(link_id, agent, referrer, utm, via_qr, ip, ts)
        if outcome:
            self.notice(outcome)

    def notice(self, outcome: int) -> None:
        """What the queue said of a click, when it was not a plain `KEPT`: wake the flusher, or log a full buffer."""
        if outcome == READY:
            self._wake.set()
        elif not self._dropping:
            self._dropping = True
            log.error("the click buffer is full (%d bytes): dropping clicks until it drains", self.queue.bytes)

    @property
    def bytes(self) -> int:
        """Bytes held by every click not yet written: waiting, and in a batch being written."""
        return self.queue.bytes

    @property
    def dropped(self) -> int:
        """Clicks refused at the budget or by the database, since the worker started."""
        return self.queue.dropped + self._refused

    def stop(self) -> None:
        self._closing = True
        self._wake.set()

    def __len__(self) -> int:
        return len(self.queue)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + self._every
        while not self._closing:
            # A flush at least every `click_flush_seconds` from the last one's start, not from its end: a click that
            # came during a flush waits for the next one, and must not wait a whole interval more on top. Sooner
            # when `click_flush_max` clicks wait, or a `EARLY_SHARE` of the byte budget (looked at every
            # `EARLY_POLL_SECONDS`): heavy traffic is written once a second in one batch, not in many.
            try:
                await asyncio.wait_for(self._wake.wait(), min(EARLY_POLL_SECONDS, max(0.0, due - loop.time())))
            except TimeoutError:
                if loop.time() < due and self.queue.bytes < self._early:
                    continue
            self._wake.clear()
            due = loop.time() + self._every
            await self.flush()
            await self._upkeep.step()

    async def flush(self) -> int:
        """Write the clicks waiting when it is called, in batches of at most `click_flush_max`; the number written.
        Clicks that arrive meanwhile wait for the next flush: under steady traffic a flush that drained the queue
        would never end, writing back to back whatever came in during the last write (64 connections: batches of
        ~64 clicks), each commit costing nearly what a full one does."""
        written = 0
        if not len(self.queue) and not self._lock.locked():
            await self._make_moves()  # outside the lock: clicks recorded meanwhile are not held up
            return 0
        async with self._lock:
            left = len(self.queue)
            while left > 0 and len(self.queue):
                batch = self.queue.take(self._max)
                left -= len(batch)
                try:
                    began = perf_counter()
                    written += await asyncio.to_thread(self._write, batch)
                    if self.on_write is not None:
                        self.on_write(perf_counter() - began)
                    self._release(batch)
                    self._failures = 0
                    continue
                except Exception as exc:
                    self._failures += 1
                    # One traceback per episode; while it lasts (an outage: once a flush) a line each time.
                    report = log.exception if self._failures in (1, MAX_BATCH_FAILURES) else log.warning
                    if self._failures < MAX_BATCH_FAILURES:
                        report("writing %d clicks failed; keeping them for the next flush (%s)", len(batch), brief(exc))
                        self.queue.give_back(batch)
                        break
                    report(
                        "writing %d clicks failed %d times in a row (%s); writing them one at a time",
                        len(batch),
                        self._failures,
                        brief(exc),
                    )
                done, outage = await asyncio.to_thread(self._write_each, batch)
                written += done
                if outage:  # the database stopped answering: the rest waits, nothing more is dropped
                    break
                self._failures = 0
        self.written += written
        return written

    async def _make_moves(self) -> None:
        """With no clicks to write, the cube moves links' changes left (`slugline.clicks.cubes`) are made on their
        own, so analytics need not allow for them for long; a failure waits for the next flush."""
        try:
            await asyncio.to_thread(make_pending_moves, self._rt.db)
        except Exception as exc:
            log.warning("making pending cube moves failed (%s)", brief(exc))

    async def drain(self, seconds: float) -> None:
        """Flushes until nothing waits, for at most `seconds`: a write that fails is tried again (and after
        `MAX_BATCH_FAILURES`, click by click), so one passing failure at shutdown does not lose the buffer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while len(self) and loop.time() < deadline:
            if not await self.flush():
                await asyncio.sleep(min(RETRY_SECONDS, max(0.0, deadline - loop.time())))

    def _release(self, done: _core.Clicks) -> None:
        """Clicks written or refused by the database leave the buffer."""
        self.queue.release(done)
        if self._dropping and self.queue.bytes < self.queue.budget // 2:
            self._dropping = False
            log.warning("the click buffer has room again; %d clicks dropped since the worker started", self.dropped)

    def _write_each(self, batch: _core.Clicks) -> tuple[int, bool]:
        """Write click by click; drop those refused while the database answers. Returns the number written, and
        whether the database stopped answering (the clicks from the first such failure on are given back)."""
        singles = batch.split()
        written = dropped = 0
        for index, single in enumerate(singles):
            try:
                written += self._write(single)
            except Exception as exc:
                # A full disk or a read-only file refuses every write while reads still work: an outage, not a
                # refused row, so the clicks wait for it to pass.
                if unavailable(exc) or not reachable(self._rt.db):
                    log.warning("the database cannot write; keeping %d clicks for the next flush", len(singles) - index)
                    for kept in reversed(singles[index:]):
                        self.queue.give_back(kept)
                    self._log_dropped(dropped, len(singles))
                    return written, True
                dropped += 1
                self._refused += 1
                if dropped == 1:
                    log.warning("the database refused a click (%s)", brief(exc))
            self._release(single)
        self._log_dropped(dropped, len(singles))
        return written, False

    @staticmethod
    def _log_dropped(dropped: int, total: int) -> None:
        if dropped:
            log.error("dropped %d of %d clicks that the database refused even one at a time", dropped, total)

    def _write(self, clicks: _core.Clicks) -> int:
        """Runs in a worker thread: the Rust encoding releases the GIL, and so does the database at work."""
        salts = self.salts.get(self._rt.db, clicks.days())
        return write_batch(self._rt.db, clicks.encode(salts, MAX_TEXT, self.geo.db))


def brief(exc: BaseException) -> str:
    """The exception's type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).split(chr(10))[0]}"


@asynccontextmanager
async def recording(rt: Runtime) -> AsyncIterator[ClickRecorder]:
    """Run the flusher for the lifetime of a worker; on the way out, flush every click still buffered."""
    recorder = ClickRecorder(rt)
    task = asyncio.get_running_loop().create_task(recorder.run())
    try:
        yield recorder
    finally:
        recorder.stop()  # not cancelled: a write under way finishes, then the loop ends
        await task
        await recorder.drain(SHUTDOWN_SECONDS)
        if len(recorder):
            log.error("shutting down with %d clicks that could not be written", len(recorder))
