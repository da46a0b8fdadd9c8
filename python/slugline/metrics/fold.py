"""What a worker counts, brought into the Prometheus families.

A request of the API, dashboard or MCP is observed when it is answered (it costs a few microseconds of a request that
costs far more). Everything else is counted where it happens in plain ints (`common.tally`, the caches' and the
click buffer's own fields, the redirect layer's) and added here once a second, and just before this worker renders
a scrape: the redirect path, the hottest one, pays an integer increment and no shared-memory write.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from time import perf_counter
from typing import Any, Protocol

from prometheus_client import Counter

from slugline.clicks.buffer import ClickRecorder
from slugline.common.tally import CacheStats, Tally
from slugline.fetch.fetcher import FETCHES
from slugline.limits.buckets import REFUSALS
from slugline.metrics.directory import MULTIPROC_ENV
from slugline.metrics.families import Families
from slugline.oauth.grants import GRANTS
from slugline.runtime import Runtime
from slugline.web.logs import STARTED_KEY, STATUS_KEY, route_of
from slugline.webhooks.worker import Deliverer

FOLD_SECONDS = 1.0
REDIRECT_ROUTE = "/{slug}"  # counted in slugline_redirects_total, not as an HTTP request

log = logging.getLogger("slugline.metrics")


class RedirectCounts(Protocol):
    """The redirect layer's counts (`redirects.layer.RedirectLayer`)."""

    def outcomes(self) -> dict[str, int]: ...

    def cache_stats(self) -> CacheStats | None: ...


class Metrics:
    def __init__(self, families: Families, redirects: RedirectCounts) -> None:
        self.families = families
        self.redirects = redirects
        self._seen: dict[tuple[int, str], int] = {}  # (counter, label) -> the count already added
        self._rt: Runtime | None = None
        self._clicks: ClickRecorder | None = None
        self._hooks: Deliverer | None = None
        for counter, tally in self._tallies():  # counted in this process before this app was made: not its own
            for label, count in tally.snapshot().items():
                self._seen[(id(counter), label)] = count

    def _tallies(self) -> list[tuple[Counter, Tally]]:
        f = self.families
        return [(f.refusals, REFUSALS), (f.fetches, FETCHES), (f.oauth_grants, GRANTS)]

    def observe(self, scope: dict[str, Any]) -> None:
        """A request the API, dashboard or MCP answered (`web.logs.RequestLog.observe`)."""
        route = route_of(scope)
        if route == REDIRECT_ROUTE:
            return
        started = scope.get(STARTED_KEY)
        seconds = 0.0 if started is None else perf_counter() - started
        status = str(scope.get(STATUS_KEY, 0))  # 0: the client left before an answer began
        self.families.requests.labels(scope.get("method", ""), route or "unmatched", status).observe(seconds)

    def fold(self) -> None:
        """Add what was counted since the last fold; set the gauges."""
        f = self.families
        for outcome, count in self.redirects.outcomes().items():
            self._add(f.redirects, outcome, count)
        for counter, tally in self._tallies():
            for label, count in tally.snapshot().items():
                self._add(counter, label, count)
        caches = {"redirect": self.redirects.cache_stats()}
        if self._rt is not None:
            caches |= {
                "token": self._rt.identities.stats(),
                "search": self._rt.search.stats(),
                "analytics": self._rt.analytics.stats(),
            }
            self._pool(self._rt)
        for name, stats in caches.items():
            if stats is not None:
                self._cache(name, stats)
        clicks = self._clicks
        if clicks is not None:
            self._add(f.clicks_recorded, "", clicks.written)
            self._add(f.clicks_dropped, "", clicks.dropped)
            f.clicks_pending.set(len(clicks))
        if self._hooks is not None:
            self._webhooks(self._hooks)

    def _webhooks(self, hooks: Deliverer) -> None:
        f = self.families
        for outcome, count in list(hooks.outcomes.items()):
            self._add(f.webhook_deliveries, outcome, count)
        if hooks.pending is not None:
            f.webhook_pending.set(hooks.pending)

    def _cache(self, name: str, stats: CacheStats) -> None:
        f = self.families
        self._add(f.cache_hits, name, stats.hits)
        self._add(f.cache_misses, name, stats.misses)
        self._add(f.cache_evictions, name, stats.evictions)
        f.cache_entries.labels(name).set(stats.entries)
        if stats.bytes is not None:
            f.cache_bytes.labels(name).set(stats.bytes)

    def _pool(self, rt: Runtime) -> None:
        pool: Any = rt.db.engine.pool
        with suppress(AttributeError):  # a pool without these figures (NullPool, StaticPool) shows none
            in_use = int(pool.checkedout())
            self.families.db_pool_in_use.set(in_use)
            self.families.db_pool_size.set(in_use + int(pool.checkedin()))

    def _add(self, counter: Counter, label: str, count: int) -> None:
        key = (id(counter), label)
        seen = self._seen.get(key, 0)
        if count > seen:
            (counter.labels(label) if label else counter).inc(count - seen)
        self._seen[key] = count

    def watch(self, clicks: ClickRecorder, hooks: Deliverer | None = None) -> None:
        """The worker's click buffer and webhook deliverer, once they run."""
        self._clicks = clicks
        clicks.on_write = self.families.click_flush.observe
        if hooks is not None:
            self._hooks = hooks
            hooks.count_pending = True
            hooks.on_attempt = self._attempt

    def _attempt(self, seconds: float, lag: float | None) -> None:
        self.families.webhook_attempt.observe(seconds)
        if lag is not None:
            self.families.webhook_lag.observe(lag)

    @asynccontextmanager
    async def running(self, rt: Runtime) -> AsyncIterator[None]:
        """Fold once a second while the worker runs, and once more on the way out (after the clicks' last flush
        when the click buffer's context runs inside this one); then the worker's live gauges go."""
        self._rt = rt
        task = asyncio.get_running_loop().create_task(self._every_second())
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            self.fold()
            _forget_process()

    async def _every_second(self) -> None:
        while True:
            await asyncio.sleep(FOLD_SECONDS)
            try:
                self.fold()
            except Exception:  # a figure that cannot be read now is read at the next fold
                log.exception("folding metrics failed")


def _forget_process() -> None:
    """This worker's live gauges (clicks pending, cache bytes, pool) leave the sums as it exits; its counters stay."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
