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
from tests.support.receiver import Receiver

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


@SQLITE_ONLY
def test_webhook_deliveries_are_counted_by_outcome_with_their_lag(make_client: ClientFactory) -> None:
    """Two failed attempts then a delivery of one event, and the outbox's waiting messages as they go."""
    client, rt = make_client(
        metrics_token=TOKEN,
        webhooks_allow_private=True,
        webhooks_poll_seconds=0.05,
        webhooks_retry_seconds=0.1,
        webhooks_retry_max_seconds=0.2,
    )
    auth = keyed(client, rt, "hooked")
    with Receiver() as receiver:
        receiver.answer = lambda n: 503 if n < 2 else 200
        hook = client.post("/api/v1/webhooks", json={"url": receiver.url, "events": ["link.created"]}, headers=auth)
        receiver.secret = hook.json()["secret"]
        assert client.post("/api/v1/links", json={"destination_url": "https://e.x/"}, headers=auth).is_success
        receiver.wait_for(lambda events: len(events) == 1)
        deadline = time.monotonic() + 10
        delivered = ("slugline_webhook_deliveries_total", (("outcome", "delivered"),))
        while (found := scrape(client))[delivered] < 1 or found[("slugline_webhook_messages_pending", ())]:
            assert time.monotonic() < deadline, "the delivery was not counted"
            time.sleep(0.05)
    by_outcome = {labels[0][1]: v for (name, labels), v in found.items() if name == delivered[0]}
    assert by_outcome == {"delivered": 1, "retried": 2, "failed": 0, "disabled": 0}
    assert found[("slugline_webhook_attempt_seconds_count", ())] == 3
    assert found[("slugline_webhook_delivery_lag_seconds_count", ())] == 1
    lag = found[("slugline_webhook_delivery_lag_seconds_sum", ())]
    assert 0.1 <= lag < 10, "after two back-offs of 0.1 s or more"
