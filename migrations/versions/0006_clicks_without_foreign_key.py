"""clicks without foreign key: on PostgreSQL the click log's rows are no longer checked one by one against `links`
(that check doubled the server's work per row of a batch's COPY: 8.2 -> 4.0 µs a row); a link's deletion deletes
its clicks in the same statement instead, through a trigger

The click writer makes sure no row names a link that is gone: it locks the batch's links (`FOR UPDATE`, in id
order) and writes only the rows of those still there, and a deletion waits for that lock. SQLite keeps the key: it
checks it in process, for a fraction of that, and dropping it would rebuild the table.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 09:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_constraint("clicks_link_id_fkey", "clicks", type_="foreignkey")
    # Once per statement, over every link it deleted (an account's deletion deletes all its links in one). The
    # function keeps the schema it was made in, whatever the deleting session's search_path.
    op.execute(
        "CREATE FUNCTION links_deleted_clicks() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ "
        "BEGIN DELETE FROM clicks WHERE link_id IN (SELECT id FROM gone); RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER links_deleted AFTER DELETE ON links REFERENCING OLD TABLE AS gone "
        "FOR EACH STATEMENT EXECUTE FUNCTION links_deleted_clicks()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER links_deleted ON links")
    op.execute("DROP FUNCTION links_deleted_clicks()")
    op.execute("DELETE FROM clicks WHERE NOT EXISTS (SELECT 1 FROM links WHERE links.id = clicks.link_id)")
    op.create_foreign_key("clicks_link_id_fkey", "clicks", "links", ["link_id"], ["id"], ondelete="CASCADE")
