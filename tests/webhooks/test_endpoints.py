"""Webhook endpoints over REST: made with a secret shown once, listed, changed, deleted; full-access keys only."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import func, select
from standardwebhooks.webhooks import Webhook
from starlette.testclient import TestClient

from slugline.accounts.deletion import delete_account
from slugline.common.models import WebhookAttempt, WebhookEndpoint, WebhookMessage
from slugline.runtime import Runtime
from slugline.webhooks import signing
from tests.support.helpers import Account

HOOKS = "/api/v1/webhooks"


def test_an_endpoint_is_made_listed_changed_and_deleted(client: TestClient, alice: Account) -> None:
    made = client.post(
        HOOKS, json={"url": "https://hooks.example.com/in", "events": ["link.created"]}, headers=alice.auth()
    )
    assert made.status_code == 201, made.text
    hook = made.json()
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["link.created"] and hook["enabled"]
    listed = client.get(HOOKS, headers=alice.auth()).json()["data"]
    assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
    changed = client.patch(
        f"{HOOKS}/{hook['id']}",
        json={"events": ["link.clicked", "link.deleted"], "enabled": False},
        headers=alice.auth(),
    ).json()
    assert changed["events"] == ["link.deleted", "link.clicked"] and not changed["enabled"]
    assert changed["disabled_reason"] == "turned off by the account"
    on = client.patch(f"{HOOKS}/{hook['id']}", json={"enabled": True}, headers=alice.auth()).json()
    assert on["enabled"] and on["disabled_reason"] is None
    assert client.get(f"{HOOKS}/{hook['id']}/attempts", headers=alice.auth()).json() == {"data": []}
    assert client.delete(f"{HOOKS}/{hook['id']}", headers=alice.auth()).json() == {"deleted": True, "id": hook["id"]}
    assert client.get(f"{HOOKS}/{hook['id']}", headers=alice.auth()).status_code == 404


def test_the_secret_signs_as_standard_webhooks_verifies() -> None:
    secret = signing.secret_text(b"s" * 32, "salt")
    body = b'{"type":"link.created"}'
    headers = signing.headers(signing.key(b"s" * 32, "salt"), "msg_1", 1_700_000_000, body)
    assert headers["webhook-signature"] == Webhook(secret).sign(
        "msg_1", datetime.fromtimestamp(1_700_000_000, UTC), body.decode()
    )


def test_only_full_keys_manage_endpoints(
    client: TestClient, alice: Account, make_account: Callable[..., Account]
) -> None:
    body = {"url": "https://hooks.example.com/in"}
    assert client.post(HOOKS, json=body, headers=alice.auth("public")).status_code == 403
    assert client.get(HOOKS, headers=alice.auth("public")).json() == {
        "error": "a public-only key cannot manage webhooks"
    }
    assert client.get(HOOKS, headers=alice.auth("session")).status_code == 403
    hook = client.post(HOOKS, json=body, headers=alice.auth()).json()
    bob = make_account("bob")
    assert client.get(f"{HOOKS}/{hook['id']}", headers=bob.auth()).status_code == 404
    assert client.delete(f"{HOOKS}/{hook['id']}", headers=bob.auth()).status_code == 404


def test_bad_endpoints_are_refused(client: TestClient, alice: Account) -> None:
    for body, message in (
        ({"url": "ftp://hooks.example.com/"}, "url must be an http(s) URL"),
        ({"url": "https://user:pw@hooks.example.com/"}, "url must be an http(s) URL"),
        ({"url": "https://hooks.example.com:0/"}, "url has an invalid port"),
        ({"url": "https://hooks.example.com/", "events": ["link.viewed"]}, "events"),
        ({"url": "https://hooks.example.com/", "events": []}, "events"),
        ({"url": "https://hooks.example.com/", "secret": "x"}, "secret"),
    ):
        answer = client.post(HOOKS, json=body, headers=alice.auth())
        assert answer.status_code == 422 and message in answer.json()["error"], (body, answer.text)
    hook = client.post(HOOKS, json={"url": "https://hooks.example.com/"}, headers=alice.auth()).json()
    assert client.patch(f"{HOOKS}/{hook['id']}", json={}, headers=alice.auth()).status_code == 422
    kept = client.patch(f"{HOOKS}/{hook['id']}", json={"url": None, "enabled": None}, headers=alice.auth())
    assert kept.status_code == 200 and kept.json()["url"] == hook["url"], "null leaves a field as it is"
    assert client.post(f"{HOOKS}/{hook['id']}/messages/msg_nope/resend", headers=alice.auth()).status_code == 404


def test_deleting_an_account_takes_its_endpoints_first_and_tells_nobody(
    client: TestClient, runtime: Runtime, alice: Account
) -> None:
    client.post(HOOKS, json={"url": "https://hooks.example.com/in"}, headers=alice.auth())
    for n in range(3):
        client.post("/api/v1/links", json={"destination_url": f"https://example.com/{n}"}, headers=alice.auth())
    with runtime.db.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(WebhookMessage)) == 3  # link.created, in the outbox
    delete_account(runtime, "alice", links=2)
    with runtime.db.engine.connect() as conn:
        for table in (WebhookEndpoint, WebhookMessage, WebhookAttempt):
            assert conn.scalar(select(func.count()).select_from(table)) == 0


def test_nul_characters_are_refused_not_stored(client: TestClient, alice: Account) -> None:
    made = client.post(HOOKS, json={"url": "https://hooks.example.com/", "description": "a\x00b"}, headers=alice.auth())
    assert made.status_code == 422 and "NUL" in made.json()["error"]
    hook = client.post(HOOKS, json={"url": "https://hooks.example.com/"}, headers=alice.auth()).json()
    assert client.post(f"{HOOKS}/{hook['id']}/messages/msg_%00/resend", headers=alice.auth()).status_code == 404
    assert client.get(f"{HOOKS}/whe_%00", headers=alice.auth()).status_code == 404
