"""What the in-process tests share besides fixtures (those live in conftest.py): the services they reach, an account
with its keys, settings, and requests the test client cannot make by itself."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx2
import pytest
from starlette.testclient import TestClient

from slugline.clicks.buffer import ClickRecorder
from slugline.redirects.layer import RedirectLayer
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.server import wait_for

IN_CI = os.environ.get("CI", "").lower() == "true"
POSTGRES_URL = os.environ.get("SLUGLINE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("SLUGLINE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
BASE_URL = "http://sl.test"
LINKS = "/api/v1/links"
CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"

# Every test of the app runs on SQLite and on PostgreSQL; one where the store plays no part needs only one of them.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
POSTGRES_ONLY = pytest.mark.parametrize(
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


# The `make_client` fixture: make(**settings overrides) -> a test client running the app, and the app's runtime.
ClientFactory = Callable[..., tuple[TestClient, Runtime]]


def unavailable(reason: str) -> NoReturn:
    """A service the tests need is missing: skip, except in CI, which must run every test."""
    if IN_CI:
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


def make_settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "secret_key": "test-secret-" + "x" * 32,
        "fetch_allow_private": True,
        "public_url": None,
        **overrides,
    }
    return Settings(**values)


@dataclass
class Account:
    username: str
    password: str
    session: str
    full: str
    public: str

    def auth(self, which: str = "full") -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, which)}"}


def tampered(key: str, index: int = -1) -> str:
    """`key` with the character at `index` changed to a different one."""
    i = index % len(key)
    return key[:i] + ("b" if key[i] == "a" else "a") + key[i + 1 :]


def create(client: TestClient, who: Account, key: str = "full", **body: Any) -> httpx2.Response:
    """POST a link (to https://example.com/ unless told otherwise) with one of the account's keys."""
    body.setdefault("destination_url", "https://example.com/")
    return client.post(LINKS, json=body, headers=who.auth(key))


def wait_for_total(client: TestClient, who: Account, total: int) -> dict[str, Any]:
    """The account's analytics once `total` clicks are in (clicks are buffered); fails after 10 s with the total last
    seen."""
    seen: list[Any] = [None]

    def counted() -> dict[str, Any] | None:
        answer = client.get("/api/v1/analytics", headers=who.auth())
        assert answer.status_code == 200, answer.text
        stats: dict[str, Any] = answer.json()
        seen[0] = stats["total_clicks"]
        return stats if stats["total_clicks"] >= total else None

    return wait_for(counted, deadline=10, what=lambda: f"{total} clicks in {who.username}'s analytics, saw {seen[0]}")


def click_recorder(client: TestClient) -> ClickRecorder:
    """The click buffer of the app the client runs (on the state of the app inside the redirect layer)."""
    layer = client.app
    assert isinstance(layer, RedirectLayer), "an app behind trusted proxies wraps the redirect layer"
    recorder: ClickRecorder = layer.app.state.clicks
    return recorder


def http_scope(
    method: str, path: str, query: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None
) -> dict[str, Any]:
    """An HTTP request's ASGI scope, its query string and header bytes exactly as given."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"sl.test")] if headers is None else headers,
        "client": ("127.0.0.1", 50000),
        "server": ("sl.test", 80),
    }


def raw_get(client: TestClient, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[bytes, bytes], bytes]:
    """GET through the app the client runs, with header bytes exactly as given: the test client re-encodes
    header values as UTF-8, while a real server passes a client's raw bytes (say, a latin-1 "²") through."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = http_scope("GET", path, headers=headers)
    app: Any = client.app
    assert client.portal is not None  # the client runs the app's lifespan (used as a context manager)
    client.portal.call(app, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def sqlite_plan(path: str, run: Callable[[Runtime], object], picks: Callable[[str], bool]) -> str:
    """SQLite's plan (EXPLAIN QUERY PLAN, its details joined) of the one statement `picks` that `run` executes on a
    new, migrated database file at `path`."""
    from sqlalchemy import event

    from slugline.storage import migrate

    rt = Runtime.create(make_settings(f"sqlite:///{path}"))
    try:
        migrate.upgrade(rt.db.engine)
        ran: list[tuple[str, Any]] = []
        event.listen(rt.db.engine, "before_cursor_execute", lambda *a: ran.append((a[2], a[3])))
        run(rt)
        [(statement, parameters)] = [(s, p) for s, p in ran if picks(s)]
        with rt.db.engine.connect() as conn:
            return " ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters))
    finally:
        rt.close()
