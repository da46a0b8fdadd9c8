"""The search index on the adversarial corpus: every field at its maximum length, filled with random words
(title 255, description 1024, note 4096, URL 2048, slug 64, 30 hashtags of 64 characters).

    .venv/bin/python benches/search_adversarial.py                      # SQLite, 5,000 links (44 MiB of text)
    .venv/bin/python benches/search_adversarial.py --database-url postgresql://postgres@127.0.0.1:5432/test
    .venv/bin/python benches/search_adversarial.py --worst-100k         # worst queries, test_search.py's 100k links

Reports index bytes per byte of indexed text (goal ≤ 3), the worker's RSS growth, the cold build (one build
for 4 concurrent first searches), catching up with one change made by another worker (through the change feed),
and p50/p99 of the worst queries, all through the worker's SearchCache on a real database.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from slugline.common.clock import utcnow
from slugline.common.models import Account, Link, LinkRecord
from slugline.links.service import write_new
from slugline.runtime import Runtime
from slugline.search.cache import SearchCache
from slugline.search.queries import Matching, Ranked
from slugline.settings import Settings
from slugline.storage import migrate
from slugline.storage.loopwrite import drive, session_run

WORST = {
    "26 one-letter terms": " ".join(string.ascii_lowercase),
    "16 typo terms": "kubernetse postgers databse roadmpa marketign podcats articel tutorail handbok secruity "
    "privacu analytcs dashbaord reprot invocie relase",
    "one 500-char term": "x" * 500,
    "one letter": "s",
    "vowels": "a e i o u",
    "16 three-letter prefixes": "dat pos red kub doc clo rec cof tra mus gui des typ sea eng rel",
    "hashtag prefix": "#a",
}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Corpus:
    def __init__(self, seed: int, vocabulary: int) -> None:
        self.rng = random.Random(seed)
        letters = string.ascii_lowercase
        self.words = [
            "".join(self.rng.choice(letters) for _ in range(self.rng.randint(3, 10))) for _ in range(vocabulary)
        ]

    def fill(self, limit: int, sep: str = " ") -> str:
        out: list[str] = []
        size = 0
        while True:
            word = self.rng.choice(self.words)
            word = word.capitalize() if self.rng.random() < 0.3 else word
            if size + len(word) + len(sep) > limit:
                return sep.join(out)
            out.append(word)
            size += len(word) + len(sep)

    def link(self, account_id: int, i: int) -> dict[str, Any]:
        now = utcnow()
        return {
            "id": f"lnk_{i:011d}",
            "account_id": account_id,
            "slug": f"{i}-{self.fill(56, '-')}",
            "destination_url": "https://example.com/" + self.fill(2048 - 20, "/"),
            "title": self.fill(255),
            "description": self.fill(1024),
            "note": self.fill(4096),
            "hashtags": [self.fill(64, "-") for _ in range(30)],
            "visibility": "public",
            "clicks": 0,
            "created_at": now,
            "updated_at": now,
        }


def text_bytes(link: dict[str, Any]) -> int:
    fields = ("slug", "destination_url", "title", "description", "note")
    return sum(len(link[f].encode()) for f in fields) + sum(len(t.encode()) for t in link["hashtags"])


def setup(rt: Runtime, links: int, seed: int) -> tuple[int, int]:
    corpus = Corpus(seed, 50_000)
    with rt.db.session() as session:
        account = Account(username="bench", password_hash="x", plan="pro", created_at=utcnow(), links_version=0)
        session.add(account)
        session.flush()
        account_id = account.id
        total = 0
        for start in range(0, links, 500):
            rows = [corpus.link(account_id, i) for i in range(start, min(links, start + 500))]
            total += sum(text_bytes(r) for r in rows)
            session.execute(insert(Link), rows)
        # On SQLite each row went into the change feed too (the trigger of migration 0004): start it afresh.
        session.execute(text("DELETE FROM link_changes WHERE account_id = :id"), {"id": account_id})
        session.execute(text("UPDATE accounts SET links_version = 1 WHERE id = :id"), {"id": account_id})
    return account_id, total


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cpu_timed(fn: Any) -> tuple[float, float]:
    """(wall, CPU of this thread) in ms: on a shared machine the CPU time is what the query itself costs."""
    wall, cpu = time.perf_counter(), time.thread_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


def percentiles(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, int(len(values) * 0.99))]


def run(database_url: str, links: int, rounds: int) -> None:
    rt = Runtime.create(Settings(database_url=database_url, secret_key="bench-secret-" + "x" * 40))
    migrate.upgrade(rt.db.engine)
    account_id, text_total = setup(rt, links, seed=7)
    print(f"database: {rt.db.engine.dialect.name}; {links} links, {text_total / 2**20:.1f} MiB of indexed text")

    def search(cache: SearchCache, q: str, op: str = "search") -> Any:
        with rt.db.session() as session:
            if op == "filter":
                return cache.use(session, account_id, Matching(q, public_only=False))
            return cache.use(session, account_id, Ranked(q, 20, public_only=False))

    rt.search = cache = SearchCache(budget_bytes=4 << 30)
    before = rss_mib()
    start = threading.Barrier(4)
    elapsed: list[float] = []

    def first_search() -> None:
        start.wait()
        elapsed.append(timed(lambda: search(cache, "zzz")))

    threads = [threading.Thread(target=first_search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index_bytes = cache.held_bytes
    print(
        f"cold build (4 concurrent first searches): {max(elapsed):.2f} s, builds={cache.builds}; index "
        f"{index_bytes / 2**20:.1f} MiB = {index_bytes / text_total:.2f} bytes per byte of text; "
        f"RSS +{rss_mib() - before:.0f} MiB"
    )

    other = SearchCache(budget_bytes=4 << 30)  # another worker, already warm
    search(other, "zzz")
    corpus = Corpus(99, 50_000)
    with rt.db.session() as session:
        record = LinkRecord(**corpus.link(account_id, links + 1))
        drive(write_new(rt.db.engine.dialect.name, record, session_run(session)))
    catch_up = timed(lambda: search(other, "zzz"))
    print(f"one change from another worker: next search {catch_up * 1000:.1f} ms (builds={other.builds}, no reload)")

    for name, q in WORST.items():
        for op in ("search", "filter"):
            runs = [cpu_timed(lambda q=q, op=op: search(cache, q, op)) for _ in range(rounds)]
            wall, cpu = percentiles([r[0] for r in runs]), percentiles([r[1] for r in runs])
            print(
                f"  {op:6} {name:26} wall p50 {wall[0]:7.2f} p99 {wall[1]:7.2f} ms"
                f"   CPU p50 {cpu[0]:7.2f} p99 {cpu[1]:7.2f} ms"
            )
    rt.close()


def worst_100k(rounds: int) -> None:
    """CPU and wall time of the worst queries on the 100k-link corpus of `benches/test_search.py` (in memory)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for `tests` (test_search needs it)
    from slugline._core import SearchIndex
    from test_search import generate  # a sibling: this script's own folder is first on sys.path

    index = SearchIndex()
    for link in generate(100_000):
        index.upsert(**link)
    index.shrink_to_fit()
    for name, q in WORST.items():
        for op in ("search", "filter"):
            call = (lambda q=q: index.search(q, 20)) if op == "search" else (lambda q=q: index.filter(q))
            runs = [cpu_timed(call) for _ in range(rounds)]
            wall, cpu = percentiles([r[0] for r in runs]), percentiles([r[1] for r in runs])
            print(
                f"  {op:6} {name:26} wall p50 {wall[0]:7.2f} p99 {wall[1]:7.2f} ms"
                f"   CPU p50 {cpu[0]:7.2f} p99 {cpu[1]:7.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--links", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--worst-100k", action="store_true", help="only the worst queries on 100k typical links")
    args = parser.parse_args()
    if args.worst_100k:
        worst_100k(args.rounds)
        return
    if args.database_url:
        run(args.database_url, args.links, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(f"sqlite:///{tmp}/bench.db", args.links, args.rounds)


if __name__ == "__main__":
    main()
