"""Behind trusted proxies the client is the right-most X-Forwarded-For entry that is not a trusted proxy, so a client
cannot choose its own address by sending the header itself; `*` trusts one hop and says so at start-up."""

from __future__ import annotations

import logging

import pytest
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.runtime import Runtime
from slugline.web.proxies import ANY_WARNING, TrustedProxies
from tests.support.helpers import LINKS, SQLITE_ONLY, ClientFactory


@pytest.mark.parametrize(
    ("spec", "forwarded", "client"),
    [
        ("*", ["6.6.6.6", "203.0.113.7"], "203.0.113.7"),  # the left entry is the client's own claim
        ("10.0.0.0/8", ["6.6.6.6", "203.0.113.7", "10.1.1.1"], "203.0.113.7"),  # a second, trusted proxy hop
        ("10.0.0.1, 10.0.0.2", ["203.0.113.7:4321", "10.0.0.2"], "203.0.113.7"),
        ("10.0.0.0/8", ["[2001:db8::5]:80"], "2001:db8::5"),
        ("10.0.0.0/8", ["10.0.0.3", "10.0.0.4"], "10.0.0.3"),  # every hop a proxy: the farthest
    ],
)
def test_the_client_is_the_rightmost_untrusted_hop(spec: str, forwarded: list[str], client: str) -> None:
    assert TrustedProxies(spec).client("10.9.9.9", forwarded) == client


@SQLITE_ONLY
def test_star_does_not_let_a_client_rotate_its_address(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_anonymous=3, trusted_proxies="*")
    codes = [
        tc.get("/api/v1/public/x", headers={"X-Forwarded-For": f"198.51.100.{i}, 203.0.113.7"}).status_code
        for i in range(4)
    ]
    assert codes == [404, 404, 404, 429]


@SQLITE_ONLY
def test_star_cannot_dodge_the_unlock_limit(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_unlock=3, trusted_proxies="*")
    body = {"destination_url": "https://example.org/", "slug": "locked", "visibility": "password", "password": "open"}
    assert tc.post(LINKS, json=body, headers=_full_key(tc, rt, "locker")).status_code == 201
    codes = [
        tc.post(
            "/locked",
            data={"password": f"wrong-{i}"},
            headers={"X-Forwarded-For": f"198.51.100.{i}, 203.0.113.7"},
            follow_redirects=False,
        ).status_code
        for i in range(4)
    ]
    assert codes == [401, 401, 401, 429]


@SQLITE_ONLY
def test_star_is_warned_about(make_client: ClientFactory, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="slugline"):
        make_client(trusted_proxies="*")
    assert ANY_WARNING in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="slugline"):
        make_client(trusted_proxies="10.0.0.1")
    assert ANY_WARNING not in caplog.text


@SQLITE_ONLY
@pytest.mark.parametrize(("trusted", "scheme"), [("testclient", "https"), ("10.0.0.1", "http")])
def test_forwarded_proto_is_believed_from_a_trusted_proxy_only(
    make_client: ClientFactory, trusted: str, scheme: str
) -> None:
    tc, rt = make_client(trusted_proxies=trusted)
    key = _full_key(tc, rt, "schemer")
    made = tc.post(
        LINKS, json={"destination_url": "https://example.org/"}, headers={**key, "X-Forwarded-Proto": "https"}
    )
    assert made.json()["short_url"].startswith(f"{scheme}://sl.test/")


def _full_key(tc: TestClient, rt: Runtime, name: str) -> dict[str, str]:
    token = accounts.register(rt, {"username": name, "password": "long enough"}, plan="developer")["token"]
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {token}"})
    return {"Authorization": f"Bearer {key.json()['key']}"}
