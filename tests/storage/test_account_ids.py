"""Account ids are never given again (migration 0014): caches keyed by account id rely on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, event, text

from slugline.storage import migrate
from slugline.storage.db import normalize_url

NEW_ACCOUNT = (
    "INSERT INTO accounts (username, password_hash, plan, created_at, links_version) "
    "VALUES (:name, 'h', 'developer', '2026-11-27', 0) RETURNING id"
)
NEW_LINK = (
    "INSERT INTO links (id, account_id, slug, destination_url, hashtags, visibility, clicks, created_at, updated_at) "
    "VALUES (:id, :account, :id, 'https://example.com/', '[]', 'public', 0, '2026-11-27', '2026-11-27')"
)


def _engine(url: str) -> Engine:
    engine = create_engine(normalize_url(url))
    if engine.dialect.name == "sqlite":  # as the service's engine has them: a cascade on drop would show here

        @event.listens_for(engine, "connect")
        def _keys_on(conn: object, _: object) -> None:
            conn.execute("PRAGMA foreign_keys=ON")  # type: ignore[attr-defined]

    return engine


def _new_account(engine: Engine, name: str) -> int:
    with engine.begin() as conn:
        return int(conn.execute(text(NEW_ACCOUNT), {"name": name}).scalar_one())


def _ids_after_deleting_the_newest(engine: Engine) -> tuple[int, int]:
    newest = _new_account(engine, "newest")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM accounts WHERE id = :id"), {"id": newest})
    return newest, _new_account(engine, "next")


def test_on_sqlite_the_rebuilt_table_keeps_rows_links_triggers_and_never_reuses_an_id(tmp_path: Path) -> None:
    engine = _engine(f"sqlite:///{tmp_path / 'ids.db'}")
    migrate.upgrade(engine, "0013")
    ids = [_new_account(engine, name) for name in ("ada", "bob")]
    with engine.begin() as conn:
        conn.execute(text(NEW_LINK), {"id": "l1", "account": ids[1]})
        triggers_before = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all()

    assert migrate.upgrade(engine, "0014") == (("0013",), ("0014",))
    with engine.begin() as conn:
        table = conn.execute(text("SELECT sql FROM sqlite_master WHERE name = 'accounts'")).scalar_one()
        assert "AUTOINCREMENT" in table
        rows = conn.execute(text("SELECT id, username, links_version FROM accounts ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(ids[0], "ada", 0), (ids[1], "bob", 1)]
        assert conn.execute(text("SELECT account_id FROM links")).scalars().all() == [ids[1]]
        triggers = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all()
        assert sorted(triggers) == sorted(triggers_before)
        assert conn.execute(text("PRAGMA foreign_key_check")).all() == []

    deleted, next_id = _ids_after_deleting_the_newest(engine)
    assert next_id > deleted
    with engine.begin() as conn:  # the triggers on `accounts` and the cascade still work on the new table
        conn.execute(text("DELETE FROM accounts WHERE id = :id"), {"id": ids[1]})
        assert conn.execute(text("SELECT count(*) FROM links")).scalar_one() == 0
    assert migrate.upgrade(engine, "0014") == (("0014",), ("0014",))
    engine.dispose()


def test_on_sqlite_a_fresh_database_never_reuses_an_id(tmp_path: Path) -> None:
    engine = _engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    migrate.upgrade(engine)
    deleted, next_id = _ids_after_deleting_the_newest(engine)
    assert next_id > deleted
    engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_an_id_is_never_reused(pg_url: str) -> None:
    engine = _engine(pg_url)
    migrate.upgrade(engine)
    deleted, next_id = _ids_after_deleting_the_newest(engine)
    assert next_id > deleted
    engine.dispose()
