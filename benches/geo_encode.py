"""The click writer's CPU per click with and without a GeoIP database: one batch of clicks from many addresses,
encoded (classified, hashed, rolled up and, with a database, placed) as the flusher encodes it.

    python benches/geo_encode.py [--clicks 10000] [--addresses 5000] [--rounds 5] [--db path.mmdb ...]

Each `--db` (a Country or City MMDB file, e.g. the `slugline[geo]` extra's DB-IP City Lite) is measured beside no
database, on the same clicks, alternating, CPU time of this process (the encoding runs on its thread, GIL released).
A batch places each distinct address once, so `--addresses` sets how many lookups a batch makes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from slugline import _core
from slugline.clicks.store import MAX_TEXT

AGENTS = [
    b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    b"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1",
    b"Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0",
]


def clicks(queue: _core.ClickQueue, n: int, addresses: int, rng: random.Random) -> _core.Clicks:
    ips = [
        ".".join(str(rng.randrange(1, 224) if i == 0 else rng.randrange(256)) for i in range(4))
        if k % 4
        else f"2a0{rng.randrange(10)}:{rng.randrange(1 << 16):x}::{rng.randrange(1 << 16):x}"
        for k in range(addresses)
    ]
    now = time.time()
    for i in range(n):
        queue.record(
            f"lnk_{i % 50:011d}", AGENTS[i % 3], b"https://news.example.com/", None, False, ips[i % len(ips)], now
        )
    return queue.take(n)


def cpu_per_click(n: int, addresses: int, geo: _core.GeoDb | None, seed: int) -> float:
    queue = _core.ClickQueue(budget=1 << 30, batch=n, max_user_agent=512, max_referrer=1024, max_source=64)
    batch = clicks(queue, n, addresses, random.Random(seed))
    salts = {day: b"salt" * 8 for day in batch.days()}
    started = time.process_time()
    batch.encode(salts, MAX_TEXT, geo)
    return (time.process_time() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=10_000)
    parser.add_argument("--addresses", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", action="append", default=[], help="an MMDB file to measure (repeatable)")
    args = parser.parse_args()
    databases: dict[str, _core.GeoDb | None] = {"no database": None}
    for path in args.db:
        loaded = _core.GeoDb(Path(path).read_bytes())
        databases[f"{loaded.kind} ({Path(path).name})"] = loaded
    figures: dict[str, list[float]] = {name: [] for name in databases}
    for round_no in range(args.rounds):
        for name, db in databases.items():
            figures[name].append(cpu_per_click(args.clicks, args.addresses, db, round_no))
    print(f"{args.clicks} clicks a batch from {args.addresses} addresses, {args.rounds} rounds; CPU per click, median:")
    plain = statistics.median(figures["no database"])
    for name, runs in figures.items():
        mid = statistics.median(runs)
        print(f"  {name:40s} {mid:7.2f} µs   ({mid / plain:.2f}x)")


if __name__ == "__main__":
    main()
