"""`GET /clicks/export` and `GET /links/{id}/clicks/export`: the click log row by row as CSV and NDJSON, against clicks
made through real redirects; periods and filters; what a public-only key may export; refused parameters."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import orjson
import pytest
from starlette.testclient import TestClient

from slugline.clicks.buffer import RawClick
from slugline.common.clock import isoformat
from tests.support.helpers import CHROME, SQLITE_ONLY, Account, click_recorder, create

COLUMNS = ["clicked_at", "link_id", "slug", "device", "browser", "os", "source", "referrer"]
COLUMNS += ["country", "region", "city", "variant"]
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 "
    "Mobile/15E148 Safari/604.1"
)
EXPORT = "/api/v1/clicks/export"


def link_export(link_id: str) -> str:
    return f"/api/v1/links/{link_id}/clicks/export"


def visit(client: TestClient, slug: str, agent: str = CHROME, referrer: str | None = None, **query: str) -> None:
    headers = {"User-Agent": agent, **({"Referer": referrer} if referrer else {})}
    res = client.get(f"/{slug}", params=query, headers=headers, follow_redirects=False)
    assert res.status_code == 302, res.text


def flush(client: TestClient) -> None:
    """Write the clicks the redirects left in the buffer."""
    assert client.portal is not None
    client.portal.call(click_recorder(client).flush)


def record(client: TestClient, clicks: list[RawClick]) -> None:
    """Clicks at the times given, through the same buffer the redirects use (a redirect cannot choose its time); each
    written on its own, as a worker keeps the visitor salts of a few days only and these may be weeks apart."""
    recorder = click_recorder(client)
    assert client.portal is not None
    for click in clicks:
        client.portal.call(recorder.record, click)
        flush(client)


def get(client: TestClient, who: Account, path: str = EXPORT, key: str = "full", **params: Any) -> httpx2.Response:
    return client.get(path, params=params, headers=who.auth(key))


def csv_rows(res: httpx2.Response) -> list[list[str]]:
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "text/csv; charset=utf-8"
    header, *rows = csv.reader(io.StringIO(res.text, newline=""))
    assert header == COLUMNS
    return rows


def ndjson_rows(res: httpx2.Response) -> list[dict[str, Any]]:
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "application/x-ndjson"
    rows = [orjson.loads(line) for line in res.content.splitlines()]
    assert all(list(row) == COLUMNS for row in rows)
    return rows


def as_csv(value: str | int | None) -> str:
    """What the CSV shows of a value: empty for none, a number in decimal, an apostrophe before what a spreadsheet
    would run."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


def test_rows_are_the_click_log_oldest_first_in_both_formats(client: TestClient, alice: Account) -> None:
    a = create(client, alice, slug="exp-a").json()
    b = create(client, alice, slug="exp-b", visibility="unlisted").json()
    visit(client, "exp-a", utm_source="newsletter")
    visit(client, "exp-b", "curl/8.5.0", referrer="https://www.News.Example.com/post")  # a bot: kept, as device bot
    visit(client, "exp-a", IPHONE, utm_source='=1+2,"x"')
    visit(client, "exp-a", src="qr")
    visit(client, "exp-b", FIREFOX, referrer="https://-evil.example/")
    flush(client)

    # The click log itself, per link (newest first there), is what each row must say.
    logged = {
        link["id"]: get(client, alice, f"/api/v1/links/{link['id']}/clicks").json()["data"][::-1] for link in (a, b)
    }
    order = [a, b, a, a, b]  # the redirects, in the order they were made
    expected = [{"link_id": link["id"], "slug": link["slug"], **logged[link["id"]].pop(0)} for link in order]
    assert [(row["device"], row["source"], row["referrer"]) for row in expected] == [
        ("desktop", "newsletter", None),
        ("bot", "news.example.com", "news.example.com"),
        ("mobile", '=1+2,"x"', None),
        ("desktop", "qr", None),
        ("desktop", "-evil.example", "-evil.example"),
    ]

    today = datetime.now(UTC).date()
    period = {"from": (today - timedelta(days=1)).isoformat(), "to": (today + timedelta(days=1)).isoformat()}
    ndjson = get(client, alice, format="ndjson", **period)
    assert ndjson_rows(ndjson) == [{name: row[name] for name in COLUMNS} for row in expected]
    name = f"clicks-{period['from']}-{period['to']}"
    assert ndjson.headers["content-disposition"] == f'attachment; filename="{name}.ndjson"'
    res = get(client, alice, **period)
    assert csv_rows(res) == [[as_csv(row[name]) for name in COLUMNS] for row in expected]
    assert res.headers["content-disposition"] == f'attachment; filename="{name}.csv"'
    assert b'"\'=1+2,""x"""' in res.content  # the formula quoted as one cell, behind its apostrophe
    one = csv_rows(get(client, alice, link_export(b["id"]), **period))
    assert one == [[as_csv(row[name]) for name in COLUMNS] for row in expected if row["link_id"] == b["id"]]


