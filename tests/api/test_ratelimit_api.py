"""Rate limits through the app: per key and plan, per IP for anonymous callers and logins, behind proxies or not."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline import _core
from slugline.accounts import callers
from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.runtime import Runtime
from tests.support.helpers import SQLITE_ONLY, ClientFactory

pytestmark = SQLITE_ONLY  # the buckets live in memory: the store plays no part


@pytest.fixture
def tight(make_client: ClientFactory) -> tuple[TestClient, Runtime]:
    return make_client(rate_limit_developer=5, rate_limit_pro=8, rate_limit_anonymous=3, rate_limit_login=2)


def _key(tc: TestClient, rt: Runtime, name: str, plan: str) -> dict[str, str]:
    token = accounts.register(rt, {"username": name, "password": "long enough"}, plan=plan)["token"]
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {token}"})
    return {"Authorization": f"Bearer {key.json()['key']}"}


def test_burst_gets_429_with_headers_and_other_keys_are_unaffected(tight: tuple[TestClient, Runtime]) -> None:
    tc, rt = tight
    dev, pro = _key(tc, rt, "dev", "developer"), _key(tc, rt, "pro", "pro")
    answers = [tc.get("/api/v1/links", headers=dev) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * 5 + [429]
    assert answers[0].headers["ratelimit-limit"] == "5" and answers[0].headers["ratelimit-remaining"] == "4"
    assert int(answers[-1].headers["retry-after"]) >= 1 and answers[-1].headers["ratelimit-remaining"] == "0"
    assert "rate limit" in answers[-1].json()["error"]
    assert tc.get("/api/v1/links", headers=pro).headers["ratelimit-limit"] == "8"
    assert tc.get("/api/v1/links", headers=pro).status_code == 200


def test_errors_carry_the_headers_too(tight: tuple[TestClient, Runtime]) -> None:
    tc, _ = tight
    res = tc.get("/api/v1/me", headers={"Authorization": "Bearer nonsense"})
    assert res.status_code == 401 and res.headers["ratelimit-limit"] == "3"


def test_anonymous_callers_are_limited_per_ip(tight: tuple[TestClient, Runtime]) -> None:
    tc, _ = tight
    codes = [tc.get("/api/v1/public/nothing").status_code for _ in range(4)]
    assert codes == [404, 404, 404, 429]
    assert tc.get("/api/v1/health").status_code == 200  # never limited


def test_login_attempts_are_limited_per_ip_and_username(tight: tuple[TestClient, Runtime]) -> None:
    tc, rt = tight
    accounts.register(rt, {"username": "victim", "password": "long enough"})
    codes = [
        tc.post("/api/v1/auth/login", json={"username": "victim", "password": f"guess-{i}xx"}).status_code
        for i in range(3)
    ]
    assert codes[:2] == [401, 401] and codes[2] == 429


@pytest.mark.parametrize("trusted", [None, "testclient"])
def test_forwarded_for_counts_only_behind_a_trusted_proxy(make_client: ClientFactory, trusted: str | None) -> None:
    tc, _ = make_client(rate_limit_anonymous=2, trusted_proxies=trusted)
    first = [tc.get("/api/v1/public/x", headers={"X-Forwarded-For": "203.0.113.7"}).status_code for _ in range(3)]
    other = tc.get("/api/v1/public/x", headers={"X-Forwarded-For": "198.51.100.9"}).status_code
    assert first == [404, 404, 429]
    assert other == (404 if trusted else 429)


def test_login_429_carries_one_set_of_ratelimit_headers(tight: tuple[TestClient, Runtime]) -> None:
    tc, _ = tight
    for _ in range(2):
        tc.post("/api/v1/auth/login", json={"username": "nobody", "password": "whatever1"})
    res = tc.post("/api/v1/auth/login", json={"username": "nobody", "password": "whatever1"})
    assert res.status_code == 429 and int(res.headers["retry-after"]) >= 1
    assert len(res.headers.get_list("ratelimit-limit")) == 1


def test_a_refused_call_costs_no_token_read_once_its_ip_is_spent(
    tight: tuple[TestClient, Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the IP's bucket spent, a call that draws from it whatever its token (none, a session token) is refused
    before the token is resolved, and an unknown API key (which might have turned out to be a paid one, with a
    bucket of its own) is read once, then refused from the worker's memory: no thread hop, no database read."""
    tc, rt = tight
    paid = _key(tc, rt, "paid", "developer")
    reads: list[str] = []
    resolve = callers.resolve

    def counted(rt: Runtime, token: callers.Token, base_url: str) -> Caller:
        reads.append(token.kind)
        return resolve(rt, token, base_url)

    monkeypatch.setattr(callers, "resolve", counted)
    while tc.get("/api/v1/public/nothing").status_code != 429:  # the IP's bucket, partly spent making the key
        pass
    for kind in ("session", "full"):
        unknown = {"Authorization": f"Bearer {_core.generate_key(kind)}"}
        answers = [tc.get("/api/v1/me", headers=unknown) for _ in range(5)]
        assert {a.status_code for a in answers} == {429}
        assert answers[0].headers["ratelimit-limit"] == "3" and int(answers[0].headers["retry-after"]) >= 1
    assert reads == ["full"]  # the session token: none; the API key: its first call only
    assert tc.get("/api/v1/me", headers=paid).status_code == 200  # a paid key has its own bucket


