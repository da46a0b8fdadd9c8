"""links created: on SQLite, a link's insert records itself in the change feed at the account's next version (and
so, through 0004's trigger, bumps the version), so a create is one statement (PostgreSQL does the same with
data-modifying CTEs)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 09:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Before the row goes in, so the insert's RETURNING reads the new version. An insert refused under SQLite's
    # default conflict handling (ABORT: a taken slug, a missing account) undoes the trigger's work with it; an
    # `INSERT OR IGNORE` would not, so links are never inserted that way. Rebuilding `links` (a batch migration)
    # drops the trigger: such a migration must create it again.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER links_created BEFORE INSERT ON links BEGIN "
            "INSERT INTO link_changes (account_id, version, link_id) "
            "SELECT id, links_version + 1, NEW.id FROM accounts WHERE id = NEW.account_id; END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS links_created")
