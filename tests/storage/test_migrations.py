"""The migrations up and down: the schema they leave, triggers and keys included."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.exc import IntegrityError
from starlette.testclient import TestClient

from slugline import _core
from slugline.app import create_app
from slugline.clicks import cubes
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.support.helpers import make_settings

# SQLite's, in name order: those that bump an account's links version (0004, 0005, 0007), and those that record
# cube moves and forget a deleted account's cubes (0009)
TRIGGERS = [
    "accounts_cubes_deleted",
    "link_changes_bump",
    "links_changed",
    "links_created",
    "links_cube_deleted",
    "links_cube_view",
    "links_webhook_created",
    "links_webhook_deleted",
    "links_webhook_updated",
]


# on `links` (0006, 0009, 0015)
PG_TRIGGERS = [
    "links_cube_deleted",
    "links_cube_view",
    "links_deleted",
    "links_webhook_created",
    "links_webhook_deleted",
    "links_webhook_updated",
]


def _downgrade(engine: Engine, revision: str) -> None:
    config = migrate.alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def _triggers(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            found = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"))
        else:
            found = conn.execute(
                text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = 'links'::regclass ORDER BY 1")
            )
        return list(found.scalars())


def _clicks_keys(engine: Engine) -> list[str]:
    return [key["referred_table"] for key in inspect(engine).get_foreign_keys("clicks")]


def test_sqlite_triggers_come_and_go_with_their_migrations(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    migrate.upgrade(engine)
    assert _triggers(engine) == TRIGGERS and _clicks_keys(engine) == ["links"]
    _downgrade(engine, "0008")
    assert _triggers(engine) == ["link_changes_bump", "links_changed", "links_created"]
    _downgrade(engine, "0006")
    assert _triggers(engine) == ["link_changes_bump", "links_created"]
    _downgrade(engine, "0004")
    assert _triggers(engine) == ["link_changes_bump"]
    _downgrade(engine, "0003")
    assert _triggers(engine) == []
    migrate.upgrade(engine)
    assert _triggers(engine) == TRIGGERS and _clicks_keys(engine) == ["links"]
    engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_the_click_log_loses_its_key_and_gains_the_deleting_trigger(pg_url: str) -> None:
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine)
    assert _triggers(engine) == PG_TRIGGERS and _clicks_keys(engine) == []
    _downgrade(engine, "0005")
    assert _triggers(engine) == [] and _clicks_keys(engine) == ["links"]
    migrate.upgrade(engine)
    assert _triggers(engine) == PG_TRIGGERS and _clicks_keys(engine) == []
    engine.dispose()


def _clicks_layout(engine: Engine) -> tuple[list[str], list[str], int]:
    """The click log's primary key columns, its other indexes, and how many ids its sequence hands out at a time."""
    found = inspect(engine)
    with engine.connect() as conn:
        cache = conn.execute(
            text("SELECT seqcache FROM pg_sequence WHERE seqrelid = pg_get_serial_sequence('clicks', 'id')::regclass")
        ).scalar_one()
    indexes = sorted(index["name"] or "" for index in found.get_indexes("clicks"))
    return found.get_pk_constraint("clicks")["constrained_columns"], indexes, int(cache)


@pytest.mark.postgres
def test_on_postgresql_the_click_log_is_keyed_by_link_and_time(pg_url: str) -> None:
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine)
    assert _clicks_layout(engine) == (["link_id", "clicked_at", "id"], [], 1000)
    with engine.begin() as conn:  # rows written before the downgrade survive it, and the upgrade after it
        conn.execute(
            text(
                "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
                "SELECT 'l' || n % 3, TIMESTAMPTZ '2026-11-26 00:00+00', 'desktop', 'Chrome', 'Linux', 'direct', NULL, "
                "'v' FROM generate_series(1, 5) AS n"
            )
        )
    _downgrade(engine, "0007")
    assert _clicks_layout(engine) == (["id"], ["ix_clicks_link_time"], 1)
    migrate.upgrade(engine)
    assert _clicks_layout(engine) == (["link_id", "clicked_at", "id"], [], 1000)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(DISTINCT id) FROM clicks")).scalar_one() == 5
    engine.dispose()


NEW_KEY = "clicks_link_time_id"  # migration 0008's name for the key's index while it is built
CLICK_ROW = (
    "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
    "VALUES ('l', now(), 'desktop', 'Chrome', 'Linux', 'direct', NULL, 'v')"
)


