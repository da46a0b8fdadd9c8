"""SQL pieces that differ between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Connection, String, any_, bindparam, column, func, select
from sqlalchemy.dialects.postgresql import ARRAY


def ids_in(dialect: str, expr: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`expr IN <the ids bound to name at execution>`, for statements built once; bind `match_ids(…)`."""
    if dialect == "postgresql":
        return expr == any_(bindparam(name, type_=ARRAY(String)))
    rows = select(column("value", String)).select_from(func.json_each(bindparam(name, type_=String)))
    return expr.in_(rows)


def match_ids(db: Connection | str, ids: Sequence[str]) -> list[str] | str:
    """The value `ids_in`'s parameter takes on this connection's database (or the dialect named)."""
    dialect = db if isinstance(db, str) else db.dialect.name
    return list(ids) if dialect == "postgresql" else orjson.dumps(list(ids)).decode()
