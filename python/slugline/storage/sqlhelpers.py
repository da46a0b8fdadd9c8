"""SQL pieces that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Connection, String, any_, bindparam, cast, column, func, select
from sqlalchemy.dialects.postgresql import ARRAY


def ids_in(dialect: str, expr: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`expr IN <the ids bound to name at execution>`, for statements built once; bind `match_ids(…)`.

    On PostgreSQL the ids are bound as the text of an array, cast to `VARCHAR[]` by the server: psycopg sends a
    string as it is, where it adapted a list element by element at many times the cost. The parameter has no
    type of its own (psycopg sends it as `unknown`), so the server reads the literal as the array itself and plans as
    for the array written in the statement: typed `VARCHAR` first, the cast would be left to run time and the
    comparison costed as for an array the planner cannot see (another plan at thousands of ids)."""
    if dialect == "postgresql":
        return expr == any_(cast(bindparam(name), ARRAY(String)))
    rows = select(column("value", String)).select_from(func.json_each(bindparam(name, type_=String)))
    return expr.in_(rows)


def match_ids(db: Connection | str, ids: Sequence[str]) -> str:
    """The value `ids_in`'s parameter takes on this connection's database (or the dialect named)."""
    dialect = db if isinstance(db, str) else db.dialect.name
    return pg_array(ids) if dialect == "postgresql" else orjson.dumps(list(ids)).decode()


def pg_array(values: Sequence[str]) -> str:
    """PostgreSQL's text form of a one-dimensional text array: every element quoted, so none is read as NULL or split
    at a comma, brace or space, and its backslashes and double quotes escaped."""
    quoted = ('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values)
    return "{" + ",".join(quoted) + "}"
