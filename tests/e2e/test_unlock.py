"""Password links, HEAD and 404s through a real server and a real client (cookies included)."""

from __future__ import annotations

import httpx

from tests.support.server import ServerFactory, api, clicks_of, make_account


def test_password_link_form_cookie_and_rate_limit(start_server: ServerFactory) -> None:
    server = start_server(SLUGLINE_RATE_LIMIT_UNLOCK="4")
    keys = make_account(server, "keeper")
    with api(server, keys.full) as http, httpx.Client(base_url=server.url) as browser:
        link = http.post(
            "/links",
            json={
                "destination_url": "https://example.org/secret",
                "slug": "vault",
                "visibility": "password",
                "password": "open sesame",
            },
        ).json()
        form = browser.get("/vault?ref=mail")
        assert form.status_code == 200 and form.headers["content-type"].startswith("text/html")
        assert form.headers["cache-control"] == "private, no-store"
        for part in (
            '<label for="password">',
            'id="password"',
            "autofocus",
            'method="post"',
            'action="/vault?ref=mail"',
            'type="password"',
        ):
            assert part in form.text, part

        wrong = browser.post("/vault?ref=mail", data={"password": "<script>"})
        assert wrong.status_code == 401 and 'role="alert"' in wrong.text and "<script>" not in wrong.text
        assert "set-cookie" not in wrong.headers

        right = browser.post("/vault?ref=mail", data={"password": "open sesame"})
        assert right.status_code == 302
        assert right.headers["location"] == "https://example.org/secret?ref=mail"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/vault" in cookie
        assert "sesame" not in cookie
        again = browser.get("/vault")  # the client keeps the cookie
        assert again.status_code == 302 and again.headers["location"] == "https://example.org/secret"
        assert httpx.get(f"{server.url}/vault").status_code == 200  # no cookie: the form

        http.put(f"/links/{link['id']}", json={"password": "new password"}).raise_for_status()
        assert browser.get("/vault").status_code == 200  # a new password voids old cookies

        statuses = [browser.post("/vault", data={"password": "guess"}).status_code for _ in range(3)]
        assert statuses == [401, 401, 429]  # 4 per minute per IP and link, the right password included
        limited = browser.post("/vault", data={"password": "new password"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1

        assert [c["device"] for c in clicks_of(http, link["id"], 2)]  # the two redirects were clicks


def test_head_json_404_and_pass_through(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "header")
    with api(server, keys.full) as http, httpx.Client(base_url=server.url) as client:
        http.post("/links", json={"destination_url": "https://example.org/h", "slug": "h"}).raise_for_status()
        http.post("/links", json={"destination_url": "https://example.org/p", "slug": "p", "visibility": "private"})
        head = client.head("/h?x=1")
        assert head.status_code == 302 and head.headers["location"] == "https://example.org/h?x=1"
        assert head.headers["x-robots-tag"] == "noindex" and head.content == b""

        for slug in ("nope", "p"):  # unknown and private look the same
            page = client.get(f"/{slug}", headers={"Accept": "text/html"})  # HTML only when asked for above JSON
            assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
            data = client.get(f"/{slug}", headers={"Accept": "application/json"})
            assert data.status_code == 404 and data.json() == {"error": "link not found"}
        assert client.head("/nope").status_code == 404

        assert client.get("/api/v1/health").json()["status"] == "ok"  # the API is untouched
        assert client.get("/h/extra").status_code == 404 and client.get("/h/extra").json() == {"error": "not found"}
