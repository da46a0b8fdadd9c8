"""The OAuth endpoints against what a caller may send them: client_ids no client could have (a URL that does not
parse, a NUL that PostgreSQL refuses in any string) are refused with an RFC 6749 error, never a 500; bodies are
bounded as the REST API's are, and only of the media type the RFC names; registration metadata has bounds; every
endpoint, /oauth/authorize included, draws from the caller's IP bucket; and a new Client ID Metadata Document is
fetched on the IP's budget of anonymous fetches, whichever endpoint names it."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline.common.bounds import MAX_CLIENT_LIST, MAX_REDIRECT_URIS, MAX_TITLE, MAX_URL
from slugline.oauth import documents
from slugline.oauth.models import OAuthClient
from slugline.runtime import Runtime
from slugline.web.request import MAX_BODY
from tests.support.helpers import SQLITE_ONLY, ClientFactory

CHALLENGE = "x" * 43
REDIRECT = "http://localhost:3030/callback"
FORM_PATHS = ("/oauth/authorize", "/oauth/token", "/oauth/revoke")
UNPARSABLE = "https://[::1/x"  # an unclosed IPv6 bracket: urlsplit raises ValueError


def test_an_unparsable_client_id_url_is_a_400(client: TestClient) -> None:
    res = client.get("/oauth/authorize", params={"client_id": UNPARSABLE})
    assert res.status_code == 400
    assert res.json() == {"error": "invalid_client", "error_description": "client_id is not a valid URL"}
    form = {"client_id": UNPARSABLE, "response_type": "code", "code_challenge": CHALLENGE}
    res = client.post("/oauth/authorize", data=form, follow_redirects=False)
    assert res.status_code == 400 and res.json()["error"] == "invalid_client"
    token = {"grant_type": "authorization_code", "code": "x", "client_id": UNPARSABLE, "code_verifier": "x"}
    res = client.post("/oauth/token", data={**token, "redirect_uri": "http://a/"})
    assert res.status_code == 400
    assert res.json() == {"error": "invalid_client", "error_description": "client_id is not a valid URL"}


@pytest.mark.parametrize("client_id", ["a\x00b", "0" * 65, "{12345678-1234-5678-1234-567812345678}"])
def test_client_ids_registration_never_issues_are_unknown(client: TestClient, client_id: str) -> None:
    res = client.get(
        "/oauth/authorize", params={"client_id": client_id, "response_type": "code", "code_challenge": CHALLENGE}
    )
    assert res.status_code == 400 and "not found" in res.json()["error_description"]
    refresh = {"grant_type": "refresh_token", "refresh_token": "x", "client_id": client_id}
    res = client.post("/oauth/token", data=refresh)
    assert res.status_code == 401 and res.json()["error"] == "invalid_client"
    res = client.post("/oauth/revoke", data={"token": "x", "client_id": client_id})
    assert res.status_code == 401 and res.json()["error"] == "unauthorized_client"


@SQLITE_ONLY  # the body is refused before any handler runs: the store plays no part
@pytest.mark.parametrize("path", [*FORM_PATHS, "/oauth/register"])
def test_a_body_past_the_cap_is_413(client: TestClient, path: str) -> None:
    ctype = "application/json" if path == "/oauth/register" else "application/x-www-form-urlencoded"
    big = b"client_name=" + b"a" * MAX_BODY
    res = client.post(path, content=big, headers={"Content-Type": ctype})
    assert res.status_code == 413
    assert res.json() == {"error": "invalid_request", "error_description": "the request body must be at most 1024 KiB"}

    def chunks() -> Any:  # no Content-Length: the cap holds on what arrives
        for _ in range(3):
            yield b"a" * (MAX_BODY // 2)

    assert client.post(path, content=chunks(), headers={"Content-Type": ctype}).status_code == 413


@SQLITE_ONLY  # the body is refused before any handler runs: the store plays no part
@pytest.mark.parametrize("path", FORM_PATHS)
def test_forms_are_urlencoded_only(client: TestClient, path: str) -> None:
    multipart = client.post(path, data={"client_id": "x"}, files={"f": ("a.bin", b"a" * 1000)})
    assert multipart.status_code == 400
    assert multipart.json()["error_description"] == (
        "the request body must be sent as application/x-www-form-urlencoded"
    )
    assert client.post(path, json={"client_id": "x"}).status_code == 400


@SQLITE_ONLY  # the body is refused before any handler runs: the store plays no part
def test_registration_is_json_only(client: TestClient) -> None:
    body = b'{"redirect_uris": ["http://localhost:3030/callback"]}'
    res = client.post("/oauth/register", content=body, headers={"Content-Type": "text/plain"})
    assert (
        res.status_code == 400
        and res.json()["error_description"] == "the request body must be sent as application/json"
    )
    res = client.post("/oauth/register", content=body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert res.status_code == 201


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"client_name": "n" * (MAX_TITLE + 1)}, f"client_name: at most {MAX_TITLE} characters"),
        ({"client_name": "tab\there"}, "client_name: must not contain control characters"),
        ({"client_name": "nul\u0000"}, "client_name: must not contain control characters"),
        ({"redirect_uris": [f"{REDIRECT}/{n}" for n in range(MAX_REDIRECT_URIS + 1)]}, "at most 10 URIs"),
        ({"redirect_uris": [f"{REDIRECT}/{'p' * MAX_URL}"]}, f"redirect_uris: at most {MAX_URL} characters"),
        ({"client_uri": f"https://app.example/{'p' * MAX_URL}"}, f"client_uri: at most {MAX_URL} characters"),
        ({"contacts": ["a@b.example"] * (MAX_CLIENT_LIST + 1)}, "contacts: at most 10 entries"),
        ({"software_id": "s" * (MAX_TITLE + 1)}, "software_id: at most"),
        ({"jwks": {"keys": ["k" * 20_000]}}, "the client metadata must be at most 16 KiB as JSON"),
    ],
)
def test_registration_metadata_is_bounded(client: TestClient, extra: dict[str, Any], message: str) -> None:
    res = client.post("/oauth/register", json={"redirect_uris": [REDIRECT], **extra})
    assert res.status_code == 400, res.text
    assert res.json()["error"] == "invalid_client_metadata" and message in res.json()["error_description"]


def test_registration_within_the_bounds(client: TestClient) -> None:
    body = {
        "client_name": "n" * MAX_TITLE,
        "redirect_uris": [f"{REDIRECT}/{n}" for n in range(MAX_REDIRECT_URIS)],
        "contacts": ["a@b.example"] * MAX_CLIENT_LIST,
    }
    res = client.post("/oauth/register", json=body)
    assert res.status_code == 201, res.text


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_every_oauth_endpoint_draws_from_the_ips_bucket(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_anonymous=3)
    query = {"client_id": "nobody", "response_type": "code", "code_challenge": CHALLENGE}
    codes = [tc.get("/oauth/authorize", params=query).status_code for _ in range(3)]
    assert codes == [400, 400, 400]
    for path in FORM_PATHS:
        refused = tc.post(path, data={"client_id": "nobody"})
        assert refused.status_code == 429 and refused.json()["error"] == "slow_down"
        assert int(refused.headers["retry-after"]) >= 1
    assert tc.get("/oauth/authorize", params=query).status_code == 429


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_client_id_documents_are_fetched_on_the_ips_budget(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tc, _ = make_client(rate_limit_analyze_anonymous=3, rate_limit_anonymous=100)
    fetched: list[str] = []

    async def download(rt: Runtime, url: str, ssl_context: object = None) -> bytes:
        fetched.append(url)
        raise documents.DocumentError("the client metadata document could not be fetched: unreachable")

    monkeypatch.setattr(documents, "download", download)
    query = {"response_type": "code", "code_challenge": CHALLENGE}
    for n in range(2):
        res = tc.get("/oauth/authorize", params={**query, "client_id": f"https://host-{n}.example/c.json"})
        assert res.status_code == 400 and "unreachable" in res.json()["error_description"]
    token = {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "https://host-2.example/c.json"}
    assert tc.post("/oauth/token", data=token).status_code == 400  # the IP's third fetch
    assert len(fetched) == 3
    for refused in (
        tc.get("/oauth/authorize", params={**query, "client_id": "https://host-3.example/c.json"}),
        tc.post("/oauth/token", data={**token, "client_id": "https://host-4.example/c.json"}),
        tc.post("/oauth/revoke", data={"token": "x", "client_id": "https://host-5.example/c.json"}),
    ):
        assert refused.status_code == 429 and refused.json()["error"] == "slow_down"
        assert "too many client metadata documents" in refused.json()["error_description"]
        assert int(refused.headers["retry-after"]) >= 1
    assert len(fetched) == 3  # no lookup past the budget
    assert tc.get("/api/v1/analyze", params={"url": "http://127.0.0.1:9/"}).status_code == 429  # one budget


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "about:blank",
        "blob:https://app.example/0b7c",
        "myapp:/callback",  # a private-use scheme must be reverse-domain style (RFC 8252 §7.1)
        "http://app.example/callback",  # plain http only on loopback
        "http://127.0.0.2/callback",
        "http://localhost.evil.example/callback",
        "https://app.example/callback#frag",
        "https://app.example/callback#",
        "https://user:pw@app.example/callback",
        "https://app.example;sandbox/callback",
        'https://app"example/callback',
    ],
)
def test_registration_refuses_redirect_uris_that_are_not_safe(client: TestClient, uri: str) -> None:
    res = client.post("/oauth/register", json={"redirect_uris": [REDIRECT, uri]})
    assert res.status_code == 400, res.text
    body = res.json()
    assert body["error"] == "invalid_redirect_uri" and body["error_description"].startswith("redirect_uris: "), body


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example/callback",
        "https://app.example:8443/oauth/cb?x=1",
        "http://127.0.0.1:8765/callback",
        "http://[::1]:8765/callback",
        "http://localhost:3030/callback",
        "com.example.app:/oauth2redirect",
        "com.example.app://callback",
    ],
)
def test_registration_takes_https_loopback_and_private_use_redirect_uris(client: TestClient, uri: str) -> None:
    res = client.post("/oauth/register", json={"redirect_uris": [uri]})
    assert res.status_code == 201, res.text


def test_an_unsafe_redirect_uri_stored_before_the_rule_is_never_redirected_to(
    runtime: Runtime, client: TestClient
) -> None:
    made = client.post("/oauth/register", json={"redirect_uris": [REDIRECT]}).json()
    with runtime.db.session() as session:  # as a registration made before the rule would have stored it
        row = session.get(OAuthClient, made["client_id"])
        assert row is not None
        row.client_metadata = {**row.client_metadata, "redirect_uris": [REDIRECT, "javascript:alert(1)"]}
    query = {"client_id": made["client_id"], "response_type": "code", "code_challenge": CHALLENGE}
    res = client.get(
        "/oauth/authorize", params={**query, "redirect_uri": "javascript:alert(1)"}, follow_redirects=False
    )
    assert res.status_code == 400 and res.json()["error"] == "invalid_request"
    res = client.get("/oauth/authorize", params={**query, "redirect_uri": REDIRECT}, follow_redirects=False)
    assert res.status_code == 302 and res.headers["location"].startswith(f"{client.base_url}/oauth/consent?")
