"""The click load of `analytics_scale.py`: real redirects (`GET /{slug}`) at a steady rate, until told to stop.

Runs in a process of its own (`analytics_scale.py drive`), so that its work never delays the analytics requests
being timed. The requests are drawn from the build's traffic model (links, browsers, referrers, `utm_source` and
QR scans) and each carries its visitor's address in `X-Forwarded-For`, which the server believes from loopback
(`SLUGLINE_TRUSTED_PROXIES`), so the visitors vary as the build's do. Request `i` is due `i / rate` seconds after
the start, on whichever of the keep-alive connections is free: a server that falls behind lowers the rate
achieved, which is reported (answers by status, seconds), never hidden. Plain asyncio streams on uvloop: a few
microseconds of CPU a request, where an HTTP client library would take a good share of a core at this rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
from collections import Counter
from typing import Any
from urllib.parse import quote

from scale_traffic import CLICKS_PER_VISITOR, Traffic

DISTINCT_REQUESTS = 50_000  # drawn once, then sent round robin


def requests(manifest: dict[str, Any], host: str, seed: int) -> list[bytes]:
    """Raw HTTP/1.1 redirect requests, drawn like the build's clicks (the same visitor pool: returning visitors)."""
    slugs = [slug for _, slug in manifest["links"]]
    traffic = Traffic(seed, len(slugs), manifest["clicks"] // CLICKS_PER_VISITOR)
    made = []
    for rank in traffic.ranks(DISTINCT_REQUESTS):
        ip, agent, bot = traffic.visitor()
        referrer, utm, qr = (b"", None, False) if bot else traffic.origin()
        query = f"?utm_source={quote(utm)}" if utm else "?src=qr" if qr else ""
        head = f"GET /{slugs[rank]}{query} HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-For: {ip}\r\n".encode()
        head += b"User-Agent: " + agent + b"\r\n"
        if referrer:
            head += b"Referer: " + referrer + b"\r\n"
        made.append(head + b"\r\n")
    return made


async def drive(host: str, port: int, sent: list[bytes], rate: float, connections: int) -> dict[str, Any]:
    """Sends until SIGTERM or SIGINT; what was answered, and over how long."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    answers: Counter[str] = Counter()
    turn = itertools.count()
    start = loop.time() + 0.2  # every connection open before the first is due

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        while not stop.is_set():
            i = next(turn)
            wait = start + i / rate - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                writer.write(sent[i % len(sent)])
                answers[await _status(reader)] += 1
            except (OSError, asyncio.IncompleteReadError) as exc:
                answers[type(exc).__name__] += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
        writer.close()

    tasks = [asyncio.create_task(connection()) for _ in range(connections)]
    await stop.wait()
    elapsed = loop.time() - start
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"target": rate, "seconds": elapsed, "answers": dict(answers), "scheduled": next(turn)}


async def _status(reader: asyncio.StreamReader) -> str:
    """Reads one response; its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return head[9:12].decode()


def run(manifest: dict[str, Any], base: str, rate: float, connections: int, seed: int) -> None:
    """The `drive` command: prints one JSON line when stopped."""
    import uvloop

    host, _, port = base.removeprefix("http://").partition(":")
    sent = requests(manifest, f"{host}:{port}", seed)
    result = uvloop.run(drive(host, int(port), sent, rate, connections))
    print(json.dumps(result), flush=True)
