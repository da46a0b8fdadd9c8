"""Against the real `slugline serve`: accounts whose search indexes do not fit `SLUGLINE_SEARCH_MEMORY_MB`, searched
by many callers at once, leave the worker within the budget plus a bounded margin, and still get every answer."""

from __future__ import annotations

import concurrent.futures
import random
import string
from pathlib import Path

import httpx
from sqlalchemy import create_engine, insert, text

from slugline.common.clock import utcnow
from slugline.common.models import Link
from tests.support.faults import LIMITLESS
from tests.support.server import ServerFactory, make_account

BUDGET_MB = 4
LINKS = 600  # per account, each with a 4 KB note of random words: 2.4 MB of text, an index of several budgets
ACCOUNTS = 3
SEARCHES = 8  # per account, at once
# What the worker may grow by: the budget, two builds given up at 1.5 budgets, two slices of an eighth of it, and
# room for the rows being read, the threads' stacks and the allocator's own keeping.
MARGIN_MB = BUDGET_MB + 2 * 1.5 * BUDGET_MB + 2 * BUDGET_MB / 8 + 40


def _note(rng: random.Random) -> str:
    words: list[str] = []
    size = 0
    while size < 4_000:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def _peak_kib(pid: int) -> int:
    """The highest resident size a process has had (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def _worker(pid: int) -> int:
    """The one Granian worker under `slugline serve` (the process that serves, and holds the indexes)."""
    found = [pid]
    for parent in found:
        for task in Path(f"/proc/{parent}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    workers = [p for p in found[1:] if "slugline" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    assert len(workers) >= 1, found
    return max(workers, key=_peak_kib)


def test_oversized_accounts_searched_at_once_stay_within_the_budget(
    start_server: ServerFactory, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/search.db"
    server = start_server(url, SLUGLINE_SEARCH_MEMORY_MB=str(BUDGET_MB), **LIMITLESS)
    keys = [make_account(server, f"big{i}") for i in range(ACCOUNTS)]
    engine = create_engine(url)
    rng = random.Random(3)
    with engine.begin() as conn:
        for n, key in enumerate(keys):
            account_id = conn.scalar(text("SELECT id FROM accounts WHERE username = :u"), {"u": key.username})
            now = utcnow()
            rows = [
                {
                    "id": f"lnk_big{n}{i:06d}",
                    "account_id": account_id,
                    "slug": f"big{n}-{i}",
                    "destination_url": f"https://example.com/{n}/{i}",
                    "title": f"needle{n}" if i % 100 == 7 else f"page {i}",
                    "note": _note(rng),
                    "hashtags": [],
                    "visibility": "public",
                    "clicks": 0,
                    "created_at": now,
                    "updated_at": now,
                }
                for i in range(LINKS)
            ]
            conn.execute(insert(Link), rows)
            conn.execute(
                text("UPDATE accounts SET links_version = links_version + 1 WHERE id = :id"), {"id": account_id}
            )
    engine.dispose()

    worker = _worker(server.proc.pid if server.proc else 0)
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=120) as http:
        assert http.get("/links", params={"q": "page"}, headers={"Authorization": f"Bearer {keys[0].full}"}).is_success
        before = _peak_kib(worker)

        def ask(n: int, i: int) -> httpx.Response:
            auth = {"Authorization": f"Bearer {keys[n].full}"}
            if i % 2:
                return http.get("/search", params={"q": f"needle{n}", "limit": 100}, headers=auth)
            return http.get("/links", params={"q": f"needle{n}", "per": 100}, headers=auth)

        with concurrent.futures.ThreadPoolExecutor(max_workers=ACCOUNTS * SEARCHES) as pool:
            asked = [pool.submit(ask, n, i) for n in range(ACCOUNTS) for i in range(SEARCHES)]
            answers = [future.result() for future in asked]
    grown_mb = (_peak_kib(worker) - before) / 1024
    print(f"worker grew by {grown_mb:.1f} MB; statuses {sorted(a.status_code for a in answers)}")
    for answer in answers:
        assert answer.status_code in (200, 429), answer.text
        if answer.status_code == 200:
            body = answer.json()
            found = [hit["link"]["slug"] for hit in body["hits"]] if "hits" in body else body["data"]
            assert len(found) == LINKS // 100, body
    assert sum(answer.status_code == 200 for answer in answers) >= ACCOUNTS * SEARCHES // 2, [a.text for a in answers]
    assert grown_mb <= MARGIN_MB, f"the worker grew by {grown_mb:.0f} MB (at most {MARGIN_MB:.0f} MB)"
    assert "scanning it instead" in server.log()
