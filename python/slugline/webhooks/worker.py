"""The deliverer each worker process runs beside its click flusher: it claims due messages, posts them and records
what became of them, with no request ever waiting on it.

Deliveries run as tasks on the worker's event loop (the network waits cost nothing there); the database work of a
claim or an outcome runs on a thread. A worker keeps at most `MAX_IN_FLIGHT` deliveries under way and at most
`webhooks_concurrency` per account, whose further messages wait in the outbox for a claim of this worker or
another's. A link change made in this worker wakes it at once (`Runtime.link_hooks`); otherwise it looks every
`webhooks_poll_seconds`. Now and then it also writes `link.expired` messages (`expiry`) and prunes the outbox.

What it did is kept for the metrics (`metrics.fold`): `outcomes` counts attempts by outcome in plain ints, `pending`
is the outbox's waiting messages as last counted (at most once per `PENDING_SECONDS`, on a thread), and `on_attempt`,
when set, hears each attempt's duration and, for a delivery, the lag from the event to its delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

from slugline.runtime import Runtime
from slugline.webhooks import expiry, outbox, payload, send, signing
from slugline.webhooks.networks import allowed_networks
from slugline.webhooks.outbox import Claimed

log = logging.getLogger("slugline.webhooks")
MAX_IN_FLIGHT = 64  # deliveries under way in one worker
CHORES_SECONDS = 10.0  # between expiry scans
PRUNE_SECONDS = 600.0  # between prunes of the outbox
DRAIN_SECONDS = 5.0  # how long shutdown waits for deliveries under way (the rest are claimed again after the lease)
PENDING_SECONDS = 1.0  # between counts of the outbox's waiting messages, when the metrics want them


class Deliverer:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._wake = asyncio.Event()
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy: Counter[int] = Counter()  # deliveries under way per account
        self._loop = asyncio.get_running_loop()
        self._prune_due = 0.0
        self.outcomes: Counter[str] = Counter()  # attempts by `outbox.OUTCOMES`
        self.pending: int | None = None  # the outbox's waiting messages, once counted
        self.count_pending = False  # set by the metrics: count them every `PENDING_SECONDS`
        self.on_attempt: Callable[[float, float | None], None] | None = None  # (seconds, lag of a delivery or None)

    def poke(self, *_: object) -> None:
        """Something may be due: look now (callable from any thread)."""
        if not self._wake.is_set():
            with suppress(RuntimeError):  # the loop is closed: the worker is going away
                self._loop.call_soon_threadsafe(self._wake.set)

    def stop(self) -> None:
        self._closing = True
        self._wake.set()

    async def run(self) -> None:
        settings = self._rt.settings
        chores_due = pending_due = 0.0
        while not self._closing:
            self._wake.clear()
            now = time.time()
            try:
                if now >= chores_due:
                    chores_due = now + CHORES_SECONDS
                    await asyncio.to_thread(self._chores, now)
                if self.count_pending and now >= pending_due:
                    pending_due = now + PENDING_SECONDS
                    self.pending = await asyncio.to_thread(outbox.pending, self._rt.db)
                claimed = await self._claim(now)
            except Exception as exc:
                log.warning("claiming webhook messages failed (%s: %s)", type(exc).__name__, str(exc)[:200])
                claimed = []
            for msg in claimed:
                self._busy[msg.account_id] += 1
                task = asyncio.create_task(self._deliver(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if claimed and len(self._tasks) < MAX_IN_FLIGHT:
                continue  # there may be more
            with suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), settings.webhooks_poll_seconds)

    async def _claim(self, now: float) -> list[Claimed]:
        room = MAX_IN_FLIGHT - len(self._tasks)
        if room <= 0 or not await asyncio.to_thread(outbox.anything_due, self._rt.db, now):
            return []
        busy = dict(self._busy)
        return await asyncio.to_thread(outbox.claim, self._rt.db, self._rt.settings, now, min(room, 32), busy)

    def _chores(self, now: float) -> None:
        expiry.scan(self._rt.db, now)
        if now >= self._prune_due:
            self._prune_due = now + PRUNE_SECONDS
            outbox.prune(self._rt.db, now)

    async def _deliver(self, msg: Claimed) -> None:
        settings = self._rt.settings
        try:
            body = payload.body(msg)
            key = signing.key(self._rt.secret, msg.secret_salt)
            headers = signing.headers(key, msg.id, int(time.time()), body)
            began = time.perf_counter()
            status, error = await send.post(
                msg.url,
                body,
                headers,
                allow_networks=allowed_networks(self._rt),
                ports=settings.fetch_port_set(),
                timeout=settings.webhooks_timeout_seconds,
            )
            seconds = time.perf_counter() - began
            done = time.time()
            outcome = await asyncio.to_thread(
                outbox.finish, self._rt.db, settings, msg, done, status, error, int(seconds * 1000)
            )
            self.outcomes[outcome] += 1
            if self.on_attempt is not None:
                self.on_attempt(seconds, max(0.0, done - msg.created_at) if outcome == outbox.DELIVERED else None)
        except Exception as exc:  # the outcome could not be written: the lease runs out and it is tried again
            self.outcomes[outbox.FAILED] += 1
            log.warning("delivering webhook message %s failed (%s: %s)", msg.id, type(exc).__name__, str(exc)[:200])
        finally:
            self._busy[msg.account_id] -= 1
            if self._busy[msg.account_id] <= 0:
                del self._busy[msg.account_id]
            self._wake.set()

    async def drain(self, seconds: float) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds)


@asynccontextmanager
async def delivering(rt: Runtime) -> AsyncIterator[Deliverer]:
    """Runs the deliverer for the lifetime of a worker."""
    deliverer = Deliverer(rt)
    rt.link_hooks.append(deliverer.poke)
    task = asyncio.get_running_loop().create_task(deliverer.run())
    try:
        yield deliverer
    finally:
        deliverer.stop()
        rt.link_hooks.remove(deliverer.poke)
        await task
        await deliverer.drain(DRAIN_SECONDS)
