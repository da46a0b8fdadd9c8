"""Logs as JSON lines with the request's context and nothing secret in them, the access log, and the request id every
answer carries: a trusted proxy's when it is a sane token, else one made here."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.web import logs
from tests.support.helpers import BASE_URL, LINKS, SQLITE_ONLY, ClientFactory, make_settings

GENERATED = re.compile(r"[0-9a-f]{16}")
PASSWORD = "a secret pass phrase 91"


@pytest.fixture
def captured() -> Iterator[Callable[[Settings], io.StringIO]]:
    """What the app logs, formatted as `slugline serve` would with these settings (the root logger's handler)."""
    handlers: list[logging.Handler] = []
    root = logging.getLogger()

    def capture(settings: Settings) -> io.StringIO:
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logs.formatter(settings))
        root.addHandler(handler)
        handlers.append(handler)
        return stream

    level = logs.access_log.level
    yield capture
    for handler in handlers:
        root.removeHandler(handler)
    logs.access_log.setLevel(level)


def json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    lines = [line for line in stream.getvalue().splitlines() if line.strip()]
    assert lines, "nothing was logged"
    return [orjson.loads(line) for line in lines]  # every line one JSON object


def boom(api: FastAPI) -> None:
    """A route that fails, for the 500 and the traceback in the log."""

    async def fail() -> None:
        raise RuntimeError("the handler broke")

    api.add_api_route("/api/v1/test-boom", fail)


def test_json_lines_carry_the_request_and_no_secret(
    database_url: str, runtime: Runtime, captured: Callable[[Settings], io.StringIO]
) -> None:
    settings = make_settings(database_url, log_format="json", access_log=True)
    out = captured(settings)
    app = create_app(settings, runtime)
    boom(app.app)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as tc:
        made = tc.post("/api/v1/auth/register", json={"username": "logan", "password": PASSWORD})
        assert made.status_code == 201, made.text
        token = made.json()["token"]
        accounts.set_plan(runtime, "logan", "developer")  # API keys need a paid plan
        session = {"Authorization": f"Bearer {token}"}
        with runtime.db.engine.connect() as conn:
            account_id = conn.execute(text("SELECT id FROM accounts WHERE username = 'logan'")).scalar_one()
        key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
        auth = {"Authorization": f"Bearer {key}"}
        link = tc.post(LINKS, json={"destination_url": "https://example.com/", "slug": "logged"}, headers=auth)
        assert link.status_code == 201, link.text
        listed = tc.get(f"{LINKS}?q=hidden-query-value", headers=auth)
        assert listed.status_code == 200
        login = tc.post("/api/v1/auth/login", json={"username": "logan", "password": PASSWORD})
        assert login.status_code == 200
        assert tc.post("/api/v1/auth/login", json={"username": "logan", "password": PASSWORD + "x"}).status_code == 401
        page = tc.get("/app/", headers={"Cookie": f"slugline_session={token}"}, follow_redirects=False)
        assert page.status_code == 200
        for _ in range(2):  # the second from the redirect cache
            assert tc.get("/logged", follow_redirects=False).status_code == 302
        failed = tc.get("/api/v1/test-boom", headers=auth)
        assert failed.status_code == 500
    logged = out.getvalue()
    secrets = (PASSWORD, token, login.json()["token"], key, "hidden-query-value", "testclient")  # the last an address
    for secret in secrets:
        assert secret not in logged
    entries = json_lines(out)
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys()
        assert entry["time"].endswith("+00:00")
        assert "ip" not in entry
    access = [e for e in entries if e["logger"] == "slugline.access"]
    by_route = {(e["method"], e["route"], e["status"]): e for e in access}
    assert by_route["GET", "/api/v1/links", 200]["path"] == "/api/v1/links"  # no query string
    assert by_route["GET", "/api/v1/links", 200]["account_id"] == account_id
    assert by_route["POST", "/api/v1/auth/login", 401]["path"] == "/api/v1/auth/login"
    redirects = [e for e in access if e["route"] == "/{slug}"]
    assert [e["status"] for e in redirects] == [302, 302]
    assert by_route["GET", "/app/", 200]["account_id"] == account_id
    for entry in access:
        assert GENERATED.fullmatch(entry["request_id"]) and entry["duration_ms"] >= 0
    crash = next(e for e in entries if e["message"] == "unhandled error")
    assert crash["level"] == "ERROR" and crash["route"] == "/api/v1/test-boom"
    assert "RuntimeError: the handler broke" in crash["exc"] and "Traceback" in crash["exc"]
    assert crash["request_id"] == failed.headers["x-request-id"]
    assert crash["account_id"] == account_id
    assert by_route["GET", "/api/v1/test-boom", 500]["request_id"] == failed.headers["x-request-id"]


@SQLITE_ONLY
def test_addresses_are_logged_only_when_asked(
    database_url: str, runtime: Runtime, captured: Callable[[Settings], io.StringIO]
) -> None:
    for ips in (False, True):
        settings = make_settings(database_url, log_format="json", access_log=True, log_ips=ips)
        out = captured(settings)
        with TestClient(create_app(settings, runtime), base_url=BASE_URL) as tc:
            tc.get("/api/v1/health/live")
        (line,) = [e for e in json_lines(out) if e["logger"] == "slugline.access"]
        assert line.get("ip") == ("testclient" if ips else None)
        logging.getLogger().removeHandler(logging.getLogger().handlers[-1])


