"""click cubes: analytics read roll-up cubes (`click_cubes`) that the click writer keeps, in place of the daily
roll-up and the click log; links leaving or joining an account's views are recorded in `cube_moves` by triggers

The cubes are built here from the click log, in chunks of `CHUNK` clicks, inside the migration's transaction, so
a failed migration leaves nothing half made; on PostgreSQL it holds no lock that stops the click writer, link edits
or reads (only new tables are written), but clicks written by workers still running the previous version while it
runs are not in the cubes: upgrade with those workers stopped. `click_daily` is dropped; the downgrade rebuilds
it from the click log.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 22:00:00
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 50_000
PUBLIC = "('public', 'unlisted')"
MOVE_DELETED = (
    "INSERT INTO cube_moves (account_id, link_id, kind, public) SELECT OLD.account_id, OLD.id, 'delete', "
    f"OLD.visibility IN {PUBLIC} WHERE EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account_id)"
)
MOVE_CHANGED = (
    "INSERT INTO cube_moves (account_id, link_id, kind, public) VALUES (NEW.account_id, NEW.id, "
    f"CASE WHEN NEW.visibility IN {PUBLIC} THEN 'show' ELSE 'hide' END, NEW.visibility IN {PUBLIC})"
)
CHANGED_VIEW = f"(OLD.visibility IN {PUBLIC}) <> (NEW.visibility IN {PUBLIC})"
FORGET_ACCOUNT = "DELETE FROM click_cubes WHERE account_id = OLD.id; DELETE FROM cube_moves WHERE account_id = OLD.id;"


def upgrade() -> None:
    op.create_table(
        "click_cubes",
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("cube", sa.LargeBinary(), nullable=False),
        sa.Column("uniques", sa.LargeBinary(), nullable=True),
        sa.Column("links", sa.LargeBinary(), nullable=True),
        sa.Column("hours", sa.LargeBinary(), nullable=True),
        sa.Column("sketches", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("account_id", "scope", "level", "bucket"),
    )
    op.create_table(
        "cube_moves",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("link_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("public", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_cube_moves_account_id", "cube_moves", ["account_id"])
    if op.get_bind().dialect.name == "postgresql":
        _postgres_triggers()
    else:
        op.execute(f"CREATE TRIGGER links_cube_deleted AFTER DELETE ON links BEGIN {MOVE_DELETED}; END")
        op.execute(
            f"CREATE TRIGGER links_cube_view AFTER UPDATE OF visibility ON links WHEN {CHANGED_VIEW} "
            f"BEGIN {MOVE_CHANGED}; END"
        )
        op.execute(f"CREATE TRIGGER accounts_cubes_deleted AFTER DELETE ON accounts BEGIN {FORGET_ACCOUNT} END")
    _build_cubes()
    op.drop_index("ix_click_daily_day", table_name="click_daily")
    op.drop_table("click_daily")


def _postgres_triggers() -> None:
    for name, body in (
        ("links_cube_deleted", MOVE_DELETED),
        ("links_cube_view", MOVE_CHANGED),
        ("accounts_cubes_deleted", FORGET_ACCOUNT.rstrip(";")),
    ):
        op.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$"
        )
    op.execute(
        "CREATE TRIGGER links_cube_deleted AFTER DELETE ON links FOR EACH ROW EXECUTE FUNCTION links_cube_deleted()"
    )
    op.execute(
        "CREATE TRIGGER links_cube_view AFTER UPDATE OF visibility ON links FOR EACH ROW "
        f"WHEN ({CHANGED_VIEW}) EXECUTE FUNCTION links_cube_view()"
    )
    op.execute(
        "CREATE TRIGGER accounts_cubes_deleted AFTER DELETE ON accounts FOR EACH ROW "
        "EXECUTE FUNCTION accounts_cubes_deleted()"
    )


def _build_cubes() -> None:
    """Every click of the log, bots left out, into its link's cubes, chunk by chunk in the order of the log's index
    (each link's clicks side by side); then each account view's cubes made from its links' cubes, a bucket at a
    time through an index that lives only as long as that."""
    from slugline import _core
    from slugline.clicks import cubes

    conn = op.get_bind()
    owners = {
        link: (int(account), visibility in ("public", "unlisted"))
        for link, account, visibility in conn.execute(sa.text("SELECT id, account_id, visibility FROM links"))
    }
    # SQLite keeps times as text: the empty string sorts first there.
    first: object = datetime(1, 1, 1, tzinfo=UTC) if conn.dialect.name == "postgresql" else ""
    after: tuple[str, object, int] = ("", first, 0)
    page = sa.text(
        "SELECT link_id, clicked_at, device, browser, os, source, referrer, visitor, id FROM clicks "
        "WHERE (link_id, clicked_at, id) > (:link, :at, :id) ORDER BY link_id, clicked_at, id LIMIT :n"
    )
    while rows := conn.execute(page, {"link": after[0], "at": after[1], "id": after[2], "n": CHUNK}).all():
        clicks = [(r[0], _unix(r[1]), r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows]
        batch = _core.BatchCubes.from_clicks(clicks, owners, views=False)
        cubes.write(conn, batch.merged(cubes.read(conn, batch.keys())))
        after = (rows[-1][0], rows[-1][1], rows[-1][8])
    op.create_index("ix_click_cubes_building", "click_cubes", ["account_id", "level", "bucket"])
    buckets = conn.execute(sa.text("SELECT DISTINCT account_id, level, bucket FROM click_cubes")).all()
    parts = sa.text(
        "SELECT c.scope, c.cube, c.uniques, c.hours, c.sketches, l.visibility FROM click_cubes AS c "
        "JOIN links AS l ON l.id = c.scope WHERE c.account_id = :a AND c.level = :lv AND c.bucket = :b"
    )
    for account, level, bucket in buckets:
        found = conn.execute(parts, {"a": account, "lv": level, "b": bucket}).all()
        for scope, public_only in ((cubes.ALL, False), (cubes.PUBLIC, True)):
            chosen = [
                (str(p[0]), (bytes(p[1]), _bytes(p[2]), _bytes(p[3]), _bytes(p[4])))
                for p in found
                if not public_only or p[5] in ("public", "unlisted")
            ]
            if chosen:
                cubes.write(conn, [_core.compose((int(account), scope, int(level), int(bucket)), chosen)])
    op.drop_index("ix_click_cubes_building", table_name="click_cubes")


def _bytes(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[call-overload]


def _unix(at: object) -> float:
    if isinstance(at, str):  # SQLite keeps `YYYY-MM-DD HH:MM:SS.ffffff`, UTC
        at = datetime.fromisoformat(at)
    assert isinstance(at, datetime)
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def downgrade() -> None:
    op.create_table(
        "click_daily",
        sa.Column("link_id", sa.String(), sa.ForeignKey("links.id", ondelete="CASCADE"), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("device", sa.String(length=8), nullable=False),
        sa.Column("source", sa.String(length=255), nullable=False),
        sa.Column("clicks", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("link_id", "day", "device", "source"),
    )
    op.create_index("ix_click_daily_day", "click_daily", ["day"])
    postgres = op.get_bind().dialect.name == "postgresql"
    day = "(clicked_at AT TIME ZONE 'UTC')::date" if postgres else "substr(clicked_at, 1, 10)"
    op.execute(
        f"INSERT INTO click_daily (link_id, day, device, source, clicks) SELECT link_id, {day}, device, source, "
        f"count(*) FROM clicks WHERE link_id IN (SELECT id FROM links) GROUP BY link_id, {day}, device, source"
    )
    triggers = (("links_cube_deleted", "links"), ("links_cube_view", "links"), ("accounts_cubes_deleted", "accounts"))
    for trigger, table in triggers:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}" + (f" ON {table}" if postgres else ""))
        if postgres:
            op.execute(f"DROP FUNCTION IF EXISTS {trigger}()")
    op.drop_index("ix_cube_moves_account_id", table_name="cube_moves")
    op.drop_table("cube_moves")
    op.drop_table("click_cubes")
