"""The click buffer is bounded in bytes at all times: headers are cut to what is stored when a click is recorded,
clicks past `click_buffer_bytes` are dropped, counted, logged and shown by /health, never lost silently.

The clicks live in Rust memory, which tracemalloc does not see: the process's resident set is measured instead."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from slugline.clicks.buffer import ClickRecorder, RawClick
from slugline.common.bounds import MAX_CLICK_REFERRER, MAX_CLICK_USER_AGENT, MAX_SOURCE
from slugline.runtime import Runtime
from tests.support.helpers import SQLITE_ONLY, Account, ClientFactory, click_recorder, create

HUGE = 300 * 1024  # what Granian lets through as one header


def _click(agent: bytes = b"Mozilla/5.0", referrer: bytes = b"", utm: str | None = None) -> RawClick:
    return ("lnk_AAAAAAAAAAA", time.time(), agent, referrer, utm, False, "203.0.113.9")


def _recorder(make_client: ClientFactory, **settings: int) -> tuple[TestClient, ClickRecorder]:
    tc, _ = make_client(**settings)
    return tc, click_recorder(tc)


@SQLITE_ONLY
def test_headers_are_cut_when_the_click_is_recorded(make_client: ClientFactory) -> None:
    tc, recorder = _recorder(make_client)
    click = _click(b"A" * HUGE, b"https://example.org/" + b"p" * HUGE, "u" * HUGE)
    # Behind a trusted proxy the address is whatever X-Forwarded-For said: it is cut too (it only feeds the hash).
    click = (*click[:6], "f" * HUGE)
    assert tc.portal is not None
    tc.portal.call(recorder.record, click)
    kept = recorder.queue.waiting()[-1]
    assert (len(kept[2]), len(kept[3]), len(kept[4] or "")) == (MAX_CLICK_USER_AGENT, MAX_CLICK_REFERRER, MAX_SOURCE)
    assert kept[6] == "f" * 64
    assert recorder.bytes < 2 * (MAX_CLICK_USER_AGENT + MAX_CLICK_REFERRER)


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


@SQLITE_ONLY
def test_huge_user_agents_cost_their_cut_size(make_client: ClientFactory) -> None:
    """20,000 redirects carrying a 300 KB User-Agent and Referer would hold 12 GB uncut; cut, about 25 MB."""
    tc, recorder = _recorder(make_client, click_buffer_bytes=1 << 30)
    agent, referrer = b"A" * HUGE, b"https://r.example/" + b"x" * HUGE

    def flood() -> tuple[int, int, int]:
        """On the event loop, with no await in between: the flusher cannot drain anything meanwhile."""
        before = resident_bytes()
        for i in range(20_000):
            recorder.record(("lnk_AAAAAAAAAAA", time.time(), agent, referrer, None, False, f"203.0.113.{i % 250}"))
        return resident_bytes() - before, len(recorder), recorder.bytes

    assert tc.portal is not None
    grown, held, counted = tc.portal.call(flood)
    assert held == 20_000 and recorder.dropped == 0
    per_click = counted / 20_000
    assert MAX_CLICK_USER_AGENT + MAX_CLICK_REFERRER < per_click < 2 * (MAX_CLICK_USER_AGENT + MAX_CLICK_REFERRER)
    assert grown < 2 * counted + (8 << 20), f"the process grew by {grown} bytes for {counted} counted"


@SQLITE_ONLY
def test_the_byte_budget_holds_and_drops_are_counted(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    budget = 1 << 16
    tc, recorder = _recorder(make_client, click_buffer_bytes=budget)
    assert tc.portal is not None

    def flood() -> int:
        """On the event loop, with no await in between: the flusher cannot drain anything meanwhile."""
        for i in range(5000):
            recorder.record(_click(b"agent %d " % i + b"A" * 600))
            assert recorder.bytes <= budget
        return len(recorder)

    with caplog.at_level(logging.ERROR, logger="slugline.clicks"):
        held = tc.portal.call(flood)
    kept = recorder.queue.waiting()
    stored = sum(len(c[0]) + len(c[2]) + len(c[3]) + len(c[6]) for c in kept)
    assert stored < recorder.bytes <= budget  # the count covers at least the bytes held
    assert 0 < held < 5000 and recorder.dropped == 5000 - held
    assert caplog.text.count("the click buffer is full") == 1  # logged once per episode, not per click
    health = tc.get("/api/v1/health").json()
    assert health["clicks"]["dropped"] == 5000 - held


@SQLITE_ONLY
def test_health_shows_pending_and_dropped_clicks(make_client: ClientFactory, make_account: object) -> None:
    tc, _ = _recorder(make_client)
    health = tc.get("/api/v1/health").json()
    assert health["clicks"] == {"pending": 0, "dropped": 0}


def test_written_clicks_leave_the_budget(client: TestClient, alice: Account, runtime: Runtime) -> None:
    assert create(client, alice, slug="counted").status_code == 201
    recorder = click_recorder(client)
    for _ in range(20):
        client.get("/counted", follow_redirects=False)
    assert client.portal is not None
    client.portal.call(recorder.flush)
    assert len(recorder) == 0 and recorder.bytes == 0 and recorder.dropped == 0
