from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY, Account, tampered


@pytest.mark.parametrize("which", ["full", "public", "session"])
def test_me_reports_scope(client: TestClient, alice: Account, which: str) -> None:
    res = client.get("/api/v1/me", headers=alice.auth(which))
    assert res.status_code == 200
    assert res.json() == {
        "username": "alice",
        "plan": "developer",
        "scope": which,
        "created_at": res.json()["created_at"],
    }


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer svc_live_nope", "Bearer " + "svc_live_" + "A" * 38],
)
@SQLITE_ONLY
def test_missing_or_invalid_key_is_401(client: TestClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    res = client.get("/api/v1/me", headers=headers)
    assert res.status_code == 401
    assert res.headers["www-authenticate"] == "Bearer"
    assert set(res.json()) == {"error"}


@SQLITE_ONLY
def test_one_changed_character_is_rejected(client: TestClient, alice: Account) -> None:
    res = client.get("/api/v1/me", headers={"Authorization": f"Bearer {tampered(alice.full, -7)}"})
    assert res.status_code == 401 and res.json()["error"] == "malformed API key"


def test_well_formed_but_unknown_key_is_401(client: TestClient, alice: Account) -> None:
    from slugline import _core

    res = client.get("/api/v1/me", headers={"Authorization": f"Bearer {_core.generate_key('full')}"})
    assert res.status_code == 401 and "invalid or revoked" in res.json()["error"]


@SQLITE_ONLY
def test_session_token_is_refused_for_links(client: TestClient, alice: Account) -> None:
    res = client.get("/api/v1/links", headers=alice.auth("session"))
    assert res.status_code == 403 and "session tokens" in res.json()["error"]


@SQLITE_ONLY
def test_unknown_route_and_wrong_method_use_the_envelope(client: TestClient, alice: Account) -> None:
    missing = client.get("/api/v1/nothing-here", headers=alice.auth())
    assert missing.status_code == 404 and missing.json() == {"error": "not found"}
    wrong = client.patch("/api/v1/me", headers=alice.auth())
    assert wrong.status_code == 405 and wrong.json() == {"error": "method not allowed"}


def test_health_needs_no_auth(client: TestClient) -> None:
    res = client.get("/api/v1/health")
    assert res.status_code == 200
    assert res.json()["status"] == "ok" and res.json()["database"] == "ok"
