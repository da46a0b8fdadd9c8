"""The ids a search matched reach the database as one bound text value; every id must arrive as it was sent."""

from __future__ import annotations

from sqlalchemy import String, column, literal, select, union_all
from sqlalchemy import table as table_of

from slugline.runtime import Runtime
from slugline.storage.sqlhelpers import ids_in, match_ids, pg_array
from tests.support.helpers import POSTGRES_ONLY

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


@POSTGRES_ONLY
def test_on_postgresql_the_ids_are_planned_as_if_written_in_the_statement(runtime: Runtime) -> None:
    """The ids' text is read as the array itself when the statement is planned for them. Typed as text first, the
    cast is left to run time and the planner costs the comparison as for an array it cannot see: at thousands of
    ids (a `q` page sorted other than by time) it chose a bitmap scan where the constant array gets a seq scan."""
    with runtime.db.engine.connect() as conn:
        conn.exec_driver_sql("CREATE TEMPORARY TABLE candidates (id VARCHAR PRIMARY KEY)")
        conn.exec_driver_sql("INSERT INTO candidates SELECT 'lnk_' || n FROM generate_series(1, 50000) AS n")
        conn.exec_driver_sql("ANALYZE candidates")
        table = table_of("candidates", column("id", String))
        sql = str(select(table.c.id).where(ids_in("postgresql", table.c.id, "match_ids")).compile(dialect=conn.dialect))

        def plan(statement: str, values: dict[str, str]) -> tuple[str, float]:
            (found,) = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement, values).scalar_one()
            return found["Plan"]["Node Type"], found["Plan"]["Total Cost"]

        for count in (10, 5_000):
            ids = [f"lnk_{n}" for n in range(count)]
            written = "SELECT id FROM candidates WHERE id = ANY('" + pg_array(ids) + "'::VARCHAR[])"
            assert plan(sql, {"match_ids": match_ids(conn, ids)}) == plan(written, {})