@pytest.mark.postgres
def test_on_postgresql_click_batches_go_on_while_the_new_key_is_built(pg_url: str) -> None:
    """The key's index is built concurrently: while the build waits for a batch still writing, another batch is
    written, where a plain rebuild's table lock (queued behind the first batch) would hold it back. An invalid index
    left by a failed build is dropped first."""
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine, "0007")
    with engine.begin() as conn:
        conn.execute(text(CLICK_ROW.replace("NULL", "'dup'")))
        conn.execute(text(CLICK_ROW.replace("NULL", "'dup'")))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn, pytest.raises(IntegrityError):
        conn.execute(text(f"CREATE UNIQUE INDEX CONCURRENTLY {NEW_KEY} ON clicks (referrer) WHERE referrer = 'dup'"))
    failed: list[BaseException] = []

    def upgrade() -> None:
        try:
            migrate.upgrade(engine)
        except BaseException as exc:
            failed.append(exc)

    migration = threading.Thread(target=upgrade)
    # pg_stat_activity reads as of a transaction's first look at it: the watcher takes each look in a new one
    with engine.connect() as writing, engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watching:
        writing.execute(text(CLICK_ROW))  # a batch under way: its transaction stays open
        migration.start()
        # Sessions the batch holds back (other tests share the database and may wait on locks of their own)
        held_back = text("SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))")
        batch = {"pid": writing.execute(text("SELECT pg_backend_pid()")).scalar_one()}
        deadline = time.monotonic() + 10
        while not watching.execute(held_back, batch).scalar_one() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watching.execute(held_back, batch).scalar_one() == 1
        with engine.begin() as conn:  # another batch, while the migration waits
            conn.execute(text("SET LOCAL lock_timeout = '2s'"))
            conn.execute(text(CLICK_ROW))
        writing.commit()
        migration.join(30)
    assert not migration.is_alive() and not failed
    assert _clicks_layout(engine) == (["link_id", "clicked_at", "id"], [], 1000)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM clicks")).scalar_one() == 4
    engine.dispose()


def test_a_server_refuses_a_database_whose_schema_is_behind(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'behind.db'}"
    engine = create_engine(url)
    for revision in (None, "0006"):  # an empty database, then one a migration behind
        if revision is not None:
            migrate.upgrade(engine, revision)
        with pytest.raises(migrate.SchemaBehind) as refused, TestClient(create_app(make_settings(url))):
            pass
        assert "slugline migrate" in str(refused.value)
        assert f"at revision {revision or 'none'}" in str(refused.value)
    migrate.upgrade(engine)
    with TestClient(create_app(make_settings(url))) as client:
        assert client.get("/api/v1/health").status_code == 200
    # Migrated by a newer version (a rolling upgrade): served.
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dfeed0001'"))
    with TestClient(create_app(make_settings(url))) as client:
        assert client.get("/api/v1/health").status_code == 200
    engine.dispose()


def test_a_database_that_cannot_be_reached_is_not_refused_at_startup() -> None:
    # Nothing listens on port 1: requests answer 503 until the database is back, as when it goes away later.
    settings = make_settings("postgresql://postgres@127.0.0.1:1/test")
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/v1/health").status_code == 503


CUBE_SIZES = "SELECT scope, pg_column_size(cube), pg_column_size(links), octet_length(cube) FROM click_cubes ORDER BY 1"
COLUMNS = ("cube", "uniques", "links", "hours", "sketches")
STORAGE = (
    "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'click_cubes'::regclass "
    "AND attname IN ('cube', 'uniques', 'links', 'hours', 'sketches') ORDER BY 1"
)


