"""Runs the Alembic migrations in `migrations/` — the only way the schema is made or changed."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine


def migrations_dir() -> Path:
    """The Alembic scripts: a source checkout's top-level `migrations/` (also behind an editable install, whose build
    leaves a copy in the package that may be stale), else the copy that every wheel carries in the package."""
    package = Path(__file__).resolve().parent
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


def upgrade(engine: Engine, revision: str = "head") -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
