"""Links read back from a file `GET /links/export` wrote (`slugline links import`), or another service's export
(`slugline.links.peers`: Shlink, YOURLS, Kutt, Bitly), into one account.

Re-running an import changes nothing: a link whose slug is already there with the same destination is skipped; the
same slug with another destination (this account's or another's: slugs are global) is a conflict, reported and never
overwritten, unless `overwrite` asks to change this account's link to the file's fields. A new link keeps the file's
id when it is free (so references to it stay valid on a new server), its clicks count and its times.

The file is read and written in batches of `BATCH` rows, each one transaction: one lookup of the batch's slugs and
ids, then its new links in one statement (`importwrite`), so a million links go in at tens of thousands a second.
The caches and the search index learn of a batch's links once it commits, so memory follows the batch, not the file
(a dry run, which writes nothing, also keeps a pair of hashes per link to find a slug repeated in the file). A row
that is not a valid link is reported with its number and skipped.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline import _core
from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.errors import Conflict, ServiceError
from slugline.common.models import LinkRecord
from slugline.links import events, files, importrows, importwrite, peers
from slugline.links import service as links
from slugline.links.importrows import CHECKED, Report
from slugline.runtime import Runtime
from slugline.storage.loopwrite import drive, session_run

FORMATS = ("csv", "ndjson", *peers.FORMATS)
GUESSED = {".ndjson": "ndjson", ".jsonl": "ndjson", ".json": "kutt", ".sql": "yourls"}  # by the file name's end
BATCH = 2_000
KEPT = frozenset(f.name for f in dataclasses.fields(LinkRecord)) - {"account_id"}


def guess_format(filename: str) -> str:
    """The format a file's name says (CSV when it says none)."""
    return next((fmt for end, fmt in GUESSED.items() if filename.lower().endswith(end)), "csv")


def import_links(
    rt: Runtime,
    caller: Caller,
    lines: Iterable[str],
    fmt: str,
    dry_run: bool = False,
    overwrite: bool = False,
    batch: int | None = None,
) -> dict[str, Any]:
    """Blocking: reads `lines` (a file's text, as `files.read` takes it) and writes the account's links, `batch`
    (`BATCH`) rows a transaction."""
    report = Report(dry_run)
    # slug -> destination of every link this import made or kept. A real import needs it within a batch only (the
    # database knows the earlier ones); a dry run writes nothing, so it keeps one (hashed) entry per link of the file.
    seen: dict[int, int] = {}
    rows = enumerate(peers.read(lines, fmt) if fmt in peers.FORMATS else files.read(lines, fmt), 1)
    try:
        while part := list(itertools.islice(rows, batch or BATCH)):
            _batch(
                rt, caller, list(importrows.checked(caller, part, report)), report, seen if dry_run else {}, overwrite
            )
    except files.BadRow as exc:
        report.note(0, "error", str(exc))
    return report.answer()


Checked = list[tuple[int, dict[str, Any]]]
Saved = list[tuple[int, LinkRecord, str | None]]  # (version, link, old slug) of each write


def _batch(rt: Runtime, caller: Caller, checked: Checked, report: Report, seen: dict[int, int], over: bool) -> None:
    """One batch in one transaction (tried again once when a concurrent writer took a slug or an id meanwhile:
    nothing of it was written); then the caches and the search index learn of its links, in version order."""
    for attempt in range(2):
        part = Report(report.dry_run)
        try:
            with rt.db.writing() as session:
                saved = _decide(session, caller, checked, part, seen, over)
        except IntegrityError:
            if attempt:
                raise Conflict("a slug or id was taken by another writer meanwhile: run the import again") from None
            continue
        break
    report.add(part)
    seen.update(part.seen)
    for version, link, old_slug in sorted(saved, key=lambda item: item[0]):
        events.link_saved(rt, caller.account_id, version, link, old_slug)


