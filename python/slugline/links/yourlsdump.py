"""YOURLS's links as a MySQL dump holds them: the `INSERT` statements of its URL table, as mysqldump writes them
(`INSERT INTO `yourls_url` VALUES (...),(...);`, with `--complete-insert` a column list) or phpMyAdmin does (a column
list, one row a line). Everything else in the dump (other tables, `CREATE TABLE`, `SET`, comments) is passed over.

The table is YOURLS's `YOURLS_DB_TABLE_URL`: `YOURLS_DB_PREFIX` (`yourls_` by default) then `url`, so any table whose
name ends in `url` is read. Its columns, in the order YOURLS creates them (`yourls_create_sql_tables` in
`includes/functions-install.php`): `keyword`, `url`, `title`, `timestamp`, `ip`, `clicks`; a column list, when the
statement has one, wins. Strings are MySQL's: quoted with `'`, a quote doubled or escaped, `\\n`-style escapes.

The dump is read a statement at a time (at most `MAX_STATEMENT` characters: mysqldump's extended inserts are cut at
about 1 MB), so memory follows the largest statement, not the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from slugline.links.files import BadRow

COLUMNS = ("keyword", "url", "title", "timestamp", "ip", "clicks")
MAX_STATEMENT = 16 << 20  # characters
# How a dump's first line starts (a CSV header such as `createdAt,...` does not: a keyword ends at a word's end).
_SQL_START = re.compile(r"\s*(?:--|/\*|#|(?:insert|create|drop|set|lock|unlock|use|start|begin)\b)", re.I)
# The text up to the next `;` outside a string (or to the end of what has arrived), a string at a time.
_SCAN = re.compile(r"(?:[^';]|'(?:[^'\\]|\\.|'')*')*", re.S)
_COMMENTS = re.compile(r"\A(?:\s*(?:--|#)[^\n]*\n)*")  # whole comment lines before a statement
_HEAD = re.compile(
    r"\s*insert\s+(?:ignore\s+)?into\s+`?(?:[\w$]+`?\.`?)?([\w$]+)`?\s*(?:\(([^)]*)\))?\s*values\s*", re.I | re.S
)
_VALUE = re.compile(r"\s*(?:'((?:[^'\\]|\\.|'')*)'|(null)|([-+]?[\d.eE+-]+))\s*", re.I | re.S)
_ESCAPES = {"0": "\x00", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_ESCAPE = re.compile(r"\\(.)|''", re.S)


def is_dump(first_line: str) -> bool:
    return _SQL_START.match(first_line) is not None


def read(lines: Iterable[str]) -> Iterator[dict[str, Any] | BadRow]:
    """Each row of the URL table's INSERT statements, as a dict of its columns' values (strings, ints or None)."""
    for number, statement in enumerate(_statements(lines), 1):
        head = _HEAD.match(statement)
        if head is None or not head.group(1).lower().endswith("url"):
            continue
        names = [name.strip(" `\n\r\t") for name in head.group(2).split(",")] if head.group(2) else list(COLUMNS)
        yield from _rows(statement, head.end(), names, number)


def _statements(lines: Iterable[str]) -> Iterator[str]:
    """The dump's statements, without their `;`; comment lines between statements are passed over."""
    pending, scanned = "", 0  # what has arrived of the statement; how far it is known to be outside strings
    for line in lines:
        pending += line
        if not pending[:scanned].strip():  # no statement begun yet: comment lines before it go
            pending, scanned = _COMMENTS.sub("", pending), 0
        while True:
            found = _SCAN.match(pending, scanned)
            scanned = found.end() if found else scanned
            if scanned >= len(pending) or pending[scanned] != ";":
                break  # the end of what has arrived, or a string it has not closed yet
            yield pending[:scanned]
            pending, scanned = _COMMENTS.sub("", pending[scanned + 1 :]), 0
        if len(pending) > MAX_STATEMENT:
            raise BadRow(f"a statement of the dump is longer than {MAX_STATEMENT} characters")
    if pending.strip():
        yield pending


def _rows(statement: str, at: int, names: list[str], number: int) -> Iterator[dict[str, Any] | BadRow]:
    row = 0
    while at < len(statement):
        row += 1
        where = f"statement {number}, row {row}"
        if statement[at] != "(":
            yield BadRow(f"{where}: expected '(' in the VALUES list")
            return
        values: list[Any] = []
        at += 1
        while True:
            found = _VALUE.match(statement, at)
            if found is None:
                yield BadRow(f"{where}: a value is not a quoted string, a number or NULL")
                return
            text, null, number_text = found.groups()
            values.append(_unescape(text) if text is not None else None if null else _number(number_text))
            at = found.end()
            if at < len(statement) and statement[at] == ",":
                at += 1
                continue
            if at < len(statement) and statement[at] == ")":
                break
            yield BadRow(f"{where}: expected ',' or ')' after a value")
            return
        if len(values) == len(names):
            yield dict(zip(names, values, strict=True))
        else:
            yield BadRow(f"{where}: {len(values)} values for {len(names)} columns")
        at = _after(statement, at + 1)


def _after(statement: str, at: int) -> int:
    """Where the next row starts, past the `,` between rows (the end of the statement after its last)."""
    rest = statement[at:].lstrip()
    if rest.startswith(","):
        rest = rest[1:].lstrip()
    return len(statement) - len(rest)


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: "'" if m.group(1) is None else _ESCAPES.get(m.group(1), m.group(1)), text)


def _number(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
