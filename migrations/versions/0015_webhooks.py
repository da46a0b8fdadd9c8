"""webhooks: an account's endpoints, the outbox of messages to deliver to them and the log of delivery attempts;
triggers on `links` write a message per subscribed endpoint in the transaction of each create, change and delete
(`slugline.webhooks`)

Every way a link is written (the loop's one-statement creates and updates, the thread's, bulk, imports, purges)
runs these triggers, so no change commits without its messages and no message outlives a change rolled back. A
message keeps the link's columns as they were (`LINK_COLUMNS`, the order `links.service.SHOWN` reads them); the
deliverer turns them into the link's JSON. Times are seconds since the epoch (a float), which both databases write
from a trigger alike.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LINK_COLUMNS = (
    "id, slug, destination_url, title, description, note, hashtags, visibility, clicks, created_at, updated_at, "
    "expires_at, max_clicks, clicks_used, expired_url, archived, preview"
).split(", ")
_JSON_COLUMNS = ("hashtags", "preview")  # JSON text on SQLite: embedded as JSON, not as a string
_NOW = {
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
    "postgresql": "extract(epoch FROM clock_timestamp())::float8",
}
_ID = {
    "sqlite": "'msg_' || lower(hex(randomblob(12)))",
    "postgresql": "'msg_' || substr(replace(gen_random_uuid()::text, '-', ''), 1, 24)",
}
# (trigger, event, row, when): a message for each enabled endpoint of the link's account that wants the event.
_EVENTS = (
    ("links_webhook_created", "link.created", "NEW", "AFTER INSERT ON links", None),
    ("links_webhook_updated", "link.updated", "NEW", "AFTER UPDATE OF updated_at ON links", "changed"),
    ("links_webhook_deleted", "link.deleted", "OLD", "AFTER DELETE ON links", None),
)


def _endpoint_id() -> sa.Column[str]:
    return sa.Column(
        "endpoint_id", sa.String(length=32), sa.ForeignKey("webhook_endpoints.id", ondelete="CASCADE"), nullable=False
    )


def _insert(dialect: str, event: str, row: str) -> str:
    if dialect == "sqlite":
        data = (
            "json_array("
            + ", ".join(f"json({row}.{c})" if c in _JSON_COLUMNS else f"{row}.{c}" for c in LINK_COLUMNS)
            + ")"
        )
    else:
        data = "json_build_array(" + ", ".join(f"{row}.{c}" for c in LINK_COLUMNS) + ")::text"
    return (
        "INSERT INTO webhook_messages (id, endpoint_id, account_id, type, data, created_at, due_at, attempts) "
        f"SELECT {_ID[dialect]}, e.id, e.account_id, '{event}', {data}, {_NOW[dialect]}, {_NOW[dialect]}, 0 "
        f"FROM webhook_endpoints e WHERE e.account_id = {row}.account_id AND e.enabled "
        f"AND e.events LIKE '%,{event},%'"
    )


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("account_id", sa.Integer(), sa.ForeignKey("accounts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=True),
        sa.Column("events", sa.String(length=200), nullable=False),
        sa.Column("secret_salt", sa.String(length=64), nullable=False),
        sa.Column("base_url", sa.String(length=2048), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=300), nullable=True),
        sa.Column("failing_since", sa.Float(), nullable=True),
        sa.Column("click_due", sa.Float(), nullable=False, server_default="0"),
        sa.Column("expired_through", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_endpoints_account_id", "webhook_endpoints", ["account_id"])
    op.create_table(
        "webhook_messages",
        sa.Column("id", sa.String(length=40), nullable=False),
        _endpoint_id(),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("due_at", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("delivered_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_messages_due_at", "webhook_messages", ["due_at"])
    op.create_index("ix_webhook_messages_endpoint", "webhook_messages", ["endpoint_id", "created_at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        _endpoint_id(),
        sa.Column("message_id", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("attempted_at", sa.Float(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(length=300), nullable=True),
        sa.Column("ms", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_attempts_endpoint", "webhook_attempts", ["endpoint_id", "id"])
    dialect = op.get_bind().dialect.name
    for name, event, row, timing, when in _EVENTS:
        body = _insert(dialect, event, row)
        if dialect == "sqlite":
            condition = " WHEN NEW.updated_at IS NOT OLD.updated_at" if when else ""
            op.execute(f"CREATE TRIGGER {name} {timing}{condition} BEGIN {body}; END")
            continue
        op.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$"
        )
        condition = " WHEN (NEW.updated_at IS DISTINCT FROM OLD.updated_at)" if when else ""
        op.execute(f"CREATE TRIGGER {name} {timing} FOR EACH ROW{condition} EXECUTE FUNCTION {name}()")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name, *_ in _EVENTS:
        if dialect == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON links")
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    op.drop_index("ix_webhook_attempts_endpoint", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_messages_endpoint", table_name="webhook_messages")
    op.drop_index("ix_webhook_messages_due_at", table_name="webhook_messages")
    op.drop_table("webhook_messages")
    op.drop_index("ix_webhook_endpoints_account_id", table_name="webhook_endpoints")
    op.drop_table("webhook_endpoints")
