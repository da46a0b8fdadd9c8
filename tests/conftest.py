"""Fixtures: a real SQLite file and a real PostgreSQL schema per test, the app, and accounts with keys."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from slugline import migrate
from slugline.app import create_app
from slugline.services import accounts
from slugline.runtime import Runtime
from slugline.settings import Settings

IN_CI = os.environ.get("CI", "").lower() == "true"
POSTGRES_URL = os.environ.get("SLUGLINE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_problem() -> str | None:
    try:
        engine = create_engine(
            POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://", 1), connect_args={"connect_timeout": 3}
        )
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # any failure to reach it is a reason to skip (or, in CI, to fail)
        return f"PostgreSQL at {POSTGRES_URL} is not reachable: {type(exc).__name__}"


_PG_PROBLEM = _postgres_problem()


def pytest_report_header() -> str:
    return f"postgres: {'available at ' + POSTGRES_URL if _PG_PROBLEM is None else _PG_PROBLEM}"


def require_postgres() -> None:
    if _PG_PROBLEM is not None:
        if IN_CI:
            pytest.fail(f"CI must run the PostgreSQL tests: {_PG_PROBLEM}")
        pytest.skip(_PG_PROBLEM)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL schema; dropped afterwards."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/slugline.db"
    url: str = request.getfixturevalue("pg_url")
    return url


def make_settings(database_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "secret_key": "test-secret-" + "x" * 32,
        "fetch_allow_private": True,
        "public_url": None,
        **overrides,
    }
    return Settings(**values)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime.create(settings)
    migrate.upgrade(rt.db.engine)
    yield rt
    rt.close()


@pytest.fixture
def client(settings: Settings, runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(settings, runtime), base_url="http://sl.test") as tc:
        yield tc


@dataclass
class Account:
    username: str
    password: str
    session: str
    full: str
    public: str

    def auth(self, which: str = "full") -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, which)}"}


@pytest.fixture
def make_account(runtime: Runtime, client: TestClient) -> Callable[..., Account]:
    """Registers an account on a plan and generates both keys through the API."""

    def make(username: str | None = None, plan: str = "developer") -> Account:
        name = username or f"user-{uuid.uuid4().hex[:8]}"
        made = accounts.register(runtime, {"username": name, "password": "correct horse"}, plan=plan)
        sess = {"Authorization": f"Bearer {made['token']}"}
        full = client.post("/api/v1/api-key", json={"scope": "full"}, headers=sess).json()["key"]
        public = client.post("/api/v1/api-key", json={"scope": "public"}, headers=sess).json()["key"]
        return Account(name, "correct horse", made["token"], full, public)

    return make


@pytest.fixture
def alice(make_account: Callable[..., Account]) -> Account:
    return make_account("alice")
