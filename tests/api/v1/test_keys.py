from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from slugline.common.models import ApiKey
from slugline.runtime import Runtime
from tests.support.helpers import SQLITE_ONLY, Account

KEYS = "/api/v1/api-key"


def test_keys_listed_without_secrets(client: TestClient, alice: Account) -> None:
    res = client.get(KEYS, headers=alice.auth("session"))
    assert res.status_code == 200
    keys = {k["scope"]: k for k in res.json()["keys"]}
    assert keys["full"]["prefix"] == "svc_live_" and keys["full"]["last4"] == alice.full[-4:]
    assert keys["public"]["prefix"] == "svc_pub_" and keys["public"]["last4"] == alice.public[-4:]
    assert alice.full not in res.text and alice.public not in res.text
    assert set(keys["full"]) == {"scope", "prefix", "last4", "created_at", "last_used_at"}


@SQLITE_ONLY
def test_key_formats(alice: Account) -> None:
    assert alice.full.startswith("svc_live_") and len(alice.full) == len("svc_live_") + 38
    assert alice.public.startswith("svc_pub_") and len(alice.public) == len("svc_pub_") + 38


def test_new_key_replaces_old_one_at_once(client: TestClient, alice: Account) -> None:
    res = client.post(KEYS, json={"scope": "full"}, headers=alice.auth("full"))
    assert res.status_code == 201
    new = res.json()["key"]
    assert new.startswith("svc_live_") and new != alice.full
    assert client.get("/api/v1/me", headers=alice.auth("full")).status_code == 401
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    assert client.get("/api/v1/me", headers=alice.auth("public")).status_code == 200


def test_delete_key(client: TestClient, alice: Account) -> None:
    res = client.delete(KEYS, params={"scope": "public"}, headers=alice.auth("session"))
    assert res.json() == {"deleted": True, "scope": "public"}
    assert client.get("/api/v1/me", headers=alice.auth("public")).status_code == 401
    again = client.delete(KEYS, params={"scope": "public"}, headers=alice.auth("session"))
    assert again.status_code == 404
    assert client.delete(KEYS, params={"scope": "both"}, headers=alice.auth("session")).status_code == 422


@SQLITE_ONLY
def test_public_key_cannot_manage_keys(client: TestClient, alice: Account) -> None:
    for res in (
        client.get(KEYS, headers=alice.auth("public")),
        client.post(KEYS, json={"scope": "full"}, headers=alice.auth("public")),
        client.delete(KEYS, params={"scope": "full"}, headers=alice.auth("public")),
    ):
        assert res.status_code == 403
        assert "public-only key" in res.json()["error"]


@SQLITE_ONLY
def test_bad_scope_is_422(client: TestClient, alice: Account) -> None:
    res = client.post(KEYS, json={"scope": "admin"}, headers=alice.auth("session"))
    assert res.status_code == 422 and "scope" in res.json()["error"]


def test_stored_keys_are_hashed(client: TestClient, alice: Account, runtime: Runtime) -> None:
    with runtime.db.session() as session:
        stored = session.scalars(select(ApiKey.key_hash)).all()
    assert stored and all(len(h) == 64 for h in stored)
    assert alice.full not in stored and alice.public not in stored


@pytest.mark.parametrize("which", ["full", "public"])
def test_free_plan_keys_are_refused(client: TestClient, make_account: Callable[..., Account], which: str) -> None:
    free = make_account(plan="free")
    res = client.get("/api/v1/me", headers=free.auth(which))
    assert res.status_code == 403 and "developer plan" in res.json()["error"]
    assert client.get("/api/v1/links", headers=free.auth(which)).status_code == 403
    assert client.get("/api/v1/me", headers=free.auth("session")).status_code == 200
