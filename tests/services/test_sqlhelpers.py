"""The ids a search matched reach the database as one bound text value; every id must arrive as it was sent."""

from __future__ import annotations

from sqlalchemy import String, literal, select, union_all

from slugline.runtime import Runtime
from slugline.services.sqlhelpers import ids_in, match_ids

AWKWARD = ["plain", "NULL", "null", "", "a,b", "{braced}", 'say "hi"', "back\\slash", "trailing\\", " spaced ", "é☃"]


def test_ids_in_matches_exactly_the_ids_bound(runtime: Runtime) -> None:
    candidates = [*AWKWARD, "absent", "a", "b", "braced", "say", "hi", "back", "slash", "spaced", "\\", '"']
    table = union_all(*(select(literal(c, String).label("id")) for c in candidates)).subquery("c")
    with runtime.db.engine.connect() as conn:
        dialect = conn.dialect.name
        stmt = select(table.c.id).where(ids_in(dialect, table.c.id, "match_ids"))
        found = conn.scalars(stmt, {"match_ids": match_ids(conn, AWKWARD)}).all()
        assert sorted(found) == sorted(AWKWARD)
        assert conn.scalars(stmt, {"match_ids": match_ids(conn, [])}).all() == []
