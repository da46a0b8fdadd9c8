"""quiet import webhooks: on PostgreSQL the webhook trigger of a create (0015's `links_webhook_created`) is skipped
for the rows of the account a transaction names in `slugline.no_link_created_webhooks` (`SET LOCAL`, so it ends with
the transaction)

An import (`links.importwrite`) names its account only after finding, in the same transaction, that no endpoint of
the account wants link.created: the trigger would write nothing for any of its links, yet it ran its function and
its query once per row, a good part of a PostgreSQL import's time. The trigger's WHEN is checked by the server
without calling the function. Every other write, and an import into an account with a subscribed endpoint, fires it
as before. (SQLite has no such setting: there the import drops the trigger inside its transaction, as it drops those
of 0004 and 0005.) 0016 and 0018 replace the trigger's function, not the trigger: a later migration doing the same
keeps this WHEN.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 10:50:00
"""

from collections.abc import Sequence

from alembic import op

from slugline.storage import quiettriggers

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NAMES = ("links_webhook_created",)


def upgrade() -> None:
    quiettriggers.remake(op, _NAMES, "INSERT", quiettriggers.IMPORTING)


def downgrade() -> None:
    quiettriggers.remake(op, _NAMES, "INSERT", None)
