"""link lifecycle: an expiry time, a click limit with its exact counter, where an ended link sends visitors, an
archived flag, and a social preview (`slugline.links.lifecycle`)

Columns are added in place (no batch rebuild on SQLite, which would drop the triggers of 0005, 0007 and 0009).
`clicks_used` counts the non-bot visitors a limited link let through; it is written by the redirect itself, in one
conditional UPDATE, so a limit holds exactly across workers and hosts.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("links", sa.Column("expires_at", TIMESTAMP, nullable=True))
    op.add_column("links", sa.Column("max_clicks", sa.BigInteger(), nullable=True))
    op.add_column("links", sa.Column("clicks_used", sa.BigInteger(), nullable=False, server_default="0"))
    op.add_column("links", sa.Column("expired_url", sa.String(length=2048), nullable=True))
    op.add_column("links", sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("links", sa.Column("preview", sa.JSON(), nullable=True))
    op.create_index("ix_links_expires_at", "links", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_links_expires_at", table_name="links")
    for name in ("preview", "archived", "expired_url", "clicks_used", "max_clicks", "expires_at"):
        op.drop_column("links", name)
