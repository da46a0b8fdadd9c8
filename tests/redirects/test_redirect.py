"""The redirect layer: query merging, Location encoding, Accept negotiation, and errors on the slug path."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, cast

import pytest
from starlette.testclient import TestClient

from slugline.redirects.accept import prefers_json
from slugline.redirects.layer import RedirectLayer, Redirects
from slugline.redirects.linkcache import LinkCache
from slugline.redirects.urls import ascii_url, merge_query
from slugline.storage.db import Database
from tests.support.helpers import SQLITE_ONLY, raw_get


@pytest.mark.parametrize(
    ("destination", "query", "location", "utm", "qr"),
    [
        ("https://a.example/p", b"x=1", "https://a.example/p?x=1", None, False),
        ("https://a.example/p?keep=%20raw&x=0", b"x=1&src=qr", "https://a.example/p?keep=+raw&x=1", None, True),
        (
            "https://a.example/p?keep=%20raw",
            b"utm_source=News",
            "https://a.example/p?keep=%20raw&utm_source=News",
            "News",
            False,
        ),
        ("https://a.example/p#frag", b"src=qr", "https://a.example/p#frag", None, True),
        ("https://a.example/p", b"q=caf%C3%A9", "https://a.example/p?q=caf%C3%A9", None, False),
    ],
)
def test_merge_query(destination: str, query: bytes, location: str, utm: str | None, qr: bool) -> None:
    assert merge_query(destination, query) == (location.encode(), utm, qr)


def test_ascii_url_encodes_unicode_hosts_and_paths() -> None:
    assert ascii_url("https://bücher.example/straße?q=ü") == "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%BC"
    assert ascii_url("https://a.example/a%20b?c=d&e") == "https://a.example/a%20b?c=d&e"


BROWSER = b"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@pytest.mark.parametrize(
    ("accept", "json"),
    [
        (b"", True),
        (b"*/*", True),
        (b"application/json", True),
        (BROWSER, False),
        (b"text/html", False),
        (b"application/xhtml+xml", False),
        (b"text/html,application/xhtml+xml,*/*;q=0.8", False),
        (b"application/json, text/html", True),
        (b"text/html, application/json", True),  # ties go to JSON
        (b"text/html;q=0.5, application/json", True),
        (b"application/problem+json", True),
        (b"application/json;q=0", True),
        (b"text/html;q=0", True),
        (b"text/*", True),
        (b"text/html, */*", True),
        (b"text/html, application/*", True),
        (b"text/html, application/*;q=0.5", False),
        (b"text/html;q=0.9, */*;q=0.8", False),
        (b"text/html;q=0.8, */*;q=0.8", True),
        # The most specific range decides JSON's q: refusing application/json outright beats `*/*`.
        (b"text/html;q=0.9, application/json;q=0, */*", False),
        (b"TEXT/HTML; Q=0.9 ; level=1, application/json; q=0.85", False),
        # Malformed q values: the entry is ignored (never a crash, never a guess).
        (b"text/html;q=\xb2", True),
        (b"text/html;q=\xb9", True),
        (b"text/html;q=1.5", True),
        (b"text/html;q=0.1234", True),
        (b"text/html;q=.5", True),
        (b"text/html;q=", True),
        (b"text/html;q=nan", True),
        (b"text/html;q=1e0", True),
        (b"text/html;q=\xb2, application/json;q=0.1", True),
        (b"text/html;q=0.5, application/json;q=\xb2", False),
        (b"text/html;q=1.000", False),
        (b"text/html;q=1., */*;q=0.999", False),
        (b",;,;=,q=", True),
    ],
)
def test_prefers_json(accept: bytes, json: bool) -> None:
    assert prefers_json(accept) is json


def test_ascii_url_keeps_ipv6_brackets() -> None:
    assert ascii_url("http://[::1]:8080/\xe9") == "http://[::1]:8080/%C3%A9"
    assert ascii_url("http://[2001:db8::1]/caf\xe9?q=\xfc") == "http://[2001:db8::1]/caf%C3%A9?q=%C3%BC"
    assert ascii_url("https://[::1]/\u2603") == "https://[::1]/%E2%98%83"
    assert merge_query("http://[::1]:8080/\xe9", b"x=1")[0] == b"http://[::1]:8080/%C3%A9?x=1"


# ---- through the real app -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "kind"),
    [
        (None, "json"),
        (b"*/*", "json"),
        (BROWSER, "html"),
        (b"text/html;q=\xb2", "json"),
        (b"text/html;q=\xb2, application/json;q=0.5", "json"),
        (b"application/json;q=\xb9, text/html;q=0.5", "html"),
        (b"text/html;q=" + b"9" * 5000, "json"),
        (b"text/html;q=\xc2\xb2", "json"),
    ],
)
@SQLITE_ONLY
def test_404_negotiation_never_crashes(client: TestClient, accept: bytes | None, kind: str) -> None:
    status, headers, body = raw_get(client, "/no-such-slug", [(b"accept", accept)] if accept is not None else [])
    assert status == 404
    if kind == "json":
        assert headers[b"content-type"] == b"application/json" and json.loads(body) == {"error": "link not found"}
    else:
        assert headers[b"content-type"].startswith(b"text/html") and b"Link not found" in body


@SQLITE_ONLY
def test_404_through_the_test_client(client: TestClient) -> None:
    assert client.get("/no-such-slug").json() == {"error": "link not found"}  # httpx sends */*
    page = client.get("/no-such-slug", headers={"accept": BROWSER.decode()})
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")


@SQLITE_ONLY
def test_unexpected_error_on_a_slug_is_a_json_500(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: LinkCache, slug: str) -> None:
        raise RuntimeError("cache on fire")

    monkeypatch.setattr(LinkCache, "peek", broken)
    with caplog.at_level(logging.ERROR, logger="slugline.redirect"):
        res = client.get("/some-slug")
        head = client.head("/some-slug")
    assert res.status_code == 500 and res.json() == {"error": "internal server error"}
    assert res.headers["cache-control"] == "private, no-store"
    assert head.status_code == 500 and head.content == b""
    assert client.get("/some-slug").status_code == 500  # the shortest path, taken once the layer has started
    assert "cache on fire" in caplog.text and "/some-slug" in caplog.text
    monkeypatch.undo()
    assert client.get("/api/v1/health").status_code == 200  # the app is fine, and so is the next slug
    assert client.get("/some-slug").status_code == 404


class _Broken(Redirects):
    """A Redirects stand-in that fails before, or after, starting its response."""

    def __init__(self, started: bool) -> None:  # an empty cache; no clicks or unlocker: it never gets that far
        self.started = started
        self.cache = LinkCache(cast(Database, None))  # `peek` never reads the database

    async def serve(self, slug: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.started:
            await send({"type": "http.response.start", "status": 302, "headers": []})
        raise RuntimeError("late failure" if self.started else "early failure")


@pytest.mark.parametrize("started", [False, True])
def test_redirect_layer_answers_500_only_if_nothing_was_sent(started: bool, caplog: pytest.LogCaptureFixture) -> None:
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the slug must not reach the app")

    layer = RedirectLayer(inner)
    layer._redirects = _Broken(started)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/abc", "query_string": b"", "headers": []}
    with caplog.at_level(logging.ERROR, logger="slugline.redirect"):
        asyncio.run(layer(scope, receive, send))
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1 and starts[0]["status"] == (302 if started else 500)
    if not started:
        assert sent[-1] == {"type": "http.response.body", "body": b'{"error":"internal server error"}'}
    assert ("late failure" if started else "early failure") in caplog.text
