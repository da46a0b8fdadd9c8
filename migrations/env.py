"""Alembic environment: the URL and engine come from Slugline's settings (see slugline.storage.migrate)."""

from alembic import context
from sqlalchemy import Connection

from slugline.common.models import Base


def run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `slugline migrate`, which supplies the connection")
run(connection)
