"""quiet account deletion: on PostgreSQL the per-row triggers of a link's deletion that record a cube move (0009's
`links_cube_deleted`) and queue a link.deleted webhook (0015's `links_webhook_deleted`) are skipped for the rows of
the account a transaction names in `slugline.deleting_account` (`SET LOCAL`, so it ends with the transaction)

An account's deletion (`accounts.deletion`) names it in each transaction that deletes a batch of its links: its
webhook endpoints went when it was closed, so the webhook trigger would find none for any row, and the cube moves
the other one records are deleted again by the same transaction; yet both ran their function and its query once a
row, a good part of each batch. The WHEN is checked by the server without calling the function. Every other
deletion fires them as before. The statement trigger that deletes the links' clicks (0006) still runs: clicks
written after the batch's clicks were deleted go with it. SQLite is unchanged (its batches are cheap).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 11:35:00
"""

from collections.abc import Sequence

from alembic import op

from slugline.storage import quiettriggers

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAMES = ("links_cube_deleted", "links_webhook_deleted")


def upgrade() -> None:
    quiettriggers.remake(op, _NAMES, "DELETE", quiettriggers.DELETING)


def downgrade() -> None:
    quiettriggers.remake(op, _NAMES, "DELETE", None)
