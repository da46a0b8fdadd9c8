"""SQL pieces that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Connection, String, any_, bindparam, cast, column, func, select
from sqlalchemy.dialects.postgresql import ARRAY


def ids_in(dialect: str, expr: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`expr IN <the ids bound to name at execution>`, for statements built once; bind `match_ids(…)`.

    Either way the ids travel as one text value: on PostgreSQL an array literal cast to `VARCHAR[]`, which psycopg
    binds in under 2 µs where it took ~20 µs to adapt a list of 20 ids element by element."""
    if dialect == "postgresql":
        return expr == any_(cast(bindparam(name, type_=String), ARRAY(String)))
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
