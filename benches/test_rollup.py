"""Click classification and roll-up: the Rust core against the pure-Python reference (tests/support/reference.py).

    python -m pytest benches/test_rollup.py --benchmark-only --timeout 0

Goals: 1M clicks rolled up in <= 100 ms, >= 20x the reference. Compare the `mean` columns within a group.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from tests.support import reference

from slugline import _core

CLICKS, LINKS, DAYS = 1_000_000, 100, 30
AGENTS = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 "
    "Safari/605.1.15",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "curl/8.5.0",
]


@pytest.fixture(scope="module")
def batch() -> _core.ClickBatch:
    return _core.ClickBatch.synthetic(CLICKS, LINKS, DAYS, 7)


@pytest.fixture(scope="module")
def reference_input(batch: _core.ClickBatch) -> list[tuple[str, float, str, str]]:
    """The same clicks as the reference roll-up takes them: (link_id, timestamp, device, source)."""
    return [(row[0], row[1], row[2], row[5]) for row in batch.rows()]


def _info(benchmark: Any, group: str, **extra: Any) -> None:
    benchmark.group = group
    benchmark.extra_info.update(extra)


def test_rollup_rust(benchmark: Any, batch: _core.ClickBatch) -> None:
    _info(benchmark, f"rollup of {CLICKS:,} clicks", clicks=CLICKS, links=LINKS, days=DAYS, goal_ms=100)
    result = benchmark(batch.rollup)
    assert len(result) > 0


def test_rollup_reference(benchmark: Any, batch: _core.ClickBatch, reference_input: list[Any]) -> None:
    _info(benchmark, f"rollup of {CLICKS:,} clicks", clicks=CLICKS, links=LINKS, days=DAYS)
    result = benchmark.pedantic(reference.rollup, args=(reference_input,), rounds=3, iterations=1)
    assert result == batch.rollup()  # same answer, so the timings compare like with like


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_classify_user_agent(benchmark: Any, impl: str) -> None:
    classify = _core.classify_user_agent if impl == "rust" else reference.classify_user_agent
    agents = AGENTS * 1250  # 10,000 user agents
    _info(benchmark, "classify 10,000 user agents", agents=len(agents))
    result = benchmark(lambda: [classify(agent) for agent in agents])
    assert result[: len(AGENTS)] == [reference.classify_user_agent(agent) for agent in AGENTS]


class Click(NamedTuple):
    link_id: str
    timestamp: float
    user_agent: str
    referrer: str | None
    utm_source: str | None
    via_qr: bool
    visitor_salt: bytes
    ip: str


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_classify_flush_batch(benchmark: Any, impl: str) -> None:
    """What the flusher does per batch: 1,000 clicks classified (device, source, visitor hash) and rolled up."""
    make = _core.ClickBatch if impl == "rust" else reference.ClickBatch
    clicks = [
        Click(
            link_id=f"lnk_{i % 50:011d}",
            timestamp=1.8e9 + i,
            user_agent=AGENTS[i % len(AGENTS)],
            referrer="https://www.example.com/a" if i % 3 else None,
            utm_source="news" if i % 7 == 0 else None,
            via_qr=i % 11 == 0,
            visitor_salt=b"s" * 32,
            ip=f"10.0.{i % 256}.{i % 97}",
        )
        for i in range(1000)
    ]
    _info(benchmark, "flush batch of 1,000 clicks", clicks=len(clicks))

    def run() -> list[tuple[str, int, str, str, int]]:
        batch: Any = make()
        for c in clicks:
            batch.add(
                link_id=c.link_id,
                timestamp=c.timestamp,
                user_agent=c.user_agent,
                referrer=c.referrer,
                utm_source=c.utm_source,
                via_qr=c.via_qr,
                visitor_salt=c.visitor_salt,
                ip=c.ip,
            )
        rolled: list[tuple[str, int, str, str, int]] = batch.rollup()
        return rolled

    assert len(benchmark(run)) > 0
