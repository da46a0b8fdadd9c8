"""The analytics answer as clients rely on it, from clicks made through real redirects: the period and interval it
echoes, the zero-filled series by bucket, the filters (AND, any case), unique visitors, breakdowns and top links, for
the account and for one link (`/analytics`, `/links/{id}/analytics`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.testclient import TestClient

from slugline.analytics.shape import OTHER
from slugline.common.inputs import FILTERS
from tests.support.helpers import CHROME, Account, click_recorder, create

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1"
IPAD = "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 Version/16.6 Mobile/15E148 Safari/604.1"
FIREFOX = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0"
NEWS = "https://www.news.example.com/story"
HOUR = "%Y-%m-%dT%H:00:00Z"
ANSWER = {
    *("days", "from", "to", "interval", "source", "device", "browser", "os", "referrer", "total_clicks"),
    *("unique_visitors", "clicks", "devices", "browsers", "operating_systems", "sources", "referrers", "top_links"),
    *("country", "city", "variant", "countries", "cities", "variants"),
}
VISITS = [  # user agent, referrer, query: desktop 3, mobile 1, tablet 1; each agent one visitor
    (CHROME, NEWS, ""),
    (CHROME, None, "?utm_source=NewsLetter"),
    (IPHONE, NEWS, ""),
    (FIREFOX, None, "?src=qr"),
    (IPAD, None, ""),
]


def visit(client: TestClient, slug: str, visits: list[tuple[str, str | None, str]]) -> None:
    """Each visit through the redirect, then the click buffer written out."""
    for agent, referrer, query in visits:
        headers = {"User-Agent": agent, **({"Referer": referrer} if referrer else {})}
        assert client.get(f"/{slug}{query}", headers=headers, follow_redirects=False).status_code == 302
    assert client.portal is not None
    client.portal.call(click_recorder(client).flush)


def stats(client: TestClient, who: Account, path: str = "/analytics", key: str = "full", **params: Any) -> Any:
    res = client.get(f"/api/v1{path}", params=params, headers=who.auth(key))
    assert res.status_code == 200, res.text
    assert set(res.json()) == ANSWER
    return res.json()


def counts(rows: list[dict[str, Any]], name: str) -> dict[str, int]:
    """A breakdown as {value (lowercased): clicks}."""
    return {row[name].lower(): row["clicks"] for row in rows}


def test_the_period_and_filters_are_echoed(client: TestClient, alice: Account) -> None:
    default = stats(client, alice)
    today = date.fromisoformat(default["to"])
    assert (default["days"], default["from"], default["interval"]) == (30, str(today - timedelta(29)), "day")
    assert all(default[name] is None for name in FILTERS)
    last3 = stats(client, alice, days=3)
    assert (last3["days"], last3["from"], last3["to"]) == (3, str(today - timedelta(2)), str(today))
    assert [bucket["date"] for bucket in last3["clicks"]] == [str(today - timedelta(d)) for d in (2, 1, 0)]
    span = stats(client, alice, **{"from": "2026-01-30", "to": "2026-02-02"})
    assert (span["days"], span["from"], span["to"], len(span["clicks"])) == (4, "2026-01-30", "2026-02-02", 4)
    open_end = stats(client, alice, **{"from": str(today - timedelta(9))})
    assert (open_end["days"], open_end["to"]) == (10, str(today))
    given = {"source": "NewsLetter", "device": "mobile", "browser": "CHROME", "os": "Windows", "referrer": "News.COM"}
    applied = stats(client, alice, **given)
    assert {name: applied[name] for name in given} == {name: value.lower() for name, value in given.items()}


def test_the_series_follows_the_interval(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="series")
    visit(client, "series", VISITS[:3])
    now = datetime.now(UTC)
    today = now.date()
    hourly = stats(client, alice, days=2, interval="hour")
    first = datetime.combine(today - timedelta(1), datetime.min.time(), UTC)
    hours = [(first + timedelta(hours=h)).strftime(HOUR) for h in range(48)]
    assert (hourly["interval"], [bucket["date"] for bucket in hourly["clicks"]]) == ("hour", hours)
    recent = {(now - timedelta(hours=h)).strftime(HOUR) for h in (0, 1)}  # an hour may have turned since the clicks
    assert sum(bucket["clicks"] for bucket in hourly["clicks"] if bucket["date"] in recent) == 3
    assert hourly["total_clicks"] == 3
    daily = stats(client, alice, days=7)
    assert [bucket["clicks"] for bucket in daily["clicks"]] == [0] * 6 + [3]
    start = today - timedelta(20)
    weekly = stats(client, alice, interval="week", **{"from": str(start)})
    monday = start - timedelta(start.weekday())  # each week's bucket is named by its Monday
    mondays = [str(monday + timedelta(weeks=w)) for w in range((today - monday).days // 7 + 1)]
    assert [bucket["date"] for bucket in weekly["clicks"]] == mondays
    assert [bucket["clicks"] for bucket in weekly["clicks"]] == [0] * (len(mondays) - 1) + [3]
    start = today - timedelta(60)
    monthly = stats(client, alice, interval="month", **{"from": str(start), "to": str(today)})
    months = [date(start.year + (start.month - 1 + m) // 12, (start.month - 1 + m) % 12 + 1, 1) for m in range(4)]
    firsts = [str(first) for first in months if first <= today]  # 60 days reach into 3 months, or 4
    assert [bucket["date"] for bucket in monthly["clicks"]] == firsts
    assert [bucket["clicks"] for bucket in monthly["clicks"]] == [0] * (len(firsts) - 1) + [3]


def test_filters_combine_and_ignore_case(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="filtered")
    visit(client, "filtered", VISITS)
    everything = stats(client, alice, days=1)
    assert (everything["total_clicks"], everything["unique_visitors"]) == (5, 4)
    assert counts(everything["devices"], "device") == {"desktop": 3, "mobile": 1, "tablet": 1}
    assert counts(everything["browsers"], "browser") == {"chrome": 2, "safari": 2, "firefox": 1}
    assert counts(everything["operating_systems"], "os") == {"windows": 2, "ios": 1, "macos": 1, "ipados": 1}
    sources = {"news.example.com": 2, "newsletter": 1, "qr": 1, "direct": 1}
    assert counts(everything["sources"], "source") == sources
    assert counts(everything["referrers"], "referrer")["news.example.com"] == 2
    for filters, clicks, visitors in [
        ({"device": "desktop"}, 3, 2),
        ({"device": "tablet"}, 1, 1),
        ({"device": "other"}, 0, 0),
        ({"browser": "SAFARI"}, 2, 2),
        ({"os": "macOS"}, 1, 1),
        ({"referrer": "News.Example.com"}, 2, 2),
        ({"source": "QR"}, 1, 1),
        ({"source": "newsletter", "browser": "chrome"}, 1, 1),
        ({"browser": "chrome", "referrer": "news.example.com", "device": "desktop", "os": "windows"}, 1, 1),
        ({"browser": "chrome", "device": "mobile"}, 0, 0),
    ]:
        only = stats(client, alice, days=1, **filters)
        assert (only["total_clicks"], only["unique_visitors"]) == (clicks, visitors), filters
        assert sum(bucket["clicks"] for bucket in only["clicks"]) == clicks, filters
        assert sum(d["clicks"] for d in only["devices"]) == clicks, filters  # every figure follows the filters
        assert [t["clicks"] for t in only["top_links"]] == ([clicks] if clicks else []), filters
    safari = stats(client, alice, days=1, browser="safari")
    assert counts(safari["operating_systems"], "os") == {"ios": 1, "ipados": 1}


def test_unique_visitors_and_a_links_own_figures(client: TestClient, alice: Account) -> None:
    a = create(client, alice, slug="uv-a").json()
    b = create(client, alice, slug="uv-b").json()
    visit(client, "uv-a", [(f"{CHROME} v{n}", None, "") for n in (0, 1, 2, 0, 0)])  # visitor 0 three times
    visit(client, "uv-b", [(f"{CHROME} v{n}", None, "") for n in (1, 3)])
    hide = client.put(f"/api/v1/links/{b['id']}", json={"visibility": "private"}, headers=alice.auth())
    assert hide.status_code == 200, hide.text
    account = stats(client, alice, days=7)
    assert (account["total_clicks"], account["unique_visitors"]) == (7, 4)  # distinct over the account's links
    own = stats(client, alice, f"/links/{a['id']}/analytics", days=7)
    assert (own["total_clicks"], own["unique_visitors"], own["days"]) == (5, 3, 7)
    assert [(t["id"], t["clicks"]) for t in own["top_links"]] == [(a["id"], 5)]
    assert [bucket["clicks"] for bucket in own["clicks"]][-1] == 5
    hidden = stats(client, alice, f"/links/{b['id']}/analytics", days=1, interval="hour")
    assert (hidden["total_clicks"], hidden["unique_visitors"], len(hidden["clicks"])) == (2, 2, 24)
    public = stats(client, alice, key="public", days=7)  # the private link and its visitor 3 left out
    assert (public["total_clicks"], public["unique_visitors"]) == (5, 3)
    assert stats(client, alice, f"/links/{a['id']}/analytics", key="public", days=7)["unique_visitors"] == 3


def test_top_links_are_at_most_ten_and_breakdowns_end_with_other(client: TestClient, alice: Account) -> None:
    for i in range(12):  # link i gets i + 1 clicks, each from a referrer of its own
        create(client, alice, slug=f"top-{i:02d}")
        visit(client, f"top-{i:02d}", [(CHROME, f"https://r{i:02d}-{n}.example/", "") for n in range(i + 1)])
    answer = stats(client, alice, days=1)
    assert [t["slug"] for t in answer["top_links"]] == [f"top-{i:02d}" for i in range(11, 1, -1)]
    assert [t["clicks"] for t in answer["top_links"]] == list(range(12, 2, -1))
    assert all(set(t) == {"id", "slug", "title", "clicks"} for t in answer["top_links"])
    referrers = answer["referrers"]  # 78 hosts of one click each: 20 of them, and the rest as one row
    assert len(referrers) == 21 and referrers[-1] == {"referrer": OTHER, "clicks": 78 - 20}
