"""month packs: `click_cubes` rows of level 2, a month of an account view's closed days in one row
(`slugline.clicks.packs`), made by the servers' click upkeep and read by analytics instead of the month's day cubes

Nothing to change on upgrade: the table takes the new level as it is, and the upkeep makes the packs within minutes
(`slugline clicks pack` at once); until then every day is read from its day cube, as before. The downgrade deletes
them: the code before this revision neither reads them nor deletes one when it writes a day it holds, so packs left
behind would answer for days changed meanwhile once this revision came back.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PACK = 2  # the level, as this revision knows it


def upgrade() -> None:
    pass


def downgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM click_cubes WHERE level = :p"), {"p": PACK})
