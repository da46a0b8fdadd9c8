"""`/analytics`, `/links/{id}/analytics`, `/links/{id}/clicks` and `/links/{id}/qr`: shapes, bounds and what a public
key may see."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import pytest
import zxingcpp
from PIL import Image
from starlette.testclient import TestClient

from slugline.analytics import service as analytics_service
from slugline.common.inputs import FILTERS
from tests.support.helpers import CHROME, SQLITE_ONLY, Account, wait_for_total

ANSWER = {  # every key of an analytics answer, the account's or a link's
    *("days", "from", "to", "interval", "source", "device", "browser", "os", "referrer", "total_clicks"),
    *("unique_visitors", "clicks", "devices", "browsers", "operating_systems", "sources", "referrers", "top_links"),
    *("country", "city", "variant", "countries", "cities", "variants"),
}


def make_links(client: TestClient, who: Account) -> dict[str, dict[str, Any]]:
    made = {}
    for level in ("public", "unlisted", "private", "password"):
        body = {
            "destination_url": f"https://example.org/{level}",
            "slug": f"{who.username}-{level}",
            "title": level,
            "visibility": level,
            **({"password": "letmein"} if level == "password" else {}),
        }
        res = client.post("/api/v1/links", json=body, headers=who.auth())
        assert res.status_code == 201, res.text
        made[level] = res.json()
    return made


def test_public_key_figures_leave_hidden_links_out(client: TestClient, alice: Account) -> None:
    links = make_links(client, alice)
    for level, times in (("public", 3), ("unlisted", 2), ("private", 0)):
        for _ in range(times):
            res = client.get(f"/{links[level]['slug']}", headers={"User-Agent": CHROME}, follow_redirects=False)
            assert res.status_code == 302
    assert client.get(f"/{links['private']['slug']}").status_code == 404
    unlock = client.post(
        f"/{links['password']['slug']}",
        data={"password": "letmein"},
        headers={"User-Agent": CHROME},
        follow_redirects=False,
    )
    assert unlock.status_code == 302  # one click on the password link

    full = wait_for_total(client, alice, 6)
    assert full["total_clicks"] == 6
    assert [t["slug"] for t in full["top_links"]] == ["alice-public", "alice-unlisted", "alice-password"]
    public = client.get("/api/v1/analytics", headers=alice.auth("public")).json()
    assert public["total_clicks"] == 5 and public["unique_visitors"] == 1
    assert [t["clicks"] for t in public["top_links"]] == [3, 2]
    assert public["sources"] == [{"source": "direct", "clicks": 5}]
    assert [(b["browser"].lower(), b["clicks"]) for b in public["browsers"]] == [("chrome", 5)]
    assert [(o["os"].lower(), o["clicks"]) for o in public["operating_systems"]] == [("windows", 5)]
    for level, clicks in (("public", 3), ("unlisted", 2)):  # a link's own figures, to the public key too
        res = client.get(f"/api/v1/links/{links[level]['id']}/analytics", headers=alice.auth("public"))
        assert set(res.json()) == ANSWER and res.json()["total_clicks"] == clicks, res.text

    for level in ("private", "password"):
        link_id = links[level]["id"]
        for path in (f"/links/{link_id}/clicks", f"/links/{link_id}/qr", f"/links/{link_id}/analytics"):
            res = client.get(f"/api/v1{path}", headers=alice.auth("public"))
            assert (res.status_code, res.json()) == (404, {"error": "link not found"}), path
    res = client.get(f"/api/v1/links/{links['password']['id']}/clicks?per=0", headers=alice.auth("public"))
    assert res.status_code == 404  # hidden comes before validation
    clicks = client.get(f"/api/v1/links/{links['password']['id']}/clicks", headers=alice.auth()).json()
    assert clicks["pagination"]["total"] == 1


def test_other_accounts_see_nothing(client: TestClient, alice: Account, make_account: Callable[..., Account]) -> None:
    links = make_links(client, alice)
    bob = make_account("bob")
    assert client.get(f"/api/v1/links/{links['public']['id']}/clicks", headers=bob.auth()).status_code == 404
    assert client.get(f"/api/v1/links/{links['public']['id']}/qr", headers=bob.auth()).status_code == 404
    stats = client.get("/api/v1/analytics", params={"days": 3}, headers=bob.auth()).json()
    assert stats["total_clicks"] == 0 and stats["top_links"] == [] and len(stats["clicks"]) == 3
    assert set(stats) == ANSWER
    assert stats["interval"] == "day" and [stats[name] for name in FILTERS] == [None] * len(FILTERS)
    for breakdown in ("devices", "browsers", "operating_systems", "sources", "referrers"):
        assert stats[breakdown] == [], breakdown
    res = client.get(f"/api/v1/links/{links['public']['id']}/analytics", headers=bob.auth())
    assert (res.status_code, res.json()) == (404, {"error": "link not found"})


def clicked_thrice(client: TestClient, alice: Account) -> dict[str, Any]:
    """Alice's public link, visited from sources a, b and c in that order, the clicks written."""
    link = make_links(client, alice)["public"]
    for source in ("a", "b", "c"):
        client.get(f"/{link['slug']}?utm_source={source}", follow_redirects=False)
    end = time.monotonic() + 10
    while client.get(f"/api/v1/links/{link['id']}", headers=alice.auth()).json()["clicks"] < 3:
        assert time.monotonic() < end
        time.sleep(0.05)
    return link


