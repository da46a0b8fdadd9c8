"""Rate limits through the app: per key and plan, per IP for anonymous callers and logins, behind proxies or not."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.runtime import Runtime
from slugline.services import accounts
from tests.helpers import SQLITE_ONLY, ClientFactory

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
