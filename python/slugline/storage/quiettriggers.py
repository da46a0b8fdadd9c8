"""Per-row triggers of `links` that skip one account's rows for the rest of a transaction, on PostgreSQL: the
transaction names the account in a setting (`set_config(..., true)`, as `SET LOCAL`, so it ends with the transaction)
and the trigger's WHEN compares each row's account with it. The server checks a WHEN without calling the trigger's
function, so a bulk write of one account's links (an import, `links.importwrite`; an account's deletion,
`accounts.deletion`) does not run a function and its query for each row that would have nothing to do. SQLite has no
such setting: nothing here runs there.

Migrations 0020 and 0022 make their triggers through `remake`, and the code names an account through `naming`, so the
setting a trigger reads and the one a transaction sets are written once. Neither the names nor the SQL may change:
a migration's SQL stays what it was when the migration was written (a database made today must get the triggers one
made then got), and a renamed setting would go unread by the triggers already made. Another quieting is a new setting
and a new migration, leaving these as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sqlalchemy import Connection, TextClause, text

IMPORTING = "slugline.no_link_created_webhooks"  # 0020: links_webhook_created, for an import's creates
DELETING = "slugline.deleting_account"  # 0022: links_cube_deleted and links_webhook_deleted, for a batch's deletion


class Operations(Protocol):
    """What `remake` uses of a migration's `alembic.op`."""

    def execute(self, sqltext: str) -> None: ...

    def get_bind(self) -> Connection: ...


def remake(op: Operations, names: Sequence[str], event: str, setting: str | None) -> None:
    """The per-row triggers `names` of `AFTER event ON links` (INSERT or DELETE; each calls the function of its name)
    made again on PostgreSQL, skipping the rows of the account a transaction names in `setting` (None: none skipped,
    as before the migration)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    row = "OLD" if event == "DELETE" else "NEW"
    # current_setting(..., true) is null when the setting was never made, '' after a transaction that made it ended.
    when = f" WHEN (current_setting('{setting}', true) IS DISTINCT FROM {row}.account_id::text)" if setting else ""
    for name in names:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON links")
        op.execute(f"CREATE TRIGGER {name} AFTER {event} ON links FOR EACH ROW{when} EXECUTE FUNCTION {name}()")


def naming(setting: str) -> TextClause:
    """The statement that names the account whose rows the triggers reading `setting` skip for the rest of the
    transaction: bind `account` to its id as text (the WHEN compares the row's `account_id::text`)."""
    return text(f"SELECT set_config('{setting}', :account, true)")
