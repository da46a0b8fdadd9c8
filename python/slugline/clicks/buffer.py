"""The click buffer: redirects append a raw tuple and return; a flusher writes batches off the request path.

A batch goes out every `click_flush_seconds` (≤ 1 s) or as soon as `click_flush_max` (≤ 1000) clicks wait.
The Rust `ClickBatch` classifies it (device, browser, os, source, visitor hash) and rolls it up; one
transaction then adds the click rows, bumps each link's counter (bots excluded) and upserts `click_daily`.
A failed write keeps the clicks for the next round.
The buffer holds at most `click_buffer_bytes` (clicks waiting and clicks being written): a click recorded at the
budget is dropped, counted (`dropped`, shown by /health) and logged — redirects that outpace the database cannot
grow a worker without bound, and no loss is silent. Headers are cut to what is stored when the click is recorded, so
a huge User-Agent costs its 512 bytes, not its size. A batch that fails `MAX_BATCH_FAILURES` times in a row is
written one click at a time instead: clicks the database still refuses while it answers are dropped (and counted
in the log), so one bad row cannot hold back every click after it; while the database is unreachable nothing is
dropped. Shutdown (the lifespan ending, e.g. on SIGTERM) flushes whatever is left. The client IP is the ASGI
`client` address (behind proxies listed in `SLUGLINE_TRUSTED_PROXIES`, the app puts the forwarded address there);
it only feeds the visitor hash and is never stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from slugline import _core
from slugline.bounds import MAX_CLICK_REFERRER, MAX_CLICK_USER_AGENT, MAX_SOURCE
from slugline.clicks.store import SaltBook, reachable, write_batch
from slugline.clock import epoch_day
from slugline.db import unavailable
from slugline.runtime import Runtime

log = logging.getLogger("slugline.clicks")

# link id, unix time, user agent, referrer, utm_source, via QR, client IP
RawClick = tuple[str, float, bytes, bytes, str | None, bool, str]
MAX_BATCH_FAILURES = 3  # then the batch at the head goes one click at a time
# Bytes a buffered click costs besides its strings: the tuple, its float, bytes and str headers, and the list slot
# (measured with tracemalloc on CPython 3.11; tests/test_click_budget.py checks the budget holds).
CLICK_OVERHEAD = 400


def click_size(click: RawClick) -> int:
    return CLICK_OVERHEAD + len(click[0]) + len(click[2]) + len(click[3]) + len(click[4] or "") + len(click[6])


class ClickRecorder:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._every = rt.settings.click_flush_seconds
        self._max = rt.settings.click_flush_max
        self._pending: list[RawClick] = []
        self._budget = rt.settings.click_buffer_bytes
        self.bytes = 0  # of every click held: waiting, and in a batch being written
        self.dropped = 0  # clicks refused at the budget (or by the database), since the worker started
        self._dropping = False
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._salts = SaltBook()
        self._closing = False
        self._failures = 0  # consecutive failed writes of the batch at the head of `_pending`

    def record(self, click: RawClick) -> None:
        """Called on the event loop by the redirect; never blocks, never touches the database."""
        link_id, ts, agent, referrer, utm, via_qr, ip = click
        click = (
            link_id,
            ts,
            agent[:MAX_CLICK_USER_AGENT],
            referrer[:MAX_CLICK_REFERRER],
            utm and utm[:MAX_SOURCE],
            via_qr,
            ip,
        )
        size = click_size(click)
        if self.bytes + size > self._budget:
            self.dropped += 1
            if not self._dropping:
                self._dropping = True
                log.error("the click buffer is full (%d bytes): dropping clicks until it drains", self.bytes)
            return
        self.bytes += size
        self._pending.append(click)
        if len(self._pending) == self._max:
            self._wake.set()

    def stop(self) -> None:
        self._closing = True
        self._wake.set()

    def __len__(self) -> int:
        return len(self._pending)

    async def run(self) -> None:
        while not self._closing:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._every)
            self._wake.clear()
            await self.flush()

    async def flush(self) -> int:
        """Write everything pending, in batches of at most `click_flush_max`; the number written."""
        written = 0
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending[: self._max], self._pending[self._max :]
                try:
                    written += await asyncio.to_thread(self._write, batch)
                    self._release(batch)
                    self._failures = 0
                    continue
                except Exception:
                    self._failures += 1
                    if self._failures < MAX_BATCH_FAILURES:
                        log.exception("writing %d clicks failed; keeping them for the next flush", len(batch))
                        self._keep(batch)
                        break
                    log.exception(
                        "writing %d clicks failed %d times in a row; writing them one at a time",
                        len(batch),
                        self._failures,
                    )
                done, kept = await asyncio.to_thread(self._write_each, batch)
                written += done
                self.dropped += len(batch) - len(kept) - done
                self._release(batch[: len(batch) - len(kept)])
                if kept:  # the database stopped answering: the rest waits, nothing more is dropped
                    self._keep(kept)
                    break
                self._failures = 0
        return written

    def _keep(self, clicks: list[RawClick]) -> None:
        self._pending[:0] = clicks  # already counted in `bytes`: keeping them cannot pass the budget

    def _release(self, done: list[RawClick]) -> None:
        """Clicks written or refused by the database leave the buffer."""
        self.bytes -= sum(click_size(click) for click in done)
        if self._dropping and self.bytes < self._budget // 2:
            self._dropping = False
            log.warning("the click buffer has room again; %d clicks dropped since the worker started", self.dropped)

    def _write_each(self, raw: list[RawClick]) -> tuple[int, list[RawClick]]:
        """Write click by click; drop those refused while the database answers. Returns the number written and
        the clicks still to write (from the first failure on) when the database did not answer."""
        written = dropped = 0
        for index, click in enumerate(raw):
            try:
                written += self._write([click])
            except Exception as exc:
                # A full disk or a read-only file refuses every write while reads still work: an outage, not a
                # refused row, so the clicks wait for it to pass.
                if unavailable(exc) or not reachable(self._rt.db):
                    log.warning("the database cannot write; keeping %d clicks for the next flush", len(raw) - index)
                    self._log_dropped(dropped, len(raw))
                    return written, raw[index:]
                dropped += 1
                if dropped == 1:
                    log.warning("the database refused a click (%s: %s)", type(exc).__name__, str(exc).split("\n")[0])
        self._log_dropped(dropped, len(raw))
        return written, []

    @staticmethod
    def _log_dropped(dropped: int, total: int) -> None:
        if dropped:
            log.error("dropped %d of %d clicks that the database refused even one at a time", dropped, total)

    def _write(self, raw: list[RawClick]) -> int:
        salts = self._salts.get(self._rt.db, {epoch_day(click[1]) for click in raw})
        batch = _core.ClickBatch()
        for link_id, ts, agent, referrer, utm, via_qr, ip in raw:
            salt = salts[epoch_day(ts)]
            batch.add(
                link_id=link_id,
                timestamp=ts,
                user_agent=agent.decode("latin-1"),
                referrer=referrer.decode("latin-1") or None,
                utm_source=utm,
                via_qr=via_qr,
                visitor_salt=salt,
                ip=ip,
            )
        return write_batch(self._rt.db, batch)


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
        while len(recorder) and await recorder.flush():
            pass
        if len(recorder):
            log.error("shutting down with %d clicks that could not be written", len(recorder))
