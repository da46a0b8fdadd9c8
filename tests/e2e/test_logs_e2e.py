"""A real `slugline serve` logging JSON with the access log on: every line its output holds is one JSON object, each
request has its access line (redirects included) with the id its answer carried, and no key, token, password or
client address is in any of them; the probes answer through the server too."""

from __future__ import annotations

from typing import Any

import httpx
import orjson

from tests.support.server import PASSWORD, Server, ServerFactory, api, make_account


def log_entries(server: Server) -> list[dict[str, Any]]:
    assert server.log_path is not None
    lines = [line for line in server.log_path.read_text().splitlines() if line.strip()]
    entries = []
    for line in lines:
        try:
            entries.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    return entries


def test_json_logs_and_the_access_log(start_server: ServerFactory) -> None:
    server = start_server(workers=2, SLUGLINE_LOG_FORMAT="json", SLUGLINE_ACCESS_LOG="true")
    keys = make_account(server, "logged")
    sent: dict[str, tuple[str, str, int]] = {}  # request id -> what was asked and answered
    with api(server, keys.full) as http, httpx.Client(base_url=server.url) as browser:
        made = http.post("/links", json={"destination_url": "https://example.org/", "slug": "logged-link"})
        assert made.status_code == 201
        sent[made.headers["x-request-id"]] = ("POST", "/api/v1/links", 201)
        for _ in range(4):  # the first from the database, the others from the cache
            res = browser.get("/logged-link?utm_source=mail", follow_redirects=False)
            assert res.status_code == 302
            sent[res.headers["x-request-id"]] = ("GET", "/logged-link", 302)
        for path, status in (("/api/v1/health/live", 200), ("/api/v1/health/ready", 200), ("/no-such", 404)):
            res = browser.get(path)
            assert res.status_code == status, res.text
            sent[res.headers["x-request-id"]] = ("GET", path, status)
        ignored = browser.get("/api/v1/health/live", headers={"X-Request-ID": "from-the-client"})
        assert ignored.headers["x-request-id"] != "from-the-client"  # no trusted proxy in front
    assert server.stop() == 0
    entries = log_entries(server)
    access = {e["request_id"]: e for e in entries if e["logger"] == "slugline.access"}
    for rid, (method, path, status) in sent.items():
        line = access[rid]
        assert (line["method"], line["path"], line["status"]) == (method, path, status), line
        assert line["duration_ms"] >= 0 and line["level"] == "INFO" and "ip" not in line
    assert access[made.headers["x-request-id"]]["route"] == "/api/v1/links"
    assert access[made.headers["x-request-id"]]["account_id"] >= 1
    assert [e["route"] for e in access.values() if e["path"] == "/logged-link"] == ["/{slug}"] * 4
    assert any(e["logger"].startswith("_granian") for e in entries)  # Granian's own lines are JSON too
    text = server.log_path.read_text() if server.log_path else ""
    for secret in (keys.full, keys.public, keys.session, PASSWORD, "utm_source"):
        assert secret not in text
