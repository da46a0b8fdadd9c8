"""click places: a click's country, region and city, resolved by the click writer from a trusted proxy's country
header or the GeoIP database (`slugline.clicks.geo`); the address itself is still never stored

Added in place, nullable (no rewrite of the click log): on PostgreSQL a column added to the partitioned table is
added to every partition.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 07:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("clicks", sa.Column("country", sa.String(length=2), nullable=True))
    op.add_column("clicks", sa.Column("region", sa.String(length=100), nullable=True))
    op.add_column("clicks", sa.Column("city", sa.String(length=100), nullable=True))


def downgrade() -> None:
    for name in ("city", "region", "country"):
        op.drop_column("clicks", name)
