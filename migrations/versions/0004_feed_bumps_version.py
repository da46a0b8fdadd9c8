"""feed bumps version: on SQLite, a change-feed row sets its account's links version, so a write bumps the
version and records the change in one statement (PostgreSQL does both in one statement with a CTE instead)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 09:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER link_changes_bump AFTER INSERT ON link_changes BEGIN "
            "UPDATE accounts SET links_version = NEW.version WHERE id = NEW.account_id; END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER link_changes_bump")
