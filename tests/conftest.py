"""Fixtures: a real SQLite file and a real PostgreSQL schema per test, the app, accounts with keys, a client signed in
to the dashboard, Redis, and real `slugline serve` processes; and the marks that keep those processes out of the fast
loop (`-m "not e2e"`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.dashboard.pages import sign_up
from tests.support.helpers import BASE_URL, POSTGRES_URL, REDIS_URL, Account, ClientFactory, make_settings, unavailable
from tests.support.server import Server, ServerFactory

# `now`: the loop paths driven on one event loop; `browser` and `page`: a real Chromium for the browser tests.
pytest_plugins = ["tests.support.loop", "tests.dashboard.browser"]

E2E_DIR = Path(__file__).parent / "e2e"
E2E_TIMEOUT = 300  # seconds: a test here starts servers (with workers), runs migrations and waits for clicks


def _starts_servers(item: pytest.Item) -> bool:
    """Under tests/e2e/, using the `start_server` fixture, or in a module that imports the `Server` class."""
    module = getattr(item, "module", None)
    return (
        E2E_DIR in item.path.parents
        or "start_server" in getattr(item, "fixturenames", ())
        or (module is not None and any(value is Server for value in vars(module).values()))
    )


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by mark
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _starts_servers(item):
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("e2e") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT))


def _postgres_problem() -> str | None:
    try:
        engine = create_engine(normalize_url(POSTGRES_URL), connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # any failure to reach it is a reason to skip (or, in CI, to fail)
        return f"PostgreSQL at {POSTGRES_URL} is not reachable: {type(exc).__name__}"


_PG_PROBLEM = _postgres_problem()


def pytest_report_header() -> str:
    return f"postgres: {'available at ' + POSTGRES_URL if _PG_PROBLEM is None else _PG_PROBLEM}"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL schema; dropped afterwards."""
    if _PG_PROBLEM is not None:
        unavailable(_PG_PROBLEM)
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(normalize_url(POSTGRES_URL))
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            yield (
                make_url(POSTGRES_URL)
                .update_query_dict({"options": f"-csearch_path={schema}"})
                .render_as_string(hide_password=False)
            )
        finally:
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/slugline.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@contextmanager
def migrated(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime.create(settings)
    try:
        migrate.upgrade(rt.db.engine)
        yield rt
    finally:
        rt.close()


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    with migrated(settings) as rt:
        yield rt


@pytest.fixture
def client(settings: Settings, runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(settings, runtime), base_url=BASE_URL) as tc:
        yield tc


@pytest.fixture
def make_client(database_url: str) -> Iterator[ClientFactory]:
    """Apps on settings of the test's choosing (on the test's database), each closed at teardown."""
    with ExitStack() as stack:

        def make(**overrides: Any) -> tuple[TestClient, Runtime]:
            settings = make_settings(database_url, **overrides)
            rt = stack.enter_context(migrated(settings))
            return stack.enter_context(TestClient(create_app(settings, rt), base_url=BASE_URL)), rt

        yield make


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


@pytest.fixture
def owner(client: TestClient, runtime: Runtime) -> TestClient:
    """The test client signed in (through the dashboard's form) as an account on the developer plan."""
    sign_up(client, "ada")
    accounts.set_plan(runtime, "ada", "developer")
    return client


@pytest.fixture
def redis_url() -> str:
    try:
        with redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2) as client:
            client.ping()
    except (redis.RedisError, OSError) as exc:
        unavailable(f"Redis at {REDIS_URL} does not answer: {exc}")
    return REDIS_URL


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[ServerFactory]:
    """Start real `slugline serve` processes (a test using this is marked e2e); each is stopped (SIGTERM) at the
    end of the test, even when an earlier one fails to stop."""
    with ExitStack() as stack:

        def start(database_url: str | None = None, workers: int = 1, **env: str) -> Server:
            url = database_url or f"sqlite:///{tmp_path}/e2e.db"
            server = Server(url, workers=workers, env_extra=env)
            stack.callback(server.stop)
            return server.start(tmp_path)

        yield start