@pytest.mark.postgres
def test_on_postgresql_0023_keeps_cubes_uncompressed_and_writes_the_account_wide_ones_again(pg_url: str) -> None:
    """Cubes written before 0023 were compressed (these compress to almost nothing); after it the account-wide
    views' cubes are stored as they are, more than one chunk of them, and a link's own cubes are left as written.
    The bytes read back are the same; the downgrade gives the columns their default storage again."""
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine, "0022")
    blob = bytes(range(256)) * 400  # 102,400 bytes
    rows = [(scope, bucket) for scope in ("", "p") for bucket in range(301)] + [("lnk_own", 1)]
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO click_cubes (account_id, scope, level, bucket, cube, links) VALUES (7, :s, 0, :b, :c, :c)"
            ),
            [{"s": scope, "b": bucket, "c": blob} for scope, bucket in rows],
        )
    with engine.connect() as conn:
        assert all(stored < 10_000 for _, stored, _, _ in conn.execute(text(CUBE_SIZES)))
    assert migrate.upgrade(engine, "0023") == (("0022",), ("0023",))
    with engine.connect() as conn:
        sizes = conn.execute(text(CUBE_SIZES)).all()
        assert conn.execute(text(STORAGE)).all() == [(c, "e") for c in sorted(COLUMNS)]
        assert conn.execute(text("SELECT count(*) FROM click_cubes WHERE cube <> :c"), {"c": blob}).scalar() == 0
    assert len(sizes) == len(rows)
    assert all(cube >= len(blob) and links >= len(blob) for scope, cube, links, _ in sizes if scope in ("", "p"))
    assert [(cube < 10_000, links < 10_000) for scope, cube, links, _ in sizes if scope == "lnk_own"] == [(True, True)]
    _downgrade(engine, "0022")
    with engine.connect() as conn:
        assert {storage for _, storage in conn.execute(text(STORAGE))} == {"x"}
        assert conn.execute(text("SELECT count(*) FROM click_cubes WHERE cube = :c"), {"c": blob}).scalar() == len(rows)
    engine.dispose()


def test_0024s_downgrade_deletes_the_month_packs_and_nothing_else(database_url: str) -> None:
    """The code before 0024 would neither read packs nor delete one when it wrote a day it holds: left behind, they
    would answer for days changed meanwhile once 0024 came back."""
    engine = create_engine(normalize_url(database_url))
    assert migrate.upgrade(engine, "0024")[1] == ("0024",)
    rows = [("", 0, 20_400), ("", 1, 670), ("", 2, 20_420), ("p", 2, 20_420), ("lnk_own", 0, 20_400)]
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO click_cubes (account_id, scope, level, bucket, cube) VALUES (7, :s, :lv, :b, :c)"),
            [{"s": scope, "lv": level, "b": bucket, "c": b"\x01"} for scope, level, bucket in rows],
        )
    _downgrade(engine, "0023")
    with engine.connect() as conn:
        left = conn.execute(text("SELECT scope, level, bucket FROM click_cubes ORDER BY scope, level")).all()
    assert [tuple(row) for row in left] == [("", 0, 20_400), ("", 1, 670), ("lnk_own", 0, 20_400)]
    assert migrate.upgrade(engine, "0024") == (("0023",), ("0024",))
    engine.dispose()


def test_0025_projects_every_link_month_as_the_click_writer_does_and_its_downgrade_deletes_them(
    database_url: str,
) -> None:
    """Months stored before 0025 get the projections the click writer makes with each month it writes (places
    included: clicks with a country and a city), and nothing else changes; the downgrade deletes them alone."""
    engine = create_engine(normalize_url(database_url))
    migrate.upgrade(engine, "0024")
    day = 20_400 * 86_400.0
    clicks = [
        (f"lnk_{n % 3}", day + 40 * 86_400 * (n % 2) + n, "mobile", "chrome", "android", src, ref, f"v{n % 17}")
        for n, (src, ref) in enumerate([("google", "google.com"), ("newsletter", None), ("direct", None)] * 20)
    ]
    details = [(("DE", "FR", None)[n % 3], ("Berlin", None)[n % 2], None) for n in range(len(clicks))]
    batch = _core.BatchCubes.from_clicks(clicks, {f"lnk_{n}": (7, True) for n in range(3)}, details=details)
    made = {row[:4]: row[4] for row in batch.merged([], projected=True)}
    with engine.begin() as conn:
        cubes.write(conn, batch.merged([]))
        before = conn.execute(text("SELECT account_id, scope, level, bucket, cube FROM click_cubes")).all()
    months = sorted(key for key in made if key[2] == 1 and key[1].startswith("lnk_"))
    assert len(months) == 6
    assert migrate.upgrade(engine) == (("0024",), ("0025",))
    with engine.connect() as conn:
        after = {tuple(row[:4]): bytes(row[4]) for row in conn.execute(text("SELECT * FROM click_cubes"))}
    projected = {key: cube for key, cube in after.items() if key[2] in (3, 4, 5)}
    assert projected == {key: made[key] for key in made if key[2] in (3, 4, 5)}
    assert sorted(projected) == sorted((a, s, level, b) for a, s, _, b in months for level in (3, 4, 5))
    _downgrade(engine, "0024")
    with engine.connect() as conn:
        left = conn.execute(text("SELECT account_id, scope, level, bucket, cube FROM click_cubes")).all()
    assert sorted(map(tuple, left)) == sorted(map(tuple, before))
    engine.dispose()
