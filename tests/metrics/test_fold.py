"""What each worker counts reaches the scrape: redirect outcomes of password links, rate-limit refusals by rule,
clicks written with their flush latency, and nothing counted before the app was made."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.limits.buckets import refused
from slugline.runtime import Runtime
from tests.support.helpers import SQLITE_ONLY, ClientFactory

TOKEN = "fold-token-" + "f" * 24
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: TestClient) -> Samples:
    text = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def outcome(found: Samples, name: str) -> float:
    return found[("slugline_redirects_total", (("outcome", name),))]


def keyed(client: TestClient, rt: Runtime, username: str) -> dict[str, str]:
    made = accounts.register(rt, {"username": username, "password": "correct horse"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    key = client.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    return {"Authorization": f"Bearer {key}"}


@SQLITE_ONLY
def test_password_links_count_each_outcome(make_client: ClientFactory) -> None:
    client, rt = make_client(metrics_token=TOKEN)
    auth = keyed(client, rt, "vault-owner")
    body = {"destination_url": "https://e.x/", "slug": "vault", "visibility": "password", "password": "open sesame"}
    assert client.post("/api/v1/links", json=body, headers=auth).status_code == 201
    assert client.get("/vault", follow_redirects=False).status_code == 200
    assert client.post("/vault", data={"password": "wrong"}, follow_redirects=False).status_code == 401
    assert client.post("/vault", data={"password": "open sesame"}, follow_redirects=False).status_code == 302
    assert client.get("/vault", follow_redirects=False).status_code == 302  # the unlock cookie
    found = scrape(client)
    assert outcome(found, "password_form") == 1
    assert outcome(found, "wrong_password") == 1
    assert outcome(found, "unlocked") == 2
    assert outcome(found, "hit") + outcome(found, "miss") == 0


@SQLITE_ONLY
def test_refusals_are_counted_by_rule(make_client: ClientFactory) -> None:
    refused("ip:203.0.113.9")  # before the app: not its count
    client, _ = make_client(metrics_token=TOKEN, rate_limit_anonymous=1)
    statuses = [client.get("/api/v1/me").status_code for _ in range(3)]
    assert statuses == [401, 429, 429]
    found = scrape(client)
    assert found[("slugline_rate_limit_refusals_total", (("rule", "anonymous"),))] == 2
    refusals = [v for (name, labels), v in found.items() if name.endswith("_count") and ("status", "429") in labels]
    assert sum(refusals) == 2  # answered by the rate limits before routing: no route template


@SQLITE_ONLY
def test_clicks_written_and_their_flush_are_counted(make_client: ClientFactory) -> None:
    client, rt = make_client(metrics_token=TOKEN)
    auth = keyed(client, rt, "clicker")
    assert client.post("/api/v1/links", json={"destination_url": "https://e.x/", "slug": "c1"}, headers=auth).is_success
    for _ in range(5):
        assert client.get("/c1", follow_redirects=False).status_code == 302
    deadline = time.monotonic() + 10
    while (found := scrape(client))[("slugline_clicks_recorded_total", ())] < 5:
        assert time.monotonic() < deadline, "the clicks were not written"
        time.sleep(0.05)
    assert found[("slugline_clicks_recorded_total", ())] == 5
    assert found[("slugline_clicks_pending", ())] == 0
    assert found[("slugline_click_flush_seconds_count", ())] >= 1


@SQLITE_ONLY
def test_a_used_up_link_counts_as_gone(make_client: ClientFactory) -> None:
    client, rt = make_client(metrics_token=TOKEN)
    auth = keyed(client, rt, "limited")
    body = {"destination_url": "https://e.x/", "slug": "once", "max_clicks": 1}
    assert client.post("/api/v1/links", json=body, headers=auth).status_code == 201
    browser = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0 Safari/537.36"}
    assert client.get("/once", headers=browser, follow_redirects=False).status_code == 302
    assert client.get("/once", headers=browser, follow_redirects=False).status_code == 410
    found = scrape(client)
    assert outcome(found, "hit") + outcome(found, "miss") == 1
    assert outcome(found, "gone") == 1
