"""cube epochs: a number per account that the click writer raises whenever it changes a closed day's (or a past
month's) cube of the account, so a worker may keep answers over closed days and know when they went stale
(`slugline.analytics.cache`)

A new table, empty: an account without a row is at epoch 0. Its rows go with their account (ON DELETE CASCADE).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cube_epochs",
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("account_id"),
    )


def downgrade() -> None:
    op.drop_table("cube_epochs")
