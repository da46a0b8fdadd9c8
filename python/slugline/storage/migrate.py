"""Runs the Alembic migrations in `migrations/` — the only way the schema is made or changed."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

logger = logging.getLogger(__name__)


def migrations_dir() -> Path:
    """The Alembic scripts: a source checkout's top-level `migrations/` (also behind an editable install, whose build
    leaves a copy in the package that may be stale), else the copy that every wheel carries in the package."""
    package = Path(__file__).resolve().parents[1]  # slugline/storage/migrate.py -> slugline/
    checkout = package.parents[1]  # python/slugline/ -> the repository, when running from source
    candidates = [package / "migrations"]
    if (checkout / "pyproject.toml").is_file():
        candidates.insert(0, checkout / "migrations")
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    raise RuntimeError("the migrations directory is missing from this installation")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def upgrade(engine: Engine, revision: str = "head") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every migration up to `revision`, in one transaction that Alembic begins and commits: a migration may step out
    of it for what PostgreSQL runs only outside one (0008 builds an index concurrently), committing what came before.
    The schema's revisions before and after (none before: the database was empty)."""
    config = alembic_config()
    with engine.connect() as connection:
        before = _revisions(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        return before, _revisions(connection)


def _revisions(connection: Connection) -> tuple[str, ...]:
    found = tuple(sorted(MigrationContext.configure(connection).get_current_heads()))
    connection.rollback()  # the read's own transaction: Alembic begins and commits the upgrade's
    return found


class SchemaBehind(RuntimeError):
    """The database's schema is not the one this version of Slugline was written for."""


def require_current(engine: Engine) -> None:
    """Refuse to serve a database whose schema is not at this version's head: the code relies on what the newest
    migrations add (on SQLite, the triggers that record every change of a link in the change feed; without them a
    change would be saved but other workers' caches would never hear of it). A database that cannot be reached is
    left alone here: requests answer 503 until it can be, as they do when it goes away later."""
    script = ScriptDirectory.from_config(alembic_config())
    heads = set(script.get_heads())
    try:
        with engine.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    except OperationalError:
        return
    known = {revision.revision for revision in script.walk_revisions()}
    if current - known:
        # Migrated by a newer version: served, with a warning, so that a rolling upgrade's older instances keep
        # running once the new version has migrated the database.
        logger.warning("the database schema is at %s, newer than this version's %s", current, heads)
        return
    if current != heads:
        at = ", ".join(sorted(current)) or "none (an empty database)"
        raise SchemaBehind(
            f"the database schema is at revision {at}, and this version of Slugline needs {', '.join(sorted(heads))}: "
            "run `slugline migrate` (`slugline serve` does it itself on the embedded SQLite database)"
        )


@lru_cache(maxsize=1)
def _script() -> tuple[frozenset[str], frozenset[str]]:
    """This version's head revisions, and every revision it knows."""
    script = ScriptDirectory.from_config(alembic_config())
    return frozenset(script.get_heads()), frozenset(revision.revision for revision in script.walk_revisions())


def schema_problem(engine: Engine) -> str | None:
    """Why this server should not be sent requests (the readiness probe), None when it should: the database does not
    answer, or its schema is behind this version's head. A schema a newer version has migrated is served, as
    `require_current` lets it be, so that a rolling upgrade's older instances stay ready."""
    heads, known = _script()
    try:
        with engine.connect() as connection:
            current = set(MigrationContext.configure(connection).get_current_heads())
    except Exception as exc:
        return f"database unavailable ({type(exc).__name__})"
    if current == heads or current - known:
        return None
    at = ", ".join(sorted(current)) or "none (an empty database)"
    return f"database schema at revision {at}, this version needs {', '.join(sorted(heads))}: run `slugline migrate`"