def test_a_refused_token_stays_refused_and_a_new_key_works_at_once(make_client: ClientFactory) -> None:
    tc, rt = make_client()
    token = accounts.register(rt, {"username": "fresh", "password": "long enough"}, plan="developer")["token"]
    session = {"Authorization": f"Bearer {token}"}
    old = tc.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    new = tc.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]  # replaces the old one
    for _ in range(2):  # the second answer is the remembered one: the same 401
        refused = tc.get("/api/v1/me", headers={"Authorization": f"Bearer {old}"})
        assert refused.status_code == 401 and refused.json() == {"error": "invalid or revoked API key"}
        assert refused.headers["www-authenticate"] == "Bearer"
    assert tc.get("/api/v1/me", headers={"Authorization": f"Bearer {new}"}).status_code == 200


def test_a_taken_username_gives_its_registration_back(make_client: ClientFactory) -> None:
    """A registration refused as a conflict made nothing: it does not use up the address's registrations (nor,
    its bucket full again, hold a place in the limiter's table)."""
    tc, rt = make_client(rate_limit_register=1)
    accounts.register(rt, {"username": "taken", "password": "long enough"})
    for _ in range(3):
        res = tc.post("/api/v1/auth/register", json={"username": "taken", "password": "long enough"})
        assert res.status_code == 409, res.text
    assert tc.post("/api/v1/auth/register", json={"username": "fresh", "password": "long enough"}).status_code == 201
    again = tc.post("/api/v1/auth/register", json={"username": "fresher", "password": "long enough"})
    assert again.status_code == 429 and again.json()["error"].startswith("too many registrations from this address")


def test_ipv6_callers_share_their_48_while_the_table_is_crowded(make_client: ClientFactory) -> None:
    """Buckets are per /64 normally; once the in-process table is half full, per /48, so one network's many /64s
    draw from one bucket instead of filling the table."""
    tc, rt = make_client(rate_limit_anonymous=2, trusted_proxies="testclient", rate_limit_bytes=1 << 16)

    def status(ip: str) -> int:
        return tc.get("/api/v1/public/x", headers={"X-Forwarded-For": ip}).status_code

    assert [status(f"2001:db8:0:{n:x}::1") for n in range(4)] == [404] * 4  # a bucket per /64
    filler = 0
    while not rt.limiter.crowded:
        filler += 1
        assert filler < 1000, "the table never got crowded"
        assert status(f"198.51.100.{filler % 250}") in (404, 429)
    assert [status(f"2001:db8:1:{n:x}::1") for n in range(3)] == [404, 404, 429]  # one bucket for the /48
