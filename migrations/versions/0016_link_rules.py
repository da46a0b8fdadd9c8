"""link redirect rules: an ordered list of conditions on the visitor and where each sends them (`common.rules`)

Added in place (no batch rebuild on SQLite, which would drop the triggers of 0005, 0007 and 0009).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 07:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("links", sa.Column("rules", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("links", "rules")
