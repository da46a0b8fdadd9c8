"""Clicks on days gone by, recorded through the click writer as the servers record them, for analytics tests that
need closed days (caches, month packs)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from starlette.testclient import TestClient

from slugline.clicks.buffer import ClickRecorder
from slugline.runtime import Runtime
from tests.support.helpers import Account

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"
TODAY = int(time.time() // 86_400)


def record(runtime: Runtime, clicks: list[tuple[str, int, str, str | None]]) -> None:
    """(link id, epoch day, user agent, utm_source) clicks, through the click writer, a batch a day (the writer
    keeps the salts of a few days at a time); each click its own visitor."""
    for day in sorted({c[1] for c in clicks}):
        recorder = ClickRecorder(runtime)
        for n, (link_id, _, agent, source) in enumerate(c for c in clicks if c[1] == day):
            when = min(day * 86_400 + 3_600 + n, time.time() - 1)
            recorder.record((link_id, when, agent.encode(), b"", source, False, f"198.51.100.{n % 250}"))
        asyncio.run(recorder.flush())
        assert len(recorder) == 0 and recorder.dropped == 0


def link(client: TestClient, who: Account, slug: str) -> str:
    made = client.post("/api/v1/links", headers=who.auth(), json={"destination_url": "https://e.org/", "slug": slug})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def clicked(
    client: TestClient, who: Account, runtime: Runtime, **clicks: Sequence[tuple[int, str, str | None]]
) -> list[str]:
    """A link for each slug named, with its (epoch day, user agent, utm_source) clicks recorded; their ids."""
    ids = {slug: link(client, who, slug) for slug in clicks}
    record(runtime, [(ids[slug], *click) for slug, made in clicks.items() for click in made])
    return list(ids.values())


def get_json(client: TestClient, who: Account, path: str = "/analytics", key: str = "full", **params: Any) -> Any:
    answer = client.get(f"/api/v1{path}", params=params, headers=who.auth(key))
    assert answer.status_code == 200, answer.text
    return answer.json()
