"""The person's side of OAuth, in process: signing in returns to the consent page (same-site paths only), the plan
gate, denying, and a signed authorization request that cannot be altered."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from starlette.testclient import TestClient

from slugline.dashboard.auth import safe_next
from slugline.oauth import pending
from slugline.runtime import Runtime
from tests.support.helpers import Account

REDIRECT = "http://localhost:3030/callback"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def sign_in(client: TestClient, account: Account, next_url: str | None = None) -> str:
    """Sign in through the form; the answer's Location."""
    page = client.get("/app/login" + (f"?{urlencode({'next': next_url})}" if next_url else ""))
    found = CSRF.search(page.text)
    assert found
    form = {"csrf_token": found[1], "username": account.username, "password": account.password}
    if next_url is not None and 'name="next"' in page.text:
        form["next"] = next_url
    res = client.post("/app/login", data=form, follow_redirects=False)
    assert res.status_code == 303, res.text
    return str(res.headers["location"])


def consent_url(client: TestClient) -> str:
    """Register a client and start an authorization: the consent page's path and query."""
    made = client.post("/oauth/register", json={"client_name": "Test App", "redirect_uris": [REDIRECT]}).json()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(b"v" * 43).digest()).decode().rstrip("=")
    query = urlencode(
        {
            "response_type": "code",
            "client_id": made["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "state": "s1",
        }
    )
    res = client.get(f"/oauth/authorize?{query}", follow_redirects=False)
    assert res.status_code == 302, res.text
    parts = urlsplit(res.headers["location"])
    return f"{parts.path}?{parts.query}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/oauth/consent?request=x", "/oauth/consent?request=x"),
        ("//evil.example/x", None),
        ("/\\evil.example", None),
        ("https://evil.example/", None),
        ("/a b", None),
        ("", None),
    ],
)
def test_next_is_a_path_on_this_site_only(value: str, expected: str | None) -> None:
    assert safe_next(value) == expected


def test_sign_in_returns_to_the_consent_page(client: TestClient, make_account: Callable[..., Account]) -> None:
    account = make_account()
    target = consent_url(client)
    res = client.get(target, follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"].startswith("/app/login?next=")
    assert sign_in(client, account, target) == target
    page = client.get(target)
    assert page.status_code == 200
    assert "Test App" in page.text and "localhost:3030" in page.text
    assert "form-action 'self' http://localhost:3030" in page.headers["content-security-policy"]
    assert sign_in(TestClient(client.app, base_url=str(client.base_url)), account, "//evil.example/") == "/app/"


def test_deny_and_the_plan_gate(client: TestClient, make_account: Callable[..., Account]) -> None:
    sign_in(client, make_account())
    target = consent_url(client)
    page = client.get(target)
    form = {"csrf_token": CSRF.findall(page.text)[-1], "request": parse_qs(urlsplit(target).query)["request"][0]}
    res = client.post("/oauth/consent", data={**form, "decision": "deny"}, follow_redirects=False)
    assert res.status_code == 303
    assert parse_qs(urlsplit(res.headers["location"]).query) == {
        "error": ["access_denied"],
        "state": ["s1"],
        "iss": [str(client.base_url)],
    }
    res = client.post("/oauth/consent", data={**form, "decision": "allow"}, follow_redirects=False)
    assert res.status_code == 422  # no scope chosen
    res = client.post("/oauth/consent", data={**form, "decision": "allow", "scope": "public"}, follow_redirects=False)
    assert "code=svc_oac_" in res.headers["location"]
    res = client.post("/oauth/consent", data={**form, "decision": "allow", "scope": "full", "csrf_token": "x"})
    assert res.status_code == 403

    free = TestClient(client.app, base_url=str(client.base_url))
    sign_in(free, make_account(plan="free"))
    page = free.get(target)
    assert page.status_code == 403 and "developer plan" in page.text and "Allow" not in page.text


def test_a_changed_authorization_request_is_refused(runtime: Runtime) -> None:
    request = pending.Pending("c", REDIRECT, True, "ch", "s", "full", "http://h/mcp")
    signed = pending.sign(runtime, request)
    assert pending.verify(runtime, signed) is not None
    payload, mac = signed.split(".")
    other = base64.urlsafe_b64encode(base64.urlsafe_b64decode(payload + "==").replace(b'"c"', b'"d"')).decode()
    assert pending.verify(runtime, f"{other.rstrip('=')}.{mac}") is None
    assert pending.verify(runtime, "garbage") is None


def _form_action(csp: str) -> str:
    found = [part.strip() for part in csp.split(";") if part.strip().startswith("form-action")]
    assert len(found) == 1, csp
    return found[0]


@pytest.mark.parametrize(
    ("redirect_uri", "expected"),
    [
        ("https://app.example:8443/cb?x=1", "form-action 'self' https://app.example:8443"),
        ("http://127.0.0.1:8765/cb", "form-action 'self' http://127.0.0.1:8765"),
        ("http://[::1]:8765/cb", "form-action 'self'"),  # CSP's grammar has no IPv6 literal
        ("com.example.app:/cb", "form-action 'self' com.example.app:"),
        ("com.example.app://host;sandbox/cb", "form-action 'self' com.example.app:"),
        ("https://app.example;sandbox/cb", "form-action 'self'"),
        ("https://app.example;script-src*/cb", "form-action 'self'"),
        ('https://app"example/cb', "form-action 'self'"),
        ("https://app'example/cb", "form-action 'self'"),
        ("https://app.example\r\nX-Injected: 1/cb", "form-action 'self'"),
        ("https://app example/cb", "form-action 'self'"),
        ("https://app.example:99999/cb", "form-action 'self'"),
        ("javascript:alert(1)", "form-action 'self'"),
        ("data:text/html,x", "form-action 'self'"),
    ],
)
def test_the_consent_pages_csp_names_only_a_checked_origin(
    client: TestClient, runtime: Runtime, make_account: Callable[..., Account], redirect_uri: str, expected: str
) -> None:
    """The redirect URI reaches the page in a signed request, made after its client's registration was checked; the
    header is built as if it had not been: a host with `;`, a quote, a space or a line break never reaches it."""
    sign_in(client, make_account())
    made = client.post("/oauth/register", json={"client_name": "App", "redirect_uris": [REDIRECT]}).json()
    request = pending.Pending(made["client_id"], redirect_uri, True, "c" * 43, None, "", f"{client.base_url}/mcp")
    page = client.get("/oauth/consent", params={"request": pending.sign(runtime, request)})
    assert page.status_code == 200, page.text
    csp = page.headers["content-security-policy"]
    assert _form_action(csp) == expected
    assert "sandbox" not in csp and "X-Injected" not in str(page.headers) and "script-src*" not in csp