def _decide(
    session: Session, caller: Caller, checked: Checked, report: Report, seen: dict[int, int], overwrite: bool
) -> Saved:
    """What each row comes to (created, skipped, conflict, overwritten), written unless it is a dry run. The rows
    of earlier batches are in `seen` (a dry run's) or in the database; this batch's go to `report.seen`."""
    found = _existing(session, [row["slug"] for _, row in checked], [row.get("id") for _, row in checked])
    dialect = session.get_bind().dialect.name
    saved: Saved = []
    made: list[LinkRecord] = []
    for number, row in checked:
        slug, destination = row["slug"], row["destination_url"]
        earlier = report.seen.get(hash(slug), seen.get(hash(slug)))
        there = found.get(slug) or ((caller.account_id, earlier, None) if earlier is not None else None)
        mine = there is not None and there[0] == caller.account_id
        if there is not None and mine and there[1] in (destination, hash(destination)):
            report.skipped += 1
        elif there is not None and not (overwrite and mine and there[2] is not None):
            shown = there[1] if isinstance(there[1], str) else "a link earlier in the file"
            report.note(number, "conflict", f"slug '{slug}' is already taken (for {shown})")
        elif there is not None:
            try:
                if not report.dry_run:
                    saved.append(_overwrite(session, caller, str(there[2]), row, dialect))
                report.overwritten += 1
            except ServiceError as exc:  # refused before anything was written (a password link without one)
                report.note(number, "error", exc.message)
        else:
            made.append(_record(caller, row, found))
            report.created += 1
        report.seen[hash(slug)] = hash(destination)
    if made and not report.dry_run:
        first = importwrite.write_links(session, caller.account_id, made)
        saved += [(first + n, link, None) for n, link in enumerate(made)]
    return saved


def _existing(session: Session, slugs: list[str], ids: list[Any]) -> dict[str, tuple[int, str, str | None]]:
    """slug -> (account, destination, id) of the links holding `slugs`, and id -> (account, "", None) of those
    holding one of `ids` (a new link takes its file's id only when it is free)."""
    found: dict[str, tuple[int, str, str | None]] = {}
    sqlite = session.get_bind().dialect.name == "sqlite"
    for account, slug, destination, link_id in session.execute(_SLUGS[sqlite], {"values": _listed(slugs, sqlite)}):
        found[slug] = (account, destination, link_id)
    wanted = [i for i in ids if isinstance(i, str) and links.LINK_ID.fullmatch(i)]
    if wanted:
        for account, link_id in session.execute(_IDS[sqlite], {"values": _listed(wanted, sqlite)}):
            found[f"id:{link_id}"] = (account, "", None)
    return found


# The batch's slugs and ids as one parameter (a JSON array on SQLite, an array on PostgreSQL), not one each: an
# IN list of 2,000 parameters cost SQLAlchemy more to compile per batch than the lookup cost the database.
_IN = {True: "IN (SELECT value FROM json_each(:values))", False: "= ANY(CAST(:values AS text[]))"}
_SLUGS = {
    sqlite: text(f"SELECT account_id, slug, destination_url, id FROM links WHERE slug {_IN[sqlite]}") for sqlite in _IN
}
_IDS = {sqlite: text(f"SELECT account_id, id FROM links WHERE id {_IN[sqlite]}") for sqlite in _IN}


def _listed(values: list[str], sqlite: bool) -> str | list[str]:
    return orjson.dumps(values).decode() if sqlite else values


def _record(caller: Caller, row: dict[str, Any], found: dict[str, Any]) -> LinkRecord:
    values = {name: value for name, value in row.items() if name in KEPT and value is not None}
    link_id = values.get("id")
    if not (isinstance(link_id, str) and links.LINK_ID.fullmatch(link_id)) or f"id:{link_id}" in found:
        values["id"] = _core.generate_link_id()
    now = utcnow()
    values.setdefault("created_at", now)
    values.setdefault("updated_at", values["created_at"])
    values.setdefault("clicks", 0)
    values["hashtags"] = list(values.get("hashtags") or [])
    found[f"id:{values['id']}"] = (caller.account_id, "", None)
    return LinkRecord(account_id=caller.account_id, **values)


def _overwrite(
    session: Session, caller: Caller, link_id: str, row: dict[str, Any], dialect: str
) -> tuple[int, LinkRecord, str | None]:
    """This account's link with the file's fields, as an update makes it (a password link keeps its password)."""
    change = {name: row.get(name) for name in (*CHECKED, "visibility") if name != "slug"}
    link, old_slug, version = drive(links.write_change(caller, link_id, change, dialect, session_run(session)))
    return version, link, old_slug
