"""The two shapes of a click export, each rendered one chunk of rows at a time (`slugline.analytics.export`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import orjson

COLUMNS = (
    "clicked_at",
    "link_id",
    "slug",
    "device",
    "browser",
    "os",
    "source",
    "referrer",
    "country",
    "region",
    "city",
    "variant",
)
# A spreadsheet reads a cell starting with one of these as a formula. Anonymous visitors choose some of the values
# (a utm_source, a referrer host), so such a cell gets a leading apostrophe, which shows it as the text it is.
FORMULA_STARTS = ("=", "+", "-", "@")

# One row, in COLUMNS order, clicked_at as ISO text; referrer and the place may be missing (None), and so may the
# variant (an index into the link's variants, None when the link had none or a rule sent the click elsewhere).
Cells = tuple[str | int | None, ...]


def csv_header() -> bytes:
    return _csv([COLUMNS])


def csv_rows(rows: Sequence[Cells]) -> bytes:
    """Quoted by the csv module as needed; a missing referrer, place or variant is an empty cell."""
    return _csv([tuple(_cell(value) for value in row) for row in rows])


def ndjson_rows(rows: Sequence[Cells]) -> bytes:
    """One JSON object a line, keys in COLUMNS order; a missing referrer, place or variant is null (a variant is a
    number). No escaping: JSON is data."""
    return b"".join(
        orjson.dumps(dict(zip(COLUMNS, row, strict=True)), option=orjson.OPT_APPEND_NEWLINE) for row in rows
    )


def _cell(value: str | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def _csv(rows: Sequence[Sequence[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)  # RFC 4180: CRLF line ends, a field quoted when it holds `,`, `"` or a line end
    return out.getvalue().encode()
