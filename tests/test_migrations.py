"""The migrations up and down on a SQLite file: the schema they leave, triggers included."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import create_engine, text

from slugline import migrate

TRIGGERS = ["link_changes_bump", "links_created"]  # SQLite's, which bump an account's links version (0004, 0005)


def _triggers(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"))
        names = list(found.scalars())
    engine.dispose()
    return names


def _downgrade(url: str, revision: str) -> None:
    engine = create_engine(url)
    config = migrate.alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
    engine.dispose()


def test_sqlite_triggers_come_and_go_with_their_migrations(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    engine = create_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    assert _triggers(url) == TRIGGERS
    _downgrade(url, "0004")
    assert _triggers(url) == TRIGGERS[:1]
    _downgrade(url, "0003")
    assert _triggers(url) == []
    engine = create_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    assert _triggers(url) == TRIGGERS