def test_each_click_shows_its_variant(client: TestClient, alice: Account) -> None:
    """A link with variants: each click's variant index, an empty cell (CSV) or null (NDJSON) for a click sent to none
    (a rule's); a redirect's drawn variant is the one the click list shows."""
    variants = [{"to": f"https://example.com/{n}", "weight": 10} for n in range(3)]
    link = create(client, alice, slug="exp-split", variants=variants).json()
    recorder = click_recorder(client)
    sent = (2, None, 0, 1)
    for n, variant in enumerate(sent):
        recorder.queue.record(link["id"], CHROME.encode(), b"", None, False, f"198.18.1.{n}", None, None, variant)
    flush(client)
    visit(client, "exp-split", FIREFOX)
    flush(client)
    drawn = get(client, alice, f"/api/v1/links/{link['id']}/clicks", per=1).json()["data"][0]["variant"]
    assert drawn in (0, 1, 2)
    shown = [*sent, drawn]
    for path in (EXPORT, link_export(link["id"])):
        assert [row["variant"] for row in ndjson_rows(get(client, alice, path, format="ndjson"))] == shown
        assert [row[COLUMNS.index("variant")] for row in csv_rows(get(client, alice, path))] == [
            as_csv(v) for v in shown
        ]
        kept = ndjson_rows(get(client, alice, path, format="ndjson", variant=1))
        assert [row["variant"] for row in kept] == [v for v in shown if v == 1]


@pytest.mark.parametrize("source", ["=cmd|' /c calc'!a0", "+41 22", "-2+3", "@sum(a1:a2)"])
def test_a_value_a_spreadsheet_would_run_gets_an_apostrophe_in_csv_only(
    client: TestClient, alice: Account, source: str
) -> None:
    create(client, alice, slug="formula")
    visit(client, "formula", utm_source=source)
    visit(client, "formula", utm_source="plain-" + source)  # not at the start: left alone
    flush(client)
    assert [row[6] for row in csv_rows(get(client, alice))] == ["'" + source, "plain-" + source]
    assert [row["source"] for row in ndjson_rows(get(client, alice, format="ndjson"))] == [source, "plain-" + source]


def clicks_over_days(client: TestClient, link_id: str, now: float) -> dict[str, float]:
    """One click per name, at a time `now` minus some days, each with its own device, browser, os and source."""
    made = {
        "old": (now - 40 * 86400, CHROME, "", "mail"),
        "ten": (now - 10 * 86400, FIREFOX, "", "mail"),
        "three": (now - 3 * 86400, CHROME, "https://news.example.com/x", None),
        "three-phone": (now - 3 * 86400 + 1, IPHONE, "", "Mail"),
        "today": (now, CHROME, "", "MAIL"),
    }
    record(
        client,
        [(link_id, at, ua.encode(), ref.encode(), utm, False, "198.51.100.7") for at, ua, ref, utm in made.values()],
    )
    return {name: at for name, (at, *_) in made.items()}


