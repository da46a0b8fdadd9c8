"""A year's per-link count rows of an account with 10,000 links, through the core of whichever checkout runs it.

    python benches/link_counts.py [--rounds 30]

Thirteen rows (twelve month packs and the days since) naming ~9,500 of the links each, ids shaped as the service
makes them (`lnk_` and 11 base62 characters): `_core.top_links(rows, 25)` (a view's top links without the cache),
`_core.link_counts(rows)` (what a worker keeps for the closed days) and 3,000 lookups in it (today's links). Prints
the median and minimum of each in milliseconds. Run it from another checkout's directory with that checkout's
`.venv` for the code before.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from slugline import _core

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def uint(v: int) -> bytes:
    out = bytearray()
    while True:
        low, v = v & 0x7F, v >> 7
        out.append(low | (0x80 if v else 0))
        if not v:
            return bytes(out)


def rows(rnd: random.Random) -> tuple[list[tuple[int, bytes]], list[str]]:
    links = ["lnk_" + "".join(rnd.choice(BASE62) for _ in range(11)) for _ in range(10_000)]
    made = []
    for _ in range(13):
        named = sorted(rnd.sample(links, 9_500))
        column = bytearray(uint(len(named)))
        for link in named:
            column += uint(len(link)) + link.encode() + uint(rnd.randint(1, 300) << 1)  # zigzag of a positive count
        made.append((1, bytes(column)))
    return made, links


def timed(run: Callable[[], object], rounds: int) -> str:
    took = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        took.append((time.perf_counter() - started) * 1000)
    return f"median {statistics.median(took):6.2f} ms, min {min(took):6.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rnd = random.Random(1)
    year, links = rows(rnd)
    kept = _core.link_counts(year)
    today = rnd.sample(links, 3_000)
    print(f"top_links(rows, 25)    {timed(lambda: _core.top_links(year, 25), args.rounds)}")
    print(f"link_counts(rows)      {timed(lambda: _core.link_counts(year), args.rounds)}")
    print(f"LinkCounts.get(3,000)  {timed(lambda: kept.get(today), args.rounds)}")


if __name__ == "__main__":
    main()
