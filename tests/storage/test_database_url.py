"""A PostgreSQL URL on this machine's loopback that says nothing of TLS connects without it (`sslmode=allow`); any
other URL, or one that names a TLS setting, is used as given."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import create_engine, make_url, text

from slugline.runtime import Runtime
from slugline.storage.db import plaintext_on_loopback
from slugline.storage.loopread import PgLoopReader
from tests.support.helpers import POSTGRES_ONLY


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u:p@127.0.0.1:5432/db",
        "postgresql+psycopg://u@localhost/db",
        "postgresql+psycopg://u@LOCALHOST:5433/db",
        "postgresql+psycopg://u@[::1]:5432/db",
        "postgresql+psycopg://u@127.0.0.2/db",
        "postgresql+psycopg://u@/db?host=127.0.0.1:5432&host=localhost:5433",
        "postgresql+psycopg://u@/db?host=[::1]:5432",
        "postgresql+psycopg://u@127.0.0.1/db?options=-csearch_path%3Dx",
        "postgresql+psycopg://u@/db?host=127.0.0.1,localhost",
        "postgresql+psycopg://u@db.example.com/db?host=127.0.0.1",  # the query's host is the one connected to
    ],
)
def test_loopback_without_a_tls_setting_connects_in_plaintext(url: str) -> None:
    made = plaintext_on_loopback(make_url(url))
    assert made.query["sslmode"] == "allow"
    assert made.set(query={}) == make_url(url).set(query={})  # nothing else changed
    assert {k: v for k, v in made.query.items() if k != "sslmode"} == dict(make_url(url).query)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u@db.example.com/db",
        "postgresql+psycopg://u@10.0.0.5/db",
        "postgresql+psycopg://u@/db?host=127.0.0.1&host=db.example.com",  # one host is elsewhere
        "postgresql+psycopg://u@/db?host=/var/run/postgresql",  # a socket: libpq uses no TLS there
        "postgresql+psycopg://u@/db",  # no host: the default socket
        "postgresql+psycopg://u@127.0.0.1/db?sslmode=require",
        "postgresql+psycopg://u@127.0.0.1/db?sslmode=prefer",
        "postgresql+psycopg://u@127.0.0.1/db?sslrootcert=/etc/ca.pem",
        "postgresql+psycopg://u@127.0.0.1/db?hostaddr=10.0.0.5",
        "postgresql+psycopg://u@127.0.0.1/db?host=db.example.com",  # the query's host is the one connected to
        "postgresql+psycopg://u@/db?host=127.0.0.1,db.example.com",
        "postgresql+psycopg://u@localhost/db?service=secure",  # a service file may ask for TLS
        "postgresql+psycopg://u@localhost/db?channel_binding=require",
        "postgresql+psycopg://u@localhost/db?gssencmode=require",
        "postgresql+psycopg://u@localhost/db?requiressl=1",
        "sqlite:///data/slugline.db",
    ],
)
def test_any_other_url_is_used_as_given(url: str) -> None:
    assert plaintext_on_loopback(make_url(url)) == make_url(url)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PGSSLMODE", "require"),
        ("PGSSLROOTCERT", "system"),  # libpq then means verify-full, which `allow` would contradict
        ("PGREQUIRESSL", "1"),
        ("PGSERVICE", "secure"),
        ("PGHOSTADDR", "192.0.2.9"),  # the address connected to, whatever the URL's host
        ("PGGSSENCMODE", "require"),
        ("PGCHANNELBINDING", "require"),
    ],
)
def test_a_setting_in_the_environment_keeps_the_url_as_given(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    url = make_url("postgresql+psycopg://u@127.0.0.1/db")
    assert plaintext_on_loopback(url) == url


@POSTGRES_ONLY
def test_on_loopback_the_pool_and_the_loop_reader_speak_plaintext(runtime: Runtime) -> None:
    """The server here offers TLS (so libpq's default would take it): both kinds of connection decline it."""
    ssl_of_this_backend = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
    with runtime.db.engine.connect() as conn:
        assert conn.scalar(text(ssl_of_this_backend)) is False
        offered = conn.scalar(text("SHOW ssl"))
    reader = runtime.db.now
    assert isinstance(reader, PgLoopReader)

    async def loop_ssl() -> object:
        async with reader.connection() as wire:
            assert wire is not None
            found = (await wire.rows(ssl_of_this_backend, {}))[0][0]
        await reader.aclose()
        return found

    assert asyncio.run(loop_ssl()) is False
    if offered == "on":  # and the same server does take TLS when the URL asks for it
        asked = runtime.db.engine.url.update_query_dict({"sslmode": "require"})
        engine = create_engine(asked)
        try:
            with engine.connect() as conn:
                assert conn.scalar(text(ssl_of_this_backend)) is True
        finally:
            engine.dispose()
