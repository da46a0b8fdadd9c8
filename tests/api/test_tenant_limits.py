"""No token lifts an IP out of the anonymous limit: session tokens and free-plan keys count against their IP's bucket,
registrations and argon2 work are limited per IP, IPv6 callers share their /64; and the headers stay exact."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.common.errors import RateLimited
from slugline.limits import rules as limits
from slugline.limits.buckets import MemoryRateLimiter
from slugline.runtime import Runtime
from tests.support.helpers import SQLITE_ONLY, ClientFactory

ME = "/api/v1/me"


def _session(rt: Runtime, name: str, plan: str = "free") -> dict[str, str]:
    token = accounts.register(rt, {"username": name, "password": "long enough"}, plan=plan)["token"]
    return {"Authorization": f"Bearer {token}"}


def _key(tc: TestClient, rt: Runtime, name: str, plan: str) -> dict[str, str]:
    made = accounts.register(rt, {"username": name, "password": "long enough"}, plan=plan)
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {made['token']}"})
    return {"Authorization": f"Bearer {key.json()['key']}"}


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_session_tokens_share_their_ips_anonymous_bucket(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=4)
    tokens = [_session(rt, f"sess-{i}") for i in range(3)]
    codes = [tc.get(ME, headers=tokens[i % 3]).status_code for i in range(5)]
    assert codes == [200, 200, 200, 200, 429]  # three tokens, one IP: 4 calls in all, not 4 per token
    assert tc.get("/api/v1/public/x").status_code == 429  # and the anonymous caller on that IP is spent too


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_free_plan_keys_share_their_ips_anonymous_bucket(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=6)  # one token back every 10 s: none while the test runs
    keys = [_key(tc, rt, f"free-{i}", "free") for i in range(3)]  # 3 of the IP's 6 calls (POST /api-key)
    codes = [tc.get(ME, headers=keys[i % 3]).status_code for i in range(5)]
    assert codes == [403, 403, 403, 429, 429]  # three keys, one IP: the plan's 403s count too


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_paid_keys_keep_their_own_bucket(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=3, rate_limit_developer=10)
    dev = _key(tc, rt, "dev", "developer")  # the session's api-key call takes one of the IP's 3
    for _ in range(2):
        tc.get("/api/v1/public/x")
    assert tc.get("/api/v1/public/x").status_code == 429  # the IP is spent
    answer = tc.get(ME, headers=dev)
    assert answer.status_code == 200 and answer.headers["ratelimit-limit"] == "10"


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_a_replaced_key_keeps_its_bucket(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_developer=3, rate_limit_anonymous=100)  # one call back every 20 s
    made = accounts.register(rt, {"username": "replacer", "password": "long enough"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    codes = []
    for _ in range(2):  # a new key every other call: each replaces the last, and none brings a fresh budget
        key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
        codes += [tc.get(ME, headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(2)]
    assert codes == [200, 200, 200, 429]
    public = tc.post("/api/v1/api-key", json={"scope": "public"}, headers=session).json()["key"]
    assert tc.get(ME, headers={"Authorization": f"Bearer {public}"}).status_code == 200  # the other scope's own


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_headers_show_the_tighter_bucket(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=5)
    first, second = _session(rt, "one"), _session(rt, "two")
    tc.get(ME, headers=first)
    tc.get(ME, headers=first)
    answer = tc.get(ME, headers=second)  # its own bucket has 4 left, its IP's 2
    assert answer.headers["ratelimit-limit"] == "5" and answer.headers["ratelimit-remaining"] == "2"
    tc.get(ME, headers=second)
    tc.get(ME, headers=second)
    refused = tc.get(ME, headers=second)
    assert refused.status_code == 429 and refused.headers["ratelimit-remaining"] == "0"
    assert int(refused.headers["retry-after"]) >= 1


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_registrations_are_limited_per_ip_per_hour(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_register=2)
    invalid = tc.post("/api/v1/auth/register", json={"username": "x", "password": "short"})
    assert invalid.status_code == 422  # refused before it counts
    codes = [
        tc.post("/api/v1/auth/register", json={"username": f"new-{i}", "password": "long enough"}).status_code
        for i in range(3)
    ]
    assert codes == [201, 201, 429]
    refused = tc.post("/api/v1/auth/register", json={"username": "new-9", "password": "long enough"})
    assert refused.json()["error"].startswith("too many registrations")
    assert 1000 < int(refused.headers["retry-after"]) <= 1800  # one registration back every 30 minutes


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_password_hashing_is_bounded_per_ip_across_usernames(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_password_hashes=3, rate_limit_login=10)
    codes = [
        tc.post("/api/v1/auth/login", json={"username": f"name-{i}", "password": "whatever1"}).status_code
        for i in range(4)
    ]
    assert codes == [401, 401, 401, 429]


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
@pytest.mark.anyio
async def test_a_spent_hash_budget_makes_no_bucket_per_username_or_link(make_client: ClientFactory) -> None:
    """Once an IP's argon2 budget is spent, attempts with made-up usernames (or at other links) add nothing to the
    limiter's table: otherwise they would fill it, and a full table must refuse newcomers."""
    _, rt = make_client(rate_limit_password_hashes=3)
    table = rt.limiter
    assert isinstance(table, MemoryRateLimiter)
    for i in range(3):
        await limits.check_login(rt, "203.0.113.9", f"name-{i}")
    before = len(table)
    for i in range(3, 200):
        with pytest.raises(RateLimited, match="too many password checks"):
            await limits.check_login(rt, "203.0.113.9", f"name-{i}")
        assert not (await limits.unlock_attempt(rt, "203.0.113.9", f"lnk_{i:011d}")).allowed
    assert len(table) == before
    await limits.check_login(rt, "198.51.100.7", "name-0")  # another address has its own budget


