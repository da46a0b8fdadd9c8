"""link variants: a link's weighted destinations (an A/B split, `links.variants`) and, on each click, the index of
the variant its visitor was sent to (`clicks.variant`; null for a link without variants)

Both added in place, nullable (no batch rebuild on SQLite, which would drop the triggers of 0005, 0007, 0009 and
0015; no rewrite of the click log: on PostgreSQL a column added to the partitioned table is added to every
partition).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 08:35:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("links", sa.Column("variants", sa.JSON(), nullable=True))
    op.add_column("clicks", sa.Column("variant", sa.SmallInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("clicks", "variant")
    op.drop_column("links", "variants")
