"""What one click costs on its way to the database, per step, 1,000 clicks at a time (divide the means by 1,000):

    python -m pytest benches/test_click_path.py --benchmark-only --timeout 0

- `record`: the redirect's one call into the Rust queue (holds the GIL; the only step on the serving thread).
- `encode`: classification (each distinct User-Agent once), visitor hashes and roll-up (the GIL released).
- `values` (SQLite) / `copy_text` (PostgreSQL): the rows as the database takes them.
- `write_sqlite`: the whole write of one batch to a SQLite file (the driver releases the GIL while SQLite works).
- `write_sqlite_spread`: the same for traffic spread over 1,000 links, 1,000 and 10,000 clicks to a write (divide
  by the clicks of the write): the pages a commit touches grow with the links in it, not with its clicks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture
from sqlalchemy import text

from slugline import _core
from slugline.accounts import service as accounts
from slugline.clicks.buffer import ClickRecorder
from slugline.clicks.store import MAX_TEXT, write_batch
from slugline.common.caller import Caller
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage.migrate import upgrade

BATCH = 1000
AGENT = (
    b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
REFERRER = b"https://news.example.com/item?id=1"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, str]]:
    path: Path = tmp_path_factory.mktemp("clicks") / "bench.db"
    rt = Runtime.create(Settings(database_url=f"sqlite:///{path}", secret_key="bench-" + "s" * 40))
    upgrade(rt.db.engine)
    accounts.register(rt, {"username": "bench", "password": "bench-password"}, plan="pro")
    with rt.db.engine.connect() as conn:
        account_id = conn.execute(text("SELECT id FROM accounts WHERE username = 'bench'")).scalar_one()
    caller = Caller(account_id, "bench", "pro", "full", datetime.now(UTC))
    link = links.create_on_thread(rt, caller, {"destination_url": "https://example.org/bench"})
    yield rt, link["id"]
    rt.db.dispose()


def fill(queue: _core.ClickQueue, link_id: str) -> None:
    for i in range(BATCH):
        queue.record(link_id, AGENT, REFERRER, None, False, f"198.51.100.{i % 250}")


def test_record(benchmark: BenchmarkFixture, runtime: tuple[Runtime, str]) -> None:
    rt, link_id = runtime
    recorder = ClickRecorder(rt)

    def record() -> None:
        fill(recorder.queue, link_id)
        recorder.queue.release(recorder.queue.take(BATCH))

    benchmark(record)


@pytest.fixture
def taken(runtime: tuple[Runtime, str]) -> tuple[ClickRecorder, _core.Clicks, dict[int, bytes]]:
    rt, link_id = runtime
    recorder = ClickRecorder(rt)
    fill(recorder.queue, link_id)
    clicks = recorder.queue.take(BATCH)
    return recorder, clicks, recorder.salts.get(rt.db, clicks.days())


def test_encode(benchmark: BenchmarkFixture, taken: tuple[ClickRecorder, _core.Clicks, dict[int, bytes]]) -> None:
    _, clicks, salts = taken
    encoded = benchmark(clicks.encode, salts, MAX_TEXT)
    assert len(encoded) == BATCH


def test_values(benchmark: BenchmarkFixture, taken: tuple[ClickRecorder, _core.Clicks, dict[int, bytes]]) -> None:
    _, clicks, salts = taken
    encoded = clicks.encode(salts, MAX_TEXT)
    values = benchmark(lambda: sum(len(chunk) for chunk in encoded.values(None, 250)))  # each list made when asked
    assert values == BATCH * 8


def test_copy_text(benchmark: BenchmarkFixture, taken: tuple[ClickRecorder, _core.Clicks, dict[int, bytes]]) -> None:
    _, clicks, salts = taken
    rows = benchmark(clicks.encode(salts, MAX_TEXT).copy_text, None)
    assert rows.count(b"\n") == BATCH


def test_write_sqlite(
    benchmark: BenchmarkFixture,
    runtime: tuple[Runtime, str],
    taken: tuple[ClickRecorder, _core.Clicks, dict[int, bytes]],
) -> None:
    rt, _ = runtime
    _, clicks, salts = taken
    encoded = clicks.encode(salts, MAX_TEXT)
    assert benchmark(write_batch, rt.db, encoded) == BATCH


@pytest.fixture(scope="module")
def spread(runtime: tuple[Runtime, str]) -> list[str]:
    rt, _ = runtime
    with rt.db.engine.connect() as conn:
        account_id = conn.execute(text("SELECT id FROM accounts WHERE username = 'bench'")).scalar_one()
    caller = Caller(account_id, "bench", "pro", "full", datetime.now(UTC))
    return [
        links.create_on_thread(rt, caller, {"destination_url": f"https://example.org/{i}"})["id"] for i in range(1000)
    ]


@pytest.mark.parametrize("clicks", [BATCH, 10 * BATCH])
def test_write_sqlite_spread(
    benchmark: BenchmarkFixture, runtime: tuple[Runtime, str], spread: list[str], clicks: int
) -> None:
    rt, _ = runtime
    recorder = ClickRecorder(rt)

    def encoded() -> tuple[tuple[_core.EncodedClicks], dict[str, object]]:
        for i in range(clicks):
            recorder.queue.record(spread[i % len(spread)], AGENT, REFERRER, None, False, f"198.51.100.{i % 250}")
        taken = recorder.queue.take(clicks)
        batch = taken.encode(recorder.salts.get(rt.db, taken.days()), MAX_TEXT)
        recorder.queue.release(taken)
        return (batch,), {}

    pedantic: Callable[..., int] = benchmark.pedantic  # a fresh batch for every round, made outside the timing
    written = pedantic(lambda batch: write_batch(rt.db, batch), setup=encoded, rounds=30 * BATCH // clicks)
    assert written == clicks