@pytest.mark.parametrize(
    ("ip", "key"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("::ffff:198.51.100.4", "198.51.100.4"),
        ("testclient", "testclient"),
    ],
)
def test_ipv6_addresses_are_bucketed_by_their_64(ip: str, key: str) -> None:
    assert limits.ip_key(ip) == key


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_one_ipv6_64_shares_a_bucket(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_anonymous=2, trusted_proxies="testclient")

    def call(ip: str) -> int:
        return tc.get("/api/v1/public/x", headers={"X-Forwarded-For": ip}).status_code

    assert [call("2001:db8::1"), call("2001:db8::ffff:2"), call("2001:db8::3")] == [404, 404, 429]
    assert call("2001:db8:0:1::1") == 404  # the next /64 is someone else


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_analyze_with_a_session_token_is_anonymous(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_analyze_anonymous=2, rate_limit_anonymous=100)
    session = _session(rt, "analyst", plan="developer")
    url = {"url": "http://127.0.0.1:9/"}  # refused at once: nothing listens on the discard port
    codes = [tc.get("/api/v1/analyze", params=url, headers=session).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    dev = _key(tc, rt, "keyed", "developer")
    assert tc.get("/api/v1/analyze", params=url, headers=dev).status_code == 200  # an API key is not anonymous


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_logout_revokes_the_session_token(make_client: ClientFactory) -> None:
    tc, rt = make_client()
    session, other = _session(rt, "leaver"), _session(rt, "stayer")
    assert tc.get(ME, headers=session).status_code == 200
    answer = tc.post("/api/v1/auth/logout", headers=session)
    assert answer.status_code == 200 and answer.json() == {"logged_out": True}
    again = tc.get(ME, headers=session)
    assert again.status_code == 401 and again.headers["www-authenticate"] == "Bearer"
    assert tc.get(ME, headers=other).status_code == 200  # only that token
    assert tc.post("/api/v1/auth/logout").status_code == 401
    key = _key(tc, rt, "keyholder", "developer")
    refused = tc.post("/api/v1/auth/logout", headers=key)
    assert refused.status_code == 403 and "DELETE /api-key" in refused.json()["error"]


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
def test_api_responses_are_not_stored(make_client: ClientFactory) -> None:
    tc, rt = make_client(rate_limit_anonymous=2)
    session = _session(rt, "private")
    for answer in (
        tc.get(ME, headers=session),
        tc.get("/api/v1/links", headers=session),  # a 403
        tc.get("/api/v1/nothing-here"),
        tc.get("/api/v1/health"),
        tc.get("/api/v1/public/x"),  # the 429: the IP's two calls are spent
    ):
        assert answer.headers["cache-control"] == "no-store", answer.request.url
    assert answer.status_code == 429
