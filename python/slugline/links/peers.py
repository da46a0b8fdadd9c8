"""Other link services' exports, read as rows of our own links file (`files.read`), so the importer takes them alike.

The columns are the ones each project writes (header names compared without case, spaces or underscores):

- `shlink`: the CSV its web client exports (`createdAt, domain, shortCode, shortUrl, longUrl, title, tags, visits`,
  tags split by `|`, or `,` in older clients).
- `yourls`: its `yourls_url` table as CSV with a header row (`keyword, url, title, timestamp, ip, clicks`), as a
  database tool exports it, or a MySQL dump of it (mysqldump's or phpMyAdmin's INSERT statements: `yourlsdump`).
- `kutt`: the JSON its API answers for `GET /api/v2/links` (`{"data": [{address, target, description, visit_count,
  created_at, expire_in, ...}]}`), one answer or a list of links.
- `bitly`: its links CSV (`long_url`, `link` or `bitlink`, `custom_bitlinks`, `title`, `tags`, `created_at`,
  `clicks`): the slug is the custom back-half if there is one, else the short link's path.

What a service has and Slugline has not (domains, an IP) is left out; what Slugline has and it has not is the default
(public visibility). Tags become hashtags: lowercased, inner whitespace made `-`. A time that does not parse is left
out (the import's time is used).
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import orjson

from slugline.common.clock import as_utc
from slugline.links import yourlsdump
from slugline.links.files import BadRow

FORMATS = ("shlink", "yourls", "kutt", "bitly")
Row = dict[str, Any]


def read(lines: Iterable[str], fmt: str) -> Iterator[Row | BadRow]:
    """The links of a peer's export, as `files.read` gives ours."""
    if fmt == "kutt":
        yield from _kutt("".join(lines))
        return
    lines = iter(lines)
    first = next((line for line in lines if line.strip()), "")
    lines = itertools.chain([first], lines)
    mapping = MAPPINGS[fmt]
    if fmt == "yourls" and yourlsdump.is_dump(first):
        for n, found in enumerate(yourlsdump.read(lines), 1):
            yield found if isinstance(found, BadRow) else _mapped(mapping, found, f"row {n}")
        return
    for n, found in enumerate(csv.DictReader(lines), 2):
        yield _mapped(mapping, found, f"line {n}")


def _mapped(mapping: Callable[[Row], Row], found: Mapping[Any, Any], where: str) -> Row | BadRow:
    """A row of the peer's file as ours (its column names compared without case, spaces or underscores)."""
    plain = {_key(name): "" if value is None else str(value).strip() for name, value in found.items() if name}
    try:
        return {name: value for name, value in mapping(plain).items() if value not in (None, "")}
    except (KeyError, ValueError) as exc:
        return BadRow(f"{where}: {exc}")


def _key(name: str) -> str:
    return re.sub(r"[\s_]", "", name).lower()


def _tags(text: str, separator: str) -> list[str]:
    tags = (re.sub(r"\s+", "-", tag.strip()).lower() for tag in re.split(separator, text))
    return list(dict.fromkeys(tag for tag in tags if tag))


def _moment(text: Any) -> datetime | None:
    try:
        return as_utc(datetime.fromisoformat(str(text))).astimezone(UTC)
    except ValueError:
        return None


def _count(text: Any) -> int | None:
    try:
        return max(0, int(str(text)))
    except ValueError:
        return None


def _last_segment(url: str) -> str:
    """The slug of a short URL written with or without its scheme (`bit.ly/3xYz`)."""
    parts = urlsplit(url if "//" in url else f"//{url}")
    return parts.path.strip("/").rsplit("/", 1)[-1]


def _shlink(row: Row) -> Row:
    return {
        "slug": row.get("shortcode") or _last_segment(row.get("shorturl", "")),
        "destination_url": row["longurl"],
        "title": row.get("title"),
        "hashtags": _tags(row.get("tags", ""), r"[|,]"),
        "clicks": _count(row.get("visits", "")),
        "created_at": _moment(row.get("createdat", "")),
    }


def _yourls(row: Row) -> Row:
    return {
        "slug": row["keyword"],
        "destination_url": row["url"],
        "title": row.get("title"),
        "clicks": _count(row.get("clicks", "")),
        "created_at": _moment(row.get("timestamp", "")),
    }


def _bitly(row: Row) -> Row:
    custom = [part for part in re.split(r"[,\s|]+", row.get("custombitlinks", "")) if part]
    short = custom[0] if custom else row.get("link") or row.get("bitlink") or row.get("id") or ""
    return {
        "slug": _last_segment(short),
        "destination_url": row["longurl"],
        "title": row.get("title"),
        "hashtags": _tags(row.get("tags", ""), r"[|,;]"),
        "clicks": _count(row.get("clicks") or row.get("totalclicks") or ""),
        "created_at": _moment(row.get("createdat", "")),
    }


MAPPINGS: dict[str, Callable[[Row], Row]] = {"shlink": _shlink, "yourls": _yourls, "bitly": _bitly}


def _kutt(text: str) -> Iterator[Row | BadRow]:
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        yield BadRow(f"not JSON ({exc})")
        return
    links = found.get("data") if isinstance(found, dict) else found
    if not isinstance(links, list):
        yield BadRow('not a Kutt answer: expected {"data": [...]} or a list of links')
        return
    for n, link in enumerate(links, 1):
        if not isinstance(link, dict) or "target" not in link or "address" not in link:
            yield BadRow(f"link {n}: not a Kutt link (no address and target)")
            continue
        row = {
            "slug": link["address"],
            "destination_url": link["target"],
            "description": link.get("description"),
            "clicks": _count(link.get("visit_count", 0)),
            "created_at": _moment(link.get("created_at", "")),
            "expires_at": _moment(link.get("expire_in", "")) if link.get("expire_in") else None,
        }
        yield {name: value for name, value in row.items() if value not in (None, "")}
