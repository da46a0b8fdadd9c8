"""The text format, who may read it, and where.

- `GET /metrics` on the service's own address with `SLUGLINE_METRICS_TOKEN`: a request must bear
  `Authorization: Bearer <token>` (compared in constant time), else 401. Without the setting the route does not
  exist (404).
- `SLUGLINE_METRICS_BIND=host:port`: `slugline serve` itself (Granian's supervising process, which serves no
  requests) answers scrapes there from a small HTTP server thread, without a token: an address only the scraper
  can reach. What it shows is what the workers last folded, at most a second old.

With several workers (`slugline serve` sets `PROMETHEUS_MULTIPROC_DIR`) a scrape sums every worker's files. The live
gauges of a worker that died without saying so (kill -9, out of memory: Granian starts another) are dropped at
scrape time, found by their process id no longer running.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest, multiprocess
from prometheus_client.registry import Collector
from starlette.requests import Request

from slugline.metrics.directory import MULTIPROC_ENV
from slugline.metrics.families import Families

LIVE_FILE = re.compile(r"gauge_live\w*?_(\d+)\.db")

# No `_created` series: the multiprocess files keep none, and one worker's scrape must look like several workers'.
disable_created_metrics()  # type: ignore[no-untyped-call]


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def make_families() -> tuple[Families, CollectorRegistry]:
    """The worker's families and the registry a scrape renders: its own values, or every worker's files."""
    path = multiprocess_dir()
    if path is None:
        registry = CollectorRegistry(auto_describe=True)
        return Families(registry), registry
    return Families(None), shared_registry(path)


def shared_registry(path: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(_Reaping(path))
    return registry


class _Reaping(Collector):
    """`MultiProcessCollector` over `path`, after dropping the live gauges of processes that are gone."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._inner = multiprocess.MultiProcessCollector(None, path)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterable[Any]:
        reap(self.path)
        found: Iterable[Any] = self._inner.collect()  # type: ignore[no-untyped-call]
        return found


def reap(path: str) -> None:
    for name in os.listdir(path):
        found = LIVE_FILE.fullmatch(name)
        if found is not None and not _alive(int(found[1])):
            multiprocess.mark_process_dead(int(found[1]), path)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process took the number: not ours, but alive
        return True
    return True


def render(registry: CollectorRegistry) -> bytes:
    return bytes(generate_latest(registry))


def authorized(request: Request, token: str) -> bool:
    """`Authorization: Bearer <token>`, the token compared in constant time."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def serve_bind(host: str, port: int, path: str) -> None:
    """The scrape server of `SLUGLINE_METRICS_BIND`, a daemon thread of the calling process."""
    from prometheus_client import start_http_server

    try:
        start_http_server(port, host, registry=shared_registry(path))
    except OSError as exc:  # the address taken, or not this machine's: the CLI says so and exits 2
        raise RuntimeError(f"SLUGLINE_METRICS_BIND {host}:{port}: {exc.strerror or exc}") from None