@SQLITE_ONLY
def test_text_stays_the_default_and_the_access_log_off(
    database_url: str, runtime: Runtime, captured: Callable[[Settings], io.StringIO]
) -> None:
    settings = make_settings(database_url)
    assert (settings.log_format, settings.access_log, settings.log_ips) == ("text", False, False)
    out = captured(settings)
    with TestClient(create_app(settings, runtime), base_url=BASE_URL) as tc:
        assert tc.get("/api/v1/health/live").status_code == 200
        logging.getLogger("slugline").warning("plain %s", "line")
    assert re.fullmatch(r"\S+ \S+ \[WARNING\] slugline: plain line\n", out.getvalue())


@SQLITE_ONLY
def test_text_access_lines(database_url: str, runtime: Runtime, captured: Callable[[Settings], io.StringIO]) -> None:
    settings = make_settings(database_url, access_log=True)
    out = captured(settings)
    with TestClient(create_app(settings, runtime), base_url=BASE_URL) as tc:
        rid = tc.get("/api/v1/health/live?token=zzz-hidden").headers["x-request-id"]
    line = out.getvalue()
    assert "[INFO] slugline.access: GET /api/v1/health/live 200 " in line and f"id={rid}" in line
    assert "zzz-hidden" not in line


def every_answer(tc: TestClient, headers: dict[str, str]) -> list[Any]:
    """An answer of each kind: API, its errors (401, 404, 405, 422, 429), the dashboard, redirects (the first
    loads the link, the second comes from the cache), a missing slug, the docs."""
    anonymous = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return [
        tc.get("/api/v1/health", headers=headers),
        tc.get("/api/v1/me", headers=anonymous),
        tc.get("/api/v1/nothing-here", headers=headers),
        tc.patch("/api/v1/me", headers=headers),
        tc.post(LINKS, json={"destination_url": 5}, headers=headers),
        tc.get("/app/login", headers=anonymous),
        tc.get("/", headers=anonymous, follow_redirects=False),
        tc.get("/echoed", headers=anonymous, follow_redirects=False),
        tc.get("/echoed", headers=anonymous, follow_redirects=False),
        tc.head("/echoed", headers=anonymous, follow_redirects=False),
        tc.get("/no-such-slug", headers=anonymous),
        tc.get("/api/v1/docs", headers=anonymous),
    ]


@SQLITE_ONLY
def test_every_answer_carries_a_request_id(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=30)
    key = _key(tc, rt)
    auth = {"Authorization": f"Bearer {key}"}
    assert tc.post(LINKS, json={"destination_url": "https://example.com/", "slug": "echoed"}, headers=auth).is_success
    answers = every_answer(tc, auth)
    assert [r.status_code for r in answers] == [200, 401, 404, 405, 422, 200, 302, 302, 302, 302, 404, 200]
    ids = [r.headers.get("x-request-id") for r in answers]
    assert all(rid is not None and GENERATED.fullmatch(rid) for rid in ids), ids
    assert len(set(ids)) == len(ids)
    limited = [tc.get("/api/v1/public/x").status_code for _ in range(40)]
    assert 429 in limited
    refused = tc.get("/api/v1/public/x")
    assert refused.status_code == 429 and GENERATED.fullmatch(refused.headers["x-request-id"])


@SQLITE_ONLY
def test_a_request_id_is_taken_only_from_a_trusted_proxy(make_client: ClientFactory) -> None:
    direct, rt = make_client()
    behind, _ = make_client(trusted_proxies="testclient")  # the test client's address, as a name
    key = _key(behind, rt)
    auth = {"Authorization": f"Bearer {key}"}
    assert behind.post(LINKS, json={"destination_url": "https://example.com/", "slug": "echoed"}, headers=auth)
    sent = "req-7.Ab_" + "x" * 100
    for tc in (direct, behind):
        for res in every_answer(tc, {**auth, "X-Request-ID": sent}):
            expected = sent if tc is behind else None
            assert res.headers["x-request-id"] == expected or (
                expected is None and GENERATED.fullmatch(res.headers["x-request-id"])
            ), (res.request.url, res.headers["x-request-id"])
    for insane in (b"x" * 129, b"two words", b"semi;colon", "ünïcode".encode(), b""):
        got = behind.get("/api/v1/health/live", headers={b"X-Request-ID": insane}).headers["x-request-id"]
        assert GENERATED.fullmatch(got), (insane, got)
    longest = "a" * 128
    assert (
        behind.get("/echoed", headers={"X-Request-ID": longest}, follow_redirects=False).headers["x-request-id"]
        == longest
    )


@SQLITE_ONLY
def test_the_access_log_covers_redirects_from_the_cache(
    database_url: str, runtime: Runtime, captured: Callable[[Settings], io.StringIO]
) -> None:
    settings = make_settings(database_url, log_format="json", access_log=True, trusted_proxies="testclient")
    out = captured(settings)
    with TestClient(create_app(settings, runtime), base_url=BASE_URL) as tc:
        key = _key(tc, runtime)
        made = tc.post(
            LINKS,
            json={"destination_url": "https://example.com/", "slug": "hot"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert made.status_code == 201
        ids = [f"proxy-{i}" for i in range(5)]
        for rid in ids:
            res = tc.get("/hot?utm_source=x", headers={"X-Request-ID": rid}, follow_redirects=False)
            assert res.status_code == 302 and res.headers["x-request-id"] == rid
    lines = [e for e in json_lines(out) if e["logger"] == "slugline.access" and e["route"] == "/{slug}"]
    assert [(e["request_id"], e["status"], e["path"], e["method"]) for e in lines] == [
        (rid, 302, "/hot", "GET") for rid in ids
    ]


def _key(tc: TestClient, rt: Runtime) -> str:
    made = accounts.register(rt, {"username": "keyed", "password": PASSWORD}, plan="developer")
    res = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {made['token']}"})
    key: str = res.json()["key"]
    return key
