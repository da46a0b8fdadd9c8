"""cube variants: a link's roll-up cubes keep each click's variant (cube format version 3), so its clicks and visitors
per variant come from them; the clicks the click log holds with a variant (recorded since 0018) are counted again here
under it

No column changes: cubes of versions 1 and 2 read as clicks without a variant, and the click writer writes version 3
from now on. This revision moves the clicks already counted: for each chunk of the log's clicks that have a variant
(in the order of its index, as 0009 reads it), their cubes as they were counted (without a variant) are taken out of
their link's stored day and month rows and added again with it. A row's clicks per day, hour, device, place, ... are
unchanged; a click the log no longer holds (past `SLUGLINE_CLICK_LOG_DAYS`) stays counted without a variant. Bots,
clicks of deleted links and clicks missing from the cubes are left out, as the cubes leave them out. Only a link's own
cubes: an account's views keep no variants. Visitors of a key move with its clicks (those of a day still open lose
their sketch: a visitor returning later today may count twice). Rows are saved as the click writer saves them, so
an account whose closed days change gets a new cube epoch (0019) and no worker keeps answers made before. As 0009:
run it with the click writers stopped.

The downgrade leaves every cube as the code before this revision reads it, in version 2: each variant's clicks and
visitors counted as without one, as an account's views count a link's (the clicks past the click log's retention too,
which the log could not move back), so that upgrading again counts the log's clicks under their variant once more and
none twice. The code before this revision cannot read version 3 at all, so every row in it is rewritten, views
included (rows of versions 1 and 2 are left as they are), and saved as the click writer saves them (new epochs).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 11:00:00
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CHUNK = 50_000
CUBES = 500  # rows the downgrade reads and rewrites at a time


def upgrade() -> None:
    _recount()


def downgrade() -> None:
    """Every cube of version 3 (the first byte of `cube`) rewritten in version 2 (`_core.without_variants`), a chunk
    of rows at a time in key order."""
    from slugline import _core
    from slugline.clicks import cubes

    conn = op.get_bind()
    page = sa.text(
        "SELECT account_id, scope, level, bucket FROM click_cubes "
        "WHERE (account_id, scope, level, bucket) > (:account, :scope, :level, :bucket) "
        "ORDER BY account_id, scope, level, bucket LIMIT :n"
    )
    after: dict[str, object] = {"account": -1, "scope": "", "level": -1, "bucket": -1, "n": CUBES}
    while keys := [(int(a), str(s), int(lv), int(b)) for a, s, lv, b in conn.execute(page, after)]:
        stored = cubes.read(conn, keys)
        cubes.save(conn, [_core.without_variants(row) for row in stored if row[4][:1] == b"\x03"])
        after |= dict(zip(("account", "scope", "level", "bucket"), keys[-1], strict=True))


def _recount() -> None:
    """Every click of the log with a variant: its link's cubes counted without it are taken out, and added back
    counted with it."""
    from slugline import _core
    from slugline.clicks import cubes

    conn = op.get_bind()
    owners = {
        link: (int(account), False) for link, account in conn.execute(sa.text("SELECT id, account_id FROM links"))
    }
    first: object = datetime(1, 1, 1, tzinfo=UTC) if conn.dialect.name == "postgresql" else ""
    after: tuple[str, object, int] = ("", first, 0)
    page = sa.text(
        "SELECT link_id, clicked_at, device, browser, os, source, referrer, visitor, id, country, city, variant "
        "FROM clicks WHERE variant IS NOT NULL AND (link_id, clicked_at, id) > (:link, :at, :id) "
        "ORDER BY link_id, clicked_at, id LIMIT :n"
    )
    while rows := conn.execute(page, {"link": after[0], "at": after[1], "id": after[2], "n": CHUNK}).all():
        clicks = [(r[0], _unix(r[1]), r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows]
        kept = [(r[9], r[10], int(r[11])) for r in rows]
        plain = [(country, city, None) for country, city, _ in kept]
        out = _core.BatchCubes.from_clicks(clicks, owners, views=False, details=plain)
        back = _core.BatchCubes.from_clicks(clicks, owners, views=False, details=kept)
        stored = cubes.read(conn, out.keys())
        there = {row[:4] for row in stored}
        taken = [
            (a, s, lv, b, c, u, h, ln, sk)
            for a, s, lv, b, c, u, h, ln, sk in out.merged(stored, -1)
            if (a, s, lv, b) in there and c is not None
        ]
        cubes.save(conn, [row for row in back.merged(taken) if row[:4] in there])
        after = (rows[-1][0], rows[-1][1], rows[-1][8])


def _unix(at: object) -> float:
    if isinstance(at, str):  # SQLite keeps `YYYY-MM-DD HH:MM:SS.ffffff`, UTC
        at = datetime.fromisoformat(at)
    assert isinstance(at, datetime)
    return (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()
