"""link variants: a link's weighted destinations (an A/B split, `links.variants`) and, on each click, the index of
the variant its visitor was sent to (`clicks.variant`; null for a link without variants)

Both added in place, nullable (no batch rebuild on SQLite, which would drop the triggers of 0005, 0007, 0009 and
0015; no rewrite of the click log: on PostgreSQL a column added to the partitioned table is added to every
partition). The webhook triggers of 0015 keep a link's columns in each message (the order `links.service.SHOWN`
reads them): they are made again with `variants` at the end, as 0016 did with `rules`, so a link event carries them.

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

BEFORE = (
    "id, slug, destination_url, title, description, note, hashtags, visibility, clicks, created_at, updated_at, "
    "expires_at, max_clicks, clicks_used, expired_url, archived, preview"
).split(", ")
BEFORE = [*BEFORE, "rules"]  # as 0016 left them
AFTER = [*BEFORE, "variants"]
_JSON_COLUMNS = ("hashtags", "preview", "rules", "variants")  # JSON text on SQLite: embedded as JSON, not as a string
_NOW = {
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
    "postgresql": "extract(epoch FROM clock_timestamp())::float8",
}
_ID = {
    "sqlite": "'msg_' || lower(hex(randomblob(12)))",
    "postgresql": "'msg_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24)",
}
_EVENTS = (  # as 0015 makes them (and 0016 makes again)
    ("links_webhook_created", "link.created", "NEW", "AFTER INSERT ON links", False),
    ("links_webhook_updated", "link.updated", "NEW", "AFTER UPDATE OF updated_at ON links", True),
    ("links_webhook_deleted", "link.deleted", "OLD", "AFTER DELETE ON links", False),
)


def _insert(dialect: str, event: str, row: str, columns: list[str]) -> str:
    if dialect == "sqlite":
        parts = (f"json({row}.{c})" if c in _JSON_COLUMNS else f"{row}.{c}" for c in columns)
        data = "json_array(" + ", ".join(parts) + ")"
    else:
        data = "json_build_array(" + ", ".join(f"{row}.{c}" for c in columns) + ")::text"
    return (
        "INSERT INTO webhook_messages (id, endpoint_id, account_id, type, data, created_at, due_at, attempts) "
        f"SELECT {_ID[dialect]}, e.id, e.account_id, '{event}', {data}, {_NOW[dialect]}, {_NOW[dialect]}, 0 "
        f"FROM webhook_endpoints e WHERE e.account_id = {row}.account_id AND e.enabled "
        f"AND e.events LIKE '%,{event},%'"
    )


def _triggers(columns: list[str]) -> None:
    """The webhook triggers again, keeping `columns` of the link."""
    dialect = op.get_bind().dialect.name
    for name, event, row, timing, on_change in _EVENTS:
        body = _insert(dialect, event, row, columns)
        if dialect == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
            condition = " WHEN NEW.updated_at IS NOT OLD.updated_at" if on_change else ""
            op.execute(f"CREATE TRIGGER {name} {timing}{condition} BEGIN {body}; END")
            continue
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$"
        )


def upgrade() -> None:
    op.add_column("links", sa.Column("variants", sa.JSON(), nullable=True))
    op.add_column("clicks", sa.Column("variant", sa.SmallInteger(), nullable=True))
    _triggers(AFTER)


def downgrade() -> None:
    _triggers(BEFORE)
    op.drop_column("clicks", "variant")
    op.drop_column("links", "variants")
