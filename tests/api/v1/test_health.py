"""The probes: live whenever the process serves, ready only when the database answers and its schema is at this
version's head; neither needs a key nor counts against a rate limit, and readiness is worked out once per few
seconds."""

from __future__ import annotations

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from slugline.api.v1 import health
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.support.helpers import BASE_URL, SQLITE_ONLY, ClientFactory, make_settings

LIVE, READY = "/api/v1/health/live", "/api/v1/health/ready"


def one_behind() -> str:
    """The revision before this version's head."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    (head,) = script.get_heads()
    down = script.get_revision(head).down_revision
    assert isinstance(down, str)
    return down


def test_live_and_ready_on_a_current_database(client: TestClient) -> None:
    for path in (LIVE, READY):
        res = client.get(path)
        assert res.status_code == 200 and res.json() == {"status": "ok"}
        assert res.headers["content-type"] == "application/json"


@SQLITE_ONLY
def test_probes_need_no_key_and_are_not_rate_limited(make_client: ClientFactory) -> None:
    tc, _ = make_client(rate_limit_anonymous=2)
    for path in (LIVE, READY):
        answers = [tc.get(path, headers={"Authorization": "Bearer not-a-key"}) for _ in range(6)]
        assert [r.status_code for r in answers] == [200] * 6
        assert all("ratelimit-limit" not in r.headers for r in answers)
    assert [tc.get("/api/v1/public/x").status_code for _ in range(3)] == [404, 404, 429]  # the limit is on


def test_ready_is_503_on_a_schema_behind_head_and_live_is_not(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(database_url)
    rt = Runtime.create(settings)
    try:
        migrate.upgrade(rt.db.engine, one_behind())
        with TestClient(create_app(settings, rt), base_url=BASE_URL) as tc:  # a runtime given: not refused at start
            assert tc.get(LIVE).status_code == 200
            res = tc.get(READY)
            assert res.status_code == 503
            assert f"at revision {one_behind()}" in res.json()["error"] and "slugline migrate" in res.json()["error"]
            assert res.headers["retry-after"] == "1"
            migrate.upgrade(rt.db.engine)
            assert tc.get(READY).status_code == 503  # the answer is reused for a few seconds
            monkeypatch.setattr(health, "READY_SECONDS", 0.0)
            assert tc.get(READY).status_code == 200
    finally:
        rt.close()


def test_ready_is_503_on_a_database_never_migrated(database_url: str) -> None:
    settings = make_settings(database_url)
    rt = Runtime.create(settings)
    try:
        with TestClient(create_app(settings, rt), base_url=BASE_URL) as tc:
            assert tc.get(LIVE).status_code == 200
            res = tc.get(READY)
            assert res.status_code == 503 and "none (an empty database)" in res.json()["error"]
    finally:
        rt.close()


def test_ready_is_200_on_a_schema_a_newer_version_migrated(database_url: str) -> None:
    settings = make_settings(database_url)
    engine = create_engine(normalize_url(database_url))
    migrate.upgrade(engine)
    with engine.begin() as conn:  # a rolling upgrade: the new version has migrated, this one keeps serving
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dfeed0001'"))
    engine.dispose()
    with TestClient(create_app(settings), base_url=BASE_URL) as tc:
        assert tc.get(READY).status_code == 200


def test_ready_is_503_while_the_database_does_not_answer() -> None:
    # Nothing listens on port 1: the server starts and serves, but is not ready.
    with TestClient(create_app(make_settings("postgresql://postgres@127.0.0.1:1/test")), base_url=BASE_URL) as tc:
        assert tc.get(LIVE).json() == {"status": "ok"}
        res = tc.get(READY)
        assert res.status_code == 503 and res.json()["error"].startswith("database unavailable")


@SQLITE_ONLY
def test_readiness_is_worked_out_once_per_few_seconds(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = migrate.schema_problem

    def counted(engine: object) -> str | None:
        calls.append(engine)
        return real(engine)  # type: ignore[arg-type]

    monkeypatch.setattr(migrate, "schema_problem", counted)
    assert [client.get(READY).status_code for _ in range(20)] == [200] * 20
    assert len(calls) == 1


def test_probes_are_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    for path in (LIVE, READY):
        operation = paths[path]["get"]
        assert operation["summary"] and operation["tags"] == ["health"]
        assert "security" not in operation or operation["security"] == []
    assert "503" in paths[READY]["get"]["responses"]