def test_periods_and_filters(client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    now = datetime.now(UTC)
    monkeypatch.setattr("slugline.common.inputs.utcnow", lambda: now)  # "today" cannot move during the test
    link = create(client, alice, slug="days").json()
    at = clicks_over_days(client, link["id"], now.timestamp())

    def names(**params: Any) -> list[str]:
        times = [row["clicked_at"] for row in ndjson_rows(get(client, alice, format="ndjson", **params))]
        return [name for name, when in at.items() if isoformat(datetime.fromtimestamp(when, UTC)) in times]

    everything = ["old", "ten", "three", "three-phone", "today"]
    assert names(days=60) == everything
    assert names() == everything[1:]  # 30 days by default
    assert names(days=3) == ["today"]
    assert names(days=4) == everything[2:]
    day = now.date()
    assert names(**{"from": (day - timedelta(days=10)).isoformat(), "to": (day - timedelta(days=3)).isoformat()}) == [
        "ten",
        "three",
        "three-phone",
    ]
    assert names(**{"from": (day - timedelta(days=2)).isoformat()}) == ["today"]  # to: today
    assert names(days=60, source="MAIL") == ["old", "ten", "three-phone", "today"]
    assert names(days=60, browser="chrome") == ["old", "three", "today"]
    assert names(days=60, device="mobile", os="iOS") == ["three-phone"]
    assert names(days=60, referrer="News.Example.COM") == ["three"]
    assert names(days=60, source="mail", browser="FIREFOX") == ["ten"]  # every filter holds
    assert names(days=60, os="Windows", device="mobile") == []
    assert csv_rows(get(client, alice, link_export(link["id"]), days=60, source="nobody")) == []  # the header alone


def hidden_and_shown(client: TestClient, who: Account) -> dict[str, str]:
    """A link of each visibility, with one click each (recorded: a private link's short URL does not redirect)."""
    ids = {}
    for level in ("public", "unlisted", "private", "password"):
        extra = {"password": "letmein"} if level == "password" else {}
        ids[level] = create(client, who, slug=f"{who.username}-{level}", visibility=level, **extra).json()["id"]
    record(
        client, [(link_id, time.time(), CHROME.encode(), b"", None, False, "203.0.113.5") for link_id in ids.values()]
    )
    return ids


def test_a_public_key_never_exports_a_hidden_links_clicks(
    client: TestClient, alice: Account, make_account: Callable[..., Account]
) -> None:
    ids = hidden_and_shown(client, alice)
    exported = {key: [row[1] for row in csv_rows(get(client, alice, key=key))] for key in ("full", "public")}
    assert exported == {"full": list(ids.values()), "public": [ids["public"], ids["unlisted"]]}
    gone = (404, {"error": "link not found"})
    for level in ("private", "password"):
        res = get(client, alice, link_export(ids[level]), key="public")
        assert (res.status_code, res.json()) == gone
        res = get(client, alice, link_export(ids[level]), key="public", days=0)
        assert (res.status_code, res.json()) == gone  # hidden comes before validation
        assert len(csv_rows(get(client, alice, link_export(ids[level])))) == 1  # the full key sees it
    assert len(csv_rows(get(client, alice, link_export(ids["unlisted"]), key="public"))) == 1
    bob = make_account("bob")
    for link_id in (ids["public"], "lnk_00000000000", "not-an-id"):
        res = get(client, bob, link_export(link_id))
        assert (res.status_code, res.json()) == gone
    assert csv_rows(get(client, bob)) == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"days": "0"}, "days"),
        ({"days": "366"}, "days"),
        ({"days": "x"}, "days"),
        ({"days": "3", "from": "2026-01-01"}, "days"),
        ({"to": "2026-01-01"}, "from"),
        ({"from": "2026-02-01", "to": "2026-01-01"}, "from"),
        ({"from": "2025-01-01", "to": "2026-01-01"}, "365"),
        ({"from": "2026-02-30"}, "from"),
        ({"format": "xlsx"}, "format"),
        ({"device": "robot"}, "device"),
        ({"source": "x" * 300}, "source"),
        ({"browser": "a\x00b"}, "browser"),
        ({"bogus": "1"}, "bogus"),
    ],
)
@SQLITE_ONLY
def test_bad_parameters_are_422_before_any_byte(
    client: TestClient, alice: Account, params: dict[str, str], field: str
) -> None:
    link_id = create(client, alice).json()["id"]
    for path in (EXPORT, link_export(link_id)):
        res = get(client, alice, path, **params)
        assert res.status_code == 422 and res.headers["content-type"] == "application/json", res.text
        assert set(res.json()) == {"error"} and field in res.json()["error"], res.json()
