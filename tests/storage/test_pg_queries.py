"""`pgwire` turns `%(name)s` statements into what libpq sends with psycopg's public adapters, as psycopg's own
cursors do (no server needed: the adapters of a connection that was never opened)."""

from __future__ import annotations

import datetime
import sys

import psycopg
import pytest
from psycopg.adapt import Transformer

from slugline.storage import pgwire


def test_server_form_numbers_each_name_once() -> None:
    sql = "SELECT %(a)s, %(b)s, %(a)s, 'x%%y' WHERE 1 = 1"
    assert pgwire.server_form(sql, "utf-8") == (b"SELECT $1, $2, $1, 'x%y' WHERE 1 = 1", ("a", "b"))


def test_client_form_keeps_a_template() -> None:
    template, names = pgwire.client_form("SELECT %(a)s, '%%', %(a)s", "utf-8")
    assert (template, names) == (b"SELECT %s, '%%', %s", ("a", "a"))


@pytest.mark.parametrize("sql", ["SELECT %s", "SELECT 50 % 3", "SELECT %"])
def test_other_placeholders_are_refused(sql: str) -> None:
    with pytest.raises(psycopg.ProgrammingError):
        pgwire.server_form(sql, "utf-8")
    with pytest.raises(psycopg.ProgrammingError):
        pgwire.client_form(sql, "utf-8")


def test_values_are_dumped_as_psycopg_dumps_them() -> None:
    tx = Transformer()
    when = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC)
    query = pgwire.ServerQuery(tx, "SELECT %(n)s, %(t)s, %(none)s, %(n)s", {"n": 5, "t": when, "none": None})
    assert query.query == b"SELECT $1, $2, $3, $1"
    assert len(query.params) == 3 and query.params[2] is None
    assert len(query.types) == 3
    with pytest.raises(psycopg.ProgrammingError, match="missing"):
        pgwire.ServerQuery(tx, "SELECT %(gone)s", {})


def test_client_side_values_are_quoted() -> None:
    query = pgwire.client_query(
        Transformer(), "SELECT %(s)s, %(n)s, %(none)s, '%%'", {"s": "it's", "n": 7, "none": None}
    )
    assert query.startswith(b"SELECT ") and b"'it''s'" in query and b"NULL" in query and query.endswith(b"'%'")


def test_sqlite_never_imports_pgwire() -> None:
    """The SQLite paths import nothing of libpq's driver (`pgwire` is imported by the PostgreSQL reader)."""
    import subprocess

    code = "import sys, slugline.app, slugline.storage.db; sys.exit('slugline.storage.pgwire' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0
