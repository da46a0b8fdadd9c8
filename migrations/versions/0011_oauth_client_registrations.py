"""oauth clients: who registered each (a keyed hash of the address's `ip_key`) and when an owner first consented to
it, so that unused anonymous registrations expire and one address holds only so many (`slugline.oauth.clients`)

A registration made before this migration has no registrant (it counts against no address) and counts as used when
a grant names it now; the others are unused, and expire 24 hours after they were made, as new ones do.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("oauth_clients", schema=None) as batch_op:
        batch_op.add_column(sa.Column("registered_by", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("granted_at", TIMESTAMP, nullable=True))
        batch_op.create_index("ix_oauth_clients_registered_by", ["registered_by", "created_at"])
        batch_op.create_index("ix_oauth_clients_unused", ["granted_at", "created_at"])
    op.execute(
        "UPDATE oauth_clients SET granted_at = created_at WHERE EXISTS "
        "(SELECT 1 FROM oauth_grants WHERE oauth_grants.client_id = oauth_clients.client_id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("oauth_clients", schema=None) as batch_op:
        batch_op.drop_index("ix_oauth_clients_unused")
        batch_op.drop_index("ix_oauth_clients_registered_by")
        batch_op.drop_column("granted_at")
        batch_op.drop_column("registered_by")
