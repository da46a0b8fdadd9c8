"""links changed: on SQLite, a change of a link (every one sets its `updated_at`) records itself in the change feed at
the account's next version (and so, through 0004's trigger, bumps the version), so an update is one statement, as a
create is since 0005 (PostgreSQL does the same with data-modifying CTEs)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 11:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Before the row changes, so the update's RETURNING reads the new version; only for updates that set
    # `updated_at` (a link's owner changing it), not the click counter's. An update refused under SQLite's default
    # conflict handling (ABORT: a taken slug) undoes the trigger's work with it; links are never updated with
    # `OR IGNORE` or `OR REPLACE`. Rebuilding `links` (a batch migration) drops the trigger: such a migration must
    # create it again.
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER links_changed BEFORE UPDATE OF updated_at ON links BEGIN "
            "INSERT INTO link_changes (account_id, version, link_id) "
            "SELECT id, links_version + 1, NEW.id FROM accounts WHERE id = NEW.account_id; END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS links_changed")
