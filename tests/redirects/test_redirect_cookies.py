"""Cookies split over several header fields (as HTTP/2 clients send them) still unlock a password link."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY


@SQLITE_ONLY
def test_unlock_cookie_in_its_own_header_field(client: TestClient, alice: Any) -> None:
    body = {
        "destination_url": "https://example.org/in",
        "slug": "split",
        "visibility": "password",
        "password": "sesame",
    }
    res = client.post("/api/v1/links", json=body, headers={"Authorization": f"Bearer {alice.full}"})
    assert res.status_code == 201, res.text
    unlocked = client.post("/split", data={"password": "sesame"}, follow_redirects=False)
    assert unlocked.status_code == 302, unlocked.text
    name, _, rest = unlocked.headers["set-cookie"].partition("=")
    value = rest.split(";", 1)[0]
    client.cookies.clear()  # only the fields below are sent
    fields = [("cookie", "theme=dark"), ("cookie", f"{name}={value}"), ("cookie", "lang=en")]
    res = client.get("/split", headers=fields, follow_redirects=False)
    assert res.status_code == 302, res.text
    assert res.headers["location"] == "https://example.org/in"
    alone = client.get("/split", headers=[("cookie", "theme=dark")], follow_redirects=False)
    assert alone.status_code == 200  # the form: the other cookies unlock nothing
