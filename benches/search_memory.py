"""The search index's memory against its text: 2,000 links with ~4 KB notes of random words (nearly every word
different: the worst case) and of common English words, each built in a fresh process.

    .venv/bin/python benches/search_memory.py

Prints one JSON line per corpus: indexed text bytes, `memory_bytes()` after `shrink_to_fit()` and its ratio to
the text (goal ≤ 3), the process's resident growth over the build, the build's CPU time, and the CPU time of a few
queries over the built index (medians of 15, ms).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, os, statistics, sys, time
from tests.core.test_search_memory import build, corpus, text_bytes
from slugline._core import SearchIndex

def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

english = sys.argv[1] == "english"
warm = build(corpus(english, links=20, seed=99))
warm.search("abcdef")
del warm
links = corpus(english)
before = resident()
started = time.process_time()
index = SearchIndex()
for link in links:
    index.upsert(**link)
index.shrink_to_fit()
build_s = time.process_time() - started
growth = resident() - before
text = text_bytes(links)
words = links[7]["note"].split()
word = max(words[:50], key=len)
long = [w for w in words if len(w) >= 6][:16]
queries = {
    "exact": ("search", word),
    "prefix": ("search", word[:4]),
    "typo": ("search", word[:2] + word[3] + word[2] + word[4:]),
    "substring (filter)": ("filter", word[1:-1]),
    "16 typo terms": ("search", " ".join(w[:2] + w[3] + w[2] + w[4:] for w in long)),
}
times = {}
for name, (op, query) in queries.items():
    run = getattr(index, op)
    spent = []
    for _ in range(15):
        started = time.process_time()
        run(query) if op == "filter" else run(query, 20)
        spent.append(time.process_time() - started)
    times[name] = round(statistics.median(spent) * 1e3, 3)
print(json.dumps({
    "corpus": sys.argv[1],
    "text_bytes": text,
    "memory_bytes": index.memory_bytes(),
    "bytes_per_text_byte": round(index.memory_bytes() / text, 2),
    "rss_growth_bytes": growth,
    "rss_per_text_byte": round(growth / text, 2),
    "build_cpu_s": round(build_s, 3),
    "query_cpu_ms": times,
}))
"""


def main() -> None:
    for corpus in ("random", "english"):
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, corpus], cwd=ROOT, capture_output=True, text=True, check=True
        )
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
