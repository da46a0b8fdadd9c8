"""Dynamic registrations are anonymous, so one that no owner consents to expires (`UNUSED_TTL`), is deleted by a later
registration as other OAuth rows are deleted by later issues, and one address holds at most `MAX_UNUSED_PER_ADDRESS`
of them at a time (429 `slow_down` past that); a registration an owner consented to stays."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, func, select, text, update
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from slugline.common.clock import utcnow
from slugline.oauth import clients
from slugline.oauth.clients import MAX_UNUSED_PER_ADDRESS, UNUSED_TTL
from slugline.oauth.models import OAuthClient
from slugline.runtime import Runtime
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.oauth.test_grants import consent, owner

REDIRECT = "http://localhost:3030/callback"
CHALLENGE = "x" * 43


def register(tc: TestClient) -> tuple[int, str]:
    res = tc.post("/oauth/register", json={"client_name": "App", "redirect_uris": [REDIRECT]})
    return res.status_code, res.json().get("client_id", "")


def known(tc: TestClient, client_id: str) -> bool:
    query = {"client_id": client_id, "response_type": "code", "code_challenge": CHALLENGE}
    res = tc.get("/oauth/authorize", params=query, follow_redirects=False)
    assert res.status_code in (302, 400), res.text
    return res.status_code == 302


def age(rt: Runtime, client_id: str, by: timedelta) -> None:
    with rt.db.session() as session:
        session.execute(update(OAuthClient).where(OAuthClient.client_id == client_id).values(created_at=utcnow() - by))


def stored(rt: Runtime) -> set[str]:
    with rt.db.session() as session:
        return set(session.scalars(select(OAuthClient.client_id)))


def test_an_unused_registration_expires_and_is_deleted(client: TestClient, runtime: Runtime) -> None:
    _, unused = register(client)
    _, used = register(client)
    _, young = register(client)
    consent(runtime, owner(runtime, "consenter"), used)
    for client_id in (unused, used):
        age(runtime, client_id, UNUSED_TTL + timedelta(seconds=1))
    age(runtime, young, UNUSED_TTL - timedelta(minutes=1))
    assert not known(client, unused)  # refused at once, before anything deletes it
    assert known(client, used) and known(client, young)
    assert unused in stored(runtime)
    _, newest = register(client)  # a registration deletes the expired ones
    assert stored(runtime) == {used, young, newest}


def test_an_address_holds_a_bounded_number_of_unused_registrations(client: TestClient, runtime: Runtime) -> None:
    made = [register(client) for _ in range(MAX_UNUSED_PER_ADDRESS)]
    assert {status for status, _ in made} == {201}
    refused = client.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
    assert refused.status_code == 429 and refused.json()["error"] == "slow_down", refused.text
    assert "unused client registrations" in refused.json()["error_description"]
    retry_after = int(refused.headers["retry-after"])
    assert 0 < retry_after <= UNUSED_TTL.total_seconds()
    assert refused.headers["cache-control"] == "no-store"
    with runtime.db.session() as session:
        assert session.scalar(select(func.count()).select_from(OAuthClient)) == MAX_UNUSED_PER_ADDRESS

    elsewhere = TestClient(client.app, base_url=str(client.base_url), client=("198.51.100.7", 50000))
    assert register(elsewhere)[0] == 201  # another address holds its own

    consent(runtime, owner(runtime, "slotfree"), made[0][1])  # a registration in use no longer counts
    assert register(client)[0] == 201
    assert register(client)[0] == 429
    age(runtime, made[1][1], UNUSED_TTL)  # nor does an expired one
    assert register(client)[0] == 201


def test_0011_keeps_the_registrations_in_use_and_lets_the_others_expire(database_url: str) -> None:
    engine = create_engine(normalize_url(database_url))
    migrate.upgrade(engine, "0010")
    made = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO accounts (username, password_hash, plan, created_at, links_version) "
                "VALUES ('before', 'x', 'developer', :t, 0)"
            ),
            {"t": made},
        )
        for client_id in ("in-use", "unused"):
            conn.execute(
                text("INSERT INTO oauth_clients (client_id, client_metadata, created_at) VALUES (:c, '{}', :t)"),
                {"c": client_id, "t": made},
            )
        conn.execute(
            text(
                "INSERT INTO oauth_grants (account_id, client_id, client_name, redirect_host, scope, created_at) "
                "SELECT id, 'in-use', 'App', 'localhost:3030', 'full', :t FROM accounts"
            ),
            {"t": made},
        )
    migrate.upgrade(engine)
    with Session(engine) as session:
        rows = {row.client_id: row for row in session.scalars(select(OAuthClient))}
        assert rows["in-use"].granted_at is not None and rows["unused"].granted_at is None
        assert rows["in-use"].registered_by is None and rows["unused"].registered_by is None
        clients.prune(session, utcnow())
        session.commit()
        assert set(session.scalars(select(OAuthClient.client_id))) == {"in-use"}
    engine.dispose()
