"""Two instances on one store with Redis: they share rate limits and see each other's link changes within 1 s."""

from __future__ import annotations

import time

import httpx

from tests.support.server import ServerFactory, make_account


def test_two_instances_share_limits_and_links(start_server: ServerFactory, database_url: str, redis_url: str) -> None:
    # Registrations are limited per IP and hour, in Redis shared by every run on this machine: a limit this large
    # refills at once, so runs before this one cannot have spent it.
    env = {
        "SLUGLINE_REDIS_URL": redis_url,
        "SLUGLINE_RATE_LIMIT_DEVELOPER": "10",
        "SLUGLINE_RATE_LIMIT_REGISTER": "1000000",
    }
    first = start_server(database_url, **env)
    second = start_server(database_url, **env)
    keys = make_account(first, "scaler")
    auth = {"Authorization": f"Bearer {keys.full}"}

    codes = [httpx.get(f"{server.url}/api/v1/me", headers=auth).status_code for server in (first, second) * 6]
    assert codes.count(200) == 10 and codes[-2:] == [429, 429], codes

    public = {"Authorization": f"Bearer {keys.public}"}  # a bucket of its own: the full key is spent
    made = httpx.post(
        f"{first.url}/api/v1/links",
        headers=public,
        json={"destination_url": "https://example.org/one", "slug": "shared"},
    )
    assert made.status_code == 201, made.text
    assert httpx.get(f"{second.url}/shared").headers["location"] == "https://example.org/one"
    changed = httpx.put(
        f"{first.url}/api/v1/links/{made.json()['id']}",
        headers=public,
        json={"destination_url": "https://example.org/two"},
    )
    assert changed.status_code == 200, changed.text
    deadline = time.monotonic() + 1.0
    while httpx.get(f"{second.url}/shared").headers["location"] != "https://example.org/two":
        assert time.monotonic() < deadline, "the other instance served the old destination for more than 1 s"
