"""link changes: the feed other workers read to update their search indexes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 03:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "link_changes",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("link_id", sa.String(length=15), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account_id", "version"),
    )


def downgrade() -> None:
    op.drop_table("link_changes")
