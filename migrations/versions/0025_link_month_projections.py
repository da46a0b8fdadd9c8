"""link month projections: beside each link's month cube, rows of levels 3, 4 and 5 holding the month's clicks
projected onto device and browser and os (3), source and referrer host (4), or country and city (5), which filtered top
links read instead of the month (`slugline.analytics.cubes.fitting_rows`)

The click writer writes them with every month it writes. Upgrade makes them for the months already stored, a link at
a time (reading that link's months by key); a month without them is read as itself. A server still running the code
before writes months without updating their projections, which then lag behind until this code's writer writes the
month again (docs/operations.md). The downgrade deletes them: the code before neither reads them nor keeps them in
step with the months.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 18:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from slugline import _core

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MONTH = 1  # the levels, as this revision knows them
PROJECTIONS = (3, 4, 5)

_LINKS = sa.text(f"SELECT DISTINCT account_id, scope FROM click_cubes WHERE level = {MONTH} AND scope NOT IN ('', 'p')")
_MONTHS = sa.text(f"SELECT bucket, cube FROM click_cubes WHERE account_id = :a AND scope = :s AND level = {MONTH}")
_WRITE = sa.text(
    "INSERT INTO click_cubes (account_id, scope, level, bucket, cube) VALUES (:a, :s, :level, :b, :cube) "
    "ON CONFLICT (account_id, scope, level, bucket) DO UPDATE SET cube = excluded.cube"
)


def upgrade() -> None:
    conn = op.get_bind()
    for account, scope in conn.execute(_LINKS).all():
        rows = [
            {"a": account, "s": scope, "level": level, "b": bucket, "cube": made}
            for bucket, cube in conn.execute(_MONTHS, {"a": account, "s": scope}).all()
            for level, made in zip(PROJECTIONS, _core.projections(bytes(cube)), strict=True)
        ]
        if rows:
            conn.execute(_WRITE, rows)


def downgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM click_cubes WHERE level IN (3, 4, 5)"))
