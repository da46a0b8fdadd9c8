"""The links file: what `GET /links/export` writes and `slugline links import` reads back, as CSV or NDJSON.

Its columns are every column of the links table but the account (`STORED`), so a column a migration adds is exported
and imported with no change here, plus `short_url` after the slug (for people; import ignores it). Values are typed
as the table types them: timestamps as ISO 8601 UTC to the microsecond (so a re-export of an import is the same
file), hashtags as a JSON list in NDJSON and space-separated in CSV (a tag holds no whitespace), another JSON value
(a preview card, redirect rules, variants) as itself in NDJSON and its JSON text in CSV, a missing value as null in
NDJSON and an empty cell in CSV. A password link carries its password's hash, never the password. An import checks
rules and variants as a create does (`links.importrows`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import orjson
from sqlalchemy import JSON, Boolean, Integer, Table

from slugline.common.clock import as_utc
from slugline.common.models import Link

_LINKS = cast(Table, Link.__table__)
STORED = tuple(column.key for column in _LINKS.columns if column.key != "account_id")
COLUMNS = (*STORED[: STORED.index("slug") + 1], "short_url", *STORED[STORED.index("slug") + 1 :])
# A spreadsheet reads a cell starting with one of the first four as a formula, so such a text cell gets a leading
# apostrophe (as the click export's do); a cell starting with an apostrophe gets one too, so import can always take
# the first one off and read back exactly what was written.
ESCAPED_STARTS = ("=", "+", "-", "@", "'")

Cells = tuple[Any, ...]  # one link's values in COLUMNS order, JSON-ready


def cells(row: Sequence[Any], base_url: str) -> Cells:
    """A row of the `STORED` columns as the file's values."""
    values = [_moment(value) if isinstance(value, datetime) else value for value in row]
    at = STORED.index("slug") + 1
    return (*values[:at], f"{base_url}/{values[at - 1]}", *values[at:])


def _moment(value: datetime) -> str:
    return as_utc(value).astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def csv_header() -> bytes:
    return _csv([COLUMNS])


def csv_rows(rows: Sequence[Cells]) -> bytes:
    return _csv([[_cell(value, name) for name, value in zip(COLUMNS, row, strict=True)] for row in rows])


def ndjson_rows(rows: Sequence[Cells]) -> bytes:
    return b"".join(
        orjson.dumps(dict(zip(COLUMNS, row, strict=True)), option=orjson.OPT_APPEND_NEWLINE) for row in rows
    )


def _cell(value: Any, name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) or (isinstance(value, list) and name != "hashtags"):
        # a JSON column's object or list (a preview card, redirect rules, variants): its JSON text
        text = orjson.dumps(value).decode()
    else:
        text = " ".join(value) if isinstance(value, list) else str(value)
    if isinstance(value, int):  # a number is written as it is: -1 is no formula
        return text
    return "'" + text if text.startswith(ESCAPED_STARTS) else text


def _csv(rows: Iterable[Sequence[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


class BadRow(ValueError):
    """A line of the file that is not a link as export writes it."""


def read(lines: Iterable[str], fmt: str) -> Iterator[dict[str, Any] | BadRow]:
    """The links of a file `export` wrote (its lines, as text), each as the values of its `STORED` columns, or the
    `BadRow` saying why a row is not one. A CSV file without a slug and destination_url header raises `BadRow`."""
    if fmt == "ndjson":
        for n, line in enumerate(lines, 1):
            if line.strip():
                yield _ndjson_row(n, line)
        return
    rows = csv.reader(lines)
    header = next(rows, None)
    if header is None:
        return
    if "slug" not in header or "destination_url" not in header:
        raise BadRow("line 1: the header names no slug and destination_url columns")
    for row in rows:
        if row:
            found = dict(zip(header, row, strict=False))
            try:
                yield _cells(found)
            except BadRow as exc:
                yield exc


def _cells(found: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in STORED:
        if name in found:
            text = found[name]
            # most cells are text that needs nothing done (`_from_cell`'s first case, without the call)
            values[name] = text if name in _TEXTS and text and text[0] != "'" else _from_cell(name, text)
    return values


def _ndjson_row(n: int, line: str) -> dict[str, Any] | BadRow:
    try:
        found = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return BadRow(f"line {n}: not JSON ({exc})")
    if not isinstance(found, dict):
        return BadRow(f"line {n}: not a JSON object")
    try:
        return {name: _typed(name, found.get(name)) for name in STORED if name in found}
    except BadRow as exc:
        return BadRow(f"line {n}: {exc}")


def _typed(name: str, value: Any) -> Any:
    """An NDJSON value as the column holds it (timestamps come as text)."""
    if isinstance(value, str) and name in _MOMENTS:
        return _parse_moment(name, value)
    return value


def _from_cell(name: str, text: str) -> Any:
    kind, empty = _KINDS[name]
    if text.startswith("'"):
        text = text[1:]
    elif text == "":
        return [] if kind == "hashtags" else empty
    if kind == "text":
        return text
    if kind == "hashtags":
        return text.split()
    if kind == "json":
        return _json_cell(name, text)
    if kind == "bool":
        return text.lower() == "true"
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise BadRow(f"{name} must be a whole number, not {text!r}") from None
    return _parse_moment(name, text)


def _kind(name: str) -> str:
    column_type = _LINKS.c[name].type
    if isinstance(column_type, JSON):
        return "hashtags" if name == "hashtags" else "json"
    if isinstance(column_type, Boolean):
        return "bool"
    if isinstance(column_type, Integer):
        return "int"
    return "moment" if getattr(column_type, "python_type", None) is datetime else "text"


# How a cell of each column is read, and what an empty one is (worked out once: an import reads millions of cells).
_KINDS = {name: (_kind(name), None if _LINKS.c[name].nullable else "") for name in STORED}
_TEXTS = frozenset(name for name, (kind, _) in _KINDS.items() if kind == "text")


def _json_cell(name: str, text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise BadRow(f"{name} must be JSON, not {text!r}") from None


_MOMENTS = frozenset(c.key for c in _LINKS.columns if getattr(c.type, "python_type", None) is datetime)


def _parse_moment(name: str, text: str) -> datetime:
    try:
        return as_utc(datetime.fromisoformat(text)).astimezone(UTC)  # stored as UTC, whatever the offset written
    except ValueError:
        raise BadRow(f"{name} must be an ISO 8601 time, not {text!r}") from None