def test_clicks_pagination_newest_first(client: TestClient, alice: Account) -> None:
    link = clicked_thrice(client, alice)
    first = client.get(f"/api/v1/links/{link['id']}/clicks", params={"per": 2}, headers=alice.auth()).json()
    second = client.get(f"/api/v1/links/{link['id']}/clicks", params={"per": 2, "page": 2}, headers=alice.auth())
    assert first["pagination"] == {"page": 1, "per": 2, "total": 3, "pages": 2}
    assert [c["source"] for c in first["data"] + second.json()["data"]] == ["c", "b", "a"]
    assert set(first["data"][0]) == {"clicked_at", "device", "browser", "os", "source", "referrer"} | {
        "country",
        "region",
        "city",
        "variant",
    }


def test_the_click_list_reaches_back_a_bounded_number_of_clicks(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting and paging stop at the `LISTED_CLICKS` newest: a page past them is empty, not a scan of the log."""
    monkeypatch.setattr(analytics_service, "LISTED_CLICKS", 2)
    link = clicked_thrice(client, alice)

    def page(page: int, per: int) -> Any:
        res = client.get(f"/api/v1/links/{link['id']}/clicks", params={"per": per, "page": page}, headers=alice.auth())
        assert res.status_code == 200, res.text
        return res.json()

    first = page(1, 3)
    assert first["pagination"] == {"page": 1, "per": 3, "total": 2, "pages": 1}
    assert [c["source"] for c in first["data"]] == ["c", "b"]
    assert [c["source"] for c in page(2, 1)["data"]] == ["b"]
    assert page(3, 1)["data"] == [] and page(2, 2)["data"] == []


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/analytics?days=0", "days"),
        ("/analytics?days=366", "days"),
        ("/analytics?days=x", "days"),
        ("/links/{id}/clicks?per=101", "per"),
        ("/links/{id}/clicks?page=0", "page"),
        ("/links/{id}/qr?size=63", "size"),
        ("/links/{id}/qr?size=2049", "size"),
        ("/links/{id}/qr?format=gif", "format"),
        ("/links/{id}/qr?margin=-1", "margin"),
        ("/analytics?bogus=1", "bogus"),
    ],
)
@SQLITE_ONLY
def test_bounds_name_the_field(client: TestClient, alice: Account, path: str, field: str) -> None:
    link = make_links(client, alice)["public"]
    res = client.get("/api/v1" + path.format(id=link["id"]), headers=alice.auth())
    assert res.status_code == 422 and field in res.json()["error"], res.text


@pytest.mark.parametrize("fmt", ["png", "svg"])
@SQLITE_ONLY
def test_qr_encodes_the_short_url_marked_as_a_scan(client: TestClient, alice: Account, fmt: str) -> None:
    link = make_links(client, alice)["unlisted"]
    res = client.get(
        f"/api/v1/links/{link['id']}/qr", params={"format": fmt, "size": 300}, headers=alice.auth("public")
    )
    assert res.status_code == 200
    assert res.headers["content-type"] == ("image/png" if fmt == "png" else "image/svg+xml")
    if fmt == "svg":
        assert res.content.startswith(b"<svg") and b'width="300"' in res.content
        return
    image = Image.open(io.BytesIO(res.content))
    assert image.size == (300, 300)
    assert [r.text for r in zxingcpp.read_barcodes(image)] == [f"{link['short_url']}?src=qr"]
