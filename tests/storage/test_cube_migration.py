"""Migration 0009 builds the roll-up cubes from an existing click log: analytics answer afterwards exactly what
the click rows say (unique visitors: the distinct visitor hashes of each day, summed), on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from slugline.analytics import service as analytics
from slugline.common import inputs
from slugline.common.caller import Caller
from slugline.runtime import Runtime
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.support.helpers import make_settings

NOW = datetime.now(UTC).replace(microsecond=0)
DEVICES = ["desktop", "mobile", "tablet", "bot"]
SOURCES = ["direct", "google.com", "newsletter", "qr"]
LINKS = {"lnk_pub00000001": "public", "lnk_pub00000002": "unlisted", "lnk_hid00000001": "private"}


def _clicks(n: int) -> list[dict[str, object]]:
    rng = random.Random(9)
    rows = []
    for _ in range(n):
        source = rng.choice(SOURCES)
        person = rng.randrange(60)  # one user agent each, hence one device, browser and os
        rows.append(
            {
                "link": rng.choice(list(LINKS)),
                "at": NOW - timedelta(days=rng.randrange(40), seconds=rng.randrange(86_400)),
                "device": DEVICES[person % 4],
                "browser": ["Chrome", "Safari", "Firefox"][person % 3],
                "os": ["Windows", "iOS", "Android"][person % 5 % 3],
                "source": source,
                "referrer": "google.com" if source == "google.com" else None,
                # the day's keyed hash of IP and user agent: another person, or the same one another day, differs
                "visitor": hashlib.sha256(f"{person}".encode()).hexdigest()[:32],
            }
        )
    return rows


def _expected(
    rows: list[dict[str, object]], first: datetime, public_only: bool
) -> tuple[int, int, Counter[str], Counter[str]]:
    counted = [
        r
        for r in rows
        if r["device"] != "bot"
        and r["at"].date() >= first.date()  # type: ignore[attr-defined]
        and (not public_only or LINKS[str(r["link"])] != "private")
    ]
    visitors = {(r["at"].date(), r["visitor"]) for r in counted}  # type: ignore[attr-defined]
    return (
        len(counted),
        len(visitors),
        Counter(str(r["source"]) for r in counted),
        Counter(str(r["link"]) for r in counted),
    )


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_cubes_built_from_the_click_log_answer_what_the_rows_say(
    store: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "utcnow", lambda: NOW)  # the periods end on the day the rows were made for
    url = f"sqlite:///{tmp_path / 'c.db'}" if store == "sqlite" else request.getfixturevalue("pg_url")
    engine = create_engine(normalize_url(url))
    migrate.upgrade(engine, "0008")
    rows = _clicks(3000)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO accounts (id, username, password_hash, plan, created_at, links_version) "
                "VALUES (1, 'ann', 'x', 'pro', :now, 0)"
            ),
            {"now": NOW},
        )
        for link, visibility in LINKS.items():
            conn.execute(
                text(
                    "INSERT INTO links (id, account_id, slug, destination_url, hashtags, visibility, clicks, "
                    "created_at, updated_at) VALUES (:id, 1, :id, 'https://example.com/', '[]', :v, 0, :now, :now)"
                ),
                {"id": link, "v": visibility, "now": NOW},
            )
        conn.execute(
            text(
                "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
                "VALUES (:link, :at, :device, :browser, :os, :source, :referrer, :visitor)"
            ),
            rows,
        )
    migrate.upgrade(engine)
    engine.dispose()
    runtime = Runtime.create(make_settings(url))
    try:
        for public_only, days in ((False, 30), (True, 30), (False, 7), (False, 40), (True, 17)):
            caller = Caller(1, "ann", "pro", "public" if public_only else "full", NOW)
            stats = analytics.analytics_on_thread(runtime, caller, {"days": days})
            first = NOW - timedelta(days=days - 1)
            total, visitors, sources, per_link = _expected(rows, first, public_only)
            assert (stats["total_clicks"], stats["unique_visitors"]) == (total, visitors)
            assert {s["source"]: s["clicks"] for s in stats["sources"]} == dict(sources)
            assert sum(bucket["clicks"] for bucket in stats["clicks"]) == total
            assert {t["id"]: t["clicks"] for t in stats["top_links"]} == dict(per_link)
    finally:
        runtime.close()
