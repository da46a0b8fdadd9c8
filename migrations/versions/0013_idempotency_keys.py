"""idempotency keys: a create's answer kept for 24 hours under the Idempotency-Key its client sent, per account
(`slugline.links.idempotency`)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("account_id", sa.Integer(), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("answer", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("account_id", "key"),
    )
    op.create_index("ix_idempotency_keys_account_created", "idempotency_keys", ["account_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_keys_account_created", table_name="idempotency_keys")
    op.drop_table("idempotency_keys")
