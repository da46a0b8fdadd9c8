"""Runs the Alembic migrations in `migrations/` — the only way the schema is made or changed."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine


def migrations_dir() -> Path:
    """`migrations/` of a source checkout, or the copy packed inside an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parents[1] / "migrations"):
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
